#!/bin/sh
# `udiag record` as a new user runs it, checked by the real readers:
# trace.dat with trace-cmd, CTF with babeltrace2, Perfetto with protoc, and
# `udiag report`/`convert` round trips. Starts no daemon: udiag record does.
# Usage: run_record_readers.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
T=$(mktemp -d)
unset UDIAG_DIR
export UDIAG_DIR="$T/no-daemon-here"
fail() { echo "FAIL: $*"; rm -rf "$T"; exit 1; }

# 1. trace.dat: every event of the example, with its fields.
"$UDIAG" record -o "$T/t.dat" -- "$BIN_DIR/example_cpp" 4 2>"$T/err" || { cat "$T/err"; fail "record to trace.dat"; }
cat "$T/err"
grep -q 'user_events:http_request  *4$' "$T/err" || fail "the summary does not count 4 http_request"
grep -q 'user_events:packet  *4$' "$T/err" || fail "the summary does not count 4 packet (they alternate with http_request on a page)"
grep -q ' 0 lost' "$T/err" || fail "the summary reports losses"
trace-cmd report "$T/t.dat" >"$T/report" 2>&1 || { cat "$T/report"; fail "trace-cmd report failed"; }
cat "$T/report"
grep -q 'FAILED TO PARSE' "$T/report" && fail "trace-cmd could not parse an event"
[ "$(grep -c 'http_request: *status=200 latency_ns=1500 path=/items/0$' "$T/report")" = 1 ] ||
  fail "trace-cmd report lacks the first http_request with its fields"
# Raw field view: dynamic byte arrays too.
trace-cmd report -R "$T/t.dat" 2>&1 | grep -q 'packet: *kind=65 bytes=ARRAY\[de, ad, 00\]$' ||
  fail "trace-cmd report -R lacks the first packet's bytes"
[ "$(grep -c 'http_request:' "$T/report")" = 4 ] || fail "trace-cmd report does not show 4 http_request"
[ "$(grep -c 'packet: *kind=' "$T/report")" = 4 ] || fail "trace-cmd report does not show 4 packet"
grep -q 'example_cpp-' "$T/report" || fail "trace-cmd report does not name the task"
trace-cmd report --check-events "$T/t.dat" >/dev/null 2>&1 || fail "trace-cmd report --check-events"

# 1b. A lone producer that pauses between bursts: the daemon keeps its
# pages whole although they span the pauses (nobody else's events can fall
# between). trace-cmd reads every event, in order, its time never going back.
"$UDIAG" record -e counted -o "$T/paced.dat" -- "$BIN_DIR/counting_producer" 20000 2000 2>"$T/err" ||
  { cat "$T/err"; fail "record a paced producer"; }
grep -q ' 0 lost' "$T/err" || { cat "$T/err"; fail "the paced recording lost events"; }
trace-cmd report "$T/paced.dat" 2>/dev/null | awk '
  BEGIN { n = 0 }
  / counted: / {
    t = $3; sub(/:$/, "", t); seq = $NF; sub(/^seq=/, "", seq)
    if (seq + 0 != n) { print "event " n " is seq " seq; bad = 1; exit }
    if (n > 0 && t + 0 < last + 0) { print "time goes back at seq " seq; bad = 1; exit }
    last = t; n++
  }
  END { if (!bad && n != 20000) { print n " events"; bad = 1 } exit bad }' ||
  fail "trace-cmd does not read the paced producer's 20000 events in order"

# 2. udiag report reads it back, as text and JSON.
"$UDIAG" report "$T/t.dat" >"$T/ureport" || fail "udiag report"
[ "$(grep -c 'http_request: status=' "$T/ureport")" = 4 ] || { cat "$T/ureport"; fail "udiag report lacks events"; }
"$UDIAG" report --json "$T/t.dat" >"$T/json" || fail "udiag report --json"
python3 - "$T/json" <<'PY' || fail "udiag report --json is not right"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
req = [e for e in events if e.get("event") == "http_request"]
assert len(req) == 4, req
assert req[0]["fields"]["status"] == 200 and req[0]["fields"]["path"] == "/items/0", req[0]
assert req[1]["fields"]["status"] == 404, req[1]
assert all(e["comm"] == "example_cpp" for e in events), events
PY

