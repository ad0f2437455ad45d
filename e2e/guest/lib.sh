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

slot_dev() { ls /sys/class/infiniband 2>/dev/null | grep "_$1\$" | head -1; }

# Index of the RoCE v2 GID that carries IPv4 address IP4 on port 1 of DEV, computed from gids/* and
# gid_attrs/types/* (never assumed: mlx5 uses 3, rxe 1). One grep per table: forking per slot
# (rxe has 1024) costs a minute under TCG.
gid_index() {  # gid_index DEV IP4
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

# Kills every process left in the pod's network namespace (except its pause process): a stale
# server would answer the next test.
pod_kill() {
  local slot pids keep="" p
  slot=$(pod_slot "$1")
  [ -f "$POD_DIR/$1/pid" ] && keep=$(cat "$POD_DIR/$1/pid")
  pids=$($IP netns pids "$slot" 2>/dev/null)
  for p in $pids; do [ "$p" = "$keep" ] || kill -9 "$p" 2>/dev/null; done
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

# check_perftest CHECK NAME FILE ITERS COL UNIT FIGURE: PASS when the client completed ITERS
# iterations with a positive figure (perftest can exit 0 after "0 iterations").
check_perftest() {
  local check=$1 file=$2 iters=$3 col=$4 unit=$5 fig=$6 row n v
  row=$(perftest_row "$file" "$col")
  n=${row% *}
  v=${row#* }
  # A finite positive number: perftest prints "inf" or "nan" when its clock or counters went wrong.
  if [ -n "$row" ] && [ "$n" = "$iters" ] && echo "$v" | grep -Eq '^[0-9]+(\.[0-9]+)?$' &&
     awk -v v="$v" 'BEGIN { exit !(v + 0 > 0) }'; then
    result "$check" PASS "$n iterations, $v $unit"
    figure "$fig" "$v" "$unit"
    [ "$E2E_VERBOSE" = 1 ] && show "$file" 40
  else
    result "$check" FAIL "expected $iters iterations with a positive result, got '${row:-no result row}'"
    show "$file"
    show "${file%.client}.server"
    dump_dmesg
  fi
}

# check_pingpong CHECK FILE ITERS: ibv_*_pingpong prints "N iters in S seconds = U usec/iter".
check_pingpong() {
  local check=$1 file=$2 iters=$3 line
  line=$(grep -m1 " iters in " "$file")
  if [ "$(echo "$line" | awk '{print $1}')" = "$iters" ]; then
    result "$check" PASS "$line"
    figure "$check-usec-per-iter" "$(echo "$line" | awk '{print $(NF-1)}')" usec
  else
    result "$check" FAIL "expected '$iters iters in', got '${line:-nothing}'"
    show "$file"
    show "${file%.client}.server"
    dump_dmesg
  fi
}

# check_rping CHECK FILE COUNT: rping -v prints one "ping data:" line per verified iteration.
check_rping() {
  local check=$1 file=$2 count=$3 n
  n=$(grep -c "ping data: rdma-ping-" "$file")
  if [ "$n" -ge "$count" ]; then
    result "$check" PASS "$n verified pings"
  else
    result "$check" FAIL "expected $count verified pings, got $n"
    show "$file"
    show "${file%.client}.server"
    dump_dmesg
  fi
}

# ---------------------------------------------------------------------------------------------
# Traffic batteries, shared by scenarios. Each takes two pods, their RDMA devices and the server's
# IPv4 address.

ITERS_PP=200      # ibv_rc_pingpong iterations
ITERS_BW=300      # ib_write_bw iterations (64 KiB each)
ITERS_LAT=300     # ib_send_lat iterations
RPING_COUNT=10

# Raw verbs (RoCE only: iWARP connects through rdma_cm alone) with each pod's RoCE v2 GID index.
battery_raw_verbs() {  # battery_raw_verbs PREFIX SPOD SDEV SIP CPOD CDEV CIP
  local p=$1 spod=$2 sdev=$3 sip=$4 cpod=$5 cdev=$6 cip=$7 sg cg
  sg=$(gid_index "$sdev" "$sip")
  cg=$(gid_index "$cdev" "$cip")
  if [ -z "$sg" ] || [ -z "$cg" ]; then
    result "$p-gid-index" FAIL "no RoCE v2 GID for $sip on $sdev ('$sg') or $cip on $cdev ('$cg')"
    return 1
  fi
  result "$p-gid-index" PASS "RoCE v2 IPv4 GID index $sg on $sdev, $cg on $cdev"
  pair "$p-rc-pingpong" "$spod" "$cpod" tcp:18515 \
    "ibv_rc_pingpong -d $sdev -i 1 -g $sg -n $ITERS_PP" \
    "ibv_rc_pingpong -d $cdev -i 1 -g $cg -n $ITERS_PP $sip"
  check_pingpong "$p-ibv_rc_pingpong" "/tmp/$p-rc-pingpong.client" $ITERS_PP
  pair "$p-write-bw" "$spod" "$cpod" tcp:18515 \
    "ib_write_bw -d $sdev -i 1 -x $sg -F -n $ITERS_BW" \
    "ib_write_bw -d $cdev -i 1 -x $cg -F -n $ITERS_BW $sip"
  check_perftest "$p-ib_write_bw" "/tmp/$p-write-bw.client" $ITERS_BW 4 MB/s "$p-ib_write_bw"
  pair "$p-send-lat" "$spod" "$cpod" tcp:18515 \
    "ib_send_lat -d $sdev -i 1 -x $sg -F -n $ITERS_LAT" \
    "ib_send_lat -d $cdev -i 1 -x $cg -F -n $ITERS_LAT $sip"
  check_perftest "$p-ib_send_lat" "/tmp/$p-send-lat.client" $ITERS_LAT 5 usec "$p-ib_send_lat-typical"
}

# rdma_cm: rping and the perftest -R variants. BIND=bind makes the perftest server bind the pod's
# address instead of the wildcard (needed with more than one siw device: see
# e2e/guest-src/rdma_bind_source.c).
battery_rdma_cm() {  # battery_rdma_cm PREFIX SPOD SDEV SIP CPOD CDEV [BIND]
  local p=$1 spod=$2 sdev=$3 sip=$4 cpod=$5 cdev=$6 pre=""
  [ "$7" = bind ] && pre="env LD_PRELOAD=/e2e/lib/rdma_bind_source.so E2E_RDMA_BIND_ADDR=$sip"
  pair "$p-rping" "$spod" "$cpod" cm \
    "rping -s -a $sip -v -C $RPING_COUNT" \
    "rping -c -a $sip -v -C $RPING_COUNT"
  check_rping "$p-rping" "/tmp/$p-rping.client" $RPING_COUNT
  pair "$p-write-bw-cm" "$spod" "$cpod" cm \
    "$pre ib_write_bw -R -d $sdev -i 1 -F -n $ITERS_BW" \
    "ib_write_bw -R -d $cdev -i 1 -F -n $ITERS_BW $sip"
  check_perftest "$p-ib_write_bw-R" "/tmp/$p-write-bw-cm.client" $ITERS_BW 4 MB/s "$p-ib_write_bw-R"
  pair "$p-send-lat-cm" "$spod" "$cpod" cm \
    "$pre ib_send_lat -R -d $sdev -i 1 -F -n $ITERS_LAT" \
    "ib_send_lat -R -d $cdev -i 1 -F -n $ITERS_LAT $sip"
  check_perftest "$p-ib_send_lat-R" "/tmp/$p-send-lat-cm.client" $ITERS_LAT 5 usec "$p-ib_send_lat-R-typical"
}

# check_ping CHECK POD ADDR: plain IP reachability over the fabric, before any RDMA.
check_ping() {
  local out
  if out=$(pod_run "$2" ping -c 1 -W 10 "$3" 2>&1); then
    result "$1" PASS "$3 answers"
  else
    result "$1" FAIL "ping $3 from $2: $(echo "$out" | tail -2 | tr '\n' ' ')"
  fi
}
