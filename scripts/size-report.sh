#!/usr/bin/env bash
# size-report.sh [DIST]: what a first visit transfers: each file of dist/ raw and gzip -9, and the total.
set -euo pipefail
DIST=${1:-dist}
find "$DIST" -type f \( -name '*.wasm' -o -name '*.js' -o -name '*.css' -o -name '*.html' -o -name '*.svg' \) |
  sort | while read -r f; do
    printf '%s %s %s\n' "${f#"$DIST"/}" "$(stat -c %s "$f")" "$(gzip -9 -c "$f" | wc -c)"
  done | awk '{ printf "%-44s %9.1f KiB raw %9.1f KiB gzip\n", $1, $2/1024, $3/1024; r += $2; g += $3 }
    END { printf "%-44s %9.1f KiB raw %9.1f KiB gzip\n", "total transfer (first visit)", r/1024, g/1024 }'
