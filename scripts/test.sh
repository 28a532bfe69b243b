#!/usr/bin/env bash
# Install what the tests need (scripts/install.sh --tests; skipped steps cost seconds), then run
# every test. The build directory lives outside the clone so repeat runs rebuild only the crate.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
[ "${LEAKSCOPE_SKIP_INSTALL:-0}" = 1 ] || bash scripts/install.sh --tests
require_rust
# wgpu on Mesa's lavapipe needs a private runtime dir.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true
# The source's shape (issue 16): no file over 700 lines, no function over 120, no import cycle,
# no test of an attack's name outside the registry; the script tests itself first.
python3 scripts/shape.py --self-test
python3 scripts/shape.py --check > /dev/null || { python3 scripts/shape.py | sed -n '/Limits/,$p'; exit 1; }
# The WebAssembly build runs beside everything up to the npm and page tests, in a build directory
# of its own (cargo locks one per build): wasm-opt and the tests below each keep one core busy,
# and a fresh clone's two builds share their serial stretches. Its output is shown when it ends.
wasm_dir="${LEAKSCOPE_WASM_TARGET:-$HOME/.cache/leakscope/wasm-target}"
wasm_log="$(mktemp)"
CARGO_TARGET_DIR="$wasm_dir" setsid bash scripts/build-wasm.sh > "$wasm_log" 2>&1 &
wasm_pid=$!
# A step that fails ends the script; the WebAssembly build (its own process group) ends with it.
trap 'kill -- -"$wasm_pid" 2>/dev/null || true' EXIT
# Two cores: keep the build and the test threads from starving each other.
cargo build --tests --bins -j 2
# The Python package: a dev-profile wheel over the dependencies built above (with the CLI's
# features, so that nothing is built twice: python/Cargo.toml), installed into the test
# environment (install.sh --tests); its tests compare with the CLI built above.
PYENV="${LEAKSCOPE_PYENV:-$HOME/.cache/leakscope/pyenv}"
rm -rf "$CARGO_TARGET_DIR/wheels"
"$PYENV/bin/maturin" build --quiet --profile dev --features cli-features --compatibility linux -m python/Cargo.toml -o "$CARGO_TARGET_DIR/wheels"
"$PYENV/bin/pip" install -q --force-reinstall --no-deps "$CARGO_TARGET_DIR"/wheels/leakscope-*.whl
# The GPU kernels run on lavapipe; launch counting is process-wide, so each test binary runs its
# tests one at a time; two binaries, or a binary and the Python tests, run side by side
# (scripts/run_tests.py: 26 minutes one after another on 2 cores).
export LEAKSCOPE_WGPU=1
python3 scripts/run_tests.py --also "python=LEAKSCOPE_CLI='$CARGO_TARGET_DIR/debug/leakscope' '$PYENV/bin/python' -m pytest -q -p no:cacheprovider python/tests"
# The CUDA backend (`--features cuda`) type-checks here; linking it needs LLVM 23, which
# cubecl-cuda's build script downloads from GitHub (DOCS_RS=1 skips that download for a check).
DOCS_RS=1 cargo check --lib --bins --features cuda -j 2
# The WebAssembly build started above, then the npm package (installed from `npm pack`, run in
# Node) and the page in headless Chromium (CPU fallback and WebGPU on SwiftShader).
wasm_status=0
wait "$wasm_pid" || wasm_status=$?
cat "$wasm_log"
rm -f "$wasm_log"
[ "$wasm_status" = 0 ] || { echo "test.sh: the WebAssembly build failed ($wasm_status)" >&2; exit 1; }
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error
export LEAKSCOPE_SCREENSHOTS="${LEAKSCOPE_SCREENSHOTS:-$CARGO_TARGET_DIR/screenshots}"
node --test tests/node/ tests/browser/
