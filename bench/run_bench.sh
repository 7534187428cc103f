#!/usr/bin/env bash
# Runs udiag's benchmarks and prints one comparison table (medians).
#   bench/run_bench.sh BUILD_DIR            (BUILD_DIR configured with -DUDIAG_BUILD_BENCH=ON)
# Env: UDIAG_SUSTAINED_SECONDS (default 10), BENCH_MIN_TIME (Google Benchmark
# --benchmark_min_time, default 0.5), UDIAG_BENCH_SETTLE (seconds the disk
# rests before each recording stage, default 10). Performance is measured,
# never asserted.
set -u
BUILD=${1:?usage: run_bench.sh BUILD_DIR}
BIN=$BUILD/bin
SECS=${UDIAG_SUSTAINED_SECONDS:-10}
MIN_TIME=${BENCH_MIN_TIME:-0.5}
SETTLE=${UDIAG_BENCH_SETTLE:-10}
OUT=$(mktemp -d /tmp/udiag-bench.XXXXXX)
GB=(--benchmark_format=json --benchmark_min_time="$MIN_TIME")

echo "results in $OUT" >&2
for b in ring_bench udiag_bench dropin_bench sustained_bench consumers_bench record_stream_bench flood_producer mmio_bench \
         filter_bench page_check_bench perfetto_bench; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build with -DUDIAG_BUILD_BENCH=ON)" >&2; exit 1; }
done

echo "running ring_bench..." >&2
"$BIN/ring_bench" "${GB[@]}" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  >"$OUT/ring.json" 2>"$OUT/ring.err"
echo "running page_check_bench..." >&2
"$BIN/page_check_bench" "${GB[@]}" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  >"$OUT/page_check.json" 2>"$OUT/page_check.err"
echo "running perfetto_bench..." >&2
"$BIN/perfetto_bench" "${GB[@]}" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  >"$OUT/perfetto.json" 2>"$OUT/perfetto.err"
echo "running udiag_bench..." >&2
"$BIN/udiag_bench" "${GB[@]}" >"$OUT/udiag.json" 2>"$OUT/udiag.err"

# --- LTTng-UST peer -----------------------------------------------------------
lttng_note=""
started_sessiond=""
if [ ! -x "$BIN/peer_bench" ]; then
  lttng_note="skipped: peer_bench not built (lttng-ust not found)"
elif ! command -v lttng >/dev/null || ! command -v lttng-sessiond >/dev/null; then
  lttng_note="skipped: lttng-tools not installed"
else
  echo "running peer_bench (disabled)..." >&2
  "$BIN/peer_bench" "${GB[@]}" >"$OUT/lttng_disabled.json" 2>"$OUT/lttng_disabled.err" || true
  if ! pgrep -u "$(id -u)" -x lttng-sessiond >/dev/null; then
    if lttng-sessiond --daemonize >"$OUT/sessiond.log" 2>&1; then
      started_sessiond=$(pgrep -u "$(id -u)" -n -x lttng-sessiond)
    fi
  fi
  session=udiag_bench_$$
  trace_dir=$(mktemp -d /tmp/udiag-lttng.XXXXXX)
  # Big sub-buffers, so the consumer keeps up and nothing is discarded: the
  # anchor in DESIGN.md was measured that way.
  if lttng create "$session" --output="$trace_dir" >"$OUT/lttng.log" 2>&1 &&
     lttng enable-channel -u big --subbuf-size=8M --num-subbuf=8 -s "$session" >>"$OUT/lttng.log" 2>&1 &&
     lttng enable-event -u 'udiag_bench:*' -c big -s "$session" >>"$OUT/lttng.log" 2>&1 &&
     lttng start "$session" >>"$OUT/lttng.log" 2>&1; then
    echo "running peer_bench (enabled, recording)..." >&2
    "$BIN/peer_bench" "${GB[@]}" >"$OUT/lttng_enabled.json" 2>"$OUT/lttng_enabled.err" || true
    lttng stop "$session" >"$OUT/lttng_stop.log" 2>&1
    lttng destroy "$session" >>"$OUT/lttng.log" 2>&1
  else
    lttng_note="skipped: lttng session failed: $(tail -1 "$OUT/lttng.log")"
    lttng destroy "$session" >/dev/null 2>&1
  fi
  rm -rf "$trace_dir"
fi
# The side-by-side recording table needs the session daemon too: stop it at the end.
trap '[ -n "$started_sessiond" ] && kill "$started_sessiond" 2>/dev/null' EXIT

