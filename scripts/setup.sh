#!/usr/bin/env bash
# setup.sh [--browser]: installs what vramfit's build needs, and only what is missing (idempotent).
#
#   * the wasm32-unknown-unknown standard library: `rustup target add` first; where that cannot download
#     (air-gapped or mirrored machines), Debian's rustc-web + rust-web-src + lld, building std with -Zbuild-std;
#   * on the rustup route, rust-src, so that the release build can compile std for size (optional);
#   * wasm-bindgen-cli at exactly the version of the wasm-bindgen crate in Cargo.lock (reinstalled on mismatch);
#   * trunk (pinned), into ~/.cargo/bin;
#   * wasm-opt (npm `binaryen`) when Node.js/npm are present; the build skips it with a note otherwise;
#   * with --browser: Debian's chromium + chromium-driver, and playwright-core (npm) for the end-to-end test.
#
# It writes $VRAMFIT_TOOLS/env.sh (default ~/.cache/vramfit-tools) that the other scripts source.
# The Debian fallback is confined to wasm builds by scripts/wasm-run; native builds keep the rustup toolchain.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${VRAMFIT_TOOLS:-$HOME/.cache/vramfit-tools}
TRUNK_VERSION=0.21.14       # 0.22 needs rustc >= 1.96.1
BINARYEN_VERSION=132.0.0    # Debian bookworm's binaryen 108 cannot parse current rustc output
PLAYWRIGHT_VERSION=1.65.1
WANT_BROWSER=0
[ "${1:-}" = "--browser" ] && WANT_BROWSER=1

export DEBIAN_FRONTEND=noninteractive
export PATH="$HOME/.cargo/bin:$PATH"
log() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

