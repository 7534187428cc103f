#!/bin/sh
# A trace.dat survives its recorder: killed with SIGKILL in the middle of a
# fast recording, the file opens in trace-cmd and `udiag report` as it is
# (up to the last checkpoint), and `udiag recover` keeps the complete pages
# written after it and compacts the file; a killed CTF recording opens in
# babeltrace2, and a killed Perfetto one in protoc, once `udiag recover` has
# cut a torn packet. On a full disk (a 4 MB tmpfs) the
# recorder says so, exits non-zero, and the file keeps what fit; so it does
# when its daemon may not grow the file. A stopped recorder loses nothing of
# a trace.dat: its daemon writes the file.
# Usage: run_record_kill.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
T=$(mktemp -d)
cleanup() {
  kill -9 $DAEMON $R $P 2>/dev/null; wait 2>/dev/null
  umount "$T/full" 2>/dev/null; rm -rf "$T"
}
fail() { echo "FAIL: $*" >&2; cleanup; exit 1; }
export UDIAG_DIR="$T/d"

"$BIN_DIR/udiagd" --dir "$T/d" & DAEMON=$!
i=0; while [ ! -S "$T/d/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done

# Starts `udiag record -o $1` and a producer writing fast (with
# a pause every 1000 events: about 200k events/s, so the files stay quick
# to read).
start_recording() {
  "$UDIAG" record -e counted -o "$1" 2>"$T/record.err" & R=$!
  i=0; until [ "$("$UDIAG" ls instances 2>/dev/null)" ]; do
    i=$((i+1)); [ $i -lt 200 ] || fail "the recording did not set up its instance"; sleep 0.05
  done
  "$BIN_DIR/counting_producer" 1000000000 5000 2>/dev/null & P=$!
}
stop_producer() { kill $P 2>/dev/null; wait $P 2>/dev/null; }
# Waits (10 s at most) for the recording to end on its own, as a failed
# write ends it: non-zero, with a message naming ERRNO. WHAT stopped it.
expect_ended_by() {  # ERRNO WHAT
  i=0; while kill -0 $R 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
  kill -0 $R 2>/dev/null && fail "the recording kept running on $2"
  wait $R; status=$?
  stop_producer
  cat "$T/record.err"
  [ $status -ne 0 ] || fail "the recording exited 0 on $2"
  grep -q "$1" "$T/record.err" || fail "no message names $1"
}

# Both readers agree and the events are in order: prints the count. (One
# awk reads the "seq=0x.. (N)" lines: a sed with a leading .* took 40 s
# of the 6,000,000 events below.)
count_events() {
  kept=$("$UDIAG" report "$1" 2>"$T/report.err" |
         awk '/counted: seq=/ { seq = $NF; gsub(/[()]/, "", seq); seq += 0; if (n++ && seq <= last) bad = 1; last = seq }
              END { if (bad) print "unordered"; else print n + 0 }')
  [ "$kept" != unordered ] || fail "$1: udiag report shows events out of order"
  [ "$kept" -gt 0 ] || { cat "$T/report.err"; fail "$1: udiag report found no event"; }
  shown=$(trace-cmd report "$1" 2>/dev/null | grep -c 'counted:')
  [ "$shown" = "$kept" ] || fail "$1: trace-cmd report shows $shown events, udiag report $kept"
  echo "$kept"
}

# 1. kill -9 of the recorder.
start_recording "$T/k.dat"
sleep 1.5
kill -9 $R; wait $R 2>/dev/null
stop_producer
before=$(count_events "$T/k.dat") || exit 1
echo "after kill -9: $before events readable as the file is"
"$UDIAG" recover "$T/k.dat" || fail "udiag recover failed"
after=$(count_events "$T/k.dat") || exit 1
[ "$after" -ge "$before" ] || fail "recover lost events: $before before, $after after"
size=$(stat -c %s "$T/k.dat")
[ "$size" -lt 1073741824 ] || fail "recover left a sparse file of $size bytes"
"$UDIAG" recover "$T/k.dat" 2>&1 | grep -q "nothing to do" || fail "a second recover should find a finished file"
echo "after udiag recover: $after events, $size bytes"

# 2. kill -9 of a CTF recording: babeltrace2 reads it after `udiag recover`
# (which only cuts a packet the kill may have torn).
start_recording "$T/k.ctf"
sleep 1.5
kill -9 $R; wait $R 2>/dev/null
stop_producer
"$UDIAG" recover "$T/k.ctf" || fail "udiag recover of a CTF trace failed"
ctf=$(babeltrace2 "$T/k.ctf" 2>"$T/bt.err" | grep -c 'counted:') || { cat "$T/bt.err" >&2; fail "babeltrace2 cannot read the killed CTF recording"; }
[ "$ctf" -gt 0 ] || fail "the killed CTF recording has no event"
ours=$("$UDIAG" report "$T/k.ctf" 2>/dev/null | grep -c 'counted:')
[ "$ours" = "$ctf" ] || fail "udiag report shows $ours events of the killed CTF recording, babeltrace2 $ctf"
echo "CTF after kill -9: $ctf events"

# 2b. kill -9 of a Perfetto recording: protoc decodes it after `udiag
# recover` (which only cuts a packet the kill may have torn).
start_recording "$T/k.pftrace"
sleep 1.5
kill -9 $R; wait $R 2>/dev/null
stop_producer
"$UDIAG" recover "$T/k.pftrace" || fail "udiag recover of a Perfetto trace failed"
protoc --decode_raw <"$T/k.pftrace" >"$T/k.raw" 2>"$T/protoc.err" || { cat "$T/protoc.err" >&2; fail "protoc cannot decode the killed Perfetto recording"; }
pf=$(grep -c '"counted"' "$T/k.raw")
[ "$pf" -gt 0 ] || fail "the killed Perfetto recording has no event"
"$UDIAG" recover "$T/k.pftrace" 2>&1 | grep -q "nothing to do" || fail "a second recover should find every packet whole"
echo "Perfetto after kill -9: $pf events"

# 3. A stopped recorder (SIGSTOP, a debugger) costs its trace.dat nothing:
# the daemon writes the pages into the file itself, and only the counting
# waits, in the stream ring. Into a pipe, whose pages the recorder must
# take, the same recording loses what its 64 KiB buffer, the 8 MiB stream
# ring, its 16 MiB pool and the producer's ring (64 MiB at most) do not
# hold: 6000000 events are 120 MB of pages.
N=6000000
record_stopped() {  # OUTPUT: the recording, stopped while N events are written
  "$UDIAG" record --size 64 -e counted -o "$1" 2>"$T/record.err" & R=$!
  # Stopped once its stream is open (it maps the stream's memfd).
  i=0; until ls -l /proc/$R/fd 2>/dev/null | grep -q udiag-stream; do
    i=$((i+1)); [ $i -lt 200 ] || fail "the recording did not open its stream"; sleep 0.05
  done
  kill -STOP $R
  "$BIN_DIR/counting_producer" $N 1000 || fail "the producer failed"
  kill -CONT $R
  sleep 0.5
  kill -INT $R; wait $R || { cat "$T/record.err"; fail "the stopped recording failed"; }
  cat "$T/record.err"
}
lost_in() { sed -n 's/^udiag record: .* \([0-9]*\) lost ->.*/\1/p' "$T/record.err"; }
record_stopped "$T/stopped.dat"
[ "$(lost_in)" = 0 ] || fail "a stopped recording into a file lost events"
[ "$(count_events "$T/stopped.dat")" = $N ] || fail "the file has not all $N events"
mkfifo "$T/pipe"
cat "$T/pipe" >"$T/piped.dat" & C=$!
record_stopped "$T/pipe"
wait $C
[ "$(lost_in)" -gt 0 ] || fail "a stopped recording into a pipe lost nothing: the case above tests nothing"

# 4. A daemon that may not make files that large (its RLIMIT_FSIZE, 1 GiB,
# below the first cpu region of a trace.dat being recorded): its
# write into the recorder's trace.dat fails, the recording ends saying so,
# and the daemon lives on (SIGXFSZ would have ended it).
kill $DAEMON; wait $DAEMON 2>/dev/null
export UDIAG_DIR="$T/limited"
(ulimit -f 1048576; exec "$BIN_DIR/udiagd" --dir "$T/limited") & DAEMON=$!
i=0; while [ ! -S "$T/limited/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
start_recording "$T/limited.dat"
expect_ended_by EFBIG "a file its daemon could not grow"
kill -0 $DAEMON 2>/dev/null || fail "the daemon died of a file it could not grow"
kill $DAEMON; wait $DAEMON 2>/dev/null
export UDIAG_DIR="$T/d"
"$BIN_DIR/udiagd" --dir "$T/d" & DAEMON=$!
i=0; while [ ! -S "$T/d/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done

# 5. A full disk.
mkdir "$T/full"
if ! mount -t tmpfs -o size=4m tmpfs "$T/full" 2>/dev/null; then
  [ "$(id -u)" != 0 ] || fail "cannot mount a small tmpfs as root"
  echo "not root: the full-disk case needs a small tmpfs mount; only the kill was checked"
  cleanup; exit 0
fi
start_recording "$T/full/f.dat"
expect_ended_by ENOSPC "a full disk"
full=$(count_events "$T/full/f.dat") || exit 1
echo "on a full disk: $full events kept"
echo "record kill and full disk: ok"
cleanup
