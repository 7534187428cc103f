#!/bin/sh
# Acceptance: a C program that knows only <udiag/udiag.h> and pkg-config
# builds against an installed udiag and passes the selftest port.
# Usage: pkgconfig_selftest.sh BUILD_DIR SOURCE_DIR [EXTRA_CFLAGS]
set -eu
BUILD="$1"; SRC="$2"; EXTRA_CFLAGS="${3:-}"
PREFIX=$(mktemp -d)
trap 'rm -rf "$PREFIX"' EXIT
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
cc -Wall -Wextra $EXTRA_CFLAGS -o "$PREFIX/selftest" "$SRC/tests/selftests/user_events_selftest.c" $(pkg-config --cflags --libs udiag)
"$SRC/tests/selftests/run_selftest.sh" "$PREFIX/bin" "$PREFIX/selftest"