APT_UPDATED=0
apt_install() { # installs the missing packages among "$@"; apt-get update at most once, only when needed
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "apt-get not found; install ${missing[*]} by hand"
  log "apt-get install ${missing[*]}"
  if [ $APT_UPDATED -eq 0 ]; then $SUDO apt-get update -qq || true; APT_UPDATED=1; fi
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

command -v cargo >/dev/null || die "no Rust toolchain: install one from https://rustup.rs first"
mkdir -p "$TOOLS/bin"

# ---------------------------------------------------------------- wasm32 standard library
has_rustup_wasm() {
  command -v rustup >/dev/null && rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown
}
ROUTE=${WASM_ROUTE:-}
if [ -z "$ROUTE" ]; then
  if has_rustup_wasm; then
    ROUTE=rustup
  elif command -v rustup >/dev/null && log "rustup target add wasm32-unknown-unknown (timeout 180 s)" &&
    timeout 180 rustup target add wasm32-unknown-unknown >&2 && has_rustup_wasm; then
    ROUTE=rustup
  else
    ROUTE=debian
  fi
fi
if [ "$ROUTE" = debian ]; then
  log "rustup cannot provide the wasm32 target here: using Debian's rustc-web with -Zbuild-std"
  apt_install rustc-web cargo-web rust-web-src rust-web-llvm lld-22
  /usr/bin/rustc --print target-list | grep -qx wasm32-unknown-unknown || die "Debian rustc lacks wasm32"
  [ -d /usr/lib/rustlib/src/rust/library/std ] || die "rust-web-src is missing std sources"
  [ -x /usr/bin/rust-lld ] || $SUDO ln -sf lld-22 /usr/bin/rust-lld
  mkdir -p "$TOOLS/debian-shim"
  for t in cargo rustc rustdoc; do ln -sfn "/usr/bin/$t" "$TOOLS/debian-shim/$t"; done
fi
log "wasm32 route: $ROUTE"
# The release build compiles std with the app when its sources are there (scripts/build.sh); optional.
if [ "$ROUTE" = rustup ] && [ ! -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library/std" ]; then
  log "rustup component add rust-src (timeout 180 s)"
  timeout 180 rustup component add rust-src >&2 ||
    log "note: rust-src unavailable; release builds link the prebuilt std (a larger wasm)"
fi

# ---------------------------------------------------------------- cargo-installed tools
WBG_VERSION=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' "$ROOT/Cargo.lock")
[ -n "$WBG_VERSION" ] || die "wasm-bindgen not found in Cargo.lock"
cargo_install() { # crate version binary: installs unless `binary --version` already reports that version
  local crate=$1 ver=$2 bin=$3 have
  have=$("$bin" --version 2>/dev/null | awk '{print $2}' || true)
  if [ "$have" = "$ver" ]; then return 0; fi
  [ -n "$have" ] && log "$bin is $have but $ver is needed: reinstalling"
  log "cargo install $crate $ver (a few minutes the first time)"
  # --locked first; a registry mirror may lack one locked dependency, then resolve afresh.
  cargo install "$crate" --version "$ver" --locked --force >&2 ||
    cargo install "$crate" --version "$ver" --force >&2
  [ "$("$bin" --version | awk '{print $2}')" = "$ver" ] || die "$bin --version does not report $ver after install"
}
cargo_install wasm-bindgen-cli "$WBG_VERSION" wasm-bindgen
[ "$(wasm-bindgen-test-runner --version | awk '{print $2}')" = "$WBG_VERSION" ] ||
  die "wasm-bindgen-test-runner does not match Cargo.lock's wasm-bindgen $WBG_VERSION"
cargo_install trunk "$TRUNK_VERSION" trunk

# ---------------------------------------------------------------- npm tools (optional wasm-opt, playwright)
NODE_DIR="$TOOLS/node"
npm_have() { [ "$(node -p "require('$NODE_DIR/node_modules/$1/package.json').version" 2>/dev/null)" = "$2" ]; }
npm_add() {
  mkdir -p "$NODE_DIR"
  [ -f "$NODE_DIR/package.json" ] || echo '{"private":true}' >"$NODE_DIR/package.json"
  (cd "$NODE_DIR" && npm install --no-audit --no-fund --silent "$@" >&2)
}
if [ $WANT_BROWSER = 1 ] && ! command -v npm >/dev/null; then apt_install nodejs npm; fi
if command -v npm >/dev/null; then
  if ! npm_have binaryen "$BINARYEN_VERSION"; then
    npm_add "binaryen@$BINARYEN_VERSION" || log "note: npm binaryen unavailable; release builds skip wasm-opt"
  fi
  [ -x "$NODE_DIR/node_modules/binaryen/bin/wasm-opt" ] &&
    ln -sfn "$NODE_DIR/node_modules/binaryen/bin/wasm-opt" "$TOOLS/bin/wasm-opt"
fi

# ---------------------------------------------------------------- browser tests
if [ $WANT_BROWSER = 1 ]; then
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    apt_install chromium chromium-driver fonts-dejavu-core fonts-noto-cjk ||
      die "Chromium and chromedriver are required for the browser tests and could not be installed"
  fi
  command -v chromium >/dev/null || die "chromium is not on PATH after install"
  command -v chromedriver >/dev/null || die "chromedriver is not on PATH after install"
  npm_have playwright-core "$PLAYWRIGHT_VERSION" || npm_add "playwright-core@$PLAYWRIGHT_VERSION" ||
    die "npm could not install playwright-core (needed for the end-to-end test)"
fi

cat >"$TOOLS/env.sh" <<EOF
# Written by scripts/setup.sh; sourced by scripts/*.sh.
export VRAMFIT_WASM_ROUTE=$ROUTE
export VRAMFIT_TOOLS="$TOOLS"
export PATH="$TOOLS/bin:\$HOME/.cargo/bin:\$PATH"
export NODE_PATH="$NODE_DIR/node_modules\${NODE_PATH:+:\$NODE_PATH}"
export TRUNK_SKIP_VERSION_CHECK=true
EOF
log "ready (route $ROUTE, wasm-bindgen $WBG_VERSION, trunk $TRUNK_VERSION)"
