#!/usr/bin/env bash
# Run every test. The build directory lives outside the clone so repeat runs rebuild only the crate.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/leakscope/target}"
# wgpu on Mesa's lavapipe needs a private runtime dir.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true
# Two cores: keep the build and the test threads from starving each other.
cargo build --tests --bins -j 2
export LEAKSCOPE_WGPU=1
cargo test --no-fail-fast -- --test-threads 1
# The WebAssembly build, then the npm package (installed from `npm pack`, run in Node) and the page
# in headless Chromium (CPU fallback and WebGPU on SwiftShader).
bash scripts/build-wasm.sh
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error
export LEAKSCOPE_SCREENSHOTS="${LEAKSCOPE_SCREENSHOTS:-$CARGO_TARGET_DIR/screenshots}"
node --test tests/node/ tests/browser/
