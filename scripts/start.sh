#!/usr/bin/env bash
# Command 1 of the README on a bare Debian machine: install what the page and the command line
# need (scripts/install.sh), build the page (scripts/build-wasm.sh) and serve it with the bundled
# sample: open the address it prints and press "run the demo". The command line builds on its
# first use: ./scripts/leakscope attack --csv data/adult-sample.csv --label salary --batch-size 8
#   ./scripts/start.sh [--port 8080]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
bash scripts/build-wasm.sh
exec node scripts/serve.mjs "$@"
