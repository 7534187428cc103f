#!/bin/sh
# Runs an unmodified user_events program under libudiag-preload.so against a
# private udiagd, then checks the trace holds its events.
# Usage: run_dropin.sh BIN_DIR PRELOAD PROGRAM
if [ -n "${UDIAG_SANITIZE:-}" ]; then
  echo "SKIP: the preload is built with -fsanitize=$UDIAG_SANITIZE; it cannot be injected into other programs"; exit 77
fi
BIN_DIR="$1"; PRELOAD="$2"; PROGRAM="$3"
DIR=$(mktemp -d)
"$BIN_DIR/udiagd" --dir "$DIR" & PID=$!
i=0; while [ ! -S "$DIR/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -S "$DIR/control.sock" ] || { echo "udiagd did not start"; kill $PID; exit 1; }
fail() { echo "FAIL: $*"; kill $PID; wait $PID 2>/dev/null; rm -rf "$DIR"; exit 1; }

LD_PRELOAD="$PRELOAD" UDIAG_DIR="$DIR" UDIAG_BIN_DIR="$BIN_DIR" "$PROGRAM" || fail "program failed"
# Let the daemon drain the rings.
TRACE=""
for n in 101 102 103 104 105 106 107 108; do
  i=0
  while :; do
    TRACE=$(UDIAG_DIR="$DIR" "$BIN_DIR/udiag" cat trace)
    echo "$TRACE" | grep -q "dropin_test: count=0x$(printf %x $n) ($n)\$" && break
    i=$((i+1)); [ $i -lt 100 ] || { echo "$TRACE"; fail "event count=$n missing from the trace"; }
    sleep 0.05
  done
done
# Without a daemon: ENOENT, as the library gives.
LD_PRELOAD="$PRELOAD" UDIAG_DIR="$DIR/none" sh -c 'exec 3<>/sys/kernel/tracing/user_events_data' 2>/dev/null \
  && fail "open without a daemon succeeded"
kill $PID; wait $PID 2>/dev/null; rm -rf "$DIR"
echo "dropin: ok"
