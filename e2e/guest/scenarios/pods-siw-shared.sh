# e2e-netns-mode: shared
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s
# Scenario 3: iWARP (siw), RDMA netns mode shared, the whole stack (see pods-rxe-shared): rping,
# ib_write_bw -R and ib_send_lat -R between two pods (iWARP connects through rdma_cm only).
if stack_up siw shared; then
  battery_rdma_cm siw podA siw_slot1 "$A_IP" podB siw_slot2 bind
fi
stack_down siw shared
