# e2e-netns-mode: shared
# e2e-runtime: containerd
# e2e-default: no
# e2e-make-test: no
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet rdmak8s
# e2e-timeout: 900
# Our chain under a real runtime, with the device plugin (issue 25): the device plugin (--cdi)
# advertises one pool per slot to the fake kubelet, which allocates one of each (Allocate answers
# with CDI device names); then two pods as kubelet makes them through CRI: RunPodSandbox, where
# containerd 1.7 runs the node's conflist itself (e2e-slot plugging the allocated slot into
# containerd's cni-<uuid> namespace, host-local, rdmak8s finding the device by CNI_IFNAME, the
# recording plugin), CreateContainer with Allocate's cdi_devices in CDI_devices and its envs,
# StartContainer. Raw verbs between the two containers (through ExecSync) with each side's
# RoCE v2 GID index for its CNI result's address; then the teardown (containerd's two DELs) must
# leave each device back in its slot and Healthy, and no CNI state. Opt-in (-s
# containerd-dp-rxe-shared).
. /e2e/containerd.sh

cdp_slots_and_plugin() {
  local s doc
  slots_up rxe "" slot1 slot2 || return 1
  dp_start '{"resourcePrefix": "rdma", "pools": [
      {"name": "slot1", "mode": "shared", "selectors": {"rdmaDevices": ["rxe_slot1"]}},
      {"name": "slot2", "mode": "shared", "selectors": {"rdmaDevices": ["rxe_slot2"]}}]}' \
    --cdi --cdi-dir /var/run/cdi
  # podA/podB are "poda"/"podb" in namespace default in their sandbox configs (cri_pod_sandbox):
  # the pod-resources API lists each one's IDs, as kubelet would for the CNI's deviceID check.
  kubelet_start --allocate rdma/slot1:1@default/poda --allocate rdma/slot2:1@default/podb
  for s in slot1 slot2; do
    if kubelet_wait_registered "rdma/$s" 90; then
      result "register-rdma/$s" PASS "registered with the fake kubelet"
    else
      result "register-rdma/$s" FAIL "no ListAndWatch update for rdma/$s within 90 s"
      show "$DP_LOG" 30; show "$KUBELET_ERR"; return 1
    fi
  done
  if ! doc=$(kubelet_allocations 90) || [ "$(echo "$doc" | jq '.errors | length')" != 0 ]; then
    result allocate FAIL "no allocation, or errors: $(echo "$doc" | jq -c .errors 2>/dev/null) $(tail -n 3 "$KUBELET_ERR")"
    show "$DP_LOG" 30; return 1
  fi
  echo "$doc" > /run/e2e/allocations.json
  # With --cdi, Allocate answers CDI names and no DeviceSpecs (the runtime injects the nodes).
  bad=$(echo "$doc" | jq -r '.allocations[] | select((.containers[0].cdi_devices | length) == 0
                             or ((.containers[0].devices // []) | length) > 0) | .resource')
  if [ -z "$bad" ]; then
    result allocate-cdi PASS "$(echo "$doc" | jq -c '[.allocations[] | {resource, ids, cdi: .containers[0].cdi_devices}]')"
  else
    result allocate-cdi FAIL "allocations of $bad carry no CDI name or DeviceSpecs: $(echo "$doc" | jq -c '.allocations')"
    return 1
  fi
}

# uverbs node of an RDMA device now.
cdp_uverbs() {
  local u
  for u in /sys/class/infiniband_verbs/uverbs*; do
    [ "$(cat "$u/ibdev" 2>/dev/null)" = "$1" ] && { echo "/dev/infiniband/$(basename "$u")"; return 0; }
  done
  return 1
}

# cdp_wait_back DEV BEFORE SECONDS: the slot's soft device was made again when it was plugged (the
# move kills it); waits until the device plugin logged it back (more than BEFORE such lines) and
# its pool's CDI spec names the device's uverbs node as it is now. An artefact of soft RDMA: a
# VF's RDMA device survives the move.
cdp_wait_back() {
  local dev=$1 before=$2 end n uv spec
  spec=/var/run/cdi/rdmak8s-rdma-${dev#rxe_}.json
  end=$(($(now_ms) + $3 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    n=$(grep -c "$dev is back on the node" "$DP_LOG")
    uv=$(cdp_uverbs "$dev")
    if [ "$n" -gt "$before" ] && [ -n "$uv" ] &&
       jq -e --arg d "$dev" --arg uv "$uv" '[.devices[] | select(.name == $d) | .containerEdits.deviceNodes[].path] | index($uv) != null' "$spec" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  echo "device plugin: $n line(s) '$dev is back on the node' (before: $before), uverbs '$uv', spec: $(jq -c '[.devices[] | {name, nodes: [.containerEdits.deviceNodes[].path]}]' "$spec" 2>&1)"
  return 1
}

cdp_pods_up() {
  local s pod slot uid devid alloc before err got ip ns
  for s in "podA slot1 11111111-aaaa-4aaa-8aaa-00000000000a" "podB slot2 22222222-bbbb-4bbb-8bbb-00000000000b"; do
    set -- $s
    pod=$1 slot=$2 uid=$3
    alloc=$(jq -c --arg r "rdma/$slot" '.allocations[] | select(.resource == $r) | .containers[0]' /run/e2e/allocations.json)
    devid=$(jq -r --arg r "rdma/$slot" '.allocations[] | select(.resource == $r) | .ids[0]' /run/e2e/allocations.json)
    before=$(grep -c "rxe_$slot is back on the node" "$DP_LOG")
    cri_rdma_pod_up "$pod" "$uid" "$devid" || return 1
    ns=$(cat "$POD_DIR/$pod/netns"); ip=$(cat "$POD_DIR/$pod/ip")
    # The slot's netdev is the pod's eth0 in containerd's namespace, its rxe made again on it.
    got=$($IP netns exec "$ns" $RDMA link show 2>/dev/null | grep -o "rxe_$slot/1 .* netdev [a-z0-9]*" | sed 's/.* netdev //')
    case $ns in
      cni-*) if [ "$got" = eth0 ] && [ -n "$ip" ]; then
               result "$pod-cni-add" PASS "containerd's CNI ADD: netns $ns, eth0 is slot $slot's netdev with rxe_$slot on it, pod IP $ip; $(tail -n 1 /run/e2e-slot/log | cut -d' ' -f4-)"
             else
               result "$pod-cni-add" FAIL "netns $ns: rxe_$slot's netdev there is '${got}' (wanted eth0), pod IP '${ip}'"
               show /run/e2e-slot/log; show /tmp/rdmak8s-cni.log 20; return 1
             fi ;;
      *) result "$pod-cni-add" FAIL "the sandbox is in netns '$ns', not containerd's cni-<uuid>"; return 1 ;;
    esac
    if ! err=$(cdp_wait_back "rxe_$slot" "$before" 60); then
      result "$pod-device-back" FAIL "$err"; show "$DP_LOG" 20; return 1
    fi
    cri_rdma_container_up "$pod" "$alloc" || return 1
    # What the container holds: the CDI spec's nodes for its device (uverbs, rdma_cm) and the env.
    cri_container_holds "$pod" \
      "$(basename "$(cdp_uverbs "rxe_$slot")") RDMAK8S_$(echo "$slot" | tr 'a-z' 'A-Z')_DEVICES=rxe_$slot rdma_cm" \
      "$(echo "$alloc" | jq -c .cdi_devices)" sh -c 'ls /dev/infiniband; env | grep ^RDMAK8S_'
  done
  A_IP=$(cat "$POD_DIR/podA/ip"); B_IP=$(cat "$POD_DIR/podB/ip")
  check_ping fabric-ping podB "$A_IP"
}

# cdp_pods_down: kubelet's teardown of both pods; then containerd's CNI calls as recorded (two DELs
# per pod, CNI_ARGS as measured), each device back in its slot on net1 and Healthy, no CNI state.
cdp_pods_down() {
  local pod slot sb err dels args n left before first second f out
  for s in "podA slot1" "podB slot2"; do
    set -- $s
    pod=$1 slot=$2
    [ -f "$POD_DIR/$pod/sandbox" ] || continue
    sb=$(cat "$POD_DIR/$pod/sandbox")
    before=$(grep -c "rxe_$slot is back on the node" "$DP_LOG")
    check_cri_rdma_pod_down "$pod"
    # The recording plugin is last in the chain: libcni runs DEL in reverse, so it saw each DEL first.
    dels=$(grep -l "^CNI_CONTAINERID=$sb\$" "$CNILOG_DIR"/*-DEL.env 2>/dev/null | sort -t/ -k5 -n)
    n=$(echo "$dels" | grep -c .)
    args=""
    for f in $dels; do args="$args [CNI_NETNS='$(sed -n 's/^CNI_NETNS=//p' "$f")' prevResult: $(jq -c 'has("prevResult")' "${f%.env}.json")]"; done
    first=$(echo "$dels" | head -n 1); second=$(echo "$dels" | sed -n 2p)
    if [ "$n" = 2 ] && [ -n "$(sed -n 's/^CNI_NETNS=//p' "$first")" ] && [ -z "$(sed -n 's/^CNI_NETNS=//p' "$second")" ] &&
       [ "$(jq -c 'has("prevResult")' "${second%.env}.json")" = false ]; then
      result "$pod-cni-dels" PASS "containerd's two DELs reached the chain:$args"
    else
      result "$pod-cni-dels" FAIL "wanted two DELs (netns, then none without prevResult), recorded $n:$args"
    fi
    left=$($IP netns exec "$slot" $RDMA link show 2>/dev/null | grep -o "rxe_$slot/1 .* netdev [a-z0-9]*" | sed 's/.* netdev //')
    if [ "$left" = net1 ]; then
      result "$pod-device-home" PASS "rxe_$slot is on net1 in netns $slot again: $(tail -n 1 /run/e2e-slot/log | cut -d' ' -f4-)"
    else
      result "$pod-device-home" FAIL "rxe_$slot's netdev in netns $slot is '${left}' (wanted net1); slot log: $(tail -n 2 /run/e2e-slot/log | tr '\n' ' ')"
    fi
    # Unplugging made the device again in its slot: the device plugin must see it back, Healthy.
    if ! err=$(cdp_wait_back "rxe_$slot" "$before" 60); then
      result "$pod-device-healthy" FAIL "$err"
    elif out=$(kubelet_wait_health "rdma/$slot" "*" Healthy 60); then
      result "$pod-device-healthy" PASS "the device plugin advertises rdma/$slot Healthy again"
    else
      result "$pod-device-healthy" FAIL "rdma/$slot: $out"
    fi
  done
  cri_node_clean
  cnilog_show | grep -E ': [0-9]+-(ADD|DEL):' | grep -v 'other env' | head -n 8
}

cri_node_conflist shared
if cdp_slots_and_plugin; then
  cri_rdma_session cdp_pods_up cdp_pods_down
fi
kubelet_stop
dp_stop
