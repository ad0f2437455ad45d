# e2e-netns-mode: shared
# e2e-nodes: 2
# e2e-default: no
# e2e-make-test: no
# e2e-timeout: 900
# Two nodes, the kernel foundation (no project binary; see two-node.sh for the topology): a slot
# with rxe on each node, static addresses, then ibv_rc_pingpong and rping between the nodes'
# slots across the link: what the whole-stack two-node scenarios build on. Only in
# make e2e-two-nodes (run.py --two-nodes --with-optional): two-node-rxe-shared runs the same
# traffic on top of the whole stack in make test.
. /e2e/two-node.sh

tn_slot_static() {  # tn_slot_static ADDR: slot1 with rxe_slot1, registered as this node's pod
  if err=$(slot_add slot1 rxe "$1/24" 2>&1); then
    pod_register_netns "$(tn_pod)" slot1
    result slot-slot1 PASS "netns slot1, net1 $1 on $FABRIC, rxe_slot1"
  else
    result slot-slot1 FAIL "$err"
    return 1
  fi
}

body() {
  local sg cg
  tn_slot_static 198.18.0.10 || return 1
  on_b tn_slot_static 198.18.0.50 > /dev/null || { result pods-up FAIL "node B's slot did not come up"; return 1; }
  check_ping cross-node-ping podA 198.18.0.50
  sg=$(pod_gid_index b:podB rxe_slot1 198.18.0.50)
  cg=$(pod_gid_index podA rxe_slot1 198.18.0.10)
  result gid-index PASS "RoCE v2 GID index $sg on node B, $cg on node A"
  traffic link-ibv_rc_pingpong usec/iter tcp:18515 b:podB podA \
    "ibv_rc_pingpong -d rxe_slot1 -i 1 -g $sg -n $ITERS_PP" \
    "ibv_rc_pingpong -d rxe_slot1 -i 1 -g $cg -n $ITERS_PP 198.18.0.50" \
    verify_pingpong $ITERS_PP
  traffic link-rping pings cm b:podB podA \
    "rping -s -a 198.18.0.50 -v -C $RPING_COUNT" \
    "rping -c -a 198.18.0.50 -v -C $RPING_COUNT" \
    verify_rping $RPING_COUNT
}

tn_main body
