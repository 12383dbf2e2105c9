#!/usr/bin/env bash
# Runs lanes of make targets side by side: each lane runs its targets in order, each target with
# its wall time, every output line prefixed with the lane's name. On 2 cores one lane's idle time
# (an LTO link on one core, a browser test waiting for a frame, a download) is the other's.
#   scripts/lanes.sh "wasm: build test-wasm test-e2e" "native+10: lint test-rust fuzz-smoke test-py"
# A lane named NAME+N runs at nice N: the other lanes come first when the CPU is short.
# A target written TARGET@A,B starts once targets A and B have finished (in whichever lane); a
# lane that waits for a niced lane's target lifts that lane's nice (its result is due now).
# With LANES_CACHE_KEYS set (lines "TARGET KEY", scripts/test-inputs.sh), a pass of a target that
# has a key writes its stamp (the key, in .test-stamps/); with LANES_SKIP_PASSED=1 too, such a
# target that passed under that key is not run again.
# Exits non-zero when any lane failed (the other lanes are stopped), after a summary of the times.
set -uo pipefail
set -m  # each lane its own process group, so that stopping one stops all it started (cargo's rustc too)
make_cmd=${MAKE:-make}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# CPU seconds (user + system) this shell's finished children have used so far (bash's `times`).
# (`times` must run in the lane's own shell, not in a $(…) subshell, which has no children.)
children_cpu() {  # children_cpu FILE: writes the number into FILE
  times > "$1"  # two lines "XmY.YYYs XmY.YYYs": the shell's, then its children's user and system time
  awk 'END { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%d", t }' "$1" > "$1.s"
}

# Under `make -n test` each stage only prints its commands and exits 0: that is no pass, so no stamp.
# (MAKEFLAGS starts with make's one-letter flags, e.g. "n" or "kn", when there are any.)
dry_run=
first_flags=${MAKEFLAGS:-}; first_flags=${first_flags%% *}
if [[ $first_flags != -* && $first_flags == *n* ]]; then dry_run=1; fi

