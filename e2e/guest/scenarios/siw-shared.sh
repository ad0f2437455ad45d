# e2e-netns-mode: shared
# Scenario 3 (plain tools): iWARP over siw between two pod-sandbox namespaces, RDMA netns mode
# shared. iWARP connects only through rdma_cm: rping, ib_write_bw -R, ib_send_lat -R.
A_IP=198.18.0.1
B_IP=198.18.0.2
for s in "slot1 $A_IP" "slot2 $B_IP"; do
  set -- $s
  if err=$(slot_add "$1" siw "$2/24" 2>&1); then
    result "slot-$1" PASS "netns $1, net1 $2 on $FABRIC, siw_$1"
  else
    result "slot-$1" FAIL "$err"
  fi
done
pod_register_netns podA slot1
pod_register_netns podB slot2
check_ping fabric-ping podB $A_IP
battery_rdma_cm siw podA siw_slot1 $A_IP podB siw_slot2 bind
