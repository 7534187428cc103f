#!/bin/sh
# A thread that outgrows its ring moves to a larger one (udiagd
# --ring-max-kb): with the daemon stopped over a burst, a 64 KiB ring that
# may grow to 1 MiB keeps what 64 KiB + 256 KiB + 1 MiB hold, and one that
# may not keeps only 64 KiB's. Either way the events kept are the first
# ones, each once, in order (the daemon drains a thread's old ring before
# its new one, and the write that found a ring full goes into the new
# one), and what was not kept is counted lost.
# Usage: run_record_ring_growth.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
T=$(mktemp -d)
DAEMON=""
cleanup() { [ -n "$DAEMON" ] && { kill -CONT $DAEMON; kill $DAEMON; wait $DAEMON; } 2>/dev/null; rm -rf "$T"; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
N=100000

# burst MAX_KB NAME: records N events written while the daemon is stopped;
# prints the events kept.
burst() {
  "$BIN_DIR/udiagd" --dir "$T/d$2" --ring-kb 64 --ring-max-kb "$1" & DAEMON=$!
  export UDIAG_DIR="$T/d$2"
  i=0; while [ ! -S "$T/d$2/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
  "$UDIAG" record -e counted -o "$T/$2.dat" -- sh -c '
    "$0" "$3" 0 "$1/go$4" & P=$!
    i=0; until [ -e "$1/go$4.ready" ]; do i=$((i+1)); [ $i -lt 200 ] || exit 1; sleep 0.05; done
    kill -STOP "$2"; touch "$1/go$4"; wait $P; R=$?; kill -CONT "$2"; exit $R' \
    "$BIN_DIR/counting_producer" "$T" "$DAEMON" $N "$2" 2>"$T/$2.err" ||
    { cat "$T/$2.err"; fail "the recording with --ring-max-kb $1 failed"; }
  kill $DAEMON; wait $DAEMON; DAEMON=""
  lost=$(sed -n 's/^udiag record: .* \([0-9]*\) lost ->.*/\1/p' "$T/$2.err")
  "$UDIAG" report "$T/$2.dat" | sed -n 's/.*counted: seq=0x\([0-9a-f]*\).*/\1/p' >"$T/$2.seqs"
  kept=$(wc -l <"$T/$2.seqs")
  [ $((kept + lost)) = $N ] || fail "--ring-max-kb $1: $kept kept and $lost lost of $N"
  # In order, each once and none missing before the first lost: the seqs
  # as read are 0, 1, 2, ... (the write that found a ring full went into
  # the larger one).
  python3 -c 'import sys; s=[int(l, 16) for l in open(sys.argv[1])]; sys.exit(s != list(range(len(s))))' \
    "$T/$2.seqs" || fail "--ring-max-kb $1: the kept events are not the first ones in order, each once"
  echo "$kept"
}

# An event here takes 20 bytes of a ring: 64 KiB hold about 3,000 of them,
# 64 KiB + 256 KiB + 1 MiB about 68,000.
fixed=$(burst 64 fixed) || { echo "$fixed"; exit 1; }
grown=$(burst 1024 grown) || { echo "$grown"; exit 1; }
echo "kept $fixed of $N in a ring that may not grow, $grown in one that may"
[ "$fixed" -lt 10000 ] || fail "a 64 KiB ring kept $fixed events: the daemon was not stopped, nothing is tested"
[ "$grown" -gt 40000 ] || fail "a ring that may grow to 1 MiB kept only $grown events"
cleanup
echo PASS
