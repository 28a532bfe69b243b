#!/usr/bin/env bash
# Install what building, running and testing leakscope needs on a Debian machine.
# Idempotent: re-running skips what is there. Network steps are retried.
set -euo pipefail
cd "$(dirname "$0")/.."

retry() {
  local n=0
  until "$@"; do
    n=$((n + 1))
    if [ "$n" -ge 5 ]; then echo "failed after $n tries: $*" >&2; return 1; fi
    echo "retrying in $((n * 10)) s: $*" >&2
    sleep $((n * 10))
  done
}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  # apt may be busy with another job: wait for its lock rather than fail.
  retry $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
  retry $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${missing[@]}"
}

# gcc/pkg-config for -sys crates; Mesa's lavapipe (software Vulkan) for the GPU kernels' tests;
# Chromium (with SwiftShader for WebGPU) for the page's tests; python3 for the source's shape check,
# python3-venv for the Python package's tests.
apt_install ca-certificates curl gcc pkg-config libvulkan1 mesa-vulkan-drivers chromium python3 python3-venv
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi

if ! command -v cargo >/dev/null 2>&1; then
  retry sh -c 'curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal'
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
retry rustup target add wasm32-unknown-unknown

# wasm-bindgen's CLI must be the exact version of the wasm-bindgen crate in Cargo.lock.
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"$/\1/p')
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  retry cargo install wasm-bindgen-cli --version "=$want"
fi
# From npm, pinned in package-lock.json: playwright-core drives the system Chromium in the browser
# tests (it downloads no browser of its own), binaryen's wasm-opt optimises the WebAssembly module
# (Debian's is too old), typescript type-checks the package's declarations.
retry npm ci --no-audit --no-fund --loglevel=error
# The Python package's tests (python/tests): maturin, pytest, Flower, PyTorch and the rest, pinned,
# in a virtual environment outside the clone (PyPI's torch wheel is large; installed once).
PYENV="${LEAKSCOPE_PYENV:-$HOME/.cache/leakscope/pyenv}"
[ -x "$PYENV/bin/python" ] || python3 -m venv "$PYENV"
retry "$PYENV/bin/pip" install -q -r python/requirements-test.txt
echo "install: done"
