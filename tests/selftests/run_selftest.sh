#!/bin/sh
# Runs user_events_selftest against a private udiagd. Usage: run_selftest.sh BIN_DIR SELFTEST
BIN_DIR="$1"; SELFTEST="$2"
DIR=$(mktemp -d)
"$BIN_DIR/udiagd" --dir "$DIR" & PID=$!
i=0; while [ ! -S "$DIR/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -S "$DIR/control.sock" ] || { echo "udiagd did not start"; kill $PID; rm -rf "$DIR"; exit 1; }
UDIAG_DIR="$DIR" UDIAG_BIN_DIR="$BIN_DIR" "$SELFTEST"; RC=$?
kill $PID; wait $PID 2>/dev/null; rm -rf "$DIR"
exit $RC