echo "running dropin_bench (without, then with the preload)..." >&2
"$BIN/dropin_bench" "${GB[@]}" --benchmark_filter=BM_PipeWrite >"$OUT/dropin_plain.json" 2>"$OUT/dropin_plain.err"
LD_PRELOAD="$BUILD/lib/libudiag-preload.so" "$BIN/dropin_bench" "${GB[@]}" \
  >"$OUT/dropin_preload.json" 2>"$OUT/dropin_preload.err"

echo "running sustained_bench ($SECS s)..." >&2
"$BIN/sustained_bench" "$SECS" >"$OUT/sustained.txt" 2>"$OUT/sustained.err"

# --- Issue 4: recording ------------------------------------------------------
echo "running consumers_bench (0, 1, 3 record sessions)..." >&2
"$BIN/consumers_bench" "${GB[@]}" >"$OUT/consumers.json" 2>"$OUT/consumers.err"
echo "running record_stream_bench ($SECS s, unpaced and at 5 M/s)..." >&2
"$BIN/record_stream_bench" "$SECS" "$OUT/stream.bin" 0 >"$OUT/stream_full.txt" 2>"$OUT/stream_full.err"
"$BIN/record_stream_bench" "$SECS" "$OUT/stream.bin" 5000000 >"$OUT/stream_5m.txt" 2>"$OUT/stream_5m.err"
rm -f "$OUT/stream.bin"
# `udiag record` as users run it, into trace.dat, with a daemon of its own.
# The producers run beside the recorder (not as its command), so that the
# recorder's CPU time (its rusage) and the daemon's (/proc) are their own.
# The daemon runs in a session of its own, as it does for users (`udiag
# record`'s private daemon, `udiagd --daemonize`, a systemd unit) and as
# lttng-sessiond --daemonize does here: with autogroup scheduling a daemon
# left in this script's session shares one group's cpu with the producers.
# Each recording stage, udiag's and LTTng-UST's alike, starts on a settled
# disk: this VM's disk stalls single 4 MiB writes for up to 300 ms in the
# seconds after the stage before wrote and deleted gigabytes, which a
# paced producer's recording then loses events to (docs/performance-history.md).
settle_disk() {
  sync
  sleep "$SETTLE"
}
start_daemon() {  # DIR: starts udiagd on DIR, sets $daemon to its pid
  setsid "$BUILD/bin/udiagd" --dir "$1" >/dev/null 2>&1 &
  daemon=$!
  for _ in $(seq 50); do [ -S "$1/control.sock" ] && break; sleep 0.1; done
}
record_run() {  # NAME "UDIAG RECORD OPTIONS" COMMAND... (RECORD_FORMAT=ctf|pftrace: not trace.dat)
  local name=$1 options=$2; shift 2
  local dir="$OUT/record-daemon-$name" daemon output="$OUT/$name.${RECORD_FORMAT:-dat}"
  settle_disk
  start_daemon "$dir"
  local started; started=$(awk '{print $14 + $15}' "/proc/$daemon/stat")
  UDIAG_DIR="$dir" /usr/bin/time -f "recorder_cpu %U %S" -o "$OUT/$name.time" \
    "$BUILD/bin/udiag" record $options -e flood -o "$output" 2>"$OUT/$name.err" &
  local timer=$!
  sleep 0.5  # the recording's instance and auto-enable are in place
  # The daemon's CPU from here on, as an LTTng-UST session's from `lttng
  # start` on; what setting the recording up took is reported apart.
  local before; before=$(awk '{print $14 + $15}' "/proc/$daemon/stat")
  UDIAG_DIR="$dir" "$@" >"$OUT/$name.out" 2>&1
  pkill -INT -P "$timer" -x udiag
  wait "$timer"
  echo "daemon_cpu $(( $(awk '{print $14 + $15}' "/proc/$daemon/stat") - before )) $(getconf CLK_TCK)" >>"$OUT/$name.time"
  echo "daemon_setup_cpu $(( before - started )) $(getconf CLK_TCK)" >>"$OUT/$name.time"
  kill "$daemon"; wait "$daemon" 2>/dev/null
  du -sb "$output" 2>/dev/null | cut -f1 >"$OUT/$name.size"  # a CTF trace is a directory
  rm -rf "$output"
}
echo "running udiag record of one flood producer at 10 M events/s ($SECS s)..." >&2
record_run record1_10m "" "$BIN/flood_producer" "$SECS" 10000000
# An LTTng-UST session recording the same flood as udiag record does, to the
# same disk: discard mode, 16 MiB of sub-buffers per CPU (4 x 4 MiB). The
# consumer's CPU is lttng-sessiond's and lttng-consumerd's.
lttng_consumer_ticks() {
  local sum=0 pid
  for pid in $(pgrep -x lttng-sessiond) $(pgrep -x lttng-consumerd); do
    sum=$(( sum + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0) ))
  done
  echo "$sum"
}
lttng_record_run() {  # NAME PRODUCERS [RATE per producer, default full speed]
  local name=$1 producers=$2 rate=${3:-0}
  [ -x "$BIN/lttng_flood_producer" ] && [ -n "$started_sessiond$(pgrep -x lttng-sessiond)" ] || {
    echo "skipped: ${lttng_note:-lttng_flood_producer not built}" >"$OUT/$name.skip"; return; }
  local session=udiag_rec_$$_$name dir="$OUT/$name-trace"
  settle_disk
  if ! { lttng create "$session" --output="$dir" &&
         lttng enable-channel -u rec --subbuf-size=4M --num-subbuf=4 -s "$session" &&
         lttng enable-event -u udiag_bench:payload32 -c rec -s "$session" &&
         lttng start "$session"; } >"$OUT/$name.log" 2>&1; then
    echo "skipped: lttng session failed: $(tail -1 "$OUT/$name.log")" >"$OUT/$name.skip"
    lttng destroy "$session" >/dev/null 2>&1
    return
  fi
  local before; before=$(lttng_consumer_ticks)
  for _ in $(seq "$producers"); do "$BIN/lttng_flood_producer" "$SECS" "$rate" & done >"$OUT/$name.out" 2>&1
  wait
  lttng stop "$session" >"$OUT/$name.stop" 2>&1
  echo "consumer_cpu $(( $(lttng_consumer_ticks) - before )) $(getconf CLK_TCK)" >"$OUT/$name.time"
  lttng destroy "$session" >>"$OUT/$name.log" 2>&1
  du -sb "$dir" | cut -f1 >"$OUT/$name.size"
  rm -rf "$dir"
}
echo "running dd oflag=direct to the recordings' directory..." >&2
settle_disk
dd if=/dev/zero of="$OUT/dd.bin" bs=1M count=2048 oflag=direct 2>"$OUT/dd.err"
rm -f "$OUT/dd.bin"
# The same offered load for both, one LTTng-UST keeps up with: who loses
# what, at what consumer cost, with the producers' speed out of the way.
echo "running udiag record of one flood producer at 1 M events/s ($SECS s)..." >&2
record_run record1_1m "" "$BIN/flood_producer" "$SECS" 1000000
echo "running an LTTng-UST session of one flood producer at 1 M events/s ($SECS s)..." >&2
lttng_record_run lttng1_1m 1 1000000
echo "running udiag record of one flood producer at 4 M events/s ($SECS s)..." >&2
record_run record1_4m "" "$BIN/flood_producer" "$SECS" 4000000
echo "running an LTTng-UST session of one flood producer at 4 M events/s ($SECS s)..." >&2
lttng_record_run lttng1_4m 1 4000000
# Several threads of moderate rate, as a real program has: their pages
# span the pauses between bursts, where other threads ran on their cpu.
echo "running udiag record of four flood producers at 250 k events/s each ($SECS s)..." >&2
record_run record4_1m "" sh -c 'for i in 1 2 3 4; do "$0" "$1" "$2" & done; wait' "$BIN/flood_producer" "$SECS" 250000
echo "running an LTTng-UST session of four flood producers at 250 k events/s each ($SECS s)..." >&2
lttng_record_run lttng4_1m 4 250000
echo "running udiag record of one flood producer at full speed ($SECS s)..." >&2
record_run record1 "" "$BIN/flood_producer" "$SECS"
echo "running an LTTng-UST session of one flood producer at full speed ($SECS s)..." >&2
lttng_record_run lttng1 1
for format in ctf pftrace; do
  echo "running udiag record -o x.$format of one flood producer at full speed ($SECS s)..." >&2
  RECORD_FORMAT=$format record_run "record1_$format" "" "$BIN/flood_producer" "$SECS"
