#!/usr/bin/env bash
# The `make demo` walk-through: start a private udiagd, trace an example
# producer with the udiag CLI, show the events it wrote, the daemon's
# user_events_status and the format of one of its events, record it into a
# trace.dat and report that, then stop the daemon and remove its directory.
# Needs no terminal and no root.
#
#   scripts/demo.sh [BUILD_DIR]      (default: build)
#
# Environment: UDIAG_DEMO_TIMEOUT  seconds the traced program may run (60).
set -euo pipefail

# Reads one file of the daemon's virtual tracefs through the CLI.
tree_read() {
  local err
  err=$("$UDIAG_DEMO_CLI" --dir "$UDIAG_DEMO_DIR" cat "$1" 2>&1 >"$2") && return 0
  "$UDIAG_DEMO_CLI" --dir "$UDIAG_DEMO_DIR" read "$1" >"$2" 2>/dev/null && return 0
  echo "$err" >"$2.err"
  return 1
}

# Saves user_events_status and the format of its first event into $1/.
snapshot() {
  local out=$1 name system
  tree_read user_events_status "$out/status" || return 1
  # Kernel layout: one "<name>[ # Used by ...]" line per event, a blank line,
  # then "Active:" and "Busy:" lines.
  name=$(awk 'NF == 0 { exit } { print $1; exit }' "$out/status")
  [[ -n "$name" && "$name" != *: ]] || return 0
  for system in user_events user_events_multi; do
    if tree_read "events/$system/$name/format" "$out/format"; then
      echo "events/$system/$name/format" >"$out/format_path"
      return 0
    fi
  done
  return 1
}

# --- Inner step, run by `udiag trace` as its command -----------------------
# Runs the example, then, while the trace session still has the events
# enabled (an enabled event outlives its last producer, as in the kernel),
# saves user_events_status and one event's format for the outer script.
if [[ "${1:-}" == "--traced" ]]; then
  shift
  rc=0
  "$@" || rc=$?
  snapshot "$UDIAG_DEMO_OUT" || true
  exit "$rc"
fi

# --- Outer script -----------------------------------------------------------
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${1:-build}
BIN=$BUILD_DIR/bin
TIMEOUT=${UDIAG_DEMO_TIMEOUT:-60}

die() { echo "demo: $*" >&2; exit 1; }
banner() { printf '\n=== %s\n' "$*"; }

[[ -x "$BIN/udiagd" ]] || die "$BIN/udiagd is not built (run: make)"
[[ -x "$BIN/udiag" ]] || die "$BIN/udiag is not built (run: make)"
prog=$BIN/example_cpp
[[ -x "$prog" ]] || prog=$BIN/example_c
[[ -x "$prog" ]] || die "no example program: neither $BIN/example_cpp nor $BIN/example_c is built"

dir=$(mktemp -d "${TMPDIR:-/tmp}/udiag-demo.XXXXXX")
work=$(mktemp -d "${TMPDIR:-/tmp}/udiag-demo-out.XXXXXX")
daemon_pid=""

cleanup() {
  local rc=$?
  if [[ -n "$daemon_pid" ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$daemon_pid" 2>/dev/null; then
      echo "demo: udiagd did not stop on SIGTERM; killing it" >&2
      kill -KILL "$daemon_pid" 2>/dev/null || true
    fi
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$dir" "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

UDIAG_DEMO_CLI=$(cd "$BIN" && pwd)/udiag
export UDIAG_DEMO_CLI UDIAG_DEMO_DIR=$dir UDIAG_DEMO_OUT=$work
# Programs started by the trace find the daemon through $UDIAG_DIR too.
export UDIAG_DIR=$dir

banner "udiagd --dir $dir"
"$BIN/udiagd" --dir "$dir" </dev/null >"$work/udiagd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
  [[ -S "$dir/control.sock" ]] && break
  if ! kill -0 "$daemon_pid" 2>/dev/null; then
    cat "$work/udiagd.log" >&2
    die "udiagd exited before creating $dir/control.sock"
  fi
  sleep 0.1
done
[[ -S "$dir/control.sock" ]] || { cat "$work/udiagd.log" >&2; die "udiagd did not create $dir/control.sock in 10 s"; }
echo "udiagd is running (pid $daemon_pid), socket $dir/control.sock"

banner "udiag --dir $dir trace -e 'user_events:*' -- $prog"
rc=0
timeout --kill-after=5 "$TIMEOUT" \
  "$BIN/udiag" --dir "$dir" trace -e 'user_events:*' -- bash "$ROOT/scripts/demo.sh" --traced "$prog" \
  </dev/null || rc=$?
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
  die "the trace did not finish within ${TIMEOUT} s"
elif [[ $rc -ne 0 ]]; then
  die "udiag trace exited with status $rc"
fi

# If the traced step could not take the snapshot, try once more now.
[[ -s "$work/status" ]] || snapshot "$work" || true
if [[ ! -f "$work/status" ]]; then
  cat "$work/status.err" >&2 2>/dev/null || true
  die "could not read user_events_status"
fi

banner "user_events_status"
cat "$work/status"
if [[ -f "$work/format_path" ]]; then
  banner "$(cat "$work/format_path")"
  cat "$work/format"
else
  echo "(no event left to show a format for: events are deleted with their last user)"
fi

banner "udiag --dir $dir record -o demo.dat -- $prog   (then: udiag report demo.dat)"
"$BIN/udiag" --dir "$dir" record -o "$work/demo.dat" -- "$prog" </dev/null || die "udiag record failed"
"$BIN/udiag" report "$work/demo.dat"
if command -v trace-cmd >/dev/null; then
  # -R: raw field values (Debian's libtraceevent 1.7 prints a __rel_loc byte
  # array as its loc word otherwise).
  banner "trace-cmd report -R demo.dat"
  trace-cmd report -R "$work/demo.dat"
fi

banner "stopping udiagd"
kill -TERM "$daemon_pid" 2>/dev/null || true
drc=0
for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$daemon_pid" 2>/dev/null; then
  die "udiagd did not stop on SIGTERM"
fi
wait "$daemon_pid" || drc=$?
daemon_pid=""
echo "udiagd stopped (status $drc); removed $dir"
