# Reporting: result and figure lines on the console, timestamps, failure details.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

log() { echo "[e2e $(cut -d' ' -f1 /proc/uptime)] $*"; }

result() {  # result CHECK PASS|FAIL DETAIL...
  local check=$1 status=$2
  shift 2
  [ "$status" = PASS ] || E2E_FAILED=$((E2E_FAILED + 1))
  echo "E2E-RESULT $E2E_SCENARIO $check $status $*"
}

figure() {  # figure NAME VALUE UNIT
  echo "E2E-FIGURE $E2E_SCENARIO $1 $2 $3"
}

# Milliseconds since boot, for CNI/registration timings.
now_ms() { awk '{printf "%d\n", $1 * 1000}' /proc/uptime; }

# Shows the end of the kernel log after a failure, for whoever reads the console.
dump_dmesg() { dmesg | tail -n "${1:-15}" | sed 's/^/  dmesg: /'; }

# Prints a file indented, for failure details on the console.
show() { [ -f "$1" ] && sed "s|^|  $(basename "$1"): |" "$1" | tail -n "${2:-25}"; }