run_lane() {  # run_lane NAME TARGET...: each target in turn; stops at the first that fails
  local name=$1 target t took cpu after dep waited stamp key
  shift
  for target in "$@"; do
    after=""
    if [[ $target == *@* ]]; then after=${target#*@}; target=${target%%@*}; fi
    waited=$(date +%s)
    for dep in ${after//,/ }; do
      # A lane that has to wait lifts the nice of the lane that makes what it waits for.
      if [ ! -f "$dir/done.$dep" ]; then
        for owner in $(grep -lx -- "$dep" "$dir"/targets.* 2>/dev/null); do
          renice -n 0 -g "$(cat "$dir/pgid.${owner##*/targets.}")" >/dev/null 2>&1 || true
        done
      fi
      until [ -f "$dir/done.$dep" ]; do sleep 1; done
    done
    [ -z "$after" ] || echo "[lanes] $target: waited $(( $(date +%s) - waited )) s for $after"
    stamp=.test-stamps/$target
    key=$(awk -v t="$target" '$1 == t { print $2 }' <<< "${LANES_CACHE_KEYS:-}")
    if [ "${LANES_SKIP_PASSED:-}" = 1 ] && [ -n "$key" ] && [ "$(head -1 "$stamp" 2>/dev/null)" = "$key" ]; then
      echo "[lanes] $target: passed at $(sed -n 2p "$stamp") with these very inputs (scripts/test-inputs.sh): not run again"
      echo "$target passed before" >> "$dir/$name.times"
      touch "$dir/done.$target"
      continue
    fi
    t=$(date +%s)
    children_cpu "$dir/$name.cpu"; cpu=$(cat "$dir/$name.cpu.s")
    echo "make $target"
    if ! $make_cmd --no-print-directory "$target"; then
      echo "make $target FAILED after $(( $(date +%s) - t )) s"
      echo "$target" > "$dir/$name.failed"
      return 1
    fi
    took=$(( $(date +%s) - t ))
    children_cpu "$dir/$name.cpu"; cpu=$(( $(cat "$dir/$name.cpu.s") - cpu ))
    # Wall time, and the CPU time it used (on two cores shared by the lanes, the wall time of a
    # stage is longer the more the others use).
    echo "[time] $target: $took s (CPU $cpu s)"
    echo "$target ${took}s (CPU ${cpu}s)" >> "$dir/$name.times"
    touch "$dir/done.$target"
    if [ -n "$key" ] && [ -z "$dry_run" ]; then
      mkdir -p .test-stamps && printf '%s\n%s\n' "$key" "$(date -u +%FT%TZ)" > "$stamp"
    fi
  done
}

# The machine's busy CPU time (user, nice, system, irq, softirq, steal: /proc/stat's first line),
# in centiseconds. Stage CPU times come from the processes each stage reaped: a browser whose
# processes are reparented (the e2e suite's shared Chromium) escapes them, the machine does not.
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat 2>/dev/null || echo 0; }
busy0=$(machine_busy)
start=$(date +%s)
pids=() names=()
for lane in "$@"; do
  name=${lane%%:*}
  niceness=0
  if [[ $name == *+* ]]; then niceness=${name#*+}; name=${name%%+*}; fi
  read -r -a targets <<< "${lane#*:}"
  printf '%s\n' "${targets[@]%%@*}" > "$dir/targets.$name"
  # Each line of the lane's output (stdout and stderr) goes out prefixed, as it comes.
  ( renice -n "$niceness" -p "$BASHPID" >/dev/null; run_lane "$name" "${targets[@]}" 2>&1 | sed -u "s/^/[$name] /" | tee "$dir/$name.log"; exit "${PIPESTATUS[0]}" ) &
  pids+=($!) names+=("$name")
  echo "$!" > "$dir/pgid.$name"
done

killtree() {  # killtree PID: a lane's process group (its pid is the group's id)
  kill -TERM -- "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null
}

# Stopped itself (Ctrl-C, a CI timeout): stop the lanes too.
trap 'for p in "${pids[@]}"; do killtree "$p"; done; exit 130' INT TERM

# Wait for every lane; the first that fails stops the others.
status=0
while [ ${#pids[@]} -gt 0 ]; do
  sleep 1
  for i in "${!pids[@]}"; do
    kill -0 "${pids[$i]}" 2>/dev/null && continue
    wait "${pids[$i]}"; rc=$?
    if [ "$rc" != 0 ] && [ "$status" = 0 ]; then
      status=$rc
      echo "[lanes] lane ${names[$i]} failed: stopping the others"
      for p in "${pids[@]}"; do [ "$p" = "${pids[$i]}" ] || killtree "$p"; done
    fi
    unset 'pids[i]' 'names[i]'
  done
done

for lane in "$@"; do
  name=${lane%%:*}
  name=${name%%+*}
  done_list=$(paste -sd, "$dir/$name.times" 2>/dev/null | sed 's/,/, /g')
  echo "[time] lane $name: ${done_list:-nothing finished}$( [ -f "$dir/$name.failed" ] && echo " (failed at $(cat "$dir/$name.failed"))")"
done
wall=$(( $(date +%s) - start ))
busy=$(( ($(machine_busy) - busy0) / $(getconf CLK_TCK 2>/dev/null || echo 100) ))
echo "[time] lanes: $wall s; the machine's CPU busy $busy s of $(( wall * $(nproc 2>/dev/null || echo 1) )) s ($(nproc 2>/dev/null || echo 1) cores)"
# A CI log is often read from its end only: every failed test (node's TAP "not ok", with where
# and why; cargo test's FAILED and panics) once more, last, so that no failure is hidden above the tail.
for log in "$dir"/*.log; do
  [ -f "${log%.log}.failed" ] || continue
  echo "[lanes] failures in lane $(basename "$log" .log):"
  awk '/ \.\.\. FAILED$|panicked at /       { print; next }  # cargo test
       /\] *not ok /                      { print; block = 1; more = 0; next }
       block && / (location|error|failureType):/ { print; more = ($0 ~ /error: \|/) ? 4 : 0; next }
       block && more > 0                   { print; more--; next }
       block && /\] *(ok|not ok|# Subtest)/ { block = 0 }' "$log" | head -60
done
exit "$status"
