#!/usr/bin/env bash
# Prints, for each suite make test can skip, one line "SUITE HASH": the hash of what that suite
# reads — the files of the working tree that git tracks or would track (contents, committed or
# not) less those the suite cannot read, the default models' manifests (they hold each file's
# sha256, which `make models` verified), and the versions of the tools that build and run it.
# make test skips a suite that passed before under the same hash (scripts/lanes.sh), so a change
# in www/ reruns the suites that load the page and not `cargo test`, and a change in src/ reruns
# them all. What a suite cannot read is listed below, by what its tests open: when a suite
# starts reading a new place, drop it from the suite's exclusions.
set -euo pipefail
cd "$(dirname "$0")/.."

# git pathspecs of the files each suite never reads (tests/int8.rs reads
# tests/reference/bert_sentences.json, so only the reference's Python is the numpy suite's own).
not_rust=(':!www/' ':!tests/e2e/' ':!tests/wasm/' ':!tests/python/' ':!tests/reference/*.py'
  ':!python/' ':!docs/' ':!*.md' ':!eslint.config.js' ':!scripts/*.mjs' ':!scripts/npm/' ':!benches/*.mjs')
not_rust_tests=(':!tests/*.rs' ':!tests/support/' ':!fuzz/' ':!benches/' ':!docs/' ':!README.md')
declare -A excluded=(
  [lint]=''
  [test-rust]="${not_rust[*]}"
  [test-wasm]="${not_rust_tests[*]} :!tests/python/ :!tests/reference/*.py :!python/"
  [test-reference]="${not_rust_tests[*]} :!tests/e2e/ :!tests/wasm/ :!tests/python/ :!www/"
  [test-notebook]="${not_rust_tests[*]} :!tests/e2e/ :!tests/wasm/ :!tests/reference/*.py"
  [test-e2e]="${not_rust_tests[*]} :!tests/python/ :!tests/reference/*.py :!tests/wasm/"
)
# make test runs the e2e suite in two parts (the Makefile's test-e2e-page and test-e2e-npm)
excluded[test-e2e-page]=${excluded[test-e2e]}
excluded[test-e2e-npm]=${excluded[test-e2e]}

# One sha256 per file, once; each suite's hash is over its share of these lines.
files=$(mktemp)
trap 'rm -f "$files"' EXIT
git ls-files -z --cached --others --exclude-standard | LC_ALL=C sort -z | xargs -0 -r sha256sum 2>/dev/null > "$files" || true
tools=$( {
  sha256sum models/*/manifest.json 2>/dev/null || true
  rustc -vV 2>/dev/null || true
  node --version 2>/dev/null || true
  wasm-bindgen --version 2>/dev/null || true
  chromium --version 2>/dev/null || true
  python3 --version 2>/dev/null || true  # (.venv is made by make test itself: tests/reference/requirements.txt is in the tree)
} )

suite_files() {  # suite_files SUITE: the "sha256  path" lines of the files SUITE can read
  read -r -a pathspecs <<< "${excluded[$1]}"
  if [ ${#pathspecs[@]} -eq 0 ]; then cat "$files"; else
    # the suite's files: git's own pathspec matching, then their lines of $files
    git ls-files -z --cached --others --exclude-standard -- . "${pathspecs[@]}" | tr '\0' '\n' \
      | awk 'NR == FNR { keep[$0] = 1; next } { name = substr($0, 67) } name in keep' - "$files"
  fi
}

# --files SUITE: those lines, and one for the tools and models (scripts/e2e-select.mjs reads them)
if [ "${1:-}" = --files ]; then
  suite_files "$2"
  printf '%s  (the tools and the models)\n' "$(echo "$tools" | sha256sum | cut -c1-64)"
  exit 0
fi

for suite in lint test-rust test-wasm test-reference test-notebook test-e2e test-e2e-page test-e2e-npm; do
  key=$( {
    suite_files "$suite"
    echo "$suite"
    echo "$tools"
  } | sha256sum | cut -c1-64)
  echo "$suite $key"
done
