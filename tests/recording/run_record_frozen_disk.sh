#!/bin/sh
# A trace.dat recording whose disk stops taking writes (fsfreeze of a
# loop-mounted ext4) while a producer floods: once every page the daemon
# has for the file waits for the disk, the daemon leaves the producer's
# rings alone, and the producer drops and counts what does not fit, rather
# than the daemon copying and checking pages only to drop them. Once the
# disk thaws the recording goes on, and every event written is in the file
# once or counted lost. Root only (mount, fsfreeze): exits 77 (skipped)
# otherwise.
# Usage: run_record_frozen_disk.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
. "$(dirname "$0")/recording_session.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: mounting and freezing a file system needs root"; exit 77; }
start_daemon
R= MNT="$T/mnt"
cleanup() {
  fsfreeze -u "$MNT" 2>/dev/null
  [ -n "$R" ] && kill -INT $R 2>/dev/null && wait $R
  umount "$MNT" 2>/dev/null
  kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$T"
}
fail() { echo "FAIL: $*"; cleanup; exit 1; }
N=14000000  # 280 MB of trace.dat: more than the daemon's 96 MiB of file pages and a 64 MiB ring

mkdir "$MNT"
truncate -s 1G "$T/disk.img" && mkfs.ext4 -q -F "$T/disk.img" && mount -o loop "$T/disk.img" "$MNT" ||
  fail "cannot mount an ext4 image on a loop device as root"

"$UDIAG" write --append dynamic_events 'u:counted u64 seq' || fail "cannot create the event"
"$UDIAG" record -e counted -o "$MNT/out.dat" 2>"$T/record.err" & R=$!
i=0; until [ "$("$UDIAG" cat "instances/$("$UDIAG" ls instances 2>/dev/null)/events/user_events/counted/enable" 2>/dev/null)" = 1 ]; do
  i=$((i+1)); [ $i -lt 200 ] || fail "the recording did not enable the event"; sleep 0.05
done
sleep 0.5  # its file handed to the daemon, its header written
fsfreeze -f "$MNT" || fail "cannot freeze $MNT"
timeout 120 "$BIN_DIR/counting_producer" $N 100 || fail "the producer did not finish while the disk was frozen"
fsfreeze -u "$MNT"
sleep 1
kill -INT $R; wait $R || { cat "$T/record.err"; fail "the recording failed"; }
R=
cat "$T/record.err"

kept=$(sed -n 's/^udiag record: \([0-9]*\) events .* \([0-9]*\) lost ->.*/\1/p' "$T/record.err")
lost=$(sed -n 's/^udiag record: \([0-9]*\) events .* \([0-9]*\) lost ->.*/\2/p' "$T/record.err")
in_rings=$(sed -n "s/^udiag record: \([0-9]*\) lost in producers' rings while the daemon's pages waited for the disk.*/\1/p" "$T/record.err")
[ -n "$kept" ] && [ -n "$lost" ] || fail "no summary line"
[ $((kept + lost)) = $N ] || fail "$kept recorded and $lost lost: not the $N written"
[ "${in_rings:-0}" -gt 0 ] || fail "no loss in the producer's rings said to be the disk's"
! grep -q "dropped while the daemon's pages waited for the disk" "$T/record.err" ||
  fail "the daemon drained pages with none to put them in, and dropped them"
got=$("$UDIAG" report "$MNT/out.dat" | grep -c 'counted: seq=')
[ "$got" = "$kept" ] || fail "the file holds $got events, the recording said $kept"
echo "record frozen disk: ok"
cleanup
