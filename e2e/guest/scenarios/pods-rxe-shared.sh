# e2e-netns-mode: shared
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s
# Scenario 1: RoCE v2 (rxe), RDMA netns mode shared, the whole stack: the device plugin advertises
# one pool per slot to the fake kubelet, pods are built from Allocate's answers (their own
# /dev/infiniband and env), networks come from CNI ADD through libcni (e2e-slot + host-local, then
# rdmak8s with a qos block); then raw verbs with each pod's RoCE v2 GID index, rdma_cm, and DEL.
# After the traffic, the device plugin's /metrics must carry the kernel's own rxe hw_counters,
# read on the scrape: packets sent on both devices, which only real traffic makes non-zero.
if stack_up rxe shared; then
  battery_raw_verbs rxe podA rxe_slot1 "$A_IP" podB rxe_slot2 "$B_IP"
  battery_rdma_cm rxe podA rxe_slot1 "$A_IP" podB rxe_slot2
  # The kernel's counts first, then the scrape: a counter only grows, so the scrape's value is
  # at least the kernel's.
  k1=$(cat /sys/class/infiniband/rxe_slot1/ports/1/hw_counters/sent_pkts 2>/dev/null)
  k2=$(cat /sys/class/infiniband/rxe_slot2/ports/1/hw_counters/sent_pkts 2>/dev/null)
  metrics=$(curl -sS http://127.0.0.1:9470/metrics 2>&1)
  bad=""
  for d in rxe_slot1 rxe_slot2; do
    kernel=$k1
    [ $d = rxe_slot2 ] && kernel=$k2
    ours=$(echo "$metrics" | grep '^rdmak8s_rdma_counter_total{' | grep "device=\"$d\"" |
           grep 'counter="sent_pkts"' | awk '{print $NF}' | head -n 1)
    if [ -z "$ours" ] || [ -z "$kernel" ] || [ "${ours%.*}" -lt "$kernel" ] || [ "$kernel" -eq 0 ]; then
      bad="$bad $d: /metrics sent_pkts '${ours}', kernel hw_counters/sent_pkts '${kernel}';"
    fi
    figure "metrics-sent_pkts-$d" "${ours:-none}" packets
  done
  if [ -z "$bad" ]; then
    result metrics-fabric-counters PASS "/metrics carries each device's rxe hw_counters, read on scrape (sent_pkts as the kernel counts them after the traffic)"
  else
    result metrics-fabric-counters FAIL "$bad $(echo "$metrics" | grep -c '^rdmak8s_rdma_counter_total') counter samples in /metrics"
  fi
fi
stack_down rxe shared