done
echo "running udiag record --block of one flood producer at full speed ($SECS s)..." >&2
record_run record1_block --block "$BIN/flood_producer" "$SECS"
echo "running udiag record of eight flood producers ($SECS s)..." >&2
record_run record8 "" sh -c 'for i in 1 2 3 4 5 6 7 8; do "$0" "$1" & done; wait' "$BIN/flood_producer" "$SECS"
echo "running an LTTng-UST session of eight flood producers ($SECS s)..." >&2
lttng_record_run lttng8 8
# The load LTTng-UST's eight producers offered and its session kept, offered
# to udiag record by eight producers paced to match: the loss of each
# tracer with the producers' speed out of the way.
lttng8_rate=$(PYTHONPATH="$(dirname "$0")" python3 - "$OUT" "$SECS" <<'PY'
import sys
from run_files import lttng_discarded, written
out, secs = sys.argv[1], float(sys.argv[2])
try:
    kept = written(out, "lttng8") - lttng_discarded(out, "lttng8")
    print(int(kept / secs / 8) if kept > 0 else "")
except OSError:
    print("")
PY
)
if [ -n "$lttng8_rate" ]; then
  echo "running udiag record of eight flood producers at LTTng-UST's load, $lttng8_rate events/s each ($SECS s)..." >&2
  record_run record8_lttng_load "" sh -c 'for i in 1 2 3 4 5 6 7 8; do "$0" "$1" "$2" & done; wait' \
    "$BIN/flood_producer" "$SECS" "$lttng8_rate"
