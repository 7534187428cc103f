#!/bin/sh
# `udiag run`: the unmodified user_events program, without LD_PRELOAD set
# here, and shell tracefs habits on the real /sys/kernel/tracing paths, both
# inside udiag run's mount namespace, against a private udiagd of the test.
# Then nothing may be left mounted in the host namespace nor serving.
# Usage: run_udiag_run.sh BIN_DIR PROGRAM
# Exits 77 (skipped) if a mount namespace or a FUSE mount is not permitted.
if [ -n "${UDIAG_SANITIZE:-}" ]; then
  echo "SKIP: the preload is built with -fsanitize=$UDIAG_SANITIZE; it cannot be injected into other programs"; exit 77
fi
BIN_DIR="$1"; PROGRAM="$2"
unset LD_PRELOAD
DIR=$(mktemp -d)
OUT=$(mktemp)
"$BIN_DIR/udiagd" --dir "$DIR" & PID=$!
i=0; while [ ! -S "$DIR/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
[ -S "$DIR/control.sock" ] || { echo "udiagd did not start"; kill $PID; exit 1; }
cleanup() { kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR" "$OUT"; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
UDIAG="$BIN_DIR/udiag"
export UDIAG_DIR="$DIR" UDIAG_BIN_DIR="$BIN_DIR"

# Can we at all? A namespace or FUSE refused: skip, saying which.
if ! "$UDIAG" run -- true 2>"$OUT"; then
  if grep -q "cannot enter a mount namespace\|cannot mount\|cannot use /dev/fuse" "$OUT"; then
    cat "$OUT"; echo "SKIP: udiag run cannot set up its namespace here"; cleanup; exit 77
  fi
  cat "$OUT"; fail "udiag run -- true failed"
fi

# 1. tracefs habits on the real paths (before the program, so runtest is the
# only event).
"$UDIAG" run -- bash -c 'echo "u:runtest u32 x" >> /sys/kernel/tracing/dynamic_events && cat /sys/kernel/tracing/dynamic_events && cat /sys/kernel/tracing/user_events_status' >"$OUT" 2>&1 \
  || { cat "$OUT"; fail "tracefs commands failed under udiag run"; }
cat "$OUT"
grep -q '^u:runtest u32 x$' "$OUT" || fail "dynamic_events does not list u:runtest"
grep -q 'runtest' "$OUT" || fail "user_events_status does not list runtest"
grep -q 'Active: 1' "$OUT" || fail "user_events_status does not say Active: 1"
# The daemon outside saw it too.
"$UDIAG" cat dynamic_events | grep -q '^u:runtest u32 x$' || fail "the daemon does not have u:runtest"

# 2. The dropin program (it enables its event with `udiag write`).
"$UDIAG" run -- "$PROGRAM" || fail "program failed under udiag run"
for n in 101 102 103 104 105 106 107 108; do
  i=0
  while :; do
    TRACE=$("$UDIAG" cat trace)
    echo "$TRACE" | grep -q "dropin_test: count=0x$(printf %x $n) ($n)\$" && break
    i=$((i+1)); [ $i -lt 100 ] || { echo "$TRACE"; fail "event count=$n missing from the trace"; }
    sleep 0.05
  done
done

# 3. Status, signal and not-found exit codes.
"$UDIAG" run -- sh -c 'exit 7'; [ $? -eq 7 ] || fail "exit status not passed on"
"$UDIAG" run -- sh -c 'kill -TERM $$'; [ $? -eq 143 ] || fail "signal status not 128+15"
"$UDIAG" run -- /nonexistent/program 2>/dev/null; [ $? -eq 127 ] || fail "not found is not 127"

# 4. Nothing left behind in the host namespace.
# Only mounts of this test count: other tests may mount FUSE at the same time.
grep -q ' /sys/kernel/tracing fuse\| /sys/kernel/debug/tracing fuse' /proc/mounts &&
  { grep fuse /proc/mounts; fail "a FUSE mount was left in the host namespace"; }
grep -q '^udiag /sys/kernel' /proc/mounts && fail "udiag mounted on /sys/kernel in the host namespace"
# A FUSE server or supervisor left behind would be a `udiag` process with
# this test's UDIAG_DIR in its environment (the daemon was started before it
# was exported).
leftovers() {
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$PID" ] || [ "$pid" = "$$" ] && continue
    [ "$(cat "$p/comm" 2>/dev/null)" = udiag ] || continue
    tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qx "UDIAG_DIR=$DIR" && echo "$pid"
  done
}
i=0
while [ -n "$(leftovers)" ]; do
  i=$((i+1)); [ $i -lt 40 ] || { ps -o pid,ppid,args -p "$(leftovers | tr '\n' ' ')"; fail "udiag processes were left running"; }
  sleep 0.05
done
cleanup
echo "dropin udiag run: ok"
