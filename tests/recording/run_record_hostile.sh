#!/bin/sh
# A recording of hostile producers, read by the real readers: one writes
# well-framed events whose strings are random bytes, one scribbles over its
# own ring, one writes plausible but lying pages into it. The daemon keeps every valid event and refuses the rest; no
# reader (trace-cmd, udiag report, babeltrace2, protoc for Perfetto) crashes
# on the files, every valid event is in them, and a hostile event is shown
# under no other thread than its writer's.
# Usage: run_record_hostile.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
T=$(mktemp -d)
export UDIAG_DIR="$T/daemon"
fail() { echo "FAIL: $*"; kill "$DAEMON" 2>/dev/null; rm -rf "$T"; exit 1; }
# A reader may fail on a file, but must not be killed by a signal.
survives() {  # NAME COMMAND...
  name=$1; shift
  # Apart: a reader's warnings (babeltrace2's "Tracer discarded N events")
  # written into its output can cut an event line in two.
  "$@" >"$T/$name.out" 2>"$T/$name.err"
  status=$?
  [ "$status" -lt 128 ] || { tail -5 "$T/$name.out" "$T/$name.err"; fail "$name died with signal $((status - 128))"; }
  return "$status"
}

# Perfetto has no reader here but protobuf's own: the file must decode, hold
# every garbage event, and put each hostile event on a thread track of one
# of the hostile producers.
check_perfetto() {  # FILE
  survives protoc protoc --decode_raw <"$1" || fail "protoc cannot decode the Perfetto file: $(tail -3 "$T/protoc.err")"
  # decode_raw numbers the fields: packet 1; in it 60 track descriptor
  # (1 uuid; 4 thread: 1 pid, 2 tid) and 11 track event (11 track uuid,
  # 23 name). Strings are quoted on one line, so no string opens or closes
  # a message.
  awk -v liars="$HOSTILE $HOSTILE_PAGES" '
    BEGIN { n = split(liars, l, " "); for (i = 1; i <= n; i++) hostile_tid[l[i]] = 1 }
    /{$/ { depth++
           if (depth == 2) { kind = $1; uuid = ""; tid = ""; track = ""; name = "" }
           next }
    /^ *}$/ { if (depth == 2 && kind == "60" && tid != "") tid_of[uuid] = tid
              if (depth == 2 && kind == "11") { events[name]++; if (name == "\"hostile\"") hostile_on[track]++ }
              depth--; next }
    depth == 2 && kind == "60" && $1 == "1:" { uuid = $2 }
    depth == 3 && kind == "60" && $1 == "2:" { tid = $2 }
    depth == 2 && kind == "11" && $1 == "11:" { track = $2 }
    depth == 2 && kind == "11" && $1 == "23:" { name = $2 }
    END { bad = ""
          if (events["\"garbage\""] != 3000) bad = bad " " events["\"garbage\""] + 0 " garbage events, not 3000;"
          if (events["\"hostile\""] == 0) bad = bad " no hostile event;"
          for (t in hostile_on) if (!(tid_of[t] in hostile_tid)) {
            misplaced += hostile_on[t]
            if (++threads <= 3) shown = shown " " tid_of[t]
          }
          if (misplaced) bad = bad " " misplaced " hostile events on " threads " other threads (" shown " ...);"
          if (bad != "") { print "perfetto:" bad; exit 1 } }' "$T/protoc.out" || fail "the Perfetto recording of hostile producers is wrong"
}

"$BIN_DIR/udiagd" --dir "$UDIAG_DIR" >"$T/udiagd.log" 2>&1 &
DAEMON=$!
for _ in $(seq 50); do [ -S "$UDIAG_DIR/control.sock" ] && break; sleep 0.1; done

for format in dat ctf perfetto; do
  "$UDIAG" record --format "$format" -e garbage -e hostile -o "$T/t.$format" 2>"$T/rec.err" &
  REC=$!
  sleep 0.5
  "$BIN_DIR/hostile_producer" hostile 500 >"$T/hostile.out" 2>&1 &
  HOSTILE=$!
  "$BIN_DIR/hostile_producer" hostile 500 pages >"$T/hostile_pages.out" 2>&1 &
  HOSTILE_PAGES=$!
  "$BIN_DIR/garbage_producer" 3000 "$$" >"$T/garbage.out" || fail "garbage_producer: $(cat "$T/garbage.out")"
  wait "$HOSTILE" "$HOSTILE_PAGES"
  grep -q corrupting "$T/hostile_pages.out" || fail "hostile_producer (pages) never got to its ring: $(cat "$T/hostile_pages.out")"
  sleep 0.3
  kill -INT "$REC"; wait "$REC" || { cat "$T/rec.err"; fail "udiag record ($format)"; }
  kill -0 "$DAEMON" || fail "udiagd died"
  written=$(sed -n 's/^written \([0-9]*\) .*/\1/p' "$T/garbage.out")
  [ "$written" = 3000 ] || fail "garbage_producer: $(cat "$T/garbage.out")"
  grep -q "user_events:garbage  *3000$" "$T/rec.err" || { cat "$T/rec.err"; fail "the $format recording does not hold 3000 garbage events"; }

  if [ "$format" = perfetto ]; then
    check_perfetto "$T/t.perfetto"
    continue
  fi
  survives udiag_report "$UDIAG" report "$T/t.$format" || fail "udiag report of $format: $(tail -3 "$T/udiag_report.err")"
  [ "$(grep -c 'garbage: ' "$T/udiag_report.out")" = 3000 ] || fail "udiag report does not show 3000 garbage events ($format)"
  survives udiag_json "$UDIAG" report --json "$T/t.$format" || fail "udiag report --json of $format"
  python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$T/udiag_json.out" ||
    fail "udiag report --json printed invalid JSON for hostile strings ($format)"
  if [ "$format" = dat ]; then
    survives trace_cmd trace-cmd report "$T/t.dat" || fail "trace-cmd report: $(tail -3 "$T/trace_cmd.err")"
    [ "$(grep -c 'garbage: ' "$T/trace_cmd.out")" = 3000 ] || fail "trace-cmd report does not show 3000 garbage events"
    # Pages kept whole say which thread wrote them, whatever the producer put there.
    liars=$(grep ' hostile: ' "$T/trace_cmd.out" | grep -v -e "-$HOSTILE " -e "-$HOSTILE_PAGES " | head -3)
    [ -z "$liars" ] || fail "hostile events under another thread: $liars"
  else
    survives babeltrace2 babeltrace2 "$T/t.ctf" || fail "babeltrace2: $(tail -3 "$T/babeltrace2.err")"
    # Strings hold any byte, newlines too: count event lines by their name (-a: text, whatever the bytes).
    shown=$(grep -a -c 'user_events:garbage:' "$T/babeltrace2.out")
    [ "$shown" = 3000 ] || fail "babeltrace2 shows $shown garbage events, not 3000; its warnings: $(grep -a -i 'warn\|error' "$T/babeltrace2.err" | head -5)"
  fi
done
kill "$DAEMON"
rm -rf "$T"
echo "PASS: hostile producers' recordings are read whole by every reader"