fi
echo "running udiag record --block of eight flood producers ($SECS s)..." >&2
record_run record8_block --block sh -c 'for i in 1 2 3 4 5 6 7 8; do "$0" "$1" & done; wait' "$BIN/flood_producer" "$SECS"

# --- Issue 5: memory-access probes ----------------------------------------------
echo "running mmio_bench..." >&2
"$BIN/mmio_bench" "${GB[@]}" >"$OUT/mmio.json" 2>"$OUT/mmio.err"
echo "running filter_bench..." >&2
"$BIN/filter_bench" "${GB[@]}" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  >"$OUT/filter.json" 2>"$OUT/filter.err"

LTTNG_NOTE="$lttng_note" SECS="$SECS" PYTHONPATH="$(dirname "$0")" python3 - "$OUT" <<'PY'
import json, os, re, sys
import run_files
out = sys.argv[1]

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)["benchmarks"]
    except Exception:
        return []

def median(benchs, prefix):
    """(ns, error) of the median aggregate of the benchmark named `prefix`."""
    for b in benchs:
        name = b.get("run_name", b["name"])
        if name.split("/")[0] != prefix.split("/")[0] or not name.startswith(prefix):
            continue
        if b.get("error_occurred"):
            return None, b.get("error_message", "error")
        if b.get("aggregate_name") == "median":
            scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
            return b["real_time"] * scale, None
    return None, "not run"

ring, ud = load("ring.json"), load("udiag.json")
ltd, lte = load("lttng_disabled.json"), load("lttng_enabled.json")
rows = [
    ("floor: load + branch on a plain word, same loop", *median(ud, "BM_LoadBranchFloor")),
    ("one load + branch (udiag disabled check)", *median(ud, "BM_DisabledCheck")),
    ("LTTng-UST tracepoint, disabled", *median(ltd, "BM_LttngTracepoint")),
    ("the timestamp alone: rdtsc", *median(ring, "BM_Rdtsc")),
    ("floor: rdtsc + copy into a ring + release store", *median(ring, "BM_Floor/rdtsc")),
    ("machine state: a cache line to another thread and back", *median(ring, "BM_CacheLineRoundTrip")),
    ("udiag ring: reserve + 32 B + commit (1 MiB ring)", *median(ring, "BM_RingWrite32/poll_us:50/ring_kb:1024")),
    ("udiag ring: the same in a 4 MiB ring (udiagd's default)", *median(ring, "BM_RingWrite32/poll_us:50/ring_kb:4096")),
    ("udiag ring: the same in a 16 MiB ring (LTTng-UST's per-CPU buffers here)", *median(ring, "BM_RingWrite32/poll_us:50/ring_kb:16384")),
    ("udiag enabled write, C (udiag_writev)", *median(ud, "BM_EnabledWriteC")),
    ("udiag enabled write, C, two events in turn", *median(ud, "BM_EnabledWriteCInTurn")),
    ("udiag enabled write, C++ (event<u64 x4>)", *median(ud, "BM_EnabledWriteCpp")),
    ("udiag enabled write, C++ with a string (event<u32, rel_string>)", *median(ud, "BM_EnabledWriteCppString")),
    ("LTTng-UST tracepoint, enabled, recording", *median(lte, "BM_LttngTracepoint")),
    ("writev to /dev/null (syscall floor)", *median(ud, "BM_WritevDevNull")),
    ("writev to trace_marker_raw (kernel path)", *median(ud, "BM_TraceMarkerRaw")),
    ("writev to Unix SOCK_SEQPACKET with reader", *median(ud, "BM_WritevUnixSocket")),
]
note = os.environ.get("LTTNG_NOTE", "")
if note:
    rows = [(p, None, note) if p.startswith("LTTng") else (p, v, e) for p, v, e in rows]
# Check the peer really ran in the state its row claims.
def row_of(label):
    return next(i for i, (p, _, _) in enumerate(rows) if p.startswith(label))
for data, want, row in ((ltd, 0, row_of("LTTng-UST tracepoint, disabled")),
                        (lte, 1, row_of("LTTng-UST tracepoint, enabled"))):
    for b in data:
        if "enabled" in b and b.get("aggregate_name") == "median" and int(b["enabled"]) != want:
            p, v, e = rows[row]
            rows[row] = (p, None, "skipped: tracepoint was %s in this run" % ("enabled" if want == 0 else "not enabled"))
