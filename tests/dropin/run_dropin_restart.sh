#!/bin/sh
# An unmodified program under the preload keeps running while udiagd is
# killed (SIGKILL) and another is started on the same directory: its enable
# bit is cleared meanwhile, it registers again by itself, and a reader of the
# new daemon gets its events.
#   run_dropin_restart.sh BIN_DIR PRELOAD PROGRAM
if [ -n "${UDIAG_SANITIZE:-}" ]; then
  echo "SKIP: the preload is built with -fsanitize=$UDIAG_SANITIZE; it cannot be injected into other programs"; exit 77
fi
BIN_DIR="$1"; PRELOAD="$2"; PROGRAM="$3"
DIR=$(mktemp -d)
PIDS=""
cleanup() { for p in $PIDS; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$DIR"; }
fail() { echo "FAIL: $*"; cat "$DIR/out" 2>/dev/null; cleanup; exit 1; }
# Polls (every 50 ms, at most 10 s) until the shell condition $1 holds.
until_true() {
  i=0
  until eval "$1"; do
    i=$((i + 1)); [ $i -lt 200 ] || return 1
    sleep 0.05
  done
}

start_daemon() {
  "$BIN_DIR/udiagd" --dir "$DIR/d" 2>>"$DIR/udiagd.log" & DAEMON=$!
  PIDS="$PIDS $DAEMON"
  until_true '[ -S "$DIR/d/control.sock" ] && "$BIN_DIR/udiag" --dir "$DIR/d" status >/dev/null 2>&1' ||
    fail "udiagd did not start"
  "$BIN_DIR/udiag" --dir "$DIR/d" trace -e dropin_restart >"$DIR/trace$1" 2>/dev/null & PIDS="$PIDS $!"
}
lines() { grep -c "^$1 " "$DIR/out" 2>/dev/null; }

start_daemon 1
LD_PRELOAD="$PRELOAD" UDIAG_DIR="$DIR/d" "$PROGRAM" >"$DIR/out" & PROG=$!
PIDS="$PIDS $PROG"
until_true '[ "$(lines enabled)" = 1 ]' || fail "never enabled"
until_true 'grep -q "dropin_restart: seq" "$DIR/trace1"' || fail "no event reached the first daemon"

kill -9 "$DAEMON"
until_true '[ "$(lines disabled)" = 1 ]' || fail "the bit was not cleared when the daemon died"
start_daemon 2
until_true '[ "$(lines enabled)" = 2 ]' || fail "the program did not register again with the new daemon"
until_true 'grep -q "dropin_restart-$PROG .*dropin_restart: seq" "$DIR/trace2"' ||
  fail "no event of pid $PROG reached the new daemon: $(head -5 "$DIR/trace2")"

kill -TERM "$PROG"
wait "$PROG"; STATUS=$?
[ "$STATUS" = 0 ] || fail "the program exited with status $STATUS"
cleanup
echo "dropin restart: ok"
