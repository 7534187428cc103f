#!/bin/sh
# `udiag bpftrace` with the real bpftrace against a private udiagd: the
# issue's example (a count by a __data_loc path of the events with status >=
# 500), a __rel_loc string, a char array, a negative s16, the producers' pids,
# several probes in one program, two sessions at once on one event (each
# sees every event once), and a glob over two events (one block each, `probe`
# naming it). Producers are separate processes.
# Exits 77 (skipped) only when bpftrace cannot load programs here (not root,
# or no BPF in this container).
# Usage: run_bpftrace.sh BIN_DIR HTTP_PRODUCER
BIN_DIR="$1"
PRODUCER="$2"
UDIAG="$BIN_DIR/udiag"
T=$(mktemp -d)
"$BIN_DIR/udiagd" --dir "$T/d" & DAEMON=$!
export UDIAG_DIR="$T/d"
i=0; while [ ! -S "$T/d/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
cleanup() {
  for p in $SESSIONS; do kill $p 2>/dev/null; done
  kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$T"
}
fail() { echo "FAIL: $*"; for f in "$T"/*.out "$T"/*.err; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done; cleanup; exit 1; }

# The events exist before the program names them (udiag reads their
# formats, and matches globs against them).
for e in http_request http_retry; do
  "$UDIAG" write --append dynamic_events \
    "u:$e u32 status; __data_loc char[] path; __rel_loc char[] agent; char[8] method; s16 delta" ||
    fail "cannot create $e"
done
"$UDIAG" write --append dynamic_events 'u:other u32 status' || fail "cannot create other"

# 1. Errors need no bpftrace (the glob checks only print the program: a wrong
# translation runs nothing).
"$UDIAG" bpftrace -e 'user_events:nope { @ = count(); }' 2>"$T/e.err" && fail "an unknown event was accepted"
grep -q 'no event user_events:nope in udiagd' "$T/e.err" || fail "no clear error for an unknown event"
"$UDIAG" bpftrace -e 'user_events:http_request { @ = args->nope; }' 2>"$T/e.err" && fail "an unknown field was accepted"
grep -q 'user_events:http_request has no field `nope` (fields: status, path, agent, method, delta)' "$T/e.err" ||
  fail "no clear error for an unknown field"
"$UDIAG" bpftrace --print-program -e 'user_events:http_request { @ = count(); }' >"$T/p.out" || fail "--print-program"
grep -q "^usdt:/proc/$DAEMON/exe:udiag:event /arg0 == [0-9]*/ { @ = count(); }$" "$T/p.out" ||
  fail "--print-program does not show the USDT probe of this daemon"
"$UDIAG" bpftrace --print-program -e 'user_events:ftp_* { @ = count(); }' 2>"$T/e.err" && fail "a glob matching nothing was accepted"
grep -q 'tracepoints not found: user_events:ftp_\*' "$T/e.err" || fail "no clear error for a glob matching nothing"
"$UDIAG" bpftrace --print-program -e 'user_events:* { @ = args->path; }' 2>"$T/e.err" && fail "a glob's event lacking a field was accepted"
grep -q 'user_events:other has no field `path` (fields: status)' "$T/e.err" ||
  fail "no clear error for a glob's event lacking a field"

# 2. Can bpftrace load programs here at all?
command -v bpftrace >/dev/null || fail "bpftrace is not installed (scripts/install-deps.sh test)"
if [ "$(id -u)" != 0 ]; then echo "SKIP: bpftrace needs root"; cleanup; exit 77; fi
if ! bpftrace -e 'BEGIN { exit(); }' >"$T/probe.out" 2>&1; then
  if grep -q -i 'not permitted' "$T/probe.out"; then
    echo "SKIP: bpftrace cannot load BPF programs here:"; cat "$T/probe.out"; cleanup; exit 77
  fi
  fail "bpftrace cannot run a BEGIN probe: $(cat "$T/probe.out")"
fi

# 3. Two sessions; each ends at the /done event, written after all others.
cat >"$T/prog.bt" <<'BT'
BEGIN { printf("ready\n"); }
user_events:http_request /args->status >= 500/ { @[str(args->path)] = count(); }
tracepoint:user_events:http_request {
  @agent[str(args->agent), args->method] = count();
  @delta = min(args->delta);
  @pids[pid] = count();
}
user_events:http_request /str(args->path) == "/done"/ { exit(); }
BT
"$UDIAG" bpftrace "$T/prog.bt" >"$T/a.out" 2>"$T/a.err" & A=$!
"$UDIAG" bpftrace -e 'BEGIN { printf("ready\n"); } user_events:http_request { @n = count(); }
  user_events:http_request /str(args->path) == "/done"/ { exit(); }' >"$T/b.out" 2>"$T/b.err" & B=$!
SESSIONS="$A $B"
i=0
until grep -q ready "$T/a.out" && grep -q ready "$T/b.out"; do
  i=$((i+1)); [ $i -lt 600 ] || fail "bpftrace did not start"; sleep 0.05
done
[ "$("$UDIAG" ls instances | wc -l)" = 2 ] || fail "not one probe instance per session"
"$PRODUCER" 500 /a 3 curl GET & P1=$!
"$PRODUCER" 503 /b 5 wget POST & P2=$!
"$PRODUCER" 200 /c 7 curl GET & P3=$!
wait $P1 && wait $P2 && wait $P3 || fail "a producer failed"
"$PRODUCER" 200 /done 1 x X || fail "the last producer failed"
wait $A || fail "udiag bpftrace (session a) failed"
wait $B || fail "udiag bpftrace (session b) failed"
SESSIONS=

expect() { grep -qx "$2" "$T/$1.out" || fail "session $1 lacks '$2'"; }
expect a '@\[/a\]: 3'
expect a '@\[/b\]: 5'
grep -q '^@\[/c\]' "$T/a.out" && fail "the status predicate let /c through"
grep -q '^@\[/done\]' "$T/a.out" && fail "the status predicate let /done through"
expect a '@agent\[curl, GET\]: 10'
expect a '@agent\[wget, POST\]: 5'
expect a '@agent\[x, X\]: 1'
expect a '@delta: -6'
expect a "@pids\[$P1\]: 3"
expect a "@pids\[$P2\]: 5"
expect a "@pids\[$P3\]: 7"
# 3 + 5 + 7 + 1: once each, though two probe instances enable the event.
expect b '@n: 16'
[ -z "$("$UDIAG" ls instances)" ] || fail "a probe instance outlived its session"

# 4. A glob over http_request and http_retry (not `other`): one block each,
# with `probe` naming the event.
cat >"$T/glob.bt" <<'BT'
BEGIN { printf("ready\n"); }
user_events:http_* /args->status >= 500/ { @[probe, str(args->path)] = count(); }
user_events:http_retry /str(args->path) == "/done"/ { exit(); }
BT
"$UDIAG" bpftrace "$T/glob.bt" >"$T/g.out" 2>"$T/g.err" & G=$!
SESSIONS=$G
i=0
until grep -q ready "$T/g.out" 2>/dev/null; do
  i=$((i+1)); [ $i -lt 600 ] || fail "bpftrace did not start"; sleep 0.05
done
for e in http_request http_retry other; do
  echo "$e $("$UDIAG" cat "instances/bpftrace-$G/events/user_events/$e/enable")"
done >"$T/enabled.out"
printf 'http_request 1\nhttp_retry 1\nother 0\n' | cmp -s - "$T/enabled.out" ||
  fail "the glob did not enable exactly http_request and http_retry: $(cat "$T/enabled.out")"
"$PRODUCER" 500 /a 2 curl GET & P1=$!
"$PRODUCER" 503 /r 3 curl GET http_retry & P2=$!
"$PRODUCER" 502 /done 1 x X & P3=$!
wait $P1 && wait $P2 && wait $P3 || fail "a producer failed"
"$PRODUCER" 200 /done 1 x X http_retry || fail "the last producer failed"
wait $G || fail "udiag bpftrace (glob session) failed"
SESSIONS=
expect g '@\[tracepoint:user_events:http_request, /a\]: 2'
expect g '@\[tracepoint:user_events:http_retry, /r\]: 3'
expect g '@\[tracepoint:user_events:http_request, /done\]: 1'
grep -q 'http_retry, /done' "$T/g.out" && fail "the status predicate let http_retry's /done through"
cleanup
echo "bpftrace: ok"