base = rows[row_of("udiag enabled write, C ")][1]

# Issue 3: the preload's cost to unrelated I/O, and the drop-in write path.
plain, pre = load("dropin_plain.json"), load("dropin_preload.json")
pipe0, pipe1 = median(plain, "BM_PipeWrite"), median(pre, "BM_PipeWrite")
dropin, native = median(pre, "BM_DropinWritev"), median(pre, "BM_NativeWritev")

print("| path | ns/event (median) | ratio to udiag enabled C write |")
print("|---|---|---|")
for path, v, err in rows:
    if v is None:
        print(f"| {path} | {err} | |")
    else:
        ratio = f"{v / base:.2f}x" if base else "n/a"
        print(f"| {path} | {v:,.2f} | {ratio} |")

print("\n| drop-in (issue 3) | ns/event (median) | ratio |")
print("|---|---|---|")
for path, (v, err), ref in (("write 32 B to a pipe, no preload", pipe0, None),
                            ("write 32 B to a pipe, with libudiag-preload.so", pipe1, pipe0[0]),
                            ("udiag_writev, same process (native)", native, None),
                            ("writev on the kernel path via the preload", dropin, native[0])):
    if v is None:
        print(f"| {path} | {err} | |")
    else:
        print(f"| {path} | {v:,.2f} | {f'{v / ref:.2f}x' if ref else ''} |")

try:
    stop = open(os.path.join(out, "lttng_stop.log")).read()
    m = re.search(r"(\d+) events? (?:were|was) discarded", stop)
    print(f"\nLTTng-UST recording: {m.group(1) if m else 0} events discarded")
except OSError:
    pass

s = {}
try:
    for line in open(os.path.join(out, "sustained.txt")):
        k, _, v = line.strip().partition(" ")
        s[k] = v
except OSError:
    pass
if not s:
    print("\nsustained: failed:", open(os.path.join(out, "sustained.err")).read().strip())
    sys.exit(0)
g = lambda k: s.get(k, "?")
def n(k):
    try: return f"{float(g(k)):,.0f}"
    except ValueError: return g(k)
print(f"\nsustained ({g('sustained_seconds')} s, 1 producer thread, 32-byte events, 1 trace_pipe reader):")
print("| measure | value |")
print("|---|---|")
print(f"| events written (producer) | {n('written_events')} ({n('written_per_s')}/s, {g('ns_per_write_sustained')} ns each) |")
print(f"| write failures | {g('write_failures')} |")
print(f"| taken in by the daemon (trace entries-written) | {n('daemon_entries_written')} ({n('daemon_accepted_per_s')}/s); never reached it: {n('not_reaching_daemon')} |")
print(f"| delivered as trace_pipe lines | {n('pipe_event_lines')} ({n('pipe_delivered_per_s')}/s, {n('pipe_bytes')} bytes) |")
print(f"| lost, reported as [LOST N EVENTS] in trace_pipe / left in trace | {n('pipe_lost_reported')} / {n('trace_lost_reported')} |")
print(f"| still in buffer at end | {n('daemon_entries_in_buffer')} |")
print(f"| written - delivered | {n('lost_total')} |")
print(f"| daemon peak RSS (VmHWM) | {n('daemon_vmhwm_kb')} kB |")
print(f"\nenable propagation (tree write of 1/0 -> producer bit flips, 200 flips): "
      f"p50 {g('enable_latency_us_p50')} us, p99 {g('enable_latency_us_p99')} us, timeouts {g('enable_latency_timeouts')}")

# Issue 4: the producer's cost against the number of record sessions.
cons = load("consumers.json")
def cpu_median(benchs, prefix):
    for b in benchs:
        if b.get("run_name", b["name"]).startswith(prefix) and b.get("aggregate_name") == "median":
            return b["cpu_time"] * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
    return None
c0, c0cpu = median(cons, "BM_EnabledWriteWithConsumers/0")[0], cpu_median(cons, "BM_EnabledWriteWithConsumers/0")
print("\n| recording (issue 4) | value | ratio to 0 consumers (wall; CPU) |")
print("|---|---|---|")
for k in (0, 1, 3):
    v, err = median(cons, f"BM_EnabledWriteWithConsumers/{k}")
    cpu = cpu_median(cons, f"BM_EnabledWriteWithConsumers/{k}")
    ratio = f"{v / c0:.2f}x; {cpu / c0cpu:.2f}x" if v and c0 and cpu and c0cpu else ""
    print(f"| enabled write with {k} record sessions reading | "
          f"{f'{v:,.2f} ns wall, {cpu:,.2f} ns CPU' if v and cpu else err} | {ratio} |")
