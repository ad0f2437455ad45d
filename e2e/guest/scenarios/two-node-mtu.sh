# e2e-netns-mode: shared
# e2e-nodes: 2
# e2e-default: no
# e2e-timeout: 1200
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s rdmak8s-inspect
# Two nodes, RoCE v2 (rxe), an MTU mismatch between them (see two-node.sh): podB's netdev MTU is
# lowered to 1000 on node B only (room for RDMA MTU 512 there, 1024 on node A). What each node's
# `rdmak8s-inspect check` says about its own port, and what ib_write_bw from podA to podB does,
# are recorded (figures and log lines, not asserted: the check compares a node's own netdev and
# RDMA MTUs and cannot see the other node's); then the MTU is restored and the same traffic
# must pass again.
. /e2e/two-node.sh

# tn_mtu_check: this node's check of its rxe_slot1 port, as "<result>: <seen>" of its mtu line.
tn_mtu_check() {
  $IP netns exec slot1 rdmak8s-inspect check --json --runtime none > /tmp/mtu-check.json 2> /tmp/mtu-check.err
  jq -r '[.checks[] | select(.subject | startswith("rxe_slot1")) | select(.check == "mtu") | "\(.result): \(.seen // .detail // "")"][0] // "no mtu line"' /tmp/mtu-check.json 2>&1
}

tn_set_mtu() {  # tn_set_mtu MTU: podB's net1 MTU; prints the port's active RDMA MTU after it
  $IP -n slot1 link set net1 mtu "$1" && pod_run "$(tn_pod)" ibv_devinfo -d rxe_slot1 -v 2>/dev/null |
    sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' | head -n 1
}

body() {  # every file-level line runs again in node B's agent: only functions here
  local sg cg b_mtu
  tn_pods_up rxe || return 1
  sg=$(pod_gid_index b:podB rxe_slot1 "$B_IP")
  cg=$(pod_gid_index podA rxe_slot1 "$A_IP")
  b_mtu=$(on_b tn_set_mtu 1000)
  log "mtu: podB's net1 MTU 1000 on node B: rxe_slot1 active RDMA MTU $b_mtu there; node A's stays $(pod_run podA ibv_devinfo -d rxe_slot1 -v 2>/dev/null | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' | head -n 1)"
  log "mtu: node A's check: $(tn_mtu_check)"
  log "mtu: node B's check: $(on_b tn_mtu_check)"
  E2E_TIMEOUT=60
  pair x-mtu-mismatch-ib_write_bw b:podB podA tcp:18515 \
    "ib_write_bw -d rxe_slot1 -i 1 -x $sg -F -n 50 $PERFTEST_BW_OPTS" "ib_write_bw -d rxe_slot1 -i 1 -x $cg -F -n 50 $PERFTEST_BW_OPTS $B_IP"
  if verify_perftest /tmp/x-mtu-mismatch-ib_write_bw.client 50 4 MB/s; then
    log "mtu: with the mismatch, ib_write_bw podA -> podB: $VERDICT"
  else
    log "mtu: with the mismatch, ib_write_bw podA -> podB: $VERDICT; client: $(tail -n 3 /tmp/x-mtu-mismatch-ib_write_bw.client | tr '\n' ' ')"
  fi
  figure x-mtu-mismatch-ib_write_bw "${VALUE:-none}" MB/s
  E2E_TIMEOUT=120
  b_mtu=$(on_b tn_set_mtu 1500)
  traffic x-mtu-restored-ib_write_bw MB/s tcp:18515 b:podB podA \
    "ib_write_bw -d rxe_slot1 -i 1 -x $sg -F -n 100 $PERFTEST_BW_OPTS" "ib_write_bw -d rxe_slot1 -i 1 -x $cg -F -n 100 $PERFTEST_BW_OPTS $B_IP" \
    verify_perftest 100 4 MB/s
}

scenario() {
  body
  on_b tn_node_down > /dev/null
  tn_node_down
}

tn_main scenario
