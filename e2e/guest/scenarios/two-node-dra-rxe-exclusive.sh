# e2e-netns-mode: exclusive
# e2e-nodes: 2
# e2e-default: no
# e2e-timeout: 1500
# e2e-needs: rdmak8s-dra-driver rdmak8s-fake-api-server rdmak8s-fake-dra-kubelet cni-driver rdmak8s
# Two nodes, the DRA way, RoCE v2 (rxe), RDMA netns mode exclusive (see two-node.sh): each node
# its own fake API server, DRA driver (node-a, node-b) and fake DRA kubelet; each pod's claim is
# prepared on its node, its /dev/infiniband built from the CDI spec, its device moved into it by
# our CNI (by K8S_POD_UID); raw verbs with each side's own GID index across the link (rdma_cm on
# a moved rxe fails in this kernel: see e2e/README.md). Then CNI DEL, unprepare, slices removed.
. /e2e/two-node.sh

body() {
  if tn_both_up tn_dra_node_up; then
    A_IP=$(pod_ip podA)
    B_IP=$(on_b pod_ip podB)
    result pod-ips PASS "podA $A_IP on node A, podB $B_IP on node B"
    check_ping cross-node-ping podA "$B_IP"
    battery_raw_verbs x-dra b:podB rxe_slot1 "$B_IP" podA rxe_slot1 "$A_IP"
  else
    result pods-up FAIL "a DRA pod did not come up (see this node's and nodeB/'s checks)"
  fi
  on_b tn_dra_node_down > /dev/null
  tn_dra_node_down
}

tn_main body
