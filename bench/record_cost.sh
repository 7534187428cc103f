#!/bin/bash
# Consumer CPU per recorded event, for A/B runs of two builds in the same
# minutes: starts a private udiagd, `udiag record -e flood` into trace.dat
# and N flood_producer processes beside it, then prints what was recorded
# and lost (and `udiag record`'s lines saying where) and the daemon's and
# the recorder's CPU (from /proc) per recorded event from the producers'
# start (and how much of each was system time), and the daemon's
# CPU setting the recording up before that. The daemon runs in a session
# of its own, as users run it (see run_bench.sh's start_daemon).
#
#   bench/record_cost.sh BUILD_DIR PRODUCERS SECONDS [RATE]
#
# RATE paces each producer at RATE events/s (default: full speed). BUILD_DIR
# needs -DUDIAG_BUILD_BENCH=ON (for flood_producer). RECORD_ARGS and
# UDIAGD_ARGS add options: RECORD_ARGS=--block, UDIAGD_ARGS='--ring-kb 16384'.
# STALL=MS/EVERY_MS stalls the daemon's disk writes for MS ms every EVERY_MS
# ms while the producers run (root, cgroup v1 blkio or v2 io): the same
# stall in every run, where the disk's own stalls differ from run to run.
# OUT names the output file (default out.dat; out.ctf or out.pftrace record
# CTF or Perfetto).
set -euo pipefail
if [ $# -lt 3 ] || [ "$1" = --help ]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  [ "${1:-}" = --help ]; exit
fi
build=$1 producers=$2 seconds=$3 rate=${4:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The producers use BUILD_DIR's libudiag, whatever their RUNPATH says, so
# that a build copied elsewhere for an A/B run brings its own.
export LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
system_ticks() { awk '{print $15}' "/proc/$1/stat"; }

# stall_disk PID DIR MS EVERY_MS: moves PID into a cgroup of its own and
# lets it write once a second to DIR's disk for MS of every EVERY_MS ms,
# until killed.
stall_disk() {
  local dev ms=$3 every=$4 cg limit
  dev=$(stat -c '%Hd:%Ld' "$2")
  if [ -d /sys/fs/cgroup/blkio ]; then
    cg=/sys/fs/cgroup/blkio/udiag_stall_$$ limit=blkio.throttle.write_iops_device
    mkdir -p $cg
    set_limit() { echo "$dev $1" >"$cg/$limit"; }
  else
    cg=/sys/fs/cgroup/udiag_stall_$$ limit=io.max
    echo +io >/sys/fs/cgroup/cgroup.subtree_control
    mkdir -p $cg
    set_limit() { echo "$dev wiops=${1/#0/max}" >"$cg/$limit"; }
  fi
  echo "$1" >"$cg/cgroup.procs"
  trap 'set_limit 0; echo "$1" >"${cg%/*}/cgroup.procs"; rmdir $cg; exit' TERM
  while :; do
    sleep "$(awk "BEGIN {print ($every - $ms) / 1000}")"
    set_limit 1
    sleep "$(awk "BEGIN {print $ms / 1000}")"
    set_limit 0
  done
}

setsid "$build/bin/udiagd" --dir "$work/daemon" ${UDIAGD_ARGS:-} >/dev/null 2>&1 &
daemon=$!
for _ in $(seq 50); do [ -S "$work/daemon/control.sock" ] && break; sleep 0.1; done
# As in make bench: the daemon's CPU counts from the producers' start, and
# what setting the recording up took (faulting in its first pages) apart.
daemon_started=$(ticks $daemon)
UDIAG_DIR="$work/daemon" "$build/bin/udiag" record ${RECORD_ARGS:-} -e flood -o "$work/${OUT:-out.dat}" 2>"$work/record.err" &
recorder=$!
recorder_before=$(ticks $recorder) recorder_system_before=$(system_ticks $recorder)
sleep 0.5  # the recording's instance and auto-enable are in place
daemon_before=$(ticks $daemon) daemon_system_before=$(system_ticks $daemon)
pids=()
for i in $(seq "$producers"); do
  UDIAG_DIR="$work/daemon" "$build/bin/flood_producer" "$seconds" "$rate" >"$work/producer$i.out" 2>&1 &
  pids+=($!)
done
if [ -n "${STALL:-}" ]; then
  stall_disk $daemon "$work" "${STALL%/*}" "${STALL#*/}" &
  staller=$!
fi
wait "${pids[@]}"
if [ -n "${STALL:-}" ]; then kill $staller; wait $staller 2>/dev/null || true; fi
daemon_ticks=$(( $(ticks $daemon) - daemon_before )) recorder_ticks=$(( $(ticks $recorder) - recorder_before ))
daemon_system_ticks=$(( $(system_ticks $daemon) - daemon_system_before ))
recorder_system_ticks=$(( $(system_ticks $recorder) - recorder_system_before ))
kill -INT $recorder; wait $recorder
grep '^udiag record: [0-9]* \(lost\|dropped\)' "$work/record.err" >&2 || true
kill $daemon; wait $daemon 2>/dev/null || true

written=$(awk '{s += $2} END {print s}' "$work"/producer*.out)
recorded=$(sed -n 's/^udiag record: \([0-9]*\) events (.*/\1/p' "$work/record.err")
python3 - "$written" "${recorded:-0}" "$daemon_ticks" "$recorder_ticks" "$(getconf CLK_TCK)" "$seconds" \
  "$(( daemon_before - daemon_started ))" "$daemon_system_ticks" "$recorder_system_ticks" <<'PY'
import sys
written, recorded, daemon, recorder, hz, secs, setup, daemon_system, recorder_system = (float(x) for x in sys.argv[1:])
ns = lambda ticks: ticks / hz * 1e9 / max(recorded, 1)
print(f"recorded {recorded / 1e6:.2f} M ({recorded / secs / 1e6:.2f} M/s), "
      f"lost {100 * (1 - recorded / written) if written else 0:.1f} % of {written / 1e6:.2f} M written; "
      f"daemon {ns(daemon):.1f} ns ({ns(daemon_system):.1f} of it system time), "
      f"recorder {ns(recorder):.1f} ns ({ns(recorder_system):.1f} of it system time) per recorded event; "
      f"setting the recording up: daemon {1e3 * setup / hz:.0f} ms")
PY
