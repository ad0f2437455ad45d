# e2e-netns-mode: shared
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s
# Scenario 4: failure paths on the whole stack (RoCE v2, shared mode):
#   - a pod cannot open a device whose uverbs node Allocate did not give it;
#   - a slot netdev set down turns its device Unhealthy in ListAndWatch, and Healthy when back up;
#   - a kubelet restart mid-run: the device plugin registers again;
#   - DEL then GC leave the node clean, including an attachment whose DEL never came.
if stack_up rxe shared; then
  # podA was allocated rdma/slot1 only: rxe_slot2 is listed in its sysfs (shared mode) but has no
  # uverbs node in its /dev/infiniband.
  if out=$(pod_run podA ibv_devinfo -d rxe_slot2 2>&1); then
    result no-uverbs-other-device FAIL "podA opened rxe_slot2 without an allocated uverbs node: $(echo "$out" | head -n 2 | tr '\n' ' ')"
  else
    result no-uverbs-other-device PASS "podA cannot open rxe_slot2: $(echo "$out" | tail -n 1)"
  fi
  # A pod whose Allocate answer carried no uverbs node at all (only rdma_cm): no device opens, and
  # rdma_cm traffic fails.
  alloc=$(jq -c '.allocations[] | select(.resource == "rdma/slot1") | .containers[0] |
                 .devices |= map(select(.container_path | test("uverbs") | not))' /run/e2e/allocations.json)
  if pod_create podN slot1 "$alloc" 2>/tmp/podN.err; then
    if out=$(pod_run podN ibv_devinfo -d rxe_slot1 2>&1); then
      result no-uverbs-node FAIL "a pod without uverbs node opened rxe_slot1: $(echo "$out" | head -n 2 | tr '\n' ' ')"
    else
      result no-uverbs-node PASS "without a uverbs node the pod cannot open rxe_slot1: $(echo "$out" | tail -n 1)"
    fi
    pod_delete podN
  else
    result no-uverbs-node FAIL "could not build the pod: $(cat /tmp/podN.err)"
  fi

  # Health follows the netdev: down -> Unhealthy, up -> Healthy, on the live ListAndWatch stream.
  t0=$(now_ms)
  $IP -n slot2 link set net1 down
  if upd=$(kubelet_wait_health rdma/slot2 '*' Unhealthy 60); then
    figure health-unhealthy-after-link-down $(($(now_ms) - t0)) ms
    result health-down PASS "net1 of slot2 down: rdma/slot2 devices Unhealthy in ListAndWatch"
  else
    result health-down FAIL "net1 of slot2 down, rdma/slot2 not all Unhealthy within 60 s; last update: $upd"
  fi
  t0=$(now_ms)
  $IP -n slot2 link set net1 up
  if upd=$(kubelet_wait_health rdma/slot2 '*' Healthy 60); then
    figure health-healthy-after-link-up $(($(now_ms) - t0)) ms
    result health-up PASS "net1 of slot2 up again: rdma/slot2 devices Healthy in ListAndWatch"
  else
    result health-up FAIL "net1 of slot2 up, rdma/slot2 not all Healthy within 60 s; last update: $upd"
  fi

  # Kubelet restart mid-run: a new kubelet wipes the sockets and serves again; the plugin must
  # notice and register both resources again.
  kubelet_stop
  sleep 1
  t0=$(now_ms)
  # A restarted kubelet still knows which pod holds which device (its checkpoint): the
  # pod-resources API lists podA's and podB's IDs again (the GC check below re-ADDs podA).
  kubelet_start --restart --wait-resource rdma/slot1 --wait-resource rdma/slot2 \
    --pod-device "default/poda=rdma/slot1=$(jq -r '.allocations[] | select(.resource == "rdma/slot1") | .ids | join(",")' /run/e2e/allocations.json)" \
    --pod-device "default/podb=rdma/slot2=$(jq -r '.allocations[] | select(.resource == "rdma/slot2") | .ids | join(",")' /run/e2e/allocations.json)"
  if kubelet_wait_registered rdma/slot1 90 && kubelet_wait_registered rdma/slot2 90; then
    figure re-registration-after-kubelet-restart $(($(now_ms) - t0)) ms
    result kubelet-restart PASS "both resources registered again after the kubelet restarted"
  else
    result kubelet-restart FAIL "not re-registered within 90 s after a kubelet restart: $(tail -n 3 "$KUBELET_ERR")"
    show "$DP_LOG" 20
    show "$KUBELET_OUT" 20
  fi
  # Traffic still flows after all that.
  traffic after-restart-ib_write_bw MB/s tcp:18515 podA podB \
    "ib_write_bw -d rxe_slot1 -i 1 -x $(pod_gid_index podA rxe_slot1 "$A_IP") -F -n 100" \
    "ib_write_bw -d rxe_slot2 -i 1 -x $(pod_gid_index podB rxe_slot2 "$B_IP") -F -n 100 $A_IP" \
    verify_perftest 100 4 MB/s
fi
stack_down rxe shared

# GC: an attachment whose DEL never came (a runtime crashed) is cleaned by GC with no valid
# attachments; GC after DEL leaves the node clean.
if [ -f "$POD_DIR/podA/net.conflist" ]; then
  if cni podA ADD; then
    if cni podA GC; then
      if left=$(cni_state_left); then
        result gc-clean PASS "GC with no valid attachment removed the state of the attachment never DEL'd"
      else
        result gc-clean FAIL "state left after GC: $left"
      fi
    else
      result gc-clean FAIL "cni-driver gc: $(tail -n 5 "$POD_DIR/podA/cni.GC" | tr '\n' ' ')"
    fi
    cni podA DEL
  else
    result gc-clean FAIL "re-ADD for the GC check failed: $(tail -n 5 "$POD_DIR/podA/cni.ADD" | tr '\n' ' ')"
  fi
fi
