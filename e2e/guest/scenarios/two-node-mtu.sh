# e2e-netns-mode: shared
# e2e-nodes: 2
# e2e-default: no
# e2e-make-test: no
# e2e-timeout: 1200
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s rdmak8s-inspect
# Two nodes, RoCE v2 (rxe), an MTU mismatch between them (see two-node.sh,
# check_fabric_mtu_mismatch): podB's netdev MTU lowered to 1000 on node B only (room for RDMA MTU
# 512 there, 1024 on node A); `rdmak8s-inspect check --fabric-mtu 1500` passes on node A and
# fails on node B naming net1, 1000 and 1500; what ib_write_bw from podA to podB does is recorded;
# then the MTU is restored and the same traffic must pass again. make test runs the same check
# inside two-node-rxe-shared; this scenario alone is make e2e-two-nodes's (--with-optional).
. /e2e/two-node.sh

body() {  # every file-level line runs again in node B's agent: only functions here
  local sg cg
  tn_pods_up rxe || return 1
  check_fabric_mtu_mismatch
  sg=$(pod_gid_index b:podB rxe_slot1 "$B_IP")
  cg=$(pod_gid_index podA rxe_slot1 "$A_IP")
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