# 3. CTF: babeltrace2 prints every field.
"$UDIAG" record --format ctf -o "$T/t.ctf" -- "$BIN_DIR/example_cpp" 3 2>"$T/err" || { cat "$T/err"; fail "record to CTF"; }
babeltrace2 "$T/t.ctf" >"$T/bt" 2>&1 || { cat "$T/bt"; fail "babeltrace2 failed"; }
cat "$T/bt"
[ "$(grep -c 'http_request' "$T/bt")" = 3 ] || fail "babeltrace2 does not show 3 http_request"
grep 'http_request' "$T/bt" | head -1 | grep -q 'status = 200' || fail "babeltrace2 lacks the status field"
grep 'http_request' "$T/bt" | head -1 | grep -q 'path = "/items/0"' || fail "babeltrace2 lacks the path field"

# 4. convert trace.dat -> CTF -> trace.dat keeps the events.
"$UDIAG" convert "$T/t.dat" "$T/c.ctf" || fail "convert to CTF"
babeltrace2 "$T/c.ctf" | grep -c 'http_request' | grep -qx 4 || fail "converted CTF lacks events"
"$UDIAG" convert "$T/c.ctf" "$T/c.dat" || fail "convert back to trace.dat"
trace-cmd report "$T/c.dat" 2>&1 | grep -c 'http_request: *status=' | grep -qx 4 || fail "round trip lost events"

# 5. Perfetto: a protobuf Trace with the events.
"$UDIAG" record -o "$T/t.pftrace" -- "$BIN_DIR/example_cpp" 2 2>"$T/err" || { cat "$T/err"; fail "record to Perfetto"; }
protoc --decode_raw <"$T/t.pftrace" >"$T/raw" || fail "the Perfetto file is not protobuf"
grep -q 'http_request' "$T/raw" || fail "the Perfetto file lacks the events"
# Each cpu's events are a packet sequence of their own (2 + cpu), in time
# order within it: two producers on two cpus (one, if there is only one).
last_cpu=$(($(nproc) > 1 ? 1 : 0))
"$UDIAG" record -e counted -o "$T/cpus.pftrace" -- sh -c "taskset -c 0 '$BIN_DIR/counting_producer' 20000 500 &
  taskset -c $last_cpu '$BIN_DIR/counting_producer' 20000 500; wait" 2>"$T/err" || { cat "$T/err"; fail "record two cpus to Perfetto"; }
protoc --decode_raw <"$T/cpus.pftrace" | awk -v cpus=$((last_cpu + 1)) '
  # Top-level packet fields (decode_raw numbers them): 8 timestamp, 10
  # sequence, 11 track event.
  /{$/ { depth++; if (depth == 1) { ts = -1; seq = 0; event = 0 } else if (depth == 2 && $1 == "11") event = 1; next }
  /^ *}$/ { if (depth == 1 && event) {
              events++
              if (seq < 2 || seq >= 2 + cpus) bad = bad " an event on sequence " seq
              if (ts < last[seq]) bad = bad " time went back on sequence " seq
              last[seq] = ts; used[seq] = 1
            }
            depth--; next }
  depth == 1 && $1 == "8:" { ts = $2 }
  depth == 1 && $1 == "10:" { seq = $2 }
  END { n = 0; for (s in used) n++
        if (events != 40000) bad = bad " " events " events, not 40000"
        if (n != cpus) bad = bad " " n " event sequences for " cpus " cpus"
        if (bad != "") { print "perfetto sequences:" bad; exit 1 } }' ||
  fail "the Perfetto recording of two cpus is not one time-ordered sequence per cpu"
"$UDIAG" report "$T/t.pftrace" 2>"$T/err" && fail "udiag report read a Perfetto file"
grep -q 'cannot be read back' "$T/err" || { cat "$T/err"; fail "udiag report does not say Perfetto cannot be read"; }

rm -rf "$T"
echo "record readers: ok"