secs = float(os.environ.get("SECS", "10"))
def read(name, ext):
    return open(os.path.join(out, name + ext)).read()
def udiag_recording(name):
    """written, recorded, lost, trace bytes, recorder and daemon CPU s of a record_run."""
    m = re.search(r"udiag record: (\d+) events \(([\d.]+) MB\) in ([\d.]+) s, (\d+) lost", read(name, ".err"))
    times = read(name, ".time")
    ru, rs = map(float, re.search(r"recorder_cpu ([\d.]+) ([\d.]+)", times).groups())
    dticks, hz = map(int, re.search(r"daemon_cpu (\d+) (\d+)", times).groups())
    sticks, _ = map(int, re.search(r"daemon_setup_cpu (\d+) (\d+)", times).groups())
    return dict(written=run_files.written(out, name), recorded=int(m.group(1)), lost=int(m.group(4)),
                size=int(read(name, ".size")), recorder_s=ru + rs, daemon_s=dticks / hz,
                setup_s=sticks / hz)
def lttng_recording(name):
    """The same for an lttng_record_run: recorded = written - discarded."""
    if os.path.exists(os.path.join(out, name + ".skip")):
        raise RuntimeError(read(name, ".skip").strip())
    lost = run_files.lttng_discarded(out, name)
    ticks, hz = map(int, re.search(r"consumer_cpu (\d+) (\d+)", read(name, ".time")).groups())
    written = run_files.written(out, name)
    return dict(written=written, recorded=written - lost, lost=lost, size=int(read(name, ".size")),
                consumer_s=ticks / hz)
for name, what in (("record1_10m", "1 flood producer paced at 10 M/s"), ("record1", "1 flood producer, full speed"),
                   ("record1_block", "--block, 1 flood producer, full speed"),
                   ("record8", "8 flood producers, full speed"),
                   ("record8_block", "--block, 8 flood producers, full speed")):
    try:
        r = udiag_recording(name)
        ev = r["recorded"]
        cpu = (f"; CPU per recorded event: recorder {1e9 * r['recorder_s'] / max(ev, 1):.0f} ns, "
               f"daemon {1e9 * r['daemon_s'] / max(ev, 1):.0f} ns")
        print(f"| udiag record -o x.dat, {what}, {secs:g} s | written {r['written']:,}, recorded {ev:,} "
              f"({ev / secs / 1e6:.2f} M events/s, {r['size'] / secs / 1e6:.0f} MB/s of trace.dat), lost {r['lost']:,} "
              f"({100.0 * r['lost'] / max(r['written'], 1):.2f} %){cpu} | |")
    except Exception as e:
        print(f"| udiag record, {what} | failed: {e} | |")
for name, what in (("stream_full", "unpaced"), ("stream_5m", "paced at 5 M/s")):
    kv = {}
    try:
        for line in open(os.path.join(out, name + ".txt")):
            k, _, v = line.strip().partition(" ")
            kv[k] = v
    except OSError:
        pass
    print(f"| record stream into a file, 1 producer {what} | " +
          (", ".join(f"{k} {v}" for k, v in kv.items()) or "failed") + " | |")

# Issue 11: udiag record against an LTTng-UST session, same producers, same disk.
try:
    m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", read("dd", ".err"))
    disk = int(m.group(1)) / float(m.group(2)) / 1e6
    disk_note = f"{disk:,.0f} MB/s"
except Exception as e:
    disk, disk_note = None, f"dd failed: {e}"
print(f"\n| recording side by side ({secs:g} s, 32-byte events; disk: dd oflag=direct {disk_note}) "
      "| events/s recorded | lost | consumer CPU ns/recorded event | MB/s (share of dd) |")
print("|---|---|---|---|---|")
def side_row(label, r, consumer_s):
    mbs = r["size"] / secs / 1e6
    share = f" ({100 * mbs / disk:.0f} %)" if disk else ""
    print(f"| {label} | {r['recorded'] / secs / 1e6:.2f} M | {100.0 * r['lost'] / max(r['written'], 1):.2f} % "
          f"| {1e9 * consumer_s / max(r['recorded'], 1):.0f} | {mbs:,.0f}{share} |")
    return r["recorded"]
