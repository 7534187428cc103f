#!/bin/sh
# A recording whose records wait in its instance's buffer (Perfetto, CTF's
# record path, export) stops reading (SIGSTOP) while a producer writes a
# burst its ring holds. The daemon stops draining the ring while an eighth
# of the buffer is still free, rather than fill the buffer and drop the
# rest of a round there; what it left waits in the ring, and once the
# recorder reads again every event arrives, none lost or dropped.
# Usage: run_record_stopped_reader.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
T=$(mktemp -d)
R=""
# A 16 MiB ring that does not grow holds the whole burst (20 bytes an event).
"$BIN_DIR/udiagd" --dir "$T/d" --ring-kb 16384 --ring-max-kb 16384 & DAEMON=$!
export UDIAG_DIR="$T/d"
i=0; while [ ! -S "$T/d/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
cleanup() { [ -n "$R" ] && kill -CONT $R 2>/dev/null; kill $DAEMON $R 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$T"; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
N=200000

"$UDIAG" record --format perfetto --size 256 -e counted -o "$T/x.pftrace" 2>"$T/err" & R=$!
# Stopped once its stream is open (it maps the stream's memfd).
i=0; until ls -l /proc/$R/fd 2>/dev/null | grep -q udiag-stream; do
  i=$((i+1)); [ $i -lt 200 ] || fail "the recording did not open its stream"; sleep 0.05
done
kill -STOP $R
timeout 60 "$BIN_DIR/counting_producer" $N || fail "the producer did not finish while the recording was stopped"
sleep 0.5  # the daemon has taken what it will
dropped=$("$UDIAG" cat "instances/$("$UDIAG" ls instances)/per_cpu/cpu0/stats" | sed -n 's/^dropped events: //p')
kill -CONT $R
sleep 1
kill -INT $R; wait $R || { cat "$T/err"; fail "the recording failed"; }
R=""
cat "$T/err"
[ "$dropped" = 0 ] || fail "the daemon dropped $dropped events into the stopped recorder's full buffer"
kept=$(sed -n 's/^udiag record: \([0-9]*\) events .*/\1/p' "$T/err")
lost=$(sed -n 's/^udiag record: .* \([0-9]*\) lost ->.*/\1/p' "$T/err")
[ "$kept" = $N ] && [ "$lost" = 0 ] || fail "kept $kept and lost $lost of $N"
echo "record stopped reader: ok"
cleanup
