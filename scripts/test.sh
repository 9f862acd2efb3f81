#!/usr/bin/env bash
# test.sh: runs every test of vramfit and ends with one summary line.
#   0. core: the model, catalog, advice, doctor and codecs build with no browser crate (scripts/check-core.sh);
#   1. native: cargo test (memory model, catalog, URL codec, CLI, components rendered with yew's SSR);
#   2. browser: the wasm-bindgen-test suite in headless Chromium (the real app mounted, DOM asserted);
#   3. end-to-end: the release build driven by Playwright in Debian's Chromium like a user.
# First installs whatever is missing (scripts/setup.sh --browser). Fails loudly if Chromium can't be had.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh --browser || { echo "test.sh: setup failed (see above)"; exit 1; }
# shellcheck disable=SC1091
. "${VRAMFIT_TOOLS:-$HOME/.cache/vramfit-tools}/env.sh"

LOG=$(mktemp)
failed_steps=()
step() { # name command...: runs a step, keeps its output for the summary
  local name=$1
  shift
  echo "=== $name: $*"
  "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || failed_steps+=("$name (exit $rc)")
}

step core bash scripts/check-core.sh
step native cargo test
step browser scripts/wasm-run cargo test --target wasm32-unknown-unknown --tests
if step build bash scripts/build.sh && [ -f dist/index.html ]; then
  step e2e node --test --test-reporter=spec tests/e2e/
fi

# cargo's "test result: ok. N passed; M failed" and node's "ℹ pass N" / "ℹ fail N" lines, added up.
passed=$(awk '/^test result:/ {for (i = 1; i <= NF; i++) if ($(i+1) ~ /^passed/) s += $i} /^ℹ pass / {s += $3} END {print s + 0}' "$LOG")
failed=$(awk '/^test result:/ {for (i = 1; i <= NF; i++) if ($(i+1) ~ /^failed/) s += $i} /^ℹ fail / {s += $3} END {print s + 0}' "$LOG")
rm -f "$LOG"
if [ ${#failed_steps[@]} -gt 0 ]; then
  echo "failed steps: ${failed_steps[*]}"
  [ "$failed" -gt 0 ] || failed=${#failed_steps[@]}
fi
echo "$passed passed, $failed failed"
[ ${#failed_steps[@]} -eq 0 ] && [ "$failed" -eq 0 ]
