#!/usr/bin/env bash
# Native reference outputs that tests/wasm.rs compiles in (include_str!), so the wasm build in
# Chromium is compared with the native build on the same texts.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/attnviz
out=target/wasm-fixtures
mkdir -p "$out"
cargo build --release --bin attnviz
"$bin" attend --model models/en-pt --text "The cat sat on the mat." > "$out/en-pt-cat.json"
"$bin" attend --model models/en-pt --text "Ich möchte café crème — naïve façade." > "$out/en-pt-accents.json"
"$bin" attend --model models/minilm --text "The cat sat on the mat." > "$out/minilm-cat.json"
"$bin" attend --model models/minilm --text "日本語のテキストと emoji 🎉, naïve café" > "$out/minilm-cjk.json"
