#!/bin/sh
# Builds the C fake provider: build.sh OUT.wasm
# Needs Debian's clang, lld, wasi-libc and libclang-rt-dev-wasm32.
set -eu
out=${1:?usage: build.sh OUT.wasm}
cd "$(dirname "$0")"
mkdir -p "$(dirname "$out")"
exec ${CLANG:-clang} --target=wasm32-wasi -O2 -mexec-model=reactor -Wall -Werror \
  -Wl,--strip-all -o "$out" fake.c
