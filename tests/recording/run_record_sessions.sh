#!/bin/sh
# Several consumers at once, and the flight recorder, against one daemon:
# two `udiag record` sessions and a `udiag trace` each get every event a
# producer writes; `udiag record --overwrite` keeps the newest events.
# Usage: run_record_sessions.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
. "$(dirname "$0")/recording_session.sh"
start_daemon
cleanup() { kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$T"; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
N=20000

# The event exists first, so we can see when every consumer has enabled it.
start_three_consumers "$T/a.dat" "$T/b.ctf" "$T/trace.txt"
"$UDIAG" cat user_events_status | grep -q '^counted # Used by ftrace record$' ||
  { "$UDIAG" cat user_events_status; fail "user_events_status does not say ftrace and record use the event"; }

"$BIN_DIR/counting_producer" $N || fail "the producer failed"
# Every consumer drains what it has, then stops.
i=0; until [ "$(grep -c 'counted: seq=' "$T/trace.txt")" -ge $N ] || [ $i -ge 200 ]; do i=$((i+1)); sleep 0.05; done
sleep 0.5
kill -INT $A $B $C; wait $A; RA=$?; wait $B; RB=$?; wait $C
[ $RA = 0 ] && [ $RB = 0 ] || { cat "$T/a.dat.err" "$T/b.ctf.err"; fail "a recording failed"; }
cat "$T/a.dat.err" "$T/b.ctf.err"
[ "$("$UDIAG" report "$T/a.dat" | grep -c 'counted: seq=')" = $N ] || fail "recording A does not have all $N events"
[ "$("$UDIAG" report "$T/b.ctf" | grep -c 'counted: seq=')" = $N ] || fail "recording B does not have all $N events"
[ "$(grep -c 'counted: seq=' "$T/trace.txt")" = $N ] || fail "trace_pipe does not have all $N events"
# The sessions removed their instances on the way out.
[ -z "$("$UDIAG" ls instances)" ] || fail "record instances were left behind"

# Flight recorder: a small overwrite buffer keeps the newest events only.
# (Paced at about 1 M events/s: a burst faster than the daemon drains would
# lose events in the producer's ring, the newest included.)
"$UDIAG" record --overwrite --size 256 -e counted -o "$T/fr.dat" -- "$BIN_DIR/counting_producer" 100000 1000 2>"$T/fr.err" ||
  { cat "$T/fr.err"; fail "flight recorder failed"; }
cat "$T/fr.err"
"$UDIAG" report "$T/fr.dat" >"$T/fr.txt" || fail "cannot read the flight recording"
kept=$(grep -c 'counted: seq=' "$T/fr.txt")
[ "$kept" -gt 0 ] && [ "$kept" -lt 100000 ] || fail "the flight recorder kept $kept events"
grep -q 'counted: seq=0x1869f (99999)$' "$T/fr.txt" || fail "the newest event is not in the flight recording"
grep -q 'counted: seq=0x0 (0)$' "$T/fr.txt" && fail "the oldest event survived a 256 KB flight recorder"
# Overwritten events are counted as lost, before the oldest kept: together
# with the kept ones they are every event written.
lost=$(sed -n 's/^udiag record: .* \([0-9]*\) lost ->.*/\1/p' "$T/fr.err")
[ $((kept + lost)) = 100000 ] || fail "kept $kept + reported lost $lost is not the 100000 written"
# The summary says where they went (the instance's per_cpu/cpu0/stats).
overwritten=$(sed -n 's/^udiag record: \([0-9]*\) overwritten by newer events.*/\1/p' "$T/fr.err")
in_rings=$(sed -n 's/^udiag record: \([0-9]*\) lost in producers.*/\1/p' "$T/fr.err")
[ $((${overwritten:-0} + ${in_rings:-0})) = "$lost" ] ||
  fail "the summary's overwritten ${overwritten:-0} + lost in rings ${in_rings:-0} is not the $lost lost"
first_line=$(grep -m1 -v '^cpus=' "$T/fr.txt")
echo "$first_line" | grep -q "^CPU:[0-9]* \[LOST $lost EVENTS\]$" || fail "the loss is not reported before the oldest kept event: $first_line"
cleanup
echo "record sessions: ok"
