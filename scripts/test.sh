#!/usr/bin/env bash
# make test (what .ci/run runs): every check the project has, in the order that fails fastest,
# then a table of how long each stage took (informative, never compared with a clock).
#
#   1. shipped   the release preset (g++, what the images build): the binaries the e2e VM and the
#                images run, and the tests labelled "shipped" that check those very binaries (the
#                CNI links statically, the image provides every library the plugin loads);
#   2. asan      the whole unit and integration suite (ctest: unit, integration, reliability,
#                fuzz corpus replays, manifests) built by clang with AddressSanitizer and
#                UndefinedBehaviorSanitizer, leaks included;
#   3. tsan      the tests labelled "threads" (the device plugin's daemon: registration, gRPC,
#                event loop, metrics server) built with ThreadSanitizer;
#   4. tidy      clang-tidy over the project's own sources (.clang-tidy), warnings as errors: in
#                the background at nice 19, beside the e2e (start_tidy says why);
#   5. e2e       real RDMA traffic between pods in the qemu VM, with the binaries of stage 1;
#                then between pods on two VMs joined by a link (the two-node scenarios: RoCE v2
#                shared, RoCE v2 exclusive with DRA, iWARP shared; E2E_TWO_NODES=0 leaves them
#                out).
#
# The default preset (RelWithDebInfo, no precompiled headers) stays the developer's build: make
# build, make e2e and make demo use it.
#
# The suite runs once, under the sanitizers, rather than once more unsanitized: a sanitized run
# asserts everything the plain run does and catches what it cannot, and running it twice would
# not fit make test in 30 minutes on 2 cores. `ctest --preset default` is still the developer's
# quick loop. TEST_STAGES="asan tsan" runs only some stages.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}

# Compiler cache: outside the checkout, like the e2e image cache, so fresh clones on the same
# machine (CI) reuse it. ccache keys each object by the compiler, its flags and the preprocessed
# source, so a stale entry is never used; paths are made relative to the checkout so another
# clone's objects hit. CCACHE_DIR or RDMAK8S_CCACHE=0 override.
launcher=()
if [ "${RDMAK8S_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-/var/cache/rdmak8s/ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  export CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime,pch_defines,time_macros
  mkdir -p "$CCACHE_DIR"
  # No precompiled headers under the cache: clang's PCH records the path of the build dir that
  # made it, so every compile through one would miss in a checkout at another path (a fresh clone,
  # a CI workspace): measured, 6 of 43 hits against 36 of 36 without. The PCH saved 30% of a
  # cold asan build (docs/reliability.md); the cache saves nearly all of a warm one. The tests'
  # objects name no directory either (tests/support/test_dirs.h). RDMAK8S_CCACHE=0 keeps the PCH.
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DRDMAK8S_PCH=OFF)
fi
configure() { bash scripts/configure.sh "$1" "${launcher[@]}"; }

# The tests' scratch files (tests/support/temp_dir.h: $TMPDIR) on a tmpfs of their own, as the
# sysfs the fixtures stand in for is in memory: on the ext4 (mounted with discard) of the machine
# these figures come from, writing and removing the fixture trees cost ten times the tests' own
# time (discovery_test: 11 s against 1 s). Only the test runs get it (the builds and the e2e image
# stay on disk); it is unmounted at the end, with whatever a test left behind. Not root, or no
# tmpfs: the same directory, on disk.
scratch=$(mktemp -d /tmp/rk8s-t.XXXXXX)
if mount -t tmpfs -o mode=1777 rdmak8s-test "$scratch" 2>/dev/null; then
  scratch_mounted=1
else
  echo "make test: no tmpfs for the tests' scratch files (not root?): using $scratch on disk" >&2
  scratch_mounted=0
