#!/bin/sh
# A recording whose daemon is killed mid-stream keeps what it received (less
# what the daemon had yet to write into a trace.dat, as it says, counting
# those lost): the recorder says so, exits non-zero, its counts are the
# file's, and it leaves a whole trace.dat that trace-cmd and `udiag report`
# open, in page mode and with CTF's records.
# Usage: run_record_daemon_death.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
T=$(mktemp -d)
cleanup() { kill -9 $DAEMON $P 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
export UDIAG_DIR="$T/d"

for format in dat ctf; do
  "$BIN_DIR/udiagd" --dir "$T/d" & DAEMON=$!
  i=0; while [ ! -S "$T/d/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
  "$UDIAG" record -e counted --format $format -o "$T/x.$format" 2>"$T/$format.err" & R=$!
  i=0; until [ "$("$UDIAG" ls instances 2>/dev/null)" ]; do
    i=$((i+1)); [ $i -lt 200 ] || fail "the recording did not set up its instance"; sleep 0.05
  done
  # A producer that keeps writing, paced so that its events reach the file.
  "$BIN_DIR/counting_producer" 100000000 2000 2>/dev/null & P=$!
  i=0; until [ -s "$T/x.$format" ] || [ $i -ge 100 ]; do i=$((i+1)); sleep 0.05; done
  sleep 0.5
  kill -9 $DAEMON
  wait $R; status=$?
  kill $P 2>/dev/null; wait $P 2>/dev/null
  rm -rf "$T/d"
  cat "$T/$format.err"
  [ $status -ne 0 ] || fail "$format: the recording exited 0 though its daemon died"
  grep -q "the recording ended early" "$T/$format.err" || fail "$format: no message says the recording ended early"
  kept=$("$UDIAG" report "$T/x.$format" 2>"$T/report.err" | grep -c 'counted: seq=')
  [ "$kept" -gt 0 ] || { cat "$T/report.err"; fail "$format: udiag report found no event in what was kept"; }
  # Every event received is in the file, but those in pages the daemon
  # (which writes a trace.dat itself) had not written yet, as it says.
  received=$(sed -n 's/.*keeping the \([0-9]*\) events received/\1/p' "$T/$format.err")
  unwritten=$(sed -n 's/^udiag record: \([0-9]*\) events were in pages the daemon had not written yet.*/\1/p' "$T/$format.err")
  [ "$kept" = $((received - ${unwritten:-0})) ] || fail "$format: $kept events in the file, not $received received less ${unwritten:-0} unwritten"
  # The summary and the count by event say what the file holds, and count
  # the events never written as lost.
  summary=$(sed -n 's/^udiag record: \([0-9]*\) events (.*) in .* s, \([0-9]*\) lost -> .*/\1 \2/p' "$T/$format.err")
  [ "${summary% *}" = "$kept" ] || fail "$format: the summary says '$summary' (events lost), the file has $kept events"
  [ "${summary#* }" -ge "${unwritten:-0}" ] || fail "$format: the summary counts ${summary#* } lost, fewer than the ${unwritten:-0} never written"
  counted=$(awk '$1 == "user_events:counted" {print $2}' "$T/$format.err")
  [ "$counted" = "$kept" ] || fail "$format: the count by event says $counted, the file has $kept"
  if [ $format = dat ]; then
    got=$(trace-cmd report "$T/x.dat" 2>&1 | grep -c 'counted:')
    [ "$got" = "$kept" ] || fail "trace-cmd report shows $got events, udiag report $kept"
  fi
  echo "$format: $kept events kept after the daemon died"
done
echo "record after daemon death: ok"
cleanup
