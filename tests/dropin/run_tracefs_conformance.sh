#!/bin/sh
# Runs tracefs_conformance under `udiag run` (run_under_udiag_run.sh) and
# checks that the host's mounts under /sys/kernel are the same afterwards:
# the program mounts tracefs on /sys/kernel/tracing inside the namespace.
# Usage: run_tracefs_conformance.sh BIN_DIR PROGRAM
mounts() { awk '$5 ~ "^/sys/kernel"' /proc/self/mountinfo | sort; }
BEFORE=$(mounts)
"$(dirname "$0")/run_under_udiag_run.sh" "$@"; RC=$?
AFTER=$(mounts)
if [ "$BEFORE" != "$AFTER" ]; then
  echo "FAIL: the host's mounts changed"; echo "before:"; echo "$BEFORE"; echo "after:"; echo "$AFTER"; exit 1
fi
exit $RC