fi
# stop_group <pid>: a background job started with setsid, and everything it started (just the
# job itself if it has not reached its setsid yet).
stop_group() { [ -z "$1" ] || kill -- "-$1" 2>/dev/null || kill "$1" 2>/dev/null || true; }
main_pid=$BASHPID
cleanup() {
  # Only the script itself: a job it starts in the background and stops at once may still be the
  # shell's fork, which would run this trap too (and unmount the scratch dir under the script).
  [ "$BASHPID" = "$main_pid" ] || return 0
  # Background jobs left running (a failed stage, an unknown one) stop with their process groups
  # (build-image.sh resumes a half-made cache entry next time).
  stop_group "${base_pid:-}"
  stop_group "${tidy_pid:-}"
  rm -f "${base_log:-}" "${tidy_log:-}"
  if [ "$scratch_mounted" = 1 ]; then umount -l "$scratch" && rmdir "$scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT
tests() { TMPDIR=$scratch ctest "$@"; }  # ctest, with the scratch dir
stages=${TEST_STAGES:-shipped asan tsan tidy e2e}
declare -a names=() secs=() results=()
failed=0

run_stage() {  # run_stage <name> <command...>
  local name=$1; shift
  local t0=$SECONDS rc=0
  echo "== make test: stage $name"
  "$@" || rc=$?
  record "$name" $((SECONDS - t0)) "$rc"
  return "$rc"
}
record() {  # record <name> <seconds> <exit code>: a row of the closing table
  names+=("$1"); secs+=("$2")
  if [ "$3" -eq 0 ]; then results+=(passed); else results+=("FAILED (exit $3)"); failed=1; fi
}

shipped() {
  configure release &&
    cmake --build --preset release -j "$jobs" --target rdmak8s_shipped &&
    tests --preset release -L shipped -j "$jobs"
}
asan() {
  configure asan &&
    cmake --build --preset asan -j "$jobs" &&
    tests --preset asan -j "$jobs"
}
tsan() {
  configure tsan &&
    cmake --build --preset tsan -j "$jobs" &&
    tests --preset tsan -j "$jobs"
}
e2e() {
  if [ -n "${base_pid:-}" ]; then  # the VM's base, started at the beginning: wait for it
    wait "$base_pid" || echo "make test: the e2e base image failed in the background; run.py builds it again"
    cat "$base_log"; rm -f "$base_log"; base_pid=""
  fi
  python3 e2e/run.py --build-dir build/release -q || return 1
  # The two-node scenarios of make test (two VMs at once, one per scenario; e2e/README.md says
  # what they cost): E2E_TWO_NODES=0 leaves them out. make e2e-two-nodes runs the two more it
  # leaves out (two-node-link, two-node-mtu: the others prove what they do).
  if [ "${E2E_TWO_NODES:-1}" != 0 ]; then
    python3 e2e/run.py --build-dir build/release -q --two-nodes
  fi
}
# The e2e VM's kernel, siw.ko and base layer need no project binary and are mostly downloads
# (apt lists, a kernel, a debootstrapped chroot: 82 s cold, little of it CPU): they are built in
# the background from the start, under the e2e cache's lock, while the compilers run.
start_e2e_base() {
  local cache=${E2E_CACHE:-$PWD/e2e/.cache}
  mkdir -p "$cache"
  base_log=$(mktemp)
  setsid nice -n 10 flock "$cache/.run.lock" bash e2e/build-image.sh --base-only >"$base_log" 2>&1 &
  base_pid=$!
}

# tidy runs in the background at nice 19, from its place in the list to the end: clang-tidy is
# pure CPU, and at nice 19 it takes mostly the 0.9 of 2 cores the e2e VM leaves (its boots and
# RDMA traffic are bursts between waits; at equal priority tidy slowed the TCG VM's scenarios
# 2.5x, rxe-shared 28 s -> 74 s). Started earlier, at the end of the asan build, the whole run
# took longer (1,198 s against 976 s; asan's ctest 108 s against 62 s), though the machine may
# have been slower that hour too (the shipped stage: 290 s against 267 s). Its output is held
# back and shown at the end, so nothing interleaves; a stage that fails stops it.
start_tidy() {
  [ -z "${tidy_pid:-}" ] || return 0
  tidy_log=$(mktemp) tidy_t0=$SECONDS
  echo "== make test: stage tidy starts in the background (its output follows the last stage's)"
  # A process group of its own (setsid), so that stopping it stops its clang-tidy processes too.
  setsid bash -c 'renice -n 19 -p $$ >/dev/null; . scripts/lib/test-tidy.sh' _ "${launcher[@]}" >"$tidy_log" 2>&1 &
  tidy_pid=$!
  overlapped="  (wall time: tidy ran beside the stages after it started)"
}
finish_tidy() {  # finish_tidy [stop]: wait for the background tidy (or stop it), show and record it
  [ -n "${tidy_pid:-}" ] || return 0
  if [ "${1:-}" = stop ]; then
    stop_group "$tidy_pid"
    wait "$tidy_pid" 2>/dev/null; tidy_pid=""
    rm -f "$tidy_log"
    return 0
  fi
  local rc=0
  wait "$tidy_pid" || rc=$?
  tidy_pid=""
  echo "== make test: stage tidy"; cat "$tidy_log"; rm -f "$tidy_log"
  record tidy $((SECONDS - tidy_t0)) "$rc"
  return "$rc"
}

t_start=$SECONDS overlapped="" base_pid="" tidy_pid=""
case " $stages " in *" e2e "*) start_e2e_base ;; esac
for s in $stages; do
  case $s in
    tidy) start_tidy ;;
    shipped|asan|tsan|e2e) run_stage "$s" "$s" || break ;;  # stop at the first failure
    *) echo "make test: unknown stage '$s' (known: shipped asan tsan tidy e2e)" >&2; exit 2 ;;
  esac
done
if [ "$failed" = 1 ]; then finish_tidy stop; else finish_tidy; fi  # a failed stage stopped the loop

printf '\n%-10s %8s  %s\n' stage seconds result
for i in "${!names[@]}"; do
  printf '%-10s %8s  %s\n' "${names[$i]}" "${secs[$i]}" "${results[$i]}"
done
printf '%-10s %8s%s\n' total $((SECONDS - t_start)) "$overlapped"
exit "$failed"
