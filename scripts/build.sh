#!/usr/bin/env bash
# build.sh [PUBLIC_URL]: release build of the static site into dist/ (for GitHub Pages or any static host),
# then wasm-opt when it is installed, then a size report. PUBLIC_URL defaults to "/"; use "/vramfit/"
# for https://USER.github.io/vramfit/.
#
# Size: where the toolchain has the standard library's sources (rustup's rust-src, which setup.sh adds;
# Debian's route always has them) std is compiled with the app, at its opt-level "z" and with std's
# `optimize_for_size` algorithms (smaller sorts and formatting; the same results), instead of linking the
# prebuilt std tuned for speed. wasm-opt -Oz then shrinks the module and scripts/wasm-order.mjs lays out
# similar functions side by side so that gzip finds more repeats, and panics abort at once
# (`-Cpanic=immediate-abort`, see below). VRAMFIT_PLAIN_STD=1 skips the std rebuild.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PUBLIC_URL=${1:-/}
[ -f "${VRAMFIT_TOOLS:-$HOME/.cache/vramfit-tools}/env.sh" ] || bash scripts/setup.sh
# shellcheck disable=SC1091
. "${VRAMFIT_TOOLS:-$HOME/.cache/vramfit-tools}/env.sh"

if [ "${VRAMFIT_PLAIN_STD:-0}" != 1 ]; then
  if [ "$VRAMFIT_WASM_ROUTE" = debian ]; then
    # scripts/wasm-run already builds std from source on this route (and picks its target dir).
    export CARGO_UNSTABLE_BUILD_STD_FEATURES=optimize_for_size
  elif [ -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library/std" ]; then
    # -Zbuild-std is a nightly cargo feature; RUSTC_BOOTSTRAP lets the stable toolchain use it (as the Debian
    # route does). A target dir of its own: std built this way would otherwise invalidate target/'s builds.
    export RUSTC_BOOTSTRAP=1 CARGO_UNSTABLE_BUILD_STD=std,panic_abort
    export CARGO_UNSTABLE_BUILD_STD_FEATURES=optimize_for_size
    export CARGO_TARGET_DIR="$ROOT/target/release-std"
  else
    echo "note: no rust-src (rustup component add rust-src): std is not rebuilt for size" >&2
  fi
fi
# With std rebuilt, std can also drop its panic machinery: `-Cpanic=immediate-abort` makes a panic abort at
# once, with no formatting or unwinding code in the module (about 15 KiB gzip less). The page never panics on
# purpose (every input is validated), and a panic aborts under `panic = "abort"` as well. Probed first: a
# rustc without the strategy keeps the plain abort.
if [ "${VRAMFIT_PLAIN_STD:-0}" != 1 ] && { [ "$VRAMFIT_WASM_ROUTE" = debian ] || [ -n "${CARGO_UNSTABLE_BUILD_STD:-}" ]; } &&
  RUSTC_BOOTSTRAP=1 "${RUSTC:-rustc}" -Zunstable-options -Cpanic=immediate-abort --target wasm32-unknown-unknown \
    --print cfg >/dev/null 2>&1; then
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="--cfg=web_sys_unstable_apis -Zunstable-options -Cpanic=immediate-abort"
fi
scripts/wasm-run trunk build --release --public-url "$PUBLIC_URL" >&2
if command -v wasm-opt >/dev/null; then
  FEATURES=(--enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals
    --enable-reference-types --enable-multivalue)
  for w in dist/*.wasm; do
    wasm-opt -Oz --converge "${FEATURES[@]}" "$w" -o "$w.opt"
    if command -v node >/dev/null; then
      node scripts/wasm-order.mjs "$w.opt" "$w.named"
      wasm-opt "${FEATURES[@]}" --reorder-functions-by-name --strip-debug --strip-producers "$w.named" -o "$w.opt"
      rm -f "$w.named"
    fi
    mv "$w.opt" "$w"
  done
else
  echo "note: wasm-opt not installed (npm binaryen); dist/ is unoptimised but works" >&2
fi
bash scripts/size-report.sh
