#!/usr/bin/env bash
# The bench on this machine: the built page (www/, after scripts/build-wasm.sh) with bench.html in
# Debian's Chromium, headless, WebGPU on SwiftShader (a software adapter: correct, and the call
# counts and the time spent waiting hold, not the speed). What run.sh does on a GPU machine.
#   [WWW=another/www] bash scripts/gpu-page/local.sh [out-dir] [bench.js URL options, e.g. "batches=32&backends=webgpu"]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$(dirname "$HERE")")
OUT=$(realpath -m "${1:-$ROOT/out/bench-page}")
QUERY=${2:-}
WWW=${WWW:-$ROOT/www}
CHROME=${LEAKSCOPE_CHROMIUM:-/usr/lib/chromium/chromium}
LIMIT=${BENCH_TIMEOUT:-900}
[ -f "$WWW/leakscope/pkg/leakscope_bg.wasm" ] || { echo "build the page first: bash scripts/build-wasm.sh" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
cp -r "$WWW" "$WORK/www"
cp "$HERE"/{bench.html,bench.js,bench-worker.js,gpu-trace.js} "$WORK/www/"
mkdir -p "$OUT"
OUT="$OUT" python3 "$HERE/server.py" --root "$WORK/www" --port 0 --port-file "$WORK/port" --timeout "$LIMIT" >"$WORK/server.out" 2>&1 &
SERVER=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$WORK/port")/bench.html?variant=local-S&deadline=$((LIMIT - 30))${QUERY:+&$QUERY}"
echo "bench: $URL"
XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$WORK} "$CHROME" --headless --no-sandbox --enable-unsafe-webgpu --disable-dev-shm-usage \
  --no-first-run --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$WORK/profile" "$URL" >"$WORK/chrome.txt" 2>&1 &
wait "$SERVER" || echo "bench: the server ended with $? (no final result within ${LIMIT}s?)" >&2
python3 "$HERE/summary.py" "$OUT/result.json"
