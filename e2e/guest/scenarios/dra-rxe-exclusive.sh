# e2e-netns-mode: exclusive
# e2e-needs: rdmak8s-dra-driver rdmak8s-fake-api-server rdmak8s-fake-dra-kubelet cni-driver rdmak8s
# e2e-timeout: 900
# Scenario: the DRA way, RoCE v2 (rxe), RDMA netns mode exclusive. The DRA driver publishes this
# node's devices as ResourceSlices on the (fake) API server over HTTPS with a token; a claim per
# pod, allocated as a scheduler would, names a device of a slice and the pod it is reserved for;
# the (fake) kubelet prepares it through the driver's DRA service; each pod's /dev/infiniband is
# built from the CDI spec the driver wrote; the CNI, with no deviceID in the netconf, takes the
# pod's prepared device by K8S_POD_UID and moves it into the pod; raw verbs traffic passes; then
# CNI DEL, unprepare, and the driver's exit removes its slices. podB's claim is a firstAvailable
# one (allocated from subrequest "nic/rxe"): its container, asking for "nic", must get the device
# as kubelet matches request names. Health stays Healthy in kubelet's view 60 s on (past its 30 s
# staleness timeout).
# a kubelet restart deletes the slices (DeleteCollection, as the real one at its start): the
# driver publishes them again and a new pod (podC, on podB's freed device) is allocated from
# them, prepared and gets traffic; then CNI DEL, unprepare, and the driver's exit removes its
# slices. After the traffic each claim's status.devices says what the pod got: its address and
# RoCE v2 GID index (issue 34). Before the pods, a RoCE port set down is tainted in its slice, a
# claim written without allocation is allocated by the fake API server's allocator (the
# scheduler's stand-in) from the other device, and the taint goes when the link comes up.
. /e2e/dra.sh

if dra_node_up && { dra_taint_steers_allocation; dra_pods_up; }; then
  check_devices_moved "podA rxe_slot1" "podB rxe_slot2"
  battery_raw_verbs dra podA rxe_slot1 "$A_IP" podB rxe_slot2 "$B_IP"
  DRA_UP=1
  dra_claim_status
  dra_health_steady
  # kubelet restarts and deletes the slices: published again, a new pod allocated from them.
  dra_kubelet_restart_republishes
fi

dra_down
