# e2e-netns-mode: shared
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s
# Scenario 1: RoCE v2 (rxe), RDMA netns mode shared, the whole stack: the device plugin advertises
# one pool per slot to the fake kubelet, pods are built from Allocate's answers (their own
# /dev/infiniband and env), networks come from CNI ADD through libcni (e2e-slot + host-local, then
# rdmak8s with a qos block); then raw verbs with each pod's RoCE v2 GID index, rdma_cm, and DEL.
if stack_up rxe shared; then
  battery_raw_verbs rxe podA rxe_slot1 "$A_IP" podB rxe_slot2 "$B_IP"
  battery_rdma_cm rxe podA rxe_slot1 "$A_IP" podB rxe_slot2
fi
stack_down rxe shared
