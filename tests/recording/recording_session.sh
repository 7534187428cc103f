# Sourced by recording tests, with BIN_DIR and UDIAG set.
#
# start_daemon: a private udiagd in $T/d, T a new temporary directory:
# DAEMON its pid, UDIAG_DIR exported.
start_daemon() {
  T=$(mktemp -d)
  "$BIN_DIR/udiagd" --dir "$T/d" & DAEMON=$!
  export UDIAG_DIR="$T/d"
  i=0; while [ ! -S "$T/d/control.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
}

# start_three_consumers DAT CTF TEXT (fail() defined): creates the `counted`
# event and starts three consumers of it, `udiag record` into the
# trace.dat DAT (pid A, stderr in DAT.err) and into the CTF directory CTF
# (B, CTF.err), and `udiag trace` into TEXT (C); it returns once all three
# have enabled the event.
start_three_consumers() {
  "$UDIAG" write --append dynamic_events 'u:counted u64 seq' || fail "cannot create the event"
  "$UDIAG" record -e counted -o "$1" 2>"$1.err" & A=$!
  "$UDIAG" record -e counted --format ctf -o "$2" 2>"$2.err" & B=$!
  "$UDIAG" trace -e counted >"$3" 2>"$3.err" & C=$!
  i=0; until enabled_everywhere; do i=$((i+1)); [ $i -lt 200 ] || fail "the consumers did not enable the event"; sleep 0.05; done
}

enabled_everywhere() {
  n=0
  for d in $("$UDIAG" ls instances 2>/dev/null); do
    [ "$("$UDIAG" cat "instances/$d/events/user_events/counted/enable" 2>/dev/null)" = 1 ] && n=$((n+1))
  done
  [ $n -ge 2 ] && [ "$("$UDIAG" cat events/user_events/counted/enable)" = 1 ]
}
