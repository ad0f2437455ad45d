# Helpers for the e2e scenarios, sourced by /init (busybox ash) and by the debug shell (ENV).
#
# Vocabulary:
#   fabric  the bridge fab0 standing in for the switch between the node's NICs.
#   slot    a VF-like port: a pod-sandbox network namespace created up front (as a runtime creates
#           it before CNI ADD) holding netdev net1, a veth whose peer sits on the fabric, with a soft
#           RDMA device created on it INSIDE the namespace. A soft device dies when its netdev
#           changes namespace, so it has to be born where it will stay; real VFs don't have this
#           limit and none of this leaks into the product.
#   pod     a slot's network namespace, optionally plus a mount namespace whose /dev/infiniband
#           holds only the nodes the device plugin allocated (see pod_create), and an environment.
#
# Results: one line per check, `E2E-RESULT <scenario> <check> PASS|FAIL <detail>`, and figures,
# `E2E-FIGURE <scenario> <name> <value> <unit>` (informative, never asserted). The runner parses
# both from the console.

IP=/bin/ip          # iproute2: busybox's own ip applet has no netns support
RDMA=/usr/bin/rdma
FABRIC=fab0
E2E_SCENARIO=${E2E_SCENARIO:-shell}
E2E_TIMEOUT=${E2E_TIMEOUT:-120}   # seconds any one traffic command may take (TCG is slow)
E2E_FAILED=${E2E_FAILED:-0}
E2E_VERBOSE=${E2E_VERBOSE:-0}     # 1: show tool outputs of passing checks too

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

# ---------------------------------------------------------------------------------------------
# Node hardware emulation.

fabric_up() {
  $IP link show $FABRIC >/dev/null 2>&1 && return 0
  $IP link add $FABRIC type bridge || return 1
  $IP link set $FABRIC up
}

# slot_add SLOT KIND [ADDR/PREFIX]: netns SLOT with net1 on the fabric and soft device KIND_SLOT
# (KIND rxe or siw) created on net1 inside the namespace. Without ADDR, net1 gets its address later
# (from IPAM through CNI ADD).
slot_add() {
  local slot=$1 kind=$2 addr=$3 err
  fabric_up || return 1
  $IP netns add "$slot" || return 1
  $IP link add "${slot}h" type veth peer name net1 netns "$slot" || return 1
  $IP link set "${slot}h" master $FABRIC up || return 1
  $IP -n "$slot" link set lo up
  $IP -n "$slot" link set net1 up || return 1
  if [ -n "$addr" ]; then $IP -n "$slot" addr add "$addr" dev net1 || return 1; fi
  # `rdma link add ... netdev X` looks X up in the caller's namespace.
  if ! err=$($IP netns exec "$slot" $RDMA link add "${kind}_$slot" type "$kind" netdev net1 2>&1); then
    echo "rdma link add ${kind}_$slot type $kind netdev net1 (in netns $slot): $err" >&2
    return 1
  fi
}

slot_dev() { ls /sys/class/infiniband 2>/dev/null | grep "_$1\$" | head -n 1; }

# Index of the RoCE v2 GID that carries IPv4 address IP4 on port 1 of DEV, computed from gids/* and
# gid_attrs/types/* (never assumed: mlx5 uses 3, rxe 1). One grep per table: forking per slot
# (rxe has 1024) costs a minute under TCG.
gid_index() {  # gid_index DEV IP4
  _gid_index_here "$@"
}
# The same, read from inside a pod (in exclusive mode only the pod's sysfs shows its device).
pod_gid_index() {  # pod_gid_index POD DEV IP4
  pod_run "$1" sh -c ". /e2e/lib.sh; _gid_index_here $2 $3"
}
_gid_index_here() {
  local d=/sys/class/infiniband/$1/ports/1 want
  want=$(echo "$2" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4}')
  { grep -H . "$d"/gid_attrs/types/* 2>/dev/null | sed 's|.*/types/\([0-9]*\):|T \1 |'
    grep -H "^$want\$" "$d"/gids/* 2>/dev/null | sed 's|.*/gids/\([0-9]*\):|G \1 |'
  } | awk '$1 == "T" && $3 == "RoCE" && $4 == "v2" { v2[$2] = 1 }
           $1 == "G" { g[$2] = 1 }
           END { best = -1; for (i in g) if (i in v2 && (best < 0 || i + 0 < best)) best = i + 0;
                 if (best >= 0) print best; else exit 1 }'
}

