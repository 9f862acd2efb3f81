#!/usr/bin/env bash
# serve.sh [PORT]: installs what is missing (scripts/setup.sh), builds the app and serves it on 127.0.0.1,
# rebuilding on every source change. Stop with Ctrl-C.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PORT=${1:-${PORT:-8080}}
bash scripts/setup.sh
echo "vramfit will be served at http://127.0.0.1:$PORT/ (first build takes a minute)"
exec scripts/wasm-run trunk serve --address 127.0.0.1 --port "$PORT"
