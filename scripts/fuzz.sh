#!/usr/bin/env bash
# Runs every libFuzzer target of build/fuzz (the `fuzz` preset) for FUZZ_SECONDS each, over its
# checked-in corpus fuzz/corpus/<target>/ (inputs that reach new code are added to it: commit
# them), and prints one line per target: executions, corpus inputs, crashes. A crash (sanitizer
# report, broken invariant, timeout, out of memory) leaves its input in build/fuzz/artifacts/
# <target>/ and makes this script exit 1: fix the bug, then copy the input into the corpus as
# regress-<what> so `make test` replays it forever. See docs/reliability.md#fuzzing.
#
# usage: scripts/fuzz.sh <build dir> <seconds> [target...]
set -uo pipefail

build=${1:?build dir}
seconds=${2:?seconds per target}
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
corpus_root="$src/fuzz/corpus"
artifacts="$build/artifacts"
logs="$build/logs"
mkdir -p "$artifacts" "$logs"

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for d in "$corpus_root"/*/; do targets+=("$(basename "$d")"); done
fi

total_crashes=0
rows=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/${t}_fuzz"
  dir="$corpus_root/$t"
  if [[ ! -x $bin ]]; then
    echo "fuzz: $bin not built" >&2
    exit 2
  fi
  # Artifacts of an earlier run were reported then (and belong in the corpus as regress-*).
  rm -rf "$artifacts/$t"
  mkdir -p "$artifacts/$t"
  before=$(find "$dir" -type f | wc -l)
  # -max_len: the largest seed is a few hundred bytes; 4 KiB leaves room without making every
  # input a megabyte of JSON. -timeout: an input that takes 10 s is a hang, reported as a crash.
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$t/" "$dir" >"$logs/$t.log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
  after=$(find "$dir" -type f | wc -l)
  crashes=$(find "$artifacts/$t" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  if [[ $rc -ne 0 && $crashes -eq 0 ]]; then crashes=1; fi  # died without leaving an artifact
  total_crashes=$((total_crashes + crashes))
  rows+=("$(printf '%-14s %12s %8s %8s %8s' "$t" "${execs:-?}" "$after" "+$((after - before))" "$crashes")")
  if [[ $crashes -ne 0 ]]; then
    echo "fuzz: $t crashed; log $logs/$t.log, inputs in $artifacts/$t/" >&2
    grep -m3 -E 'ERROR: |fuzz invariant broken|runtime error' "$logs/$t.log" >&2
  fi
done

printf '%-14s %12s %8s %8s %8s\n' target executions corpus new crashes
printf '%s\n' "${rows[@]}"
echo "($seconds s per target)"
[[ $total_crashes -eq 0 ]]
