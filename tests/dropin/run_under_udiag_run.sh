#!/bin/sh
# Runs an unmodified kernel-ABI program (with its arguments) under
# `udiag run` against a private udiagd; exits with the program's status.
# Usage: run_under_udiag_run.sh BIN_DIR PROGRAM [ARG...]
if [ -n "${UDIAG_SANITIZE:-}" ]; then
  echo "SKIP: the preload is built with -fsanitize=$UDIAG_SANITIZE; it cannot be injected into other programs"; exit 77
fi
BIN_DIR="$1"; shift
unset LD_PRELOAD
DIR=$(mktemp -d)
"$BIN_DIR/udiagd" --dir "$DIR" & PID=$!
i=0; while [ ! -S "$DIR/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -S "$DIR/control.sock" ] || { echo "udiagd did not start"; kill $PID; exit 1; }
UDIAG_DIR="$DIR" "$BIN_DIR/udiag" run -- "$@"; RC=$?
kill $PID; wait $PID 2>/dev/null; rm -rf "$DIR"
exit $RC
