#!/usr/bin/env bash
# make bench: runs every benchmark binary of a release build (build/release/bench/*) and prints
# its figures. Add a benchmark by adding an executable in bench/CMakeLists.txt.
set -euo pipefail
BUILD=${1:-build/release}
DIR="$BUILD/bench"
if [[ ! -d "$DIR" ]]; then
  echo "bench: $DIR does not exist (build the release preset first)" >&2
  exit 1
fi
found=0
rc=0
for bin in "$DIR"/*; do
  [[ -f "$bin" && -x "$bin" ]] || continue
  found=1
  echo "=== $(basename "$bin")"
  if ! "$bin"; then
    echo "bench: $(basename "$bin") failed" >&2
    rc=1
  fi
  echo
done
if [[ $found -eq 0 ]]; then
  echo "bench: no benchmark binaries in $DIR" >&2
  exit 1
fi
exit $rc
