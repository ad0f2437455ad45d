# e2e-netns-mode: exclusive
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s
# e2e-timeout: 900
# Scenario 2: RoCE v2 (rxe), RDMA netns mode exclusive, the whole stack: our CNI moves each rxe
# into its pod (and home on DEL), the pod's GIDs and the ToS written through rdma_cm configfs are
# checked, raw verbs traffic passes. rdma_cm on a moved rxe fails in this kernel: recorded, not
# asserted. Then siw, which cannot change namespace: our CNI must refuse with a clear error that
# names the kernel's refusal, and leave nothing behind.
TOS=106
if stack_up rxe exclusive; then
  check_devices_moved "podA rxe_slot1" "podB rxe_slot2"
  # ToS for rdma_cm traffic of the pod's device, through rdma_cm configfs.
  tos=$(cat /sys/kernel/config/rdma_cm/rxe_slot1/ports/1/default_roce_tos 2>&1)
  if [ "$tos" = "$TOS" ]; then
    result podA-roce-tos PASS "rdma_cm configfs default_roce_tos of rxe_slot1 port 1 is $tos"
  else
    result podA-roce-tos FAIL "rdma_cm configfs default_roce_tos of rxe_slot1 port 1: '$tos', wanted $TOS"
  fi
  battery_raw_verbs rxe podA rxe_slot1 "$A_IP" podB rxe_slot2 "$B_IP"
  # Health on the live ListAndWatch stream while each device is in its pod: it must have stayed
  # listed and Healthy in every update since registration, through the move and the traffic (the
  # kernel hides a moved device from the node's sysfs and RDMA netlink; that is not a failure).
  # Checked after the traffic, long after the plugin saw the move.
  for s in "slot1 rxe_slot1" "slot2 rxe_slot2"; do
    set -- $s
    if bad=$(kubelet_always_healthy "rdma/$1" "$2"); then
      result "health-in-pod-$2" PASS "every ListAndWatch update of rdma/$1 ($(kubelet_updates "rdma/$1" | wc -l)) lists $2 Healthy while it is in its pod"
    else
      result "health-in-pod-$2" FAIL "$2 is in its pod, yet ListAndWatch sent: $bad"
      grep -E "$2" "$DP_LOG" | tail -n 5 | sed 's/^/  device-plugin.log: /'
    fi
  done
  # rdma_cm on a moved rxe: recorded, not asserted (the rping client hangs after its failure).
  saved_timeout=$E2E_TIMEOUT
  E2E_TIMEOUT=20
  pair rxe-cm-rping podA podB cm "rping -s -a $A_IP -v -C 3" "rping -c -a $A_IP -v -C 3"
  E2E_TIMEOUT=$saved_timeout
  figure rdma_cm-rping-on-moved-rxe "$(grep -c 'ping data: rdma-ping-' /tmp/rxe-cm-rping.client)" verified-pings
  up=1
fi
stack_down rxe exclusive
# Home again after DEL: each device listed and Healthy in the latest update (re-read on its return,
# not forgotten).
if [ "${up:-0}" = 1 ]; then
  for s in "slot1 rxe_slot1" "slot2 rxe_slot2"; do
    set -- $s
    if upd=$(kubelet_wait_health "rdma/$1" "$2" Healthy 60); then
      result "health-home-$2" PASS "$2 back on the node: listed and Healthy in ListAndWatch"
    else
      result "health-home-$2" FAIL "$2 back on the node, not listed Healthy within 60 s; last update: $upd"
    fi
  done
fi

# GC in exclusive mode: an attachment whose DEL never came (a runtime crashed) holds its device
# in the pod; GC with no valid attachment must bring the device home and leave no state.
if [ -f "$POD_DIR/podA/net.conflist" ]; then
  if cni podA ADD && [ ! -d /sys/class/infiniband/rxe_slot1 ]; then
    if cni podA GC; then
      if [ -d /sys/class/infiniband/rxe_slot1 ] && left=$(cni_state_left); then
        result gc-exclusive-clean PASS "GC with no valid attachment brought rxe_slot1 home from the pod and left no state"
      else
        result gc-exclusive-clean FAIL "after GC: rxe_slot1 in root: $([ -d /sys/class/infiniband/rxe_slot1 ] && echo yes || echo no), state: $(cni_state_left)"
        show /tmp/rdmak8s-cni.log 15
      fi
    else
      result gc-exclusive-clean FAIL "cni-driver gc: $(tail -n 5 "$POD_DIR/podA/cni.GC" | tr '\n' ' ')"
    fi
    cni podA DEL
  else
    result gc-exclusive-clean FAIL "re-ADD of podA (rxe_slot1 into the pod) for the GC check failed: $(tail -n 5 "$POD_DIR/podA/cni.ADD" | tr '\n' ' ')"
  fi
fi

# siw cannot change namespace: ADD must fail with our error naming the kernel's refusal.
if slot_add slot3 siw 2>/tmp/slot3.err; then
  pod_register_netns podC slot3
  pod_conflist podC siw_slot3 exclusive
  # siw_slot3 is in no pool, so no kubelet gave it to a pod: podC's ADD comes from a runtime the
  # node's admin drives directly (no K8S_POD_* in CNI_ARGS), whose deviceID the CNI takes
  # unchecked (docs/cni.md "Which device a pod was given"). What is tested is the kernel's refusal.
  echo "IgnoreUnknown=1" > "$POD_DIR/podC/cni_args"
  if cni podC ADD; then
    result siw-exclusive-refused FAIL "ADD of siw_slot3 in exclusive mode succeeded: $(cat "$POD_DIR/podC/cni.ADD")"
  else
    msg=$(tr '\n' ' ' < "$POD_DIR/podC/cni.ADD")
    if echo "$msg" | grep -qiE 'siw_slot3' && echo "$msg" | grep -qiE 'namespace|netns|disassociate|not supported'; then
      result siw-exclusive-refused PASS "ADD refused: $msg"
    else
      result siw-exclusive-refused FAIL "ADD failed, but the error names neither the device nor the kernel's refusal: $msg"
    fi
  fi
  # A runtime calls DEL after a failed ADD: the node must be as before.
  cni podC DEL
  if [ -d /sys/class/infiniband/siw_slot3 ] && left=$(cni_state_left); then
    result siw-exclusive-clean PASS "siw_slot3 still in the root namespace, no rdmak8s state left"
  else
    result siw-exclusive-clean FAIL "after the failed ADD and DEL: siw_slot3 in root: $([ -d /sys/class/infiniband/siw_slot3 ] && echo yes || echo no), state: $(cni_state_left)"
  fi
else
  result slot-slot3 FAIL "$(cat /tmp/slot3.err)"
fi
