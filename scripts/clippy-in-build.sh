#!/usr/bin/env bash
# RUSTC_WORKSPACE_WRAPPER for make test's native build (CLIPPY_IN_BUILD=1, see the Makefile):
# cargo calls it as `clippy-in-build.sh <rustc> <args…>` for this crate's own targets only (the
# dependencies go to rustc directly). clippy-driver is rustc with clippy's lints added, so the
# test build itself is the native lint, with no check-only pass over the dependency graph
# besides it. Warnings are errors, as in `make lint`.
exec clippy-driver "$@" -D warnings
