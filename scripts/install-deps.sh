#!/usr/bin/env bash
# Installs the Debian 12 packages udiag needs, and only the missing ones.
#
#   scripts/install-deps.sh [GROUP...]     (default: all groups)
#
# Groups:
#   build  compiler, CMake/Ninja, {fmt}, CLI11, GoogleTest, libcurl (udiag export),
#          <sys/sdt.h> (udiagd's USDT probe)
#   test   strace, the trace readers used as test oracles, bpftrace (udiag bpftrace)
#   bench  Google Benchmark, the LTTng-UST peer, bpftrace (the USDT probe's cost)
#   fuse   libfuse3 (FUSE mount) and Zydis (instruction decoder)
#   clickhouse  the ClickHouse server and client that `udiag export`'s
#          integration test and bench start
#   fuzzing  clang and its sanitizer/libFuzzer run-times (make fuzz, make test)
#   all    every group above
#
# Idempotent: asks dpkg-query which packages are missing; when none are, it
# changes nothing and exits 0 without touching the network. Otherwise it runs
# `apt-get update` once and `apt-get install -y --no-install-recommends`
# (noninteractive), through sudo when not root.
#
# Environment: UDIAG_SKIP_DEPS=1 skips everything (e.g. a non-Debian machine
# where the tools are already there).
set -euo pipefail

declare -A GROUPS_PKGS=(
  [build]="cmake ninja-build g++ pkg-config libfmt-dev libcli11-dev libgtest-dev libgmock-dev googletest libtraceevent-dev libcurl4-openssl-dev systemtap-sdt-dev"
  [test]="strace trace-cmd libtracecmd-dev babeltrace2 python3-bt2 protobuf-compiler bpftrace"
  [bench]="libbenchmark-dev liblttng-ust-dev lttng-tools bpftrace"
  [fuse]="libfuse3-dev fuse3 libzydis-dev"
  [clickhouse]="clickhouse-server clickhouse-client"
  [fuzzing]="clang libclang-rt-14-dev"
)
ALL_GROUPS=(build test bench fuse clickhouse fuzzing)

usage() {
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
}

if [[ "${UDIAG_SKIP_DEPS:-0}" == 1 ]]; then
  echo "install-deps: UDIAG_SKIP_DEPS=1, not checking packages"
  exit 0
fi

groups=("$@")
[[ ${#groups[@]} -eq 0 ]] && groups=(all)

wanted=()
for g in "${groups[@]}"; do
  case "$g" in
    -h | --help) usage; exit 0 ;;
    all) for a in "${ALL_GROUPS[@]}"; do read -ra p <<<"${GROUPS_PKGS[$a]}"; wanted+=("${p[@]}"); done ;;
    *)
      if [[ -z "${GROUPS_PKGS[$g]+x}" ]]; then
        echo "install-deps: unknown group '$g' (known: ${ALL_GROUPS[*]} all)" >&2
        exit 2
      fi
      read -ra p <<<"${GROUPS_PKGS[$g]}"
      wanted+=("${p[@]}")
      ;;
  esac
done

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: dpkg-query not found: this script is for Debian 12." >&2
  echo "install-deps: install these packages (or equivalents) yourself, then rerun with UDIAG_SKIP_DEPS=1:" >&2
  echo "  ${wanted[*]}" >&2
  exit 1
fi

# Missing = not known to dpkg, or known but not fully installed.
missing=()
declare -A seen=()
for pkg in "${wanted[@]}"; do
  [[ -n "${seen[$pkg]+x}" ]] && continue
  seen[$pkg]=1
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#seen[@]} packages for [${groups[*]}] are installed"
  exit 0
fi

echo "install-deps: missing packages: ${missing[*]}"

if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
elif command -v sudo >/dev/null 2>&1 && [[ -t 0 ]]; then
  SUDO=(sudo)  # may ask for a password on the terminal
else
  echo "install-deps: not root and sudo is unavailable (or needs a password without a terminal)." >&2
  echo "install-deps: as root, run:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q; then
  echo "install-deps: 'apt-get update' failed" >&2
  exit 1
fi
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}" </dev/null; then
  echo "install-deps: 'apt-get install ${missing[*]}' failed" >&2
  exit 1
fi
echo "install-deps: installed ${missing[*]}"
