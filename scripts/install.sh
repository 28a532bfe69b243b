#!/usr/bin/env bash
# Install what leakscope needs on a Debian machine. Idempotent: re-running skips what is there;
# network steps are retried.
#   ./scripts/install.sh          what the page and the command line need (Rust, wasm-bindgen,
#                                 wasm-opt, Node)
#   ./scripts/install.sh --tests  that, and what the tests add: Chromium, Mesa's software Vulkan,
#                                 and the Python package's test environment (PyTorch, Flower)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "install.sh: unknown option '$1' (the only one is --tests)" >&2; exit 2 ;;
esac

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

# gcc/pkg-config for -sys crates, curl for rustup.
apt_install ca-certificates curl gcc pkg-config
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi
if [ "$tests" = 1 ]; then
  # Mesa's lavapipe (software Vulkan) for the GPU kernels' tests; Chromium (with SwiftShader for
  # WebGPU) for the page's tests; python3 for the source's shape check, python3-venv for the
  # Python package's tests.
  apt_install libvulkan1 mesa-vulkan-drivers chromium python3 python3-venv
fi

# Rust from rustup, unless one as recent as Cargo.toml's rust-version is already here.
load_cargo_env
want="$(rust_version_wanted)"
have="$(rustc --version 2>/dev/null | awk '{print $2}' || true)"
if ! command -v cargo >/dev/null 2>&1 || ! version_at_least "${have%%-*}" "$want"; then
  if command -v rustup >/dev/null 2>&1; then
    retry rustup toolchain install stable --profile minimal
    rustup default stable
  else
    # rustup's toolchain goes first on PATH (a Debian rustc stays where it is).
    retry sh -c 'curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal'
  fi
  # shellcheck disable=SC1091
  . "${CARGO_HOME:-$HOME/.cargo}/env"
  hash -r
fi
require_rust
retry rustup target add wasm32-unknown-unknown

want="$(wasm_bindgen_wanted)"
if [ "$(wasm_bindgen_found)" != "$want" ]; then
  retry cargo install wasm-bindgen-cli --version "=$want"
fi
# From npm, pinned in package-lock.json: binaryen's wasm-opt optimises the WebAssembly module
# (Debian's is too old), playwright-core drives the system Chromium in the browser tests (it
# downloads no browser of its own), typescript type-checks the package's declarations.
# (Skipped when node_modules is newer than the lock file: npm ci always starts over.)
if ! [ node_modules/.package-lock.json -nt package-lock.json ]; then
  retry npm ci --no-audit --no-fund --loglevel=error
fi

if [ "$tests" = 1 ]; then
  # The Python package's tests (python/tests): maturin, pytest, Flower, PyTorch and the rest,
  # pinned, in a virtual environment outside the clone (PyPI's torch wheel is large; installed once).
  PYENV="${LEAKSCOPE_PYENV:-$HOME/.cache/leakscope/pyenv}"
  [ -x "$PYENV/bin/python" ] || python3 -m venv "$PYENV"
  retry "$PYENV/bin/pip" install -q -r python/requirements-test.txt
fi
echo "install: done"