shown = set()
for case, ours, theirs in (("1 producer process", "record1", "lttng1"),
                           ("1 producer process, into CTF (-o x.ctf; LTTng-UST's row above)", "record1_ctf", "lttng1"),
                           ("1 producer process, into Perfetto (-o x.pftrace; LTTng-UST's row above)", "record1_pftrace",
                            "lttng1"),
                           ("1 producer process paced at 1 M events/s", "record1_1m", "lttng1_1m"),
                           ("1 producer process paced at 4 M events/s", "record1_4m", "lttng1_4m"),
                           ("4 producer processes paced at 250 k events/s each", "record4_1m", "lttng4_1m"),
                           ("8 producer processes", "record8", "lttng8"),
                           ("8 producer processes at LTTng-UST's full-speed load (udiag's paced to what its session kept)",
                            "record8_lttng_load", "lttng8")):
    kept = {}
    for who, name in (("udiag record", ours), ("LTTng-UST session", theirs)):
        label = f"{who}, {case}"
        try:
            if who.startswith("udiag"):
                r = udiag_recording(name)
                kept[who] = side_row(label, r, r["recorder_s"] + r["daemon_s"])
            else:
                r = lttng_recording(name)
                # An LTTng-UST run that another udiag case was set against is shown once.
                kept[who] = r["recorded"] if name in shown else side_row(label, r, r["consumer_s"])
                shown.add(name)
        except Exception as e:
            print(f"| {label} | failed: {e} | | | |")
    if len(kept) == 2 and kept["LTTng-UST session"]:
        print(f"| ratio udiag / LTTng-UST, {case}, events recorded | "
              f"{kept['udiag record'] / kept['LTTng-UST session']:.2f}x | | | |")
setups = []
for name in ("record1", "record1_1m", "record1_4m", "record4_1m", "record8"):
    try:
        setups.append(1e3 * udiag_recording(name)["setup_s"])
    except Exception:
        pass
if setups:
    print(f"\nThe consumer CPU above counts from the producers' start (udiag) and from `lttng start` (LTTng-UST). "
          f"Setting a udiag recording up before that (the daemon's CPU in the 0.5 s from `udiag record`'s start, "
          f"mostly faulting in its 16 MiB of pages) took {min(setups):.0f}-{max(setups):.0f} ms.")

# What the daemon's per-event work costs with the page in its cache: the
# rest of its ns per event above is memory traffic and the loop's turns.
def page_check(name):
    return next((b for b in load("page_check.json")
                 if b.get("run_name") == name and b.get("aggregate_name") == "median"), None)
for name, what in (("BM_CopyAndCheckPage", "in cache"),
                   ("BM_DrainPagesFromAnotherCpu/pause_ms:0/manual_time", "just written by a thread on another cpu"),
                   ("BM_DrainPagesFromAnotherCpu/pause_ms:20/manual_time",
                    "written by a thread on another cpu 20 ms before (a dozing daemon's wait)")):
    pc = page_check(name)
    print(f"\nthe daemon's copy and check of a producer's page kept whole, {what} (page_check_bench): "
          + (f"{1e9 / pc['items_per_second']:.1f} ns per event" if pc else "not run"))
pf = next((b for b in load("perfetto.json")
           if b.get("run_name") == "BM_PerfettoWriteFlood" and b.get("aggregate_name") == "median"), None)
print("\nthe recorder's Perfetto encoding of one flood event, and its copy into the file's blocks (perfetto_bench): "
      + (f"{1e9 / pf['items_per_second']:.1f} ns" if pf else "not run"))

# Issue 5: cost per traced access (wall time), designs side by side.
mm = load("mmio.json")
def mmio(name):
    for b in mm:
        if b["name"] == name or b.get("run_name") == name:
            scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
            return b["real_time"] * scale, b.get("logged")
    return None, None
print("\n| memory-access probes (issue 5) | alone | + spinning thread | + thread faulting on the page (logged share) |")
print("|---|---|---|---|")
fl, _ = mmio("BM_SignalRoundTripFloor/real_time")
print(f"| kernel floor: SIGSEGV round trip | {fl / 1e3:.2f} us | | |" if fl else "| kernel floor | not run | | |")
for mode, label in ((0, "B: decode + emulate (default)"), (1, "B': rebase + single-step"), (2, "A: kmmio single-step")):
    cells = []
    for bg in (0, 1, 2):
        v, logged = mmio(f"BM_TracedAccess/mode:{mode}/background:{bg}/store:0/real_time")
        cells.append("not run" if v is None else f"{v / 1e3:.2f} us" + (f" ({logged:.6f})" if bg == 2 and logged is not None else ""))
    print(f"| {label}, load | " + " | ".join(cells) + " |")
for probes in (0, 1):
    v, _ = mmio(f"BM_UnprobedLoad/probes:{probes}")
    print(f"| unprobed load, {probes} probe(s) in the process | {f'{v:.3f} ns' if v else 'not run'} | | |")

