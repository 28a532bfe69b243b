#!/usr/bin/env bash
# Build the WebAssembly package into pkg/: cargo (wasm32) → wasm-bindgen (pinned to Cargo.lock's
# version) → wasm-opt (npm's binaryen, pinned in package.json). Works offline once the tools are
# installed (scripts/install.sh). Prints the module's size, raw and gzipped, before and after wasm-opt.
# `--no-opt` skips wasm-opt (minutes on 2 cores) while iterating on the code; releases and the
# tests use the optimised module.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
require_rust
optimise=1
[ "${1:-}" = "--no-opt" ] && optimise=0
# wasm-bindgen's CLI must be the version of the crate in Cargo.lock (install.sh installs it).
want="$(wasm_bindgen_wanted)"
have="$(wasm_bindgen_found)"
if [ "$have" != "$want" ]; then
  echo "build-wasm: needs wasm-bindgen $want (found ${have:-none}): run ./scripts/install.sh" >&2
  exit 1
fi
cargo build --lib --release --target wasm32-unknown-unknown --no-default-features --features wgpu
rm -rf pkg
wasm-bindgen --target web --out-dir pkg --out-name leakscope \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/leakscope.wasm"

size() { printf '%s raw, %s gzipped' "$(numfmt --to=iec-i --suffix=B "$(stat -c %s "$1")")" \
  "$(numfmt --to=iec-i --suffix=B "$(gzip -9c "$1" | wc -c)")"; }
echo "build-wasm: module after wasm-bindgen: $(size pkg/leakscope_bg.wasm)"

if [ "$optimise" = 1 ]; then
# Debian 12's binaryen (108) breaks the externref table wasm-bindgen emits ("WebAssembly.Table.set():
# Argument 1 is invalid" at init), so the build uses npm's current binaryen and refuses an old one.
wasm_opt=node_modules/.bin/wasm-opt
[ -x "$wasm_opt" ] || npm ci --no-audit --no-fund --loglevel=error
opt_version=$("$wasm_opt" --version | awk '{print $3}')
if ! [ "$opt_version" -ge 116 ] 2>/dev/null; then
  echo "build-wasm: $wasm_opt is version $opt_version; 116 or later is needed (npm ci installs it)" >&2
  exit 1
fi
# -O2: as fast in the page as -O3 and the same size, in two thirds of the time (3.7 against 5.5
# minutes on 2 cores; docs/results/build.md). Names and producer sections are not shipped.
"$wasm_opt" -O2 --strip-debug --strip-producers \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-simd \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  pkg/leakscope_bg.wasm -o pkg/leakscope_bg.wasm
echo "build-wasm: module after wasm-opt $opt_version: $(size pkg/leakscope_bg.wasm)"
else
  echo "build-wasm: --no-opt: the module is left unoptimised" >&2
fi

# The static page (www/) gets its own copy of the package and of the demo sample, so the folder
# alone is the site: any static host serves it with relative paths.
rm -rf www/leakscope www/sample
mkdir -p www/leakscope/js www/leakscope/pkg www/sample
cp js/*.js www/leakscope/js/
cp pkg/leakscope.js pkg/leakscope_bg.wasm www/leakscope/pkg/
cp data/adult-sample.csv data/README.md www/sample/
echo "build-wasm: page assembled in www/ (serve it with: node scripts/serve.mjs)"
