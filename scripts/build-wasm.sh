#!/usr/bin/env bash
# Build the WebAssembly package into pkg/: cargo (wasm32) → wasm-bindgen (pinned to Cargo.lock's
# version) → wasm-opt. Works offline once the tools are installed (scripts/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/leakscope/target}"
cargo build --lib --release --target wasm32-unknown-unknown --no-default-features --features wgpu
rm -rf pkg
wasm-bindgen --target web --out-dir pkg --out-name leakscope \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/leakscope.wasm"
# Debian 12's binaryen (version 108) breaks the externref table wasm-bindgen emits (measured:
# "WebAssembly.Table.set(): Argument 1 is invalid" at init), so only a recent wasm-opt is used.
opt_version=$(wasm-opt --version 2>/dev/null | awk '{print $3}' || true)
if [ "${opt_version:-0}" -ge 116 ] 2>/dev/null; then
  wasm-opt -O2 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    pkg/leakscope_bg.wasm -o pkg/leakscope_bg.wasm
else
  echo "build-wasm: wasm-opt ${opt_version:-missing} is older than 116; leaving the module unoptimised" >&2
fi
ls -l pkg/leakscope_bg.wasm

# The static page (www/) gets its own copy of the package and of the demo sample, so the folder
# alone is the site: any static host serves it with relative paths.
rm -rf www/leakscope www/sample
mkdir -p www/leakscope/js www/leakscope/pkg www/sample
cp js/index.js js/remote.js js/worker.js www/leakscope/js/
cp pkg/leakscope.js pkg/leakscope_bg.wasm www/leakscope/pkg/
cp data/adult-sample.csv data/README.md www/sample/
echo "build-wasm: page assembled in www/ (serve it with: node scripts/serve.mjs)"
