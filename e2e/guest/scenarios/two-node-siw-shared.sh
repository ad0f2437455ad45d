# e2e-netns-mode: shared
# e2e-nodes: 2
# e2e-default: no
# e2e-timeout: 1500
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s
# Two nodes, iWARP (siw), RDMA netns mode shared (see two-node.sh): each node's own device
# plugin, fake kubelet, pod and CNI chain; rping, ib_write_bw -R and ib_send_lat -R between podB
# (node B, server) and podA (node A, client) across the link (iWARP connects through rdma_cm
# only). One siw device per node, so the wildcard listen works without the bind preload. UCX
# cannot run over iWARP (docs/transports.md): the scenario checks that UCX, given the pod's
# UCX_NET_DEVICES, offers no transport on the siw device, and uses rdma_cm clients instead.
. /e2e/two-node.sh

body() {
  if tn_pods_up siw; then
    battery_rdma_cm x-siw b:podB siw_slot1 "$B_IP" podA siw_slot1
    check_ucx_on_iwarp x-ucx-iwarp podA siw_slot1
  fi
  on_b tn_node_down > /dev/null
  tn_node_down
}

tn_main body
