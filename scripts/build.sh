#!/usr/bin/env bash
# build.sh [PUBLIC_URL]: release build of the static site into dist/ (for GitHub Pages or any static host),
# then wasm-opt -Oz when it is installed, then a size report. PUBLIC_URL defaults to "/"; use "/vramfit/"
# for https://USER.github.io/vramfit/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PUBLIC_URL=${1:-/}
[ -f "${VRAMFIT_TOOLS:-$HOME/.cache/vramfit-tools}/env.sh" ] || bash scripts/setup.sh
# shellcheck disable=SC1091
. "${VRAMFIT_TOOLS:-$HOME/.cache/vramfit-tools}/env.sh"
scripts/wasm-run trunk build --release --public-url "$PUBLIC_URL" >&2
if command -v wasm-opt >/dev/null; then
  for w in dist/*.wasm; do
    wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals --enable-reference-types --enable-multivalue "$w" -o "$w.opt" && mv "$w.opt" "$w"
  done
else
  echo "note: wasm-opt not installed (npm binaryen); dist/ is unoptimised but works" >&2
fi
bash scripts/size-report.sh
