#!/bin/sh
# `udiag record --block`: a producer far faster than the recording, on the
# smallest ring and buffer, loses events without it and none with it; a
# recording that stops reading stalls producers only for its timeout, and
# what was dropped meanwhile is counted.
# Usage: run_record_blocking.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
T=$(mktemp -d)
"$BIN_DIR/udiagd" --dir "$T/d" --ring-kb 4 --ring-max-kb 4 & DAEMON=$!
export UDIAG_DIR="$T/d"
i=0; while [ ! -S "$T/d/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
cleanup() { kill -CONT $R 2>/dev/null; kill $DAEMON $R 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$T"; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
N=300000
lost_in() { sed -n 's/^udiag record: .* \([0-9]*\) lost ->.*/\1/p' "$1"; }
seqs_in() { "$UDIAG" report "$1" | grep -o 'counted: seq=0x[0-9a-f]*' | sort -u | wc -l; }

# Without --block a 4 KiB ring overflows: the scenario does lose events.
"$UDIAG" record --size 64 -e counted -o "$T/drop.dat" -- "$BIN_DIR/counting_producer" $N 2>"$T/drop.err" ||
  { cat "$T/drop.err"; fail "the recording without --block failed"; }
[ "$(lost_in "$T/drop.err")" -gt 0 ] || { cat "$T/drop.err"; fail "nothing was lost without --block: nothing is tested"; }

# A bare --block waits up to 1000 ms; --block=MS sets MS.
for arg in --block=1000 --block; do
  got=$("$UDIAG" record $arg -e counted -o "$T/bare.dat" -- \
    sh -c '"$0" cat "instances/$("$0" ls instances)/blocking_timeout_ms"' "$UDIAG" 2>/dev/null)
  [ "$got" = 1000 ] || fail "$arg set blocking_timeout_ms to '$got', not 1000"
done

# With it, every event arrives once.
"$UDIAG" record --block --size 64 -e counted -o "$T/block.dat" -- "$BIN_DIR/counting_producer" $N 2>"$T/block.err" ||
  { cat "$T/block.err"; fail "the recording with --block failed"; }
cat "$T/block.err"
[ "$(lost_in "$T/block.err")" = 0 ] || fail "--block lost events"
[ "$(seqs_in "$T/block.dat")" = $N ] || fail "--block recorded $(seqs_in "$T/block.dat") distinct events, not $N"

# Several producers at once, each its own ring. (Their sharing of the
# buffer's room shows at scale: `make bench`, 8 producers with --block.)
"$UDIAG" record --block --size 64 -e counted -o "$T/four.dat" -- \
  sh -c 'for i in 1 2 3 4; do "$0" "$1" & done; wait' "$BIN_DIR/counting_producer" $N 2>"$T/four.err" ||
  { cat "$T/four.err"; fail "the recording of four producers failed"; }
[ "$(lost_in "$T/four.err")" = 0 ] || { cat "$T/four.err"; fail "--block lost events of four producers"; }
[ "$("$UDIAG" report "$T/four.dat" | grep -c 'counted: seq=')" = $((4 * N)) ] || fail "four producers: not $((4 * N)) events"

# A thread's first write waits for its new ring's ack only briefly: a daemon
# stopped (or swamped) then maps the ring later. Meanwhile the ring waits for
# room as --block asks, rather than drop what does not fit in its 4 KiB.
"$UDIAG" record --block --size 64 -e counted -o "$T/late.dat" -- sh -c '
  "$0" 100000 0 "$1/go" & P=$!
  i=0; until [ -e "$1/go.ready" ]; do i=$((i+1)); [ $i -lt 200 ] || exit 1; sleep 0.05; done
  kill -STOP "$2"; touch "$1/go"; sleep 0.2; kill -CONT "$2"
  wait $P' "$BIN_DIR/counting_producer" "$T" "$DAEMON" 2>"$T/late.err" ||
  { cat "$T/late.err"; fail "the recording of a producer that met a stopped daemon failed"; }
cat "$T/late.err"
[ "$(lost_in "$T/late.err")" = 0 ] || fail "a ring the daemon mapped late dropped events under --block"
[ "$(seqs_in "$T/late.dat")" = 100000 ] || fail "late ring: $(seqs_in "$T/late.dat") distinct events, not 100000"

# A recorder stopped (SIGSTOP) while N events are written: into a
# trace.dat the daemon writes the file itself, so nothing waits on the
# recorder and nothing is lost; into CTF, which the recorder writes, the
# recording stops reading: producers wait at most its timeout, then events
# are dropped and counted, and the producer finishes. For CTF, enough
# events to overflow what the stream holds too: its 8 MiB ring and its
# pool's 16 MiB of pages, at 20 bytes an event.
stopped_recording() {  # OUTPUT N: prints "lost kept"
  "$UDIAG" record --block=200 --size 64 -e counted -o "$1" 2>"$T/stopped.err" & R=$!
  # Stopped once its stream is open (it maps the stream's memfd): stopped
  # sooner, it would not have enabled the event or attached the file yet.
  i=0; until ls -l /proc/$R/fd 2>/dev/null | grep -q udiag-stream; do
    i=$((i+1)); [ $i -lt 200 ] || fail "the recording did not open its stream"; sleep 0.05
  done
  [ "$("$UDIAG" cat "instances/$("$UDIAG" ls instances)/blocking_timeout_ms")" = 200 ] ||
    fail "--block=200 did not set blocking_timeout_ms to 200"
  kill -STOP $R
  timeout 120 "$BIN_DIR/counting_producer" "$2" || fail "the producer did not finish while the recording was stopped"
  kill -CONT $R
  sleep 0.5
  kill -INT $R; wait $R || { cat "$T/stopped.err"; fail "the stopped recording into $1 failed"; }
  cat "$T/stopped.err" >&2
  echo "$(lost_in "$T/stopped.err") $(seqs_in "$1")"
}
set -- $(stopped_recording "$T/stopped.dat" 1000000)
[ "$1" = 0 ] && [ "$2" = 1000000 ] || fail "a stopped recorder's trace.dat lost $1 and kept $2 of 1000000"
set -- $(stopped_recording "$T/stopped.ctf" 2000000)
[ "$1" -gt 0 ] || fail "a stopped CTF recording lost nothing"
[ $(($1 + $2)) = 2000000 ] || fail "CTF: kept $2 + lost $1 is not the 2000000 written"
echo "record --block: ok"
cleanup
