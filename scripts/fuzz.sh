#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers a user's file reaches (fuzz/, libFuzzer via the
# libfuzzer-sys crate, built with stable rustc's SanitizerCoverage flags: cargo-fuzz needs nightly).
# usage: scripts/fuzz.sh RUNS SECONDS [TARGET...]
#        scripts/fuzz.sh --build    (the instrumented build only)
#        scripts/fuzz.sh --merge [TARGET...]
#   each target runs until RUNS inputs or SECONDS (0 = no time limit), whichever comes first,
#   starting from the committed corpus (fuzz/corpus/<target>: replayed by cargo test on every
#   make test), the seeds of the tiny models and the inputs that once crashed it
#   (fuzz/regressions/<target>, also replayed by cargo test). What a run finds goes into
#   fuzz/work/<target> (not committed); --merge minimises fuzz/corpus/<target> + fuzz/work/<target>
#   into a new fuzz/corpus/<target> (libFuzzer's -merge=1 on edge coverage alone: the smallest
#   inputs that together reach every branch any of them reaches; with hit counts and comparison
#   operands as features too it kept 3-4 times as many), which is what to commit after fuzzing a
#   parser change.
# Prints per target the inputs run, exec/s, coverage and corpus size; exits 1 if any target
# crashed (a panic, a timeout or running out of memory): the input is in fuzz/artifacts/<target>/.
# Reproduce with fuzz/target/<host>/release/<target> <that file>; once fixed, copy the file into
# fuzz/regressions/<target>/, which cargo test (tests/fuzz_regressions.rs) replays.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
build_only= merge=
if [ "${1:-}" = --build ]; then build_only=1; set -- 0 0; fi
if [ "${1:-}" = --merge ]; then merge=1; shift; set -- 0 0 "$@"; fi
runs=${1:?RUNS}; secs=${2:?SECONDS}; shift 2
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors marian_bin config_json manifest_json tokenizer_json gguf)
host=$(rustc -vV | sed -n 's/^host: //p')
# What cargo-fuzz passes, minus its nightly-only flags; debug assertions and overflow checks make
# a wrapped size a crash here (in the release wasm it would silently wrap).
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
echo "[fuzz] cargo build --release (fuzz/, instrumented, target $host)"
# --target keeps build scripts and proc macros uninstrumented.
cargo build --release --locked --target "$host" --bins
[ -z "$build_only" ] || exit 0
bin=target/$host/release

if [ -n "$merge" ]; then
  for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "work/$t" logs
    rm -rf "corpus.merged/$t" && mkdir -p "corpus.merged/$t"
    before=$(find "corpus/$t" -type f | wc -l)
    "$bin/$t" -merge=1 -use_counters=0 -use_cmp=0 -timeout=10 -rss_limit_mb=2560 "corpus.merged/$t" "corpus/$t" "work/$t" \
      > "logs/$t.merge.log" 2>&1 </dev/null || { echo "[fuzz] $t: merge failed, see fuzz/logs/$t.merge.log"; exit 1; }
    rm -rf "corpus/$t" && mv "corpus.merged/$t" "corpus/$t"
    echo "[fuzz] $t: corpus $before -> $(find "corpus/$t" -type f | wc -l) inputs ($(du -sh "corpus/$t" | cut -f1)), from fuzz/corpus + fuzz/work"
  done
  rm -rf corpus.merged
  exit 0
fi

# The targets run FUZZ_JOBS at a time (default: one per core): each libFuzzer process is
# single-threaded, so on two cores six 10-second smoke runs take 30 s, not 60.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

fuzz_one() {  # fuzz_one TARGET: runs it, writes its summary line (and 1 on a crash) under $results
  local t=$1 log status=0 start took execs rate cov corp result
  mkdir -p "artifacts/$t" "corpus/$t" "work/$t" logs
  log=logs/$t.log
  start=$(date +%s)
  "$bin/$t" -runs="$runs" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2560 -print_final_stats=1 \
    -artifact_prefix="artifacts/$t/" "work/$t" "corpus/$t" $([ -d "regressions/$t" ] && echo "regressions/$t") >"$log" 2>&1 </dev/null || status=$?
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1 | cut -d' ' -f2)
  if [ "$status" -eq 0 ]; then result="no crash"; else
    result="CRASH (exit $status): $(ls -t "artifacts/$t" | head -1 | sed "s|^|fuzz/artifacts/$t/|"), log fuzz/$log"
    echo 1 > "$results/$t.failed"
  fi
  {
    printf '[fuzz] %-15s %10s %8s %7s %6s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$took" "${cov:-?}" "${corp:-?}" "$result"
    [ "$status" -eq 0 ] || grep -m1 -E "panicked at|ERROR: libFuzzer" "$log" | sed 's/^/    /' || true
  } > "$results/$t.line"
}

echo "[fuzz] ${#targets[@]} targets, $jobs at a time"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait

printf '[fuzz] %-15s %10s %8s %7s %6s %8s  %s\n' target inputs exec/s seconds cov corpus result
failed=0
for t in "${targets[@]}"; do
  cat "$results/$t.line"
  [ ! -f "$results/$t.failed" ] || failed=1
done
exit $failed
