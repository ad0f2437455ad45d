#!/usr/bin/env bash
# scripts/tidy.sh <build-dir> [full|ci]: clang-tidy (the checks in .clang-tidy) over the product's
# own translation units in <build-dir>/compile_commands.json, nproc at a time. Exits non-zero on
# any finding and lists each one as file:line: message [check]; ends with how many files were
# checked and how long it took. `make tidy` (scope full, the default) configures the default
# preset and generates the protobuf headers first; make test runs scope ci, which keeps the
# clang-analyzer checks to common/ and cni/ (scripts/lib/tidy_units.py says why).
#
# In: common/, device-plugin/, cni/, dra/ (with api/), inspect/, each binary's main.cc.
# Out: tests/, fuzz/ and bench/ (they are checked by GCC's -Werror and run under the sanitizers;
# gtest/benchmark macros are the analyser's noise, and they would double the run on two cores),
# and the generated *.pb.cc in the build dir.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || ! ${2:-full} =~ ^(full|ci)$ ]]; then
  echo "usage: $0 <build-dir> [full|ci]" >&2
  exit 2
fi
scope=${2:-full}
build_dir=$(cd "$1" && pwd)
src_dir=$(cd "$(dirname "$0")/.." && pwd)
db="$build_dir/compile_commands.json"
[[ -f "$db" ]] || { echo "tidy: no $db (configure with CMAKE_EXPORT_COMPILE_COMMANDS)" >&2; exit 2; }
tidy=${CLANG_TIDY:-clang-tidy}
command -v "$tidy" >/dev/null || { echo "tidy: $tidy not found (scripts/install-deps.sh)" >&2; exit 2; }
jobs=${TIDY_JOBS:-$(nproc)}

# A result cache outside the checkout (like the e2e image cache and make test's ccache): a file
# that passed is not checked again while nothing it is made of changes (scripts/lib/tidy_units.py
# says what its key covers). Only passes are cached: a finding is reported on every run.
# TIDY_CACHE=off disables it.
cache=${TIDY_CACHE:-/var/cache/rdmak8s/tidy}
[[ $cache == off ]] || mkdir -p "$cache"

start=$(date +%s)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# tidy_units.py also writes $logs/db/compile_commands.json: one compile per file.
mkdir "$logs/db"
todo=$(python3 "$src_dir/scripts/lib/tidy_units.py" "$db" "$src_dir" "$build_dir" "$tidy" "$cache" \
         "$jobs" "$scope" "$logs/db") || exit 2
cached=$(sed -n 's/^CACHED\t//p' <<<"$todo")
files=(); keys=(); checks=()
while IFS=$'\t' read -r f k c; do
  [[ -n $f && $f != CACHED ]] || continue
  files+=("$f"); keys+=("$k"); checks+=("${c:--}")
done <<<"$todo"

# One log per translation unit so parallel runs do not interleave. The compile commands may be
# GCC's: -Wno-unknown-warning-option keeps clang quiet about GCC-only -W flags.
# A file's extra checks (after .clang-tidy's) ride along with it: "-" for none.
if [[ ${#files[@]} -gt 0 ]]; then
  for i in "${!files[@]}"; do printf '%s\t%s\n' "${files[$i]}" "${checks[$i]}"; done |
    xargs -P "$jobs" -I{} -d '\n' sh -c '
    f=${2%%	*}; c=${2#*	}
    log="$1/$(echo "$f" | tr / _).log"
    if [ "$c" = - ]; then set -- "$3" -p "$4"; else set -- "$3" -p "$4" "--checks=$c"; fi
    "$@" --quiet --extra-arg=-Wno-unknown-warning-option "$f" >"$log" 2>&1 || echo "$f" >>"$log.failed"
  ' _ "$logs" {} "$tidy" "$logs/db"
fi
# What passed (ran, no finding) is remembered.
for i in "${!files[@]}"; do
  log="$logs/$(echo "${files[$i]}" | tr / _).log"
  [[ $cache != off && ${keys[$i]} != - && ! -e $log.failed ]] || continue
  grep -qE '^[^ ]+:[0-9]+:[0-9]+: (error|warning):' "$log" || : >"$cache/${keys[$i]}"
done
elapsed=$(( $(date +%s) - start ))

# Findings as file:line: message [check], each once (a header's finding repeats per includer).
findings=$(cat "$logs"/*.log 2>/dev/null | grep -E '^[^ ]+:[0-9]+:[0-9]+: (error|warning):' | sort -u || true)
failed=$(cat "$logs"/*.failed 2>/dev/null | sort -u || true)
status=0
if [[ -n "$findings" ]]; then
  echo "$findings" | sed -E 's/^([^:]+:[0-9]+):[0-9]+: (error|warning): /\1: /'
  echo "tidy: $(echo "$findings" | wc -l) finding(s)" >&2
  status=1
elif [[ -n "$failed" ]]; then
  # clang-tidy failed without a finding we recognise (a compile error, a crash): show its output.
  for f in $failed; do cat "$logs/$(echo "$f" | tr / _).log"; done
  status=1
fi
echo "tidy: ${#files[@]} files checked in ${elapsed}s ($jobs at a time, scope $scope); ${cached} unchanged since they passed (cache: $cache)"
exit $status
