# The node's kubelet side: the device plugin daemon, the fake kubelet and its readers.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

# The node's kubelet side: rdmak8s-device-plugin as a daemon on the VM's real /sys and /dev, and
# rdmak8s-fake-kubelet (v1beta1 as kubelet speaks it) as the kubelet.

KUBELET_DIR=/var/lib/kubelet/device-plugins
DP_LOG=/tmp/device-plugin.log
KUBELET_OUT=/tmp/kubelet.out
KUBELET_ERR=/tmp/kubelet.err
KUBELET_PID=/run/e2e/kubelet.pid

# need_binaries NAME...: a scenario that needs the project's binaries FAILs (never skips) when the
# image lacks one.
need_binaries() {
  local b missing=""
  for b in "$@"; do
    command -v "$b" >/dev/null 2>&1 || missing="$missing $b"
  done
  if [ -n "$missing" ]; then
    result binaries FAIL "the image lacks:$missing (build them: make build; the image takes them from the build dir)"
    return 1
  fi
  return 0
}

# dp_start CONFIG_JSON_TEXT [ARGS...]: writes the config and starts the device plugin.
dp_start() {
  local conf=$1
  shift
  mkdir -p "$KUBELET_DIR" /var/lib/kubelet/plugins_registry /etc/rdmak8s
  printf '%s\n' "$conf" > /etc/rdmak8s/device-plugin.json
  rdmak8s-device-plugin --config /etc/rdmak8s/device-plugin.json --kubelet-dir "$KUBELET_DIR" \
    --registration device-plugin --metrics-address 127.0.0.1:9470 -v 1 "$@" >> "$DP_LOG" 2>&1 &
  echo $! > /run/e2e/device-plugin.pid
}

dp_stop() {
  [ -f /run/e2e/device-plugin.pid ] && kill "$(cat /run/e2e/device-plugin.pid)" 2>/dev/null
  rm -f /run/e2e/device-plugin.pid
}

# kubelet_start [--restart] ARGS...: a long-lived fake kubelet (--watch --json): its output is one
# JSON document per line, each written whole by one write(2): {"resource","devices"} for each
# ListAndWatch update (from the stream threads, in any order with the rest), and after its waits
# and allocations one {"resources","allocations","errors"}.
#
# Read it only through kubelet_docs/kubelet_updates: the file grows while it is read, and the
# answer to "was there an update for R" must not depend on what came after it. (`jq -e
# 'select(...)' FILE` does: jq 1.6, Debian 12's, sets -e's status from the LAST input only, so the
# check passes only in the moment R's update is the newest line, and a poller that comes a little
# late on a loaded machine misses it for good.)
#
# It serves kubelet's pod-resources API too, where kubelet does: next to the device-plugins dir
# (/var/lib/kubelet/pod-resources/kubelet.sock, the CNI's podResourcesSocket by default). An
# --allocate ...@NS/NAME is that pod's, and --pod-device NS/NAME=RESOURCE=IDS lists IDs for a pod
# without an Allocate (a restarted kubelet's checkpoint): the CNI takes a NAD's deviceID only
# when kubelet lists it for the pod of CNI_ARGS (docs/cni.md "Which device a pod was given").
kubelet_start() {
  : > "$KUBELET_OUT"
  rdmak8s-fake-kubelet --dir "$KUBELET_DIR" --json --watch --timeout 90 \
    --pod-resources "${KUBELET_DIR%/*}/pod-resources/kubelet.sock" "$@" >> "$KUBELET_OUT" 2>"$KUBELET_ERR" &
  echo $! > "$KUBELET_PID"
}

# Stops the fake kubelet and waits until it is gone (it exits on SIGTERM at once; SIGKILL after
# 10 s): one still alive would go on writing into the file the next kubelet_start truncated.
kubelet_stop() {
  local pid i=0
  pid=$(cat "$KUBELET_PID" 2>/dev/null)
  rm -f "$KUBELET_PID"
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || return 0
  while _alive "$pid" && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
  done
  if _alive "$pid"; then
    echo "the fake kubelet (pid $pid) did not exit 10 s after SIGTERM: killed" >&2
    kill -9 "$pid" 2>/dev/null
    while _alive "$pid"; do sleep 0.1; done
  fi
  wait "$pid" 2>/dev/null
  return 0
}

# A process that exists and is not a zombie (kill -0 succeeds on a zombie nobody reaped yet).
_alive() { [ -e "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# Every complete document the fake kubelet printed so far, one compact JSON line each. A line still
# being written (no valid JSON yet) is left for the next read.
kubelet_docs() { jq -R -c 'fromjson? // empty' "$KUBELET_OUT" 2>/dev/null; }

# Every ListAndWatch update of RESOURCE so far, oldest first.
kubelet_updates() {  # kubelet_updates RESOURCE
  kubelet_docs | jq -c --arg r "$1" 'select(type == "object" and .resource? == $r)'
}

_kubelet_summary() {
  kubelet_docs | jq -c 'select(type == "object" and has("allocations"))' | head -n 1
}

# The allocation document, once the fake kubelet printed it (waits up to SECONDS).
kubelet_allocations() {  # kubelet_allocations SECONDS
  local end doc
  end=$(($(now_ms) + $1 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    doc=$(_kubelet_summary)
    [ -n "$doc" ] && { echo "$doc"; return 0; }
    _alive "$(cat "$KUBELET_PID" 2>/dev/null)" || break
    sleep 0.5
  done
  doc=$(_kubelet_summary)
  echo "$doc"
  [ -n "$doc" ]
}

# Waits until the latest ListAndWatch update of RESOURCE shows device ID (or any device when ID is
# "*") with HEALTH; prints that update.
kubelet_wait_health() {  # kubelet_wait_health RESOURCE ID HEALTH SECONDS
  local end last
  end=$(($(now_ms) + $4 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    last=$(kubelet_updates "$1" | tail -n 1)
    if [ -n "$last" ] && echo "$last" | jq -e --arg id "$2" --arg h "$3" \
         '[.devices[] | select($id == "*" or .id == $id) | .health] | length > 0 and all(. == $h)' >/dev/null; then
      echo "$last"
      return 0
    fi
    sleep 0.5
  done
  echo "$last"
  return 1
}

# Succeeds when EVERY ListAndWatch update of RESOURCE printed so far lists device ID as Healthy
# (and at least one was printed); otherwise prints the first update that does not and fails.
# Catches a device that went Unhealthy or vanished for a while and came back, which a look at
# the latest update alone would miss.
kubelet_always_healthy() {  # kubelet_always_healthy RESOURCE ID
  local all bad
  all=$(kubelet_updates "$1")
  [ -n "$all" ] || { echo "no update of $1"; return 1; }
  bad=$(echo "$all" | jq -c --arg id "$2" \
        'select([.devices[] | select(.id == $id) | .health] != ["Healthy"])' | head -n 1)
  [ -z "$bad" ] && return 0
  echo "$bad" | jq -c --arg id "$2" \
    '{resource, ($id): ([.devices[] | select(.id == $id)] | if length == 0 then "not listed" else .[0] end)}'
  return 1
}

# kubelet_wait_registered RESOURCE SECONDS: until the fake kubelet printed an update of RESOURCE
# (whatever it printed after it).
kubelet_wait_registered() {
  local end
  end=$(($(now_ms) + $2 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    [ -n "$(kubelet_updates "$1" | head -n 1)" ] && return 0
    sleep 0.2
  done
  return 1
}
