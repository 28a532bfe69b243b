# Sourced by every script in scripts/: the build directory, a retry for network steps, and the
# Rust toolchain found where scripts/install.sh put it, checked against Cargo.toml's rust-version.
# A fresh rustup install puts cargo in ~/.cargo/bin and edits the profile of shells started
# later, so a script run from the shell that ran install.sh must find it itself.

LEAKSCOPE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/leakscope/target}"

retry() {
  local n=0
  until "$@"; do
    n=$((n + 1))
    if [ "$n" -ge 5 ]; then echo "failed after $n tries: $*" >&2; return 1; fi
    echo "retrying in $((n * 10)) s: $*" >&2
    sleep $((n * 10))
  done
}

# Put rustup's cargo on PATH when the shell does not have it yet.
load_cargo_env() {
  local env_file="${CARGO_HOME:-$HOME/.cargo}/env"
  if ! command -v cargo >/dev/null 2>&1 && [ -f "$env_file" ]; then
    # shellcheck disable=SC1090
    . "$env_file"
  fi
}

# wasm-bindgen's CLI must be the exact version of the wasm-bindgen crate in Cargo.lock: that one,
# and the one on PATH (empty where there is none).
wasm_bindgen_wanted() {
  grep -A1 '^name = "wasm-bindgen"$' "$LEAKSCOPE_ROOT/Cargo.lock" | sed -n 's/^version = "\(.*\)"$/\1/p'
}
wasm_bindgen_found() {
  wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true
}

# The rust-version Cargo.toml asks for, e.g. 1.95.
rust_version_wanted() {
  sed -n 's/^rust-version = "\([0-9.]*\)"$/\1/p' "$LEAKSCOPE_ROOT/Cargo.toml" | head -n 1
}

# 0 when version $1 (x.y[.z]) is at least $2.
version_at_least() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# Fail with a plain message when there is no cargo, or when its Rust is older than rust-version.
require_rust() {
  load_cargo_env
  local want have
  want="$(rust_version_wanted)"
  if ! command -v cargo >/dev/null 2>&1; then
    echo "leakscope: no Rust toolchain found (cargo is not on PATH, nor in ${CARGO_HOME:-$HOME/.cargo}/bin)." >&2
    echo "  Install it with: ./scripts/install.sh" >&2
    exit 1
  fi
  have="$(rustc --version 2>/dev/null | awk '{print $2}')"
  have="${have%%-*}"
  if [ -z "$have" ] || ! version_at_least "$have" "$want"; then
    echo "leakscope: needs Rust $want or later (Cargo.toml's rust-version); found ${have:-no rustc} at $(command -v rustc || echo '?')." >&2
    if command -v rustup >/dev/null 2>&1; then
      echo "  Update it with: rustup update stable" >&2
    else
      echo "  This Rust does not come from rustup: ./scripts/install.sh installs rustup's, which then comes first on PATH." >&2
    fi
    exit 1
  fi
}