# ---------------------------------------------------------------------------------------------
# Pods. A pod is recorded under /run/e2e/pods/NAME: netns (the slot), pid (a pause process holding
# its mount namespace, when it has one) and env (KEY=VALUE lines from Allocate).

POD_DIR=/run/e2e/pods

pod_register_netns() {  # pod_register_netns POD SLOT: a pod that is only a network namespace
  mkdir -p "$POD_DIR/$1" && echo "$2" > "$POD_DIR/$1/netns" && : > "$POD_DIR/$1/env"
}

# pod_run POD CMD...: runs CMD in the pod's namespaces with the pod's environment.
pod_run() {
  local pod=$1 d=$POD_DIR/$1 slot
  shift
  if [ ! -f "$d/netns" ]; then
    # Not a registered pod: a bare slot name.
    $IP netns exec "$pod" "$@"
    return
  fi
  slot=$(cat "$d/netns")
  if [ -f "$d/pid" ]; then
    nsenter -t "$(cat "$d/pid")" -n -m env $(cat "$d/env") "$@"
  else
    $IP netns exec "$slot" env $(cat "$d/env") "$@"
  fi
}

pod_slot() { if [ -f "$POD_DIR/$1/netns" ]; then cat "$POD_DIR/$1/netns"; else echo "$1"; fi; }

# Kills every process left in the pod's network namespace except pause processes (several pods can
# share a slot's namespace): a stale server would answer the next test.
pod_kill() {
  local slot pids keep p
  slot=$(pod_slot "$1")
  keep=" $(cat "$POD_DIR"/*/pid 2>/dev/null | tr '\n' ' ') "
  pids=$($IP netns pids "$slot" 2>/dev/null)
  for p in $pids; do
    case $keep in *" $p "*) ;; *) kill -9 "$p" 2>/dev/null ;; esac
  done
  return 0
}

