#!/usr/bin/env bash
# Soak test (`make soak`, not in CI): many producer processes write while
# producers and the daemon are killed and restarted at random, then prints
# what leaked and what was lost. See docs/testing.md.
#
#   scripts/soak.sh BUILD_DIR [SECONDS]
#
# Environment: SOAK_SECONDS (60), SOAK_PRODUCERS (100), SOAK_THREADS (4),
# SOAK_DELAY_US (20000: pause after each write, per thread; the default
# keeps the total near 20000 events/s, which a shared 2-core box sustains),
# SOAK_DAEMON_EVERY (15: seconds between daemon kills, on average),
# SOAK_KEEP=1 keeps the work directory.
set -uo pipefail

build=$(cd "${1:?usage: soak.sh BUILD_DIR [SECONDS]}" && pwd)
seconds=${2:-${SOAK_SECONDS:-60}}
producers=${SOAK_PRODUCERS:-100}
threads=${SOAK_THREADS:-4}
delay_us=${SOAK_DELAY_US:-20000}
daemon_every=${SOAK_DAEMON_EVERY:-15}
bin=$build/bin
for program in udiagd udiag restart_producer; do
  [[ -x $bin/$program ]] || { echo "soak: $bin/$program is missing (make build first)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/udiag-soak.XXXXXX)
dir=$work/d
mkdir -p "$work/out" "$work/trace"
daemon=0 reader=0 daemon_gen=0 daemon_kills=0 producer_kills=0 producer_starts=0
declare -a pid gen

cleanup() {
  for p in "${pid[@]}" "$reader" "$daemon"; do
    [[ $p -gt 0 ]] && kill -9 "$p" 2>/dev/null
  done
  wait 2>/dev/null
  if [[ ${SOAK_KEEP:-0} == 1 ]]; then echo "soak: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

alive() { [[ $1 -gt 0 ]] && kill -0 "$1" 2>/dev/null; }
shm_count() { find /dev/shm -maxdepth 1 -user "$(id -u)" 2>/dev/null | wc -l; }

start_daemon() {
  daemon_gen=$((daemon_gen + 1))
  "$bin/udiagd" --dir "$dir" 2>>"$work/udiagd.log" &
  daemon=$!
  for _ in $(seq 100); do
    "$bin/udiag" --dir "$dir" status >/dev/null 2>&1 && break
    sleep 0.05
  done
  # Only once the daemon answers: `udiag trace` would start a private one.
  "$bin/udiag" --dir "$dir" trace -e 'soak_*' >"$work/trace/$daemon_gen" 2>>"$work/reader.log" &
  reader=$!
}

kill_daemon() {
  kill -9 "$daemon" 2>/dev/null
  wait "$daemon" 2>/dev/null
  # The reader ends with the daemon's connection (ECONNRESET); give it 2 s.
  for _ in $(seq 20); do alive "$reader" || break; sleep 0.1; done
  kill -TERM "$reader" 2>/dev/null
  wait "$reader" 2>/dev/null
  daemon=0 reader=0
  daemon_kills=$((daemon_kills + 1))
}

start_producer() {
  local i=$1
  gen[i]=$((${gen[i]:-0} + 1))
  UDIAG_DIR=$dir "$bin/restart_producer" "soak_${i}_${gen[i]}" "$threads" "$delay_us" \
    >"$work/out/$i.${gen[i]}" 2>&1 &
  pid[i]=$!
  producer_starts=$((producer_starts + 1))
}

# One line per second: elapsed, daemon generation, its fds, producer rings
# it maps (memfds), RSS, shared-memory files, live producers.
sample() {
  local fds=- rings=- rss=- live=0 p
  if alive "$daemon"; then
    fds=$(ls "/proc/$daemon/fd" 2>/dev/null | wc -l)
    rings=$(grep -c 'memfd:udiag-ring' "/proc/$daemon/maps" 2>/dev/null)
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$daemon/status" 2>/dev/null)
  fi
  for p in "${pid[@]}"; do alive "$p" && live=$((live + 1)); done
  printf '%5d %4d %6s %6s %8s %5d %5d\n' "$1" "$daemon_gen" "$fds" "$rings" "$rss" "$(shm_count)" "$live" \
    >>"$work/samples"
}

echo "soak: $producers producers x $threads threads, ${seconds}s, a daemon kill every ~${daemon_every}s ($work)"
shm_before=$(shm_count)
start_daemon
for ((i = 0; i < producers; i++)); do start_producer "$i"; done
printf '%5s %4s %6s %6s %8s %5s %5s\n' secs gen fds rings rss_kB shm live >"$work/samples"

start=$SECONDS
next_daemon_kill=$((start + daemon_every / 2 + RANDOM % daemon_every))
last_sample=-1
while ((SECONDS - start < seconds)); do
  now=$((SECONDS - start))
  if ((now != last_sample)); then
    sample "$now"
    last_sample=$now
  fi
  if ((SECONDS >= next_daemon_kill)); then
    kill_daemon
    sleep "0.$((2 + RANDOM % 8))"
    start_daemon
    next_daemon_kill=$((SECONDS + daemon_every / 2 + RANDOM % daemon_every))
  fi
  # About two producer kills a second, half of them SIGKILL.
  victim=$((RANDOM % producers))
  if alive "${pid[victim]}"; then
    if ((RANDOM % 2)); then kill -TERM "${pid[victim]}"; else kill -KILL "${pid[victim]}"; fi
    producer_kills=$((producer_kills + 1))
  fi
  # Dead producers come back (a producer needs a daemon to start).
  for ((i = 0; i < producers; i++)); do
    alive "${pid[i]}" || start_producer "$i"
  done
  sleep 0.5
done
sample $((SECONDS - start))

# Survivors' own descriptors (their data file, connection, rings' memfds are
# closed once sent): they must not grow with each daemon restart.
producer_fds=$(for p in "${pid[@]}"; do alive "$p" && ls "/proc/$p/fd" 2>/dev/null | wc -l; done | sort -n | uniq -c |
  awk '{printf "%s%d fds x %d", sep, $2, $1; sep=", "}')
for p in "${pid[@]}"; do alive "$p" && kill -TERM "$p"; done
for p in "${pid[@]}"; do wait "$p" 2>/dev/null; done
sleep 1  # the reader drains what the last writes left
kill -TERM "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
kill -TERM "$daemon" 2>/dev/null
wait "$daemon" 2>/dev/null
daemon=0 reader=0
pid=()

echo
echo "== daemon over time (fds, rings mapped, RSS; a new gen after each kill; live producers)"
cat "$work/samples"
echo
echo "== leaks"
echo "  /dev/shm files of this user: $shm_before before, $(shm_count) after"
echo "  surviving producers at the end: ${producer_fds:-none}"
grep -h -v '^$' "$work/udiagd.log" | sort | uniq -c | sort -rn | head -5 | sed 's/^/  udiagd: /'

# Loss accounting over the producers that exited on SIGTERM (they print
# "done WRITTEN REFUSED"): their events, by name, in every daemon's trace.
awk '
  FNR == 1 && FILENAME ~ /\/out\// { name = FILENAME; sub(/.*\/out\//, "", name); split(name, a, "."); ev = "soak_" a[1] "_" a[2] }
  FILENAME ~ /\/out\// && $1 == "done" { done[ev] = 1; written += $2; refused += $3; graceful++ }
  FILENAME ~ /\/trace\// && /\[LOST [0-9]+ EVENTS\]/ { match($0, /\[LOST [0-9]+/); lost += substr($0, RSTART + 6, RLENGTH - 6) }
  FILENAME ~ /\/trace\// && match($0, / soak_[0-9]+_[0-9]+: /) { n = substr($0, RSTART + 1, RLENGTH - 3); seen[n]++; all++ }
  END {
    for (n in seen) if (n in done) recorded += seen[n]
    printf "\n== loss accounting\n"
    printf "  producers started %d, killed %d, daemon kills %d\n", starts, pkills, dkills
    printf "  events recorded, all producers:             %d\n", all
    printf "  producers that exited on SIGTERM:           %d\n", graceful
    printf "    events they wrote (write succeeded):      %d\n", written
    printf "    of which recorded:                        %d\n", recorded
    printf "    writes refused (no daemon / disabled):    %d\n", refused
    printf "  LOST reported in traces, all producers:     %d\n", lost
    printf "  written - recorded - lost (died in a killed daemon, or lost unreported): %d\n", written - recorded - lost
  }' starts="$producer_starts" pkills="$producer_kills" dkills="$daemon_kills" \
  "$work"/out/* "$work"/trace/*
