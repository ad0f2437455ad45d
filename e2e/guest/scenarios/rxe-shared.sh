# e2e-netns-mode: shared
# Scenario 1 (plain tools): RoCE v2 over rxe between two pod-sandbox namespaces, RDMA netns mode
# shared: raw verbs with each pod's RoCE v2 GID index, then rdma_cm (rping, perftest -R).
A_IP=198.18.0.1
B_IP=198.18.0.2
for s in "slot1 $A_IP" "slot2 $B_IP"; do
  set -- $s
  if err=$(slot_add "$1" rxe "$2/24" 2>&1); then
    result "slot-$1" PASS "netns $1, net1 $2 on $FABRIC, rxe_$1"
  else
    result "slot-$1" FAIL "$err"
  fi
done
pod_register_netns podA slot1
pod_register_netns podB slot2
check_ping fabric-ping podB $A_IP
battery_raw_verbs rxe podA rxe_slot1 $A_IP podB rxe_slot2 $B_IP
battery_rdma_cm rxe podA rxe_slot1 $A_IP podB rxe_slot2
