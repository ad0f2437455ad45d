# e2e-netns-mode: shared
# e2e-nodes: 2
# e2e-default: no
# e2e-timeout: 1500
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s rdmak8s-inspect
# Two nodes, RoCE v2 (rxe), RDMA netns mode shared (see two-node.sh for the topology): each node
# runs its own device plugin and fake kubelet, builds its pod from its own Allocate answer and
# attaches its network through its own CNI chain; then raw verbs with each side's own RoCE v2 GID
# index (read on its own node) and rdma_cm between podB (node B, server) and podA (node A,
# client), across the link; the real clients, configured only by each pod's env from Allocate
# (UCX_NET_DEVICES): ucx_perftest tag-matching bandwidth and latency, and an Open MPI job over
# UCX (allreduce + point-to-point, results checked). Then the checks only two nodes can show: node
# B's link MTU lowered, the node check with the fabric's MTU declared flags node B and passes node
# A (what the traffic does meanwhile is recorded; the MTU is restored); node B's kubelet restarts
# while podA's traffic to podB runs, which goes on to its end (so the restored MTU carries traffic
# again); a pod deleted on node B leaves node A's attachment untouched.
. /e2e/two-node.sh

body() {
  if tn_pods_up rxe; then
    battery_raw_verbs x-rxe b:podB rxe_slot1 "$B_IP" podA rxe_slot1 "$A_IP"
    battery_rdma_cm x-rxe b:podB rxe_slot1 "$B_IP" podA rxe_slot1
    battery_ucx x-ucx b:podB "$B_IP" podA rxe_slot1
    battery_mpi x-mpi "$A_IP" "$B_IP"
    check_fabric_mtu_mismatch
    check_traffic_through_kubelet_restart x-kubelet-restart-b
    on_b tn_node_down > /dev/null
    tn_attachment_intact
  fi
  on_b tn_node_down > /dev/null
  tn_node_down
}

tn_main body
