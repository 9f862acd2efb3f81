#!/usr/bin/env bash
# check-core.sh: the pure core (model, catalog, advice, doctor, codecs) builds without any browser crate,
# natively and for wasm32, and no browser crate is in its dependency tree. Fails if any of that breaks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo check --lib --no-default-features
cargo check --lib --no-default-features --target wasm32-unknown-unknown
if cargo tree --no-default-features -e normal --target all | grep -E '^[^a-z]*(yew|web-sys|wasm-bindgen|js-sys|gloo) '; then
  echo "check-core: a browser crate is in the core's dependency tree" >&2
  exit 1
fi
echo "check-core: the core builds with no browser crate"
