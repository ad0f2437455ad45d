#!/usr/bin/env bash
# make bench: runs every benchmark of a release build and prints its figures.
set -euo pipefail
BUILD=${1:-build/release}
echo "bench: no benchmarks yet" >&2
