#!/bin/sh
# Two threads' backlogs on one cpu come out in time order: with the daemon
# stopped, producer A writes its events on cpu 0, then producer B writes
# its own there, each far more than one drain round takes from a ring.
# Once the daemon goes on, a trace.dat recording must give cpu 0 all of
# A's events before B's (time never goes back within a cpu), a CTF
# recording must need no restamping, and trace_pipe text must be in time
# order. Drain rounds used to take an equal share of every ring, so B's
# first events came out before most of A's.
# Usage: run_record_time_order.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
. "$(dirname "$0")/recording_session.sh"
start_daemon
cleanup() { kill -CONT $DAEMON 2>/dev/null; kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$T"; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
# 30000 events of 20 bytes are about 150 ring pages: more than twice a
# round's share of a ring (64 pages), and well within a ring (4 MiB).
N=30000

start_three_consumers "$T/a.dat" "$T/b.ctf" "$T/trace.txt"

# Both producers register and wait for their go file; then the daemon stops.
taskset -c 0 "$BIN_DIR/counting_producer" $N 0 "$T/go_a" & PA=$!
taskset -c 0 "$BIN_DIR/counting_producer" $N 0 "$T/go_b" & PB=$!
i=0; until [ -e "$T/go_a.ready" ] && [ -e "$T/go_b.ready" ]; do
  i=$((i+1)); [ $i -lt 200 ] || fail "the producers did not get ready"; sleep 0.05
done
# wait_for FILE: waits (up to 10 s) for a producer to create FILE.
wait_for() {
  i=0; until [ -e "$1" ]; do i=$((i+1)); [ $i -lt 1000 ] || fail "no $1"; sleep 0.01; done
}
kill -STOP $DAEMON
touch "$T/go_a"; wait_for "$T/go_a.done"
touch "$T/go_b"; wait_for "$T/go_b.done"
kill -CONT $DAEMON
wait $PA || fail "producer A failed"
wait $PB || fail "producer B failed"

i=0; until [ "$(grep -c 'counted: seq=' "$T/trace.txt")" -ge $((2 * N)) ] || [ $i -ge 200 ]; do i=$((i+1)); sleep 0.05; done
sleep 0.5
kill -INT $A $B $C; wait $A; RA=$?; wait $B; RB=$?; wait $C
[ $RA = 0 ] && [ $RB = 0 ] || { cat "$T/a.dat.err" "$T/b.ctf.err"; fail "a recording failed"; }
cat "$T/a.dat.err" "$T/b.ctf.err"

# $1: a report's lines; prints how often time goes back within a cpu.
steps_back_per_cpu() {
  grep 'counted: seq=' "$1" | sed 's/.*\[\([0-9]*\)\] *\([0-9]*\)\.\([0-9]*\):.*/\1 \2\3/' |
    awk '{ if (($1 in last) && $2 < last[$1]) back++; last[$1] = $2 } END { print back + 0 }'
}
"$UDIAG" report "$T/a.dat" >"$T/a.txt" || fail "cannot read the trace.dat recording"
[ "$(grep -c 'counted: seq=' "$T/a.txt")" = $((2 * N)) ] || fail "the trace.dat recording does not have all $((2 * N)) events"
back=$(steps_back_per_cpu "$T/a.txt")
[ "$back" = 0 ] || fail "time goes back $back times within a cpu of the trace.dat recording"
# trace-cmd reads the same order, where it is installed.
if command -v trace-cmd >/dev/null; then
  trace-cmd report "$T/a.dat" >"$T/tc.txt" 2>/dev/null || fail "trace-cmd cannot read the recording"
  back=$(steps_back_per_cpu "$T/tc.txt")
  [ "$back" = 0 ] || fail "trace-cmd report: time goes back $back times within a cpu"
fi

grep -q 'stamped with the time before them' "$T/b.ctf.err" && fail "the CTF recording restamped events"
[ "$("$UDIAG" report "$T/b.ctf" | grep -c 'counted: seq=')" = $((2 * N)) ] || fail "the CTF recording does not have all $((2 * N)) events"

[ "$(grep -c 'counted: seq=' "$T/trace.txt")" = $((2 * N)) ] || fail "trace_pipe does not have all $((2 * N)) events"
back=$(grep 'counted: seq=' "$T/trace.txt" | sed 's/.* \([0-9]*\)\.\([0-9]*\): counted.*/\1\2/' |
  awk '{ if ($1 < last) back++; last = $1 } END { print back + 0 }')
[ "$back" = 0 ] || fail "time goes back $back times in trace_pipe's text"
cleanup
echo "record time order: ok"
