#!/usr/bin/env bash
# Prints one hash of everything make test's suites read: every file of the working tree that git
# tracks or would track (contents, committed or not), the default models' manifests (they hold
# each file's sha256, which `make models` verified), and the versions of the tools that build and
# run them. make test skips a suite that passed before under the same hash (scripts/lanes.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
{
  git ls-files -z --cached --others --exclude-standard | LC_ALL=C sort -z | xargs -0 -r sha256sum 2>/dev/null || true
  sha256sum models/*/manifest.json 2>/dev/null || true
  rustc -vV 2>/dev/null || true
  node --version 2>/dev/null || true
  wasm-bindgen --version 2>/dev/null || true
  chromium --version 2>/dev/null || true
  python3 --version 2>/dev/null || true  # (.venv is made by make test itself: tests/reference/requirements.txt is in the tree)
} | sha256sum | cut -c1-64
