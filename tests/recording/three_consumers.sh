# Sourced by recording tests, with BIN_DIR, UDIAG and T set and fail()
# defined: start_three_consumers DAT CTF TEXT creates the `counted` event
# and starts three consumers of it, `udiag record` into the trace.dat DAT
# (pid A, stderr in DAT.err) and into the CTF directory CTF (B, CTF.err),
# and `udiag trace` into TEXT (C); it returns once all three have enabled
# the event.
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