# Issue 14: event filters and hist triggers, per record in the daemon (producers never see them).
fb = load("filter.json")
print("\n| event filters and hist triggers (issue 14), daemon side | ns/record (median) |")
print("|---|---|")
for name, label in (("BM_DeliverOneInstance/0", "deliver into one instance, no filter"),
                    ("BM_DeliverOneInstance/1", "deliver, `status >= 500 && path ~ \"/api/*\"` passes"),
                    ("BM_DeliverOneInstance/2", "deliver, the same filter drops the record"),
                    ("BM_FilterMatches/0", "Filter::Matches, one integer predicate"),
                    ("BM_FilterMatches/1", "Filter::Matches, integer && glob"),
                    ("BM_DeliverHist/0", "deliver to a `hist:keys=status` trigger (event soft-enabled)"),
                    ("BM_DeliverHist/1", "deliver to `hist:keys=path:vals=status` (a string key)"),
                    ("BM_DeliverHist/2", "deliver to `hist:keys=status:ts0=common_timestamp.usecs` (a variable)")):
    v, err = median(fb, name)
    print(f"| {label} | {err if v is None else f'{v:.1f}'} |")
PY

# --- Issue 15: udiag export into ClickHouse -----------------------------------
# One flood producer at full speed for $SECS s, under `udiag record` and then
# under `udiag export` into one local clickhouse-server (started here, on
# 127.0.0.1 and a free port, stopped by pid): events/s each kept.
export_bench() {
  if ! command -v clickhouse-server >/dev/null || ! command -v clickhouse-client >/dev/null; then
    echo "| udiag export into ClickHouse | skipped: scripts/install-deps.sh clickhouse | |"
    return
  fi
  CH_ROOT="$OUT/clickhouse"
  . "$(dirname "$0")/../tests/fleet/clickhouse_test_servers.sh"
  ch_start bench || { echo "| udiag export into ClickHouse | clickhouse-server did not start | |"; return; }
  local dir="$OUT/export-daemon" daemon
  start_daemon "$dir"
  echo "running udiag record and udiag export of one flood producer ($SECS s each)..." >&2
  UDIAG_DIR="$dir" "$BIN/udiag" record -e flood -o "$OUT/export-peer.dat" -- "$BIN/flood_producer" "$SECS" \
    >"$OUT/export-record.out" 2>"$OUT/export-record.err"
  rm -f "$OUT/export-peer.dat"
  local start end
  start=$(date +%s.%N)
  UDIAG_DIR="$dir" "$BIN/udiag" export --clickhouse "http://127.0.0.1:$CH_HTTP_bench" --spool "$OUT/export-spool" \
    -e flood -- "$BIN/flood_producer" "$SECS" >"$OUT/export.out" 2>"$OUT/export.err"
  end=$(date +%s.%N)
  local rows
  rows=$(ch_query bench "SELECT count() FROM udiag.flood")
  kill "$daemon"; wait "$daemon" 2>/dev/null
  ch_kill bench
  rm -rf "$CH_ROOT" "$OUT/export-spool"  # 1 GB of table data; the results are the logs
  python3 - "$OUT" "$rows" "$start" "$end" <<'PY'
import re, sys, os
out, rows, start, end = sys.argv[1], int(sys.argv[2] or 0), float(sys.argv[3]), float(sys.argv[4])
def text(name):
    try:
        return open(os.path.join(out, name)).read()
    except OSError:
        return ""
rec = re.search(r"udiag record: (\d+) events \(([\d.]+) MB\) in ([\d.]+) s, (\d+) lost", text("export-record.err"))
exp = re.search(r"udiag export: (\d+) events, (\d+) rows sent, (\d+) lost", text("export.err"))
written = re.search(r"written (\d+)", text("export.out"))
print("\n| udiag export (issue 15), 1 flood producer, full speed | events/s kept | written; lost |")
print("|---|---|---|")
if rec:
    ev, secs, lost = int(rec.group(1)), float(rec.group(3)), int(rec.group(4))
    print(f"| udiag record -o x.dat | {ev / secs:,.0f} | {ev + lost:,}; {lost:,} |")
else:
    print("| udiag record -o x.dat | failed | |")
if exp:
    secs = end - start
    print(f"| udiag export into 1 local ClickHouse ({rows:,} rows in udiag.flood, {secs:.1f} s incl. last flush) "
          f"| {rows / secs:,.0f} | {int(written.group(1)) if written else 0:,}; {int(exp.group(3)):,} |")
else:
    print("| udiag export into 1 local ClickHouse | failed | |")
PY
}
export_bench

# --- Issue 14: udiagd's USDT probe for bpftrace ----------------------------------
echo "running bpf_probe_bench.sh (3 x $SECS s)..." >&2
echo
bash "$(dirname "$0")/bpf_probe_bench.sh" "$BIN" "$SECS"
