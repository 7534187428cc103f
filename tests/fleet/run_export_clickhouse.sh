#!/bin/bash
# `udiag export` into two real ClickHouse servers forming a cluster `fleet`:
# two simulated hosts each export to their own shard; rows, typed columns
# and the Distributed table are checked; then a shard is killed mid-stream
# and restarted, and every event must be there exactly once (or counted in
# udiag_lost). Usage: run_export_clickhouse.sh BIN_DIR
BIN_DIR="$1"
UDIAG="$BIN_DIR/udiag"
HERE=$(dirname "$0")
command -v clickhouse-server >/dev/null && command -v clickhouse-client >/dev/null ||
  { echo "clickhouse-server/-client missing: scripts/install-deps.sh clickhouse"; exit 1; }
T=$(mktemp -d)
CH_ROOT="$T/ch"
. "$HERE/clickhouse_test_servers.sh"
DAEMONS=()
cleanup() {
  ch_kill a; ch_kill b
  for p in "${DAEMONS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
fail() { echo "FAIL: $*"; for n in a b; do tail -5 "$CH_ROOT/$n/err" 2>/dev/null; done; cleanup; exit 1; }

# Both servers must know both shards' ports: ports first, then configs.
for n in a b; do eval "CH_HTTP_$n=$(ch_free_port)"; eval "CH_TCP_$n=$(ch_free_port)"; done
CLUSTER="<fleet>
  <shard><replica><host>127.0.0.1</host><port>$CH_TCP_a</port></replica></shard>
  <shard><replica><host>127.0.0.1</host><port>$CH_TCP_b</port></replica></shard>
</fleet>"
for n in a b; do ch_write_config $n "$CLUSTER"; ch_launch $n || fail "clickhouse-server $n did not start"; done
[ "$(ch_query a "SELECT count() FROM system.clusters WHERE cluster = 'fleet'")" = 2 ] || fail "cluster fleet is not defined"

# One daemon per simulated host.
start_daemon() {  # DIR
  "$BIN_DIR/udiagd" --dir "$1" & DAEMONS+=($!)
  local i=0; while [ ! -S "$1/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
}
start_daemon "$T/da"; start_daemon "$T/db"

N=20000
for n in a b; do
  UDIAG_DIR="$T/d$n" "$UDIAG" export --create-schema --cluster fleet --clickhouse "http://127.0.0.1:$(eval echo \$CH_HTTP_$n)" ||
    fail "--create-schema on shard $n"
done
UDIAG_DIR="$T/da" "$UDIAG" export --clickhouse "http://127.0.0.1:$CH_HTTP_a" --cluster fleet --host host-a \
  --spool "$T/spool-a" -e counted -- "$BIN_DIR/counting_producer" $N 2>"$T/a.err" & A=$!
UDIAG_DIR="$T/db" "$UDIAG" export --clickhouse "http://127.0.0.1:$CH_HTTP_b" --cluster fleet --host host-b \
  --spool "$T/spool-b" -e counted -- "$BIN_DIR/counting_producer" $((N * 2)) 2>"$T/b.err" & B=$!
wait $A || { cat "$T/a.err"; fail "export a"; }
wait $B || { cat "$T/b.err"; fail "export b"; }
cat "$T/a.err" "$T/b.err"

# Each shard holds its host's rows; the Distributed table sees both.
[ "$(ch_query a "SELECT host, count(), uniqExact(seq), max(seq) FROM udiag.counted_local GROUP BY host")" = \
  "$(printf 'host-a\t%s\t%s\t%s' $N $N $((N - 1)))" ] || fail "shard a: $(ch_query a 'SELECT host, count() FROM udiag.counted_local GROUP BY host')"
[ "$(ch_query b "SELECT host, count() FROM udiag.counted_local GROUP BY host")" = "$(printf 'host-b\t%s' $((N * 2)))" ] ||
  fail "shard b has the wrong rows"
for n in a b; do
  [ "$(ch_query $n "SELECT host, count(), sum(seq) FROM udiag.counted GROUP BY host ORDER BY host")" = \
    "$(printf 'host-a\t%s\t%s\nhost-b\t%s\t%s' $N $((N * (N - 1) / 2)) $((N * 2)) $((N * 2 * (N * 2 - 1) / 2)))" ] ||
    fail "the Distributed table through shard $n: $(ch_query $n 'SELECT host, count() FROM udiag.counted GROUP BY host')"
done
# Typed columns, and the common ones filled in.
[ "$(ch_query a "SELECT type FROM system.columns WHERE database = 'udiag' AND table = 'counted_local' AND name = 'seq'")" = UInt64 ] ||
  fail "seq is not UInt64"
[ "$(ch_query a "SELECT countIf(comm = '' OR pid = 0 OR tid = 0 OR boot_id = '' OR ts_ns = 0) FROM udiag.counted_local")" = 0 ] ||
  fail "common columns are missing values"
[ "$(ch_query a "SELECT count() FROM udiag.udiag_lost")" = 0 ] || fail "losses were recorded without cause"

# A recorded trace loads the same way; an event whose table already exists
# with another format gets a new table version instead of a broken insert.
"$UDIAG" record --dir "$T/da" -e counted -o "$T/c.dat" -- "$BIN_DIR/counting_producer" 500 2>/dev/null ||
  fail "cannot record a trace"
ch_query a "CREATE DATABASE replay" && ch_query a \
  "CREATE TABLE replay.counted (batch_id UInt64, other String) ENGINE = MergeTree() ORDER BY batch_id" ||
  fail "cannot create a clashing table"
"$UDIAG" export --from "$T/c.dat" --clickhouse "http://127.0.0.1:$CH_HTTP_a" --database replay --spool "$T/spool-r" ||
  fail "export --from"
[ "$(ch_query a "SELECT count(), sum(seq), any(host) != '' FROM replay.counted_v2")" = "$(printf '500\t124750\t1')" ] ||
  fail "the trace's events are not in replay.counted_v2"

# A shard goes away mid-stream and comes back: nothing is lost or doubled.
M=60000
UDIAG_DIR="$T/da" "$UDIAG" export --clickhouse "http://127.0.0.1:$CH_HTTP_a" --host host-c --database outage \
  --spool "$T/spool-c" -e counted -- "$BIN_DIR/counting_producer" $M 50000 2>"$T/c.err" & C=$!
# Host d has no room to spool: what it cannot keep must be in udiag_lost.
UDIAG_DIR="$T/db" "$UDIAG" export --clickhouse "http://127.0.0.1:$CH_HTTP_a" --host host-d --database outage \
  --spool "$T/spool-d" --spool-mb 0 -e counted -- "$BIN_DIR/counting_producer" $M 50000 2>"$T/d.err" & D=$!
sleep 1.5
ch_kill a
sleep 1.5
ch_launch a || fail "clickhouse-server a did not restart"
wait $C || { cat "$T/c.err"; fail "export c across the outage"; }
wait $D || { cat "$T/d.err"; fail "export d across the outage"; }
cat "$T/c.err" "$T/d.err"
grep -q 'ClickHouse does not take batches' "$T/c.err" || fail "the outage did not happen mid-stream (the test proves nothing)"
got=$(ch_query a "SELECT count(), uniqExact(seq) FROM outage.counted WHERE host = 'host-c'")
lost=$(ch_query a "SELECT sum(count) FROM outage.udiag_lost WHERE host = 'host-c'")
rows=${got%%	*}; unique=${got##*	}
[ "$rows" = "$unique" ] || fail "rows were doubled: $got"
[ $((rows + ${lost:-0})) = $M ] || fail "$rows rows + ${lost:-0} lost is not the $M written"
[ -z "$(ls "$T/spool-c")" ] || fail "batches were left in the spool"
got=$(ch_query a "SELECT count(), uniqExact(seq) FROM outage.counted WHERE host = 'host-d'")
lost=$(ch_query a "SELECT sum(count) FROM outage.udiag_lost WHERE host = 'host-d' AND reason = 'spool_full' AND detail = 'counted'")
rows=${got%%	*}; unique=${got##*	}
[ "$rows" = "$unique" ] && [ "${lost:-0}" -gt 0 ] && [ $((rows + lost)) = $M ] ||
  fail "host d without a spool: $got rows, ${lost:-0} counted lost, of $M"
cleanup
echo "export to clickhouse: ok"
