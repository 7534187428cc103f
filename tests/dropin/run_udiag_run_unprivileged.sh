#!/bin/sh
# `udiag run` as an unprivileged user (uid 65534), which goes through a user
# namespace: with /dev/fuse unusable it must say so; with /dev/fuse usable a
# kernel-ABI program and a tracefs shell habit must work, with a private
# daemon started for the user. Run as root (to switch users and to set
# /dev/fuse's mode, restored on exit).
# Usage: run_udiag_run_unprivileged.sh BIN_DIR PRELOAD PROGRAM
if [ -n "${UDIAG_SANITIZE:-}" ]; then
  echo "SKIP: the preload is built with -fsanitize=$UDIAG_SANITIZE; it cannot be injected into other programs"; exit 77
fi
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to run commands as uid 65534"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse on this machine"; exit 77; }
BIN_DIR="$1"; PRELOAD="$2"; PROGRAM="$3"
unset LD_PRELOAD
# The unprivileged user cannot enter the build tree (it may be under a 0700
# directory): give it a copy laid out as an install is (bin/, lib/).
WORK=$(mktemp -d)
chmod 755 "$WORK"
mkdir -p "$WORK/bin" "$WORK/lib" "$WORK/run"
cp "$BIN_DIR/udiag" "$BIN_DIR/udiagd" "$PROGRAM" "$WORK/bin/"
cp "$PRELOAD" "$WORK/lib/"
cp -P "$(dirname "$PRELOAD")"/libudiag.so* "$WORK/lib/"  # what udiag itself loads
chown 65534:65534 "$WORK/run"
MODE=$(stat -c %a /dev/fuse)
cleanup() { chmod "$MODE" /dev/fuse; rm -rf "$WORK"; }
fail() { echo "FAIL: $*"; cleanup; exit 1; }
as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    env -i PATH=/usr/bin:/bin HOME="$WORK/run" UDIAG_DIR="$WORK/run/udiag" LD_LIBRARY_PATH="$WORK/lib" "$@"
}
UDIAG="$WORK/bin/udiag"
NAME=$(basename "$PROGRAM")

# 1. /dev/fuse not usable by the user: a refusal that names it.
chmod 600 /dev/fuse || { echo "SKIP: cannot change /dev/fuse's mode here"; cleanup; exit 77; }
as_nobody "$UDIAG" run -- true 2>"$WORK/err" && fail "udiag run worked without access to /dev/fuse"
cat "$WORK/err"
grep -q 'cannot use /dev/fuse' "$WORK/err" || fail "the refusal does not name /dev/fuse"

# 2. /dev/fuse usable (Debian's default mode): through a user namespace.
chmod 666 /dev/fuse
if ! as_nobody "$UDIAG" run -- true 2>"$WORK/err"; then
  cat "$WORK/err"
  grep -q 'unprivileged user namespaces are disabled' "$WORK/err" &&
    { echo "SKIP: this kernel refuses unprivileged user namespaces (the message above says how to allow them)"; cleanup; exit 77; }
  fail "udiag run -- true failed as uid 65534"
fi
as_nobody "$UDIAG" run -- "$WORK/bin/$NAME" rfc || fail "the RFC program failed as uid 65534"
as_nobody "$UDIAG" run -- "$WORK/bin/$NAME" v1 || fail "the 5.18 program failed as uid 65534"
as_nobody "$UDIAG" run -- sh -c 'echo "u:nobody_event u32 x" >> /sys/kernel/tracing/dynamic_events &&
  cat /sys/kernel/tracing/dynamic_events && id -u' >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "tracefs habits failed as uid 65534"; }
cat "$WORK/out"
grep -q '^u:nobody_event u32 x$' "$WORK/out" || fail "dynamic_events does not list the new event"
grep -qx 65534 "$WORK/out" || fail "the command did not run as uid 65534"
grep -q ' /sys/kernel/tracing fuse' /proc/mounts && fail "a FUSE mount was left in the host namespace"
cleanup
echo "udiag run unprivileged: ok"
