#!/bin/sh
# The kernel selftest port, built as an unmodified kernel program, under
# `udiag run` against a private udiagd. Usage: run_selftest_under_run.sh BIN_DIR SELFTEST
if [ -n "${UDIAG_SANITIZE:-}" ]; then
  echo "SKIP: the preload is built with -fsanitize=$UDIAG_SANITIZE; it cannot be injected into other programs"; exit 77
fi
BIN_DIR="$1"; SELFTEST="$2"
unset LD_PRELOAD
DIR=$(mktemp -d)
"$BIN_DIR/udiagd" --dir "$DIR" & PID=$!
i=0; while [ ! -S "$DIR/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -S "$DIR/control.sock" ] || { echo "udiagd did not start"; kill $PID; exit 1; }
UDIAG_DIR="$DIR" "$BIN_DIR/udiag" run -- "$SELFTEST"; RC=$?
kill $PID; wait $PID 2>/dev/null; rm -rf "$DIR"
exit $RC
