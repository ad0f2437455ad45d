# Traffic batteries shared by scenarios: raw verbs, rdma_cm, plain IP reachability.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

# Traffic batteries, shared by scenarios. Each takes two pods, their RDMA devices and the server's
# IPv4 address.

ITERS_PP=200      # ibv_rc_pingpong iterations
ITERS_BW=300      # ib_write_bw iterations (64 KiB each)
ITERS_LAT=300     # ib_send_lat iterations
RPING_COUNT=10
PERFTEST_BW_OPTS=${PERFTEST_BW_OPTS:-}  # more ib_write_bw options (the two-node scenarios' own)

# battery_raw_verbs PREFIX SPOD SDEV SIP CPOD CDEV CIP [TOOLS]: raw verbs (RoCE only: iWARP
# connects through rdma_cm alone) with each pod's RoCE v2 GID index for its address, SPOD serving
# on SIP. TOOLS (default all three): ibv_rc_pingpong, ib_write_bw, ib_send_lat, each the check
# PREFIX-<tool>, after PREFIX-gid-index.
battery_raw_verbs() {
  local p=$1 spod=$2 sdev=$3 sip=$4 cpod=$5 cdev=$6 cip=$7 tools=${8:-ibv_rc_pingpong ib_write_bw ib_send_lat} sg cg t
  sg=$(pod_gid_index "$spod" "$sdev" "$sip")
  cg=$(pod_gid_index "$cpod" "$cdev" "$cip")
  if [ -z "$sg" ] || [ -z "$cg" ]; then
    result "$p-gid-index" FAIL "no RoCE v2 GID for $sip on $sdev ('$sg') or $cip on $cdev ('$cg'), read in $spod and $cpod"
    return 1
  fi
  result "$p-gid-index" PASS "RoCE v2 IPv4 GID index $sg on $sdev ($spod, $sip), $cg on $cdev ($cpod, $cip), read in the pods"
  for t in $tools; do
    # Per tool: iterations, the verifier's column and unit, more options.
    case $t in
      ibv_rc_pingpong)
        traffic "$p-$t" usec/iter tcp:18515 "$spod" "$cpod" \
          "$t -d $sdev -i 1 -g $sg -n $ITERS_PP" \
          "$t -d $cdev -i 1 -g $cg -n $ITERS_PP $sip" \
          verify_pingpong $ITERS_PP
        continue ;;
      ib_write_bw) set -- "$ITERS_BW" 4 MB/s "$PERFTEST_BW_OPTS" ;;
      ib_send_lat) set -- "$ITERS_LAT" 5 usec "" ;;
      *) result "$p-$t" FAIL "battery_raw_verbs: no such tool '$t'"; continue ;;
    esac
    traffic "$p-$t" "$3" tcp:18515 "$spod" "$cpod" \
      "$t -d $sdev -i 1 -x $sg -F -n $1 $4" \
      "$t -d $cdev -i 1 -x $cg -F -n $1 $4 $sip" \
      verify_perftest "$1" "$2" "$3"
  done
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
