#!/usr/bin/env bash
# udiagd's cost per event for the USDT probe udiag:event (docs/bpf.md): one
# flood producer paced at RATE events/s for SECONDS, into an instance that is
# off (the baseline: drained and checked, copied nowhere), into a probe
# instance with no tracer attached (the probe's semaphore is 0: one load),
# and under `udiag bpftrace -e 'user_events:flood { @ = count(); }'` (root).
# The daemon's CPU time (utime + stime from /proc) over the events written
# gives ns per event; the difference is the cost of one probe hit.
# Prints markdown table rows. Measured, never asserted.
#   bench/bpf_probe_bench.sh BIN_DIR [SECONDS] [RATE]
set -u
BIN=${1:?usage: bpf_probe_bench.sh BIN_DIR [SECONDS] [RATE]}
SECS=${2:-5}
RATE=${3:-200000}
T=$(mktemp -d /tmp/udiag-bpf-bench.XXXXXX)
export UDIAG_DIR="$T/d"
"$BIN/udiagd" --dir "$UDIAG_DIR" >/dev/null 2>&1 & DAEMON=$!
for _ in $(seq 100); do [ -S "$UDIAG_DIR/control.sock" ] && break; sleep 0.05; done
"$BIN/udiag" write --append dynamic_events 'u:flood u64 seq; u64 a; u64 b; u64 c'

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DAEMON/stat"; }

# Prints "<ns per event> <events written>" of one paced flood.
measure() {
  local before after written
  before=$(cpu_ticks)
  written=$("$BIN/flood_producer" "$SECS" "$RATE" | awk '/^written/ { print $2 }')
  sleep 0.5  # the daemon drains what is left in the ring
  after=$(cpu_ticks)
  awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="${written:-0}" \
    'BEGIN { printf "%.0f %d\n", ticks / hz * 1e9 / (n > 0 ? n : 1), n }'
}

echo "| udiagd per event, 1 producer at $RATE events/s | ns (daemon CPU / events) | events |"
echo "|---|---|---|"
"$BIN/udiag" mkdir instances/probe
"$BIN/udiag" write instances/probe/events/user_events/flood/enable 1
"$BIN/udiag" write instances/probe/tracing_on 0
read -r ns n < <(measure)
echo "| baseline: drained and validated, delivered nowhere (tracing_on 0) | $ns | $n |"
"$BIN/udiag" write instances/probe/tracing_on 1
"$BIN/udiag" write instances/probe/usdt_probe 1
read -r ns n < <(measure)
echo "| probe instance, no tracer attached | $ns | $n |"
"$BIN/udiag" rmdir instances/probe

if [ "$(id -u)" != 0 ] || ! command -v bpftrace >/dev/null; then
  echo "| probe instance, bpftrace count() attached | skipped: needs root and bpftrace | |"
else
  "$BIN/udiag" bpftrace -e 'BEGIN { printf("ready\n"); } user_events:flood { @ = count(); }' \
    >"$T/bt.out" 2>"$T/bt.err" & BT=$!
  for _ in $(seq 300); do grep -q ready "$T/bt.out" && break; sleep 0.05; done
  read -r ns n < <(measure)
  kill -INT "$BT"; wait "$BT"
  hits=$(awk '/^@:/ { print $2 }' "$T/bt.out")
  echo "| probe instance, bpftrace count() attached ($hits hits) | $ns | $n |"
fi
kill "$DAEMON"; wait "$DAEMON" 2>/dev/null
rm -rf "$T"