# Waits until a TCP listener on PORT exists in the pod's network namespace (perftest and
# ibv_*_pingpong exchange their QP data over TCP before any verbs traffic).
wait_tcp_listen() {  # wait_tcp_listen POD PORT SECONDS [PID]
  local hex end
  hex=$(printf '%04X' "$2")
  end=$(($(now_ms) + $3 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    $IP netns exec "$(pod_slot "$1")" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
      awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { found = 1 } END { exit !found }' && return 0
    # A server that already exited will never listen.
    [ -n "$4" ] && ! kill -0 "$4" 2>/dev/null && return 1
    sleep 0.2
  done
  return 1
}

# rdma_cm listeners open no TCP socket: readiness is an cm_id in state LISTEN.
wait_cm_listen() {  # wait_cm_listen POD SECONDS [PID]
  local end
  end=$(($(now_ms) + $2 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    pod_run "$1" $RDMA res show cm_id 2>/dev/null | grep -q LISTEN && return 0
    [ -n "$3" ] && ! kill -0 "$3" 2>/dev/null && return 1
    sleep 0.2
  done
  return 1
}

# pair NAME SERVER_POD CLIENT_POD READY SERVER_CMD CLIENT_CMD
#   READY: tcp:PORT, cm, or none. Runs the server in the background, waits until it is ready, runs
#   the client, kills the server as soon as the client fails (or every failure waits out its
#   timeout), and leaves the outputs in /tmp/NAME.server and /tmp/NAME.client. Returns the client's
#   exit status (callers check the outputs, not only this).
pair() {
  local name=$1 spod=$2 cpod=$3 ready=$4 scmd=$5 ccmd=$6 spid crc ok=1
  pod_kill "$spod"; pod_kill "$cpod"
  log "$name: server in $spod: $scmd"
  pod_run "$spod" timeout -s KILL "$E2E_TIMEOUT" $scmd > "/tmp/$name.server" 2>&1 &
  spid=$!
  case $ready in
    tcp:*) wait_tcp_listen "$spod" "${ready#tcp:}" 30 $spid || ok=0 ;;
    cm) wait_cm_listen "$spod" 30 $spid || ok=0 ;;
    *) sleep 1 ;;
  esac
  if [ $ok = 0 ]; then
    echo "server not ready (exited, or no listener after 30 s)" > "/tmp/$name.client"
    kill -9 $spid 2>/dev/null; wait $spid 2>/dev/null
    pod_kill "$spod"
    return 124
  fi
  log "$name: client in $cpod: $ccmd"
  pod_run "$cpod" timeout -s KILL "$E2E_TIMEOUT" $ccmd > "/tmp/$name.client" 2>&1
  crc=$?
  if [ $crc != 0 ]; then kill -9 $spid 2>/dev/null; fi
  wait $spid 2>/dev/null
  pod_kill "$spod"; pod_kill "$cpod"
  return $crc
}

# Reads perftest's result row (the first numeric row after the "#bytes #iterations" header) and
# prints "ITERATIONS VALUE" where VALUE is column COL (4 = BW average for *_bw, 5 = t_typical for
# *_lat).
perftest_row() {  # perftest_row FILE COL
  awk -v col="$2" '/#bytes/ { hdr = 1; next }
                   hdr && $1 ~ /^[0-9]+$/ && NF >= col { print $2, $col; exit }' "$1"
}

# Verifiers: each reads a client output, sets VERDICT (a sentence) and VALUE (a figure, or empty),
# and returns 0 when the traffic really happened. Checked by iterations and figures, never by exit
# codes alone (perftest can exit 0 after "0 iterations").
verify_perftest() {  # verify_perftest FILE ITERS COL UNIT
  local row n v
  row=$(perftest_row "$1" "$3")
  n=${row% *}
  v=${row#* }
  VALUE=""
  # The proof of traffic is the row with every iteration done; the figure beside it is only a
  # figure. A finite positive number is recorded. perftest prints "inf" or "nan" when its cycle
  # clock went wrong (under TCG its sampled CPU frequency can come out 0: seen in CI as
  # "300 inf" for ib_send_lat -R); that run still completed, so it passes without a figure.
  if [ -n "$row" ] && [ "$n" = "$2" ]; then
    if echo "$v" | grep -Eq '^[0-9]+(\.[0-9]+)?$' && awk -v v="$v" 'BEGIN { exit !(v + 0 > 0) }'; then
      VERDICT="$n iterations, $v $4"
      VALUE=$v
      return 0
    fi
    if echo "$v" | grep -Eiq '^[-+]?(inf|nan)$'; then
      VERDICT="$n iterations, no figure (perftest's clock gave '$v')"
      return 0
    fi
  fi
  VERDICT="expected $2 iterations with a positive result, got '${row:-no result row}'"
  return 1
}

verify_pingpong() {  # verify_pingpong FILE ITERS: "N iters in S seconds = U usec/iter"
  local line
  line=$(grep -m1 " iters in " "$1")
  VALUE=""
  if [ "$(echo "$line" | awk '{print $1}')" = "$2" ]; then
    VERDICT=$line
    VALUE=$(echo "$line" | awk '{print $(NF-1)}')
    return 0
  fi
  VERDICT="expected '$2 iters in', got '${line:-nothing}'"
  return 1
}

verify_rping() {  # verify_rping FILE COUNT: rping -v prints one "ping data:" line per iteration
  local n
  n=$(grep -c "ping data: rdma-ping-" "$1")
  VALUE=""
  if [ "$n" -ge "$2" ]; then
    VERDICT="$n verified pings"
    return 0
  fi
  VERDICT="expected $2 verified pings, got $n"
  return 1
}

# traffic CHECK FIGURE_UNIT READY SPOD CPOD SCMD CCMD VERIFY VERIFY_ARGS...
#   Runs a server/client pair and verifies the client's output. One retry: TCG on a loaded
#   machine occasionally stalls a run; a second failure is a FAIL, and a pass on the second
#   attempt says so in its detail.
traffic() {
  local check=$1 unit=$2 ready=$3 spod=$4 cpod=$5 scmd=$6 ccmd=$7 verify=$8 first="" attempt=1
  shift 8
  while :; do
    pair "$check" "$spod" "$cpod" "$ready" "$scmd" "$ccmd"
    if $verify "/tmp/$check.client" "$@"; then
      result "$check" PASS "$VERDICT${first:+ (on attempt 2; attempt 1: $first)}"
      [ -n "$VALUE" ] && figure "$check" "$VALUE" "$unit"
      [ "$E2E_VERBOSE" = 1 ] && show "/tmp/$check.client" 40
      return 0
    fi
    show "/tmp/$check.client"
    show "/tmp/$check.server"
    dump_dmesg
    if [ $attempt -ge 2 ]; then
      result "$check" FAIL "$VERDICT (attempt 1: $first)"
      return 1
    fi
    log "$check: attempt 1 failed ($VERDICT); once more"
    first=$VERDICT
    attempt=2
  done
}

# ---------------------------------------------------------------------------------------------
# Traffic batteries, shared by scenarios. Each takes two pods, their RDMA devices and the server's
# IPv4 address.

ITERS_PP=200      # ibv_rc_pingpong iterations
ITERS_BW=300      # ib_write_bw iterations (64 KiB each)
ITERS_LAT=300     # ib_send_lat iterations
RPING_COUNT=10
PERFTEST_BW_OPTS=${PERFTEST_BW_OPTS:-}  # more ib_write_bw options (the two-node scenarios' own)

# Raw verbs (RoCE only: iWARP connects through rdma_cm alone) with each pod's RoCE v2 GID index.
battery_raw_verbs() {  # battery_raw_verbs PREFIX SPOD SDEV SIP CPOD CDEV CIP
  local p=$1 spod=$2 sdev=$3 sip=$4 cpod=$5 cdev=$6 cip=$7 sg cg
  sg=$(pod_gid_index "$spod" "$sdev" "$sip")
  cg=$(pod_gid_index "$cpod" "$cdev" "$cip")
  if [ -z "$sg" ] || [ -z "$cg" ]; then
    result "$p-gid-index" FAIL "no RoCE v2 GID for $sip on $sdev ('$sg') or $cip on $cdev ('$cg')"
    return 1
  fi
  result "$p-gid-index" PASS "RoCE v2 IPv4 GID index $sg on $sdev, $cg on $cdev"
  traffic "$p-ibv_rc_pingpong" usec/iter tcp:18515 "$spod" "$cpod" \
    "ibv_rc_pingpong -d $sdev -i 1 -g $sg -n $ITERS_PP" \
    "ibv_rc_pingpong -d $cdev -i 1 -g $cg -n $ITERS_PP $sip" \
    verify_pingpong $ITERS_PP
  traffic "$p-ib_write_bw" MB/s tcp:18515 "$spod" "$cpod" \
    "ib_write_bw -d $sdev -i 1 -x $sg -F -n $ITERS_BW $PERFTEST_BW_OPTS" \
    "ib_write_bw -d $cdev -i 1 -x $cg -F -n $ITERS_BW $PERFTEST_BW_OPTS $sip" \
    verify_perftest $ITERS_BW 4 MB/s
  traffic "$p-ib_send_lat" usec tcp:18515 "$spod" "$cpod" \
    "ib_send_lat -d $sdev -i 1 -x $sg -F -n $ITERS_LAT" \
    "ib_send_lat -d $cdev -i 1 -x $cg -F -n $ITERS_LAT $sip" \
    verify_perftest $ITERS_LAT 5 usec
}

# rdma_cm: rping and the perftest -R variants. BIND=bind makes the perftest server bind the pod's
# address instead of the wildcard (needed with more than one siw device: see
# e2e/guest-src/rdma_bind_source.c).
battery_rdma_cm() {  # battery_rdma_cm PREFIX SPOD SDEV SIP CPOD CDEV [BIND]
  local p=$1 spod=$2 sdev=$3 sip=$4 cpod=$5 cdev=$6 pre=""
  [ "$7" = bind ] && pre="env LD_PRELOAD=/e2e/lib/rdma_bind_source.so E2E_RDMA_BIND_ADDR=$sip"
  traffic "$p-rping" pings cm "$spod" "$cpod" \
    "rping -s -a $sip -v -C $RPING_COUNT" \
    "rping -c -a $sip -v -C $RPING_COUNT" \
    verify_rping $RPING_COUNT
  traffic "$p-ib_write_bw-R" MB/s cm "$spod" "$cpod" \
    "$pre ib_write_bw -R -d $sdev -i 1 -F -n $ITERS_BW $PERFTEST_BW_OPTS" \
    "ib_write_bw -R -d $cdev -i 1 -F -n $ITERS_BW $PERFTEST_BW_OPTS $sip" \
    verify_perftest $ITERS_BW 4 MB/s
  traffic "$p-ib_send_lat-R" usec cm "$spod" "$cpod" \
    "$pre ib_send_lat -R -d $sdev -i 1 -F -n $ITERS_LAT" \
    "ib_send_lat -R -d $cdev -i 1 -F -n $ITERS_LAT $sip" \
    verify_perftest $ITERS_LAT 5 usec
}

# check_ping CHECK POD ADDR: plain IP reachability over the fabric, before any RDMA.
check_ping() {
  local out
  if out=$(pod_run "$2" ping -c 1 -W 10 "$3" 2>&1); then
    result "$1" PASS "$3 answers"
  else
    result "$1" FAIL "ping $3 from $2: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
  fi
}

# ---------------------------------------------------------------------------------------------
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
kubelet_start() {
  : > "$KUBELET_OUT"
  rdmak8s-fake-kubelet --dir "$KUBELET_DIR" --json --watch --timeout 90 "$@" >> "$KUBELET_OUT" 2>"$KUBELET_ERR" &
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

# ---------------------------------------------------------------------------------------------
# Pods: a slot's network namespace plus a mount namespace whose /dev/infiniband holds only the nodes
# Allocate returned, with Allocate's environment. A missing node fails a test as it fails a
# container.

# pod_create POD SLOT ALLOCATION_JSON: ALLOCATION_JSON is one container response of Allocate
# ({"envs","devices":[{"host_path","container_path","permissions"}],...}).
pod_create() {
  local pod=$1 slot=$2 alloc=$3 d=$POD_DIR/$1 host cpath hex maj min i=0
  mkdir -p "$d"
  echo "$slot" > "$d/netns"
  echo "$alloc" > "$d/allocate.json"
  echo "$alloc" | jq -r '(.envs // {}) | to_entries[] | "\(.key)=\(.value)"' > "$d/env" || return 1
  : > "$d/nodes"
  for host in $(echo "$alloc" | jq -r '(.devices // [])[] | "\(.host_path)=\(.container_path)"'); do
    cpath=${host#*=}
    host=${host%%=*}
    case $cpath in
      /dev/infiniband/*) ;;
      *) echo "pod $pod: Allocate gave container path $cpath outside /dev/infiniband" >&2; return 1 ;;
    esac
    hex=$(stat -c '%t %T' "$host" 2>/dev/null) || {
      echo "pod $pod: Allocate gave host path $host, which does not exist" >&2; return 1; }
    maj=$(printf '%d' "0x${hex% *}")
    min=$(printf '%d' "0x${hex#* }")
    echo "$cpath $maj $min" >> "$d/nodes"
  done
  rm -f "$d/ready"
  # The pause process: in the slot's netns (ip netns exec also remounts /sys for it), a private
  # mount namespace with a fresh tmpfs on /dev/infiniband and only the allocated nodes in it.
  $IP netns exec "$slot" unshare -m sh -c '
    d=$1
    mount -t tmpfs -o mode=0755 tmpfs /dev/infiniband || exit 1
    while read -r cpath maj min; do
      mknod -m 0666 "$cpath" c "$maj" "$min" || exit 1
    done < "$d/nodes"
    : > "$d/ready"
    exec sleep 2147483647' sh "$d" > "$d/pause.log" 2>&1 &
  echo $! > "$d/pid"
  while [ ! -f "$d/ready" ] && [ $i -lt 100 ]; do
    kill -0 "$(cat "$d/pid")" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
  done
  if [ ! -f "$d/ready" ]; then
    echo "pod $pod: pause process did not come up: $(cat "$d/pause.log")" >&2
    return 1
  fi
}

pod_delete() {  # pod_delete POD: kills the pod's processes and its pause process
  local d=$POD_DIR/$1
  pod_kill "$1"
  [ -f "$d/pid" ] && kill -9 "$(cat "$d/pid")" 2>/dev/null
  rm -rf "$d"
}

# ---------------------------------------------------------------------------------------------
# CNI through a real runtime library: cni-driver (Go, Debian's libcni) executes a conflist as a
# runtime does. Plugins in /opt/cni/bin: e2e-slot (e2e/cni), host-local, rdmak8s.

CNI_BIN=/opt/cni/bin
CNI_CACHE=/var/lib/cni/cache

# pod_conflist POD DEVICE_ID NETNS_MODE [QOS_JSON]: the pod's chained network: e2e-slot with
# host-local IPAM on the fabric subnet, then rdmak8s with deviceID DEVICE_ID (an RDMA device name
# or an allocated device-plugin ID, as Multus injects it). E2E_IPAM_RANGE (a JSON object such as
# {"rangeStart": ..., "rangeEnd": ...}) narrows the node's range: the two-node e2e gives each node
# its own part of the subnet.
pod_conflist() {
  local qos=${4:-'{"roceTos": 106}'} range=${E2E_IPAM_RANGE:-'{}'}
  # The CNI's log file is the node's to choose (its node configuration), not the netconf's.
  mkdir -p /etc/cni/rdmak8s
  [ -f /etc/cni/rdmak8s/node.json ] || echo '{"logFile": "/tmp/rdmak8s-cni.log"}' > /etc/cni/rdmak8s/node.json
  jq -n --arg dev "$2" --arg mode "$3" --argjson qos "$qos" --argjson range "$range" '{
    cniVersion: "1.0.0", name: "e2e-fabric",
    plugins: [
      {type: "e2e-slot",
       ipam: {type: "host-local", ranges: [[{subnet: "198.18.0.0/24"} + $range]],
              dataDir: "/var/lib/cni/networks"}},
      {type: "rdmak8s", deviceID: $dev, netnsMode: $mode, qos: $qos, logLevel: "debug"}
    ]}' > "$POD_DIR/$1/net.conflist"
}

# cni POD ADD|CHECK|DEL|GC: runs cni-driver on the pod's conflist (ADD, CHECK, DEL through libcni;
# GC with no valid attachment), with the CNI_ARGS in $POD_DIR/POD/cni_args when there is one
# (K=V;K=V, as runtimes pass K8S_POD_UID); its stdout (result or CNI error object) and stderr go
# to $POD_DIR/POD/cni.CMD and cni.CMD.err.
cni() {
  local pod=$1 cmd=$2 d=$POD_DIR/$1 slot args=""
  slot=$(cat "$d/netns")
  [ -f "$d/cni_args" ] && args=$(cat "$d/cni_args")
  cni-driver -conflist "$d/net.conflist" -cmd "$cmd" -netns "/run/netns/$slot" -id "e2e-$pod" \
    -ifname net1 -plugin-dirs "$CNI_BIN" -cache-dir "$CNI_CACHE" ${args:+-args "$args"} \
    > "$d/cni.$cmd" 2> "$d/cni.$cmd.err"
}

# Prints what rdmak8s state remains (attachment records, saved knobs) and fails when any does.
# The lock file and an empty knobs.json are not state.
cni_state_left() {
  local dir=/var/lib/cni/rdmak8s left knobs
  left=$(find "$dir/attachments" -type f 2>/dev/null | tr '\n' ' ')
  if [ -f "$dir/knobs.json" ]; then
    knobs=$(jq -c . "$dir/knobs.json" 2>&1)
    case $knobs in '{}'|'[]'|null|'') ;; *) left="$left knobs.json: $knobs" ;; esac
  fi
  echo "$left"
  [ -z "$left" ]
}

# The pod's IPv4 address from its CNI ADD result.
pod_ip() { jq -r '.ips[0].address' "$POD_DIR/$1/cni.ADD" 2>/dev/null | cut -d/ -f1; }

# ---------------------------------------------------------------------------------------------
# The whole stack, as a node runs it: slots, device plugin + kubelet, pods from Allocate, networks
# from CNI ADD. Used by the pods-* scenarios.

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

# stack_up KIND NETNS_MODE: two slots carrying KIND devices; the device plugin with one pool per
# slot (rdma/slot1, rdma/slot2; pool mode exclusive when the RDMA netns mode is: the device then
# moves into its one pod); the fake kubelet allocating one of each; pods podA and podB built from
# the Allocate answers; their networks attached by CNI ADD and verified by CHECK.
# Sets A_IP and B_IP. Returns non-zero when the pods could not be built (traffic is then pointless).
stack_up() {
  local kind=$1 mode=$2 pool_mode=shared s pod slot t0 t1 doc alloc dev devid env want got uv
  [ "$mode" = exclusive ] && pool_mode=exclusive
  need_binaries rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s || return 1
  for s in slot1 slot2; do
    if err=$(slot_add $s "$kind" 2>&1); then
      result "slot-$s" PASS "netns $s, net1 on $FABRIC, ${kind}_$s (no address until CNI ADD)"
    else
      result "slot-$s" FAIL "$err"
      return 1
    fi
  done

  dp_start "$(jq -nc --arg k "$kind" --arg m "$pool_mode" '{resourcePrefix: "rdma", pools: [
      {name: "slot1", mode: $m, selectors: {rdmaDevices: [($k + "_slot1")]}},
      {name: "slot2", mode: $m, selectors: {rdmaDevices: [($k + "_slot2")]}}]}')"
  t0=$(now_ms)
  kubelet_start --allocate rdma/slot1:1 --allocate rdma/slot2:1
  for s in slot1 slot2; do
    if kubelet_wait_registered "rdma/$s" 90; then
      t1=$(now_ms)
      figure "registration-rdma/$s" $((t1 - t0)) ms
      result "register-rdma/$s" PASS "registered with the fake kubelet, ListAndWatch stream open"
    else
      result "register-rdma/$s" FAIL "no ListAndWatch update for rdma/$s within 90 s"
      show "$DP_LOG" 30
      show "$KUBELET_ERR"
      return 1
    fi
  done
  if ! doc=$(kubelet_allocations 90); then
    result allocate FAIL "the fake kubelet printed no allocation: $(tail -n 3 "$KUBELET_ERR") $doc"
    show "$DP_LOG" 30
    return 1
  fi
  if [ "$(echo "$doc" | jq '.errors | length')" != 0 ]; then
    result allocate FAIL "fake kubelet errors: $(echo "$doc" | jq -c .errors)"
    show "$DP_LOG" 40
    show "$KUBELET_OUT" 20
    return 1
  fi
  result allocate PASS "$(echo "$doc" | jq -c '{advertised: (.resources | map_values("\(.devices | length) IDs, \([.devices[] | select(.health == "Healthy")] | length) Healthy")), allocated: [.allocations[] | {resource, ids}]}')"
  echo "$doc" > /run/e2e/allocations.json

  for s in "podA slot1" "podB slot2"; do
    set -- $s
    pod=$1 slot=$2 dev=${kind}_$2
    alloc=$(echo "$doc" | jq -c --arg r "rdma/$slot" '.allocations[] | select(.resource == $r) | .containers[0]')
    if ! err=$(pod_create "$pod" "$slot" "$alloc" 2>&1); then
      result "$pod-create" FAIL "$err"
      return 1
    fi
    # What the pod holds: exactly Allocate's nodes, one of them the uverbs node of its device.
    got=$(pod_run "$pod" ls /dev/infiniband | sort | tr '\n' ' ')
    want=$(echo "$alloc" | jq -r '.devices[].container_path' | sed 's|.*/||' | sort | tr '\n' ' ')
    uv=""
    for u in $(echo "$alloc" | jq -r '.devices[].host_path' | grep uverbs); do
      [ "$(cat /sys/class/infiniband_verbs/$(basename "$u")/ibdev 2>/dev/null)" = "$dev" ] && uv=$(basename "$u")
    done
    env=$(grep "^RDMAK8S_$(echo "$slot" | tr 'a-z' 'A-Z')_DEVICES=" "$POD_DIR/$pod/env")
    if [ "$got" = "$want" ] && [ -n "$uv" ] && [ "$env" = "RDMAK8S_$(echo "$slot" | tr 'a-z' 'A-Z')_DEVICES=$dev" ]; then
      result "$pod-devices" PASS "/dev/infiniband holds only [$got] ($uv is $dev); $env"
    else
      result "$pod-devices" FAIL "pod has [$got], Allocate gave [$want], uverbs of $dev: '${uv}', env '$env'"
    fi

    # deviceID as Multus passes it: the ID kubelet allocated for the NAD's resourceName
    # ("<dev>-<k>" in a shared pool, the device itself in an exclusive one), not the device name.
    devid=$(echo "$doc" | jq -r --arg r "rdma/$slot" '.allocations[] | select(.resource == $r) | .ids[0]')
    pod_conflist "$pod" "$devid" "$mode"
    pod_network_up "$pod" "$pod-cni-add" || return 1
  done
  pods_reachable
}

# pod_network_up POD ADD_CHECK_NAME: CNI ADD (timed: figure cni-add-POD; its result is the
# check ADD_CHECK_NAME), then CHECK of the whole chain. Fails when ADD failed.
pod_network_up() {
  local pod=$1 check=$2 t0 t1
  t0=$(now_ms)
  if cni "$pod" ADD; then
    t1=$(now_ms)
    figure "cni-add-$pod" $((t1 - t0)) ms
    result "$check" PASS "$(jq -c '{ips: [.ips[].address], interfaces: [.interfaces[].name]}' "$POD_DIR/$pod/cni.ADD" 2>/dev/null)"
  else
    result "$check" FAIL "cni-driver add: $(tail -n 5 "$POD_DIR/$pod/cni.ADD" | tr '\n' ' ')"
    show /tmp/rdmak8s-cni.log 20
    return 1
  fi
  if cni "$pod" CHECK; then
    result "$pod-cni-check" PASS "CHECK of the whole chain passed"
  else
    result "$pod-cni-check" FAIL "cni-driver check: $(tail -n 5 "$POD_DIR/$pod/cni.CHECK" | tr '\n' ' ')"
  fi
}

# pods_reachable: A_IP and B_IP from podA's and podB's CNI results, and IP between them.
pods_reachable() {
  A_IP=$(pod_ip podA)
  B_IP=$(pod_ip podB)
  [ -n "$A_IP" ] && [ -n "$B_IP" ] || { result pod-ips FAIL "no IPv4 in the CNI results ('$A_IP', '$B_IP')"; return 1; }
  check_ping fabric-ping podB "$A_IP"
}

# check_devices_moved "POD DEV"...: each DEV is in its POD only (exclusive mode: the node's
# sysfs no longer lists it).
check_devices_moved() {
  local s root_sees pod_sees
  for s in "$@"; do
    set -- $s
    root_sees=$(ls /sys/class/infiniband 2>/dev/null | grep -x "$2")
    pod_sees=$(pod_run "$1" ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
    if [ -z "$root_sees" ] && [ "$pod_sees" = "$2 " ]; then
      result "$1-device-moved" PASS "$2 is in the pod only (the pod sees: $pod_sees)"
    else
      result "$1-device-moved" FAIL "root sees '${root_sees}', the pod sees '$pod_sees'; wanted $2 in the pod only"
    fi
  done
}

# stack_down KIND NETNS_MODE: CNI DEL for both pods (twice: DEL must be idempotent), then checks
# the node is clean: no rdmak8s state left, addresses released, and (exclusive) every device home.
stack_down() {
  local kind=$1 mode=$2 pod t0 t1 left added=0
  for pod in podA podB; do
    [ -f "$POD_DIR/$pod/net.conflist" ] || continue
    added=1
    t0=$(now_ms)
    if cni "$pod" DEL; then
      t1=$(now_ms)
      figure "cni-del-$pod" $((t1 - t0)) ms
      result "$pod-cni-del" PASS "DEL of the whole chain"
    else
      result "$pod-cni-del" FAIL "cni-driver del: $(tail -n 5 "$POD_DIR/$pod/cni.DEL" | tr '\n' ' ')"
    fi
    if cni "$pod" DEL; then
      result "$pod-cni-del-twice" PASS "a second DEL succeeds"
    else
      result "$pod-cni-del-twice" FAIL "second DEL: $(tail -n 5 "$POD_DIR/$pod/cni.DEL" | tr '\n' ' ')"
    fi
    left=$($IP -n "$(pod_slot $pod)" -4 -o addr show dev net1 2>/dev/null | awk '{print $4}' | tr '\n' ' ')
    if [ -z "$left" ]; then
      result "$pod-address-released" PASS "net1 has no IPv4 address after DEL"
    else
      result "$pod-address-released" FAIL "net1 still has $left after DEL"
    fi
  done
  if left=$(cni_state_left); then
    result state-clean PASS "no attachment record and no saved knob left in /var/lib/cni/rdmak8s"
  else
    result state-clean FAIL "state left after DEL: $left"
  fi
  if [ "$mode" = exclusive ] && [ $added = 1 ]; then
    left=""
    for s in slot1 slot2; do
      [ -d "/sys/class/infiniband/${kind}_$s" ] || left="$left ${kind}_$s"
    done
    if [ -z "$left" ]; then
      result devices-home PASS "${kind}_slot1 and ${kind}_slot2 are back in the root namespace"
    else
      result devices-home FAIL "not back in the root namespace after DEL:$left (root: $($RDMA dev 2>&1 | cut -d' ' -f2 | tr '\n' ' '); slot1: $($IP netns exec slot1 $RDMA dev 2>&1 | cut -d' ' -f2 | tr '\n' ' '))"
      show /tmp/rdmak8s-cni.log 15
    fi
  fi
}
