# e2e-netns-mode: exclusive
# Scenario 2 (plain tools): RoCE v2 over rxe with RDMA netns mode exclusive (booted with ib_core
# netns_mode=0). An rxe created on a netdev already in the pod registers in the root namespace;
# `rdma dev set <dev> netns <pod>` moves it in, after which only the pod sees it. Raw verbs traffic
# is asserted; rdma_cm on a moved rxe fails in this kernel (rxe_create_qp -22, no ib_mad QP1), so
# it is run and recorded as a figure, never asserted.
A_IP=198.18.0.1
B_IP=198.18.0.2
for s in "slot1 $A_IP" "slot2 $B_IP"; do
  set -- $s
  if ! err=$(slot_add "$1" rxe "$2/24" 2>&1); then
    result "slot-$1" FAIL "$err"
    continue
  fi
  # Created from inside the pod, the device still registers in the root namespace.
  if [ -d "/sys/class/infiniband/rxe_$1" ]; then
    result "slot-$1-born-in-root" PASS "rxe_$1 visible in the root namespace after creation"
  else
    result "slot-$1-born-in-root" FAIL "rxe_$1 not in the root namespace's /sys/class/infiniband"
  fi
  if err=$($RDMA dev set "rxe_$1" netns "$1" 2>&1); then
    result "slot-$1-move" PASS "rdma dev set rxe_$1 netns $1"
  else
    result "slot-$1-move" FAIL "rdma dev set rxe_$1 netns $1: $err"
  fi
done
# Exclusive: the root namespace no longer sees the devices, each pod sees only its own.
left=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
if [ -z "$left" ]; then
  result root-sees-none PASS "no RDMA device left in the root namespace"
else
  result root-sees-none FAIL "root namespace still sees: $left"
fi
seen=$($IP netns exec slot1 ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
if [ "$seen" = "rxe_slot1 " ]; then
  result pod-sees-own PASS "slot1 sees only rxe_slot1"
else
  result pod-sees-own FAIL "slot1 sees '$seen', wanted only rxe_slot1"
fi
pod_register_netns podA slot1
pod_register_netns podB slot2
check_ping fabric-ping podB $A_IP
battery_raw_verbs rxe podA rxe_slot1 $A_IP podB rxe_slot2 $B_IP
# rdma_cm on a moved rxe: recorded, not asserted.
# (the rping client hangs after its rdma_connect fails: a short timeout)
saved_timeout=$E2E_TIMEOUT
E2E_TIMEOUT=20
pair rxe-cm-rping podA podB cm "rping -s -a $A_IP -v -C 3" "rping -c -a $A_IP -v -C 3"
E2E_TIMEOUT=$saved_timeout
n=$(grep -c "ping data: rdma-ping-" /tmp/rxe-cm-rping.client)
figure rdma_cm-rping-on-moved-rxe-verified-pings "$n" pings
show /tmp/rxe-cm-rping.client 5
dmesg | grep -E 'rxe_create_qp|ib_mad|QP1' | tail -n 3 | sed 's/^/  dmesg: /'
