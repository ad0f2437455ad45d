#!/usr/bin/env bash
# scripts/configure.sh <preset> [cmake args...]: `cmake --preset <preset>`, quietly, for make and
# make test. The presets generate Ninja builds; a build dir an older checkout configured with
# another generator cannot be reconfigured in place, so it is configured afresh (said on stderr).
set -euo pipefail
preset=$1; shift
cd "$(dirname "$0")/.."
cache=build/$preset/CMakeCache.txt
if [[ -f $cache ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
  echo "configure: build/$preset was made by another CMake generator; configuring it afresh" >&2
  rm -rf "build/$preset"
fi
cmake --preset "$preset" "$@" >/dev/null
