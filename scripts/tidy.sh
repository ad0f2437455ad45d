#!/usr/bin/env bash
# scripts/tidy.sh <build-dir>: clang-tidy (the checks in .clang-tidy) over the product's own
# translation units in <build-dir>/compile_commands.json, nproc at a time. Exits non-zero on any
# finding and lists each one as file:line: message [check]; ends with how many files were checked
# and how long it took. `make tidy` configures the default preset and generates the protobuf
# headers first.
#
# In: common/ (with inspect/), device-plugin/, cni/, dra/ (with api/), each binary's main.cc.
# Out: tests/, fuzz/ and bench/ (they are checked by GCC's -Werror and run under the sanitizers;
# gtest/benchmark macros are the analyser's noise, and they would double the run on two cores),
# and the generated *.pb.cc in the build dir.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 <build-dir>" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
src_dir=$(cd "$(dirname "$0")/.." && pwd)
db="$build_dir/compile_commands.json"
[[ -f "$db" ]] || { echo "tidy: no $db (configure with CMAKE_EXPORT_COMPILE_COMMANDS)" >&2; exit 2; }
tidy=${CLANG_TIDY:-clang-tidy}
command -v "$tidy" >/dev/null || { echo "tidy: $tidy not found (scripts/install-deps.sh)" >&2; exit 2; }
jobs=${TIDY_JOBS:-$(nproc)}

# The product's translation units, once each, sorted (a file can be in two targets' commands).
mapfile -t files < <(python3 - "$db" "$src_dir" "$build_dir" <<'EOF'
import json, os, sys
db, src, build = sys.argv[1:4]
ours = tuple(os.path.join(src, d) + os.sep for d in ("common", "device-plugin", "cni", "dra"))
seen = set()
for entry in json.load(open(db)):
    f = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    if f.startswith(build + os.sep) or f.endswith(".pb.cc") or not f.startswith(ours):
        continue
    seen.add(f)
print("\n".join(sorted(seen)))
EOF
)
[[ ${#files[@]} -gt 0 ]] || { echo "tidy: no product sources in $db" >&2; exit 2; }

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$(date +%s)
# One log per translation unit so parallel runs do not interleave. The compile commands are
# GCC's: -Wno-unknown-warning-option keeps clang quiet about GCC-only -W flags.
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} sh -c '
  log="$1/$(echo "$2" | tr / _).log"
  "$3" -p "$4" --quiet --extra-arg=-Wno-unknown-warning-option "$2" >"$log" 2>&1 || echo "$2" >>"$log.failed"
' _ "$logs" {} "$tidy" "$build_dir"
elapsed=$(( $(date +%s) - start ))

# Findings as file:line: message [check], each once (a header's finding repeats per includer).
findings=$(cat "$logs"/*.log | grep -E '^[^ ]+:[0-9]+:[0-9]+: (error|warning):' | sort -u || true)
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
echo "tidy: ${#files[@]} files checked in ${elapsed}s ($jobs at a time)"
exit $status
