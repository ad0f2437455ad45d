# The whole stack as a node runs it: stack_up (slots, agents, pods, CNI) and stack_down.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

# The whole stack, as a node runs it: slots, device plugin + kubelet, pods from Allocate, networks
# from CNI ADD. Used by the pods-* scenarios.

# stack_up KIND NETNS_MODE: two slots carrying KIND devices; the device plugin with one pool per
# slot (rdma/slot1, rdma/slot2; pool mode exclusive when the RDMA netns mode is: the device then
# moves into its one pod); the fake kubelet allocating one of each; pods podA and podB built from
# the Allocate answers; their networks attached by CNI ADD and verified by CHECK.
# Sets A_IP and B_IP. Returns non-zero when the pods could not be built (traffic is then pointless).
stack_up() {
  local kind=$1 mode=$2 pool_mode=shared s pod slot t0 t1 doc alloc dev devid
  [ "$mode" = exclusive ] && pool_mode=exclusive
  need_binaries rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s || return 1
  slots_up "$kind" "no address until CNI ADD" slot1 slot2 || return 1

  dp_start "$(jq -nc --arg k "$kind" --arg m "$pool_mode" '{resourcePrefix: "rdma", pools: [
      {name: "slot1", mode: $m, selectors: {rdmaDevices: [($k + "_slot1")]}},
      {name: "slot2", mode: $m, selectors: {rdmaDevices: [($k + "_slot2")]}}]}')"
  t0=$(now_ms)
  # Each pod's allocation, as kubelet's device manager records it (the pod-resources API the CNI
  # asks): podA (CNI_ARGS K8S_POD_NAME=poda, lib/cni.sh) got slot1, podB slot2.
  kubelet_start --allocate rdma/slot1:1@default/poda --allocate rdma/slot2:1@default/podb
  for s in slot1 slot2; do
    if kubelet_wait_registered "rdma/$s" 90; then
      t1=$(now_ms)
      figure "registration-rdma/$s" $((t1 - t0)) ms
      result "register-rdma/$s" PASS "registered with the fake kubelet, ListAndWatch stream open"
    else
      result "register-rdma/$s" FAIL "no ListAndWatch update for rdma/$s within 90 s"
      show "$DP_LOG" 30
      show "$KUBELET_ERR"
      return 1
    fi
  done
  if ! doc=$(kubelet_allocations 90); then
    result allocate FAIL "the fake kubelet printed no allocation: $(tail -n 3 "$KUBELET_ERR") $doc"
    show "$DP_LOG" 30
    return 1
  fi
  if [ "$(echo "$doc" | jq '.errors | length')" != 0 ]; then
    result allocate FAIL "fake kubelet errors: $(echo "$doc" | jq -c .errors)"
    show "$DP_LOG" 40
    show "$KUBELET_OUT" 20
    return 1
  fi
  result allocate PASS "$(echo "$doc" | jq -c '{advertised: (.resources | map_values("\(.devices | length) IDs, \([.devices[] | select(.health == "Healthy")] | length) Healthy")), allocated: [.allocations[] | {resource, ids}]}')"
  echo "$doc" > /run/e2e/allocations.json

  for s in "podA slot1" "podB slot2"; do
    set -- $s
    pod=$1 slot=$2 dev=${kind}_$2
    alloc=$(echo "$doc" | jq -c --arg r "rdma/$slot" '.allocations[] | select(.resource == $r) | .containers[0]')
    if ! err=$(pod_create "$pod" "$slot" "$alloc" 2>&1); then
      result "$pod-create" FAIL "$err"
      return 1
    fi
    check_pod_devices "$pod" "$slot" "$dev" "$alloc"

    # deviceID as Multus passes it: the ID kubelet allocated for the NAD's resourceName
    # ("<dev>-<k>" in a shared pool, the device itself in an exclusive one), not the device name.
    devid=$(echo "$doc" | jq -r --arg r "rdma/$slot" '.allocations[] | select(.resource == $r) | .ids[0]')
    pod_conflist "$pod" "$devid" "$mode"
    pod_network_up "$pod" "$pod-cni-add" || return 1
  done
  pods_reachable
}

# check_pod_devices POD POOL DEV ALLOC: the check POD-devices, on a pod built from ALLOC (its
# container's Allocate answer from pool POOL): its /dev/infiniband holds exactly ALLOC's nodes,
# one of them the uverbs node of DEV, and its env names DEV in RDMAK8S_<POOL>_DEVICES.
check_pod_devices() {
  local pod=$1 dev=$3 alloc=$4 key got want uv u env
  key=RDMAK8S_$(echo "$2" | tr 'a-z' 'A-Z')_DEVICES
  got=$(pod_run "$pod" ls /dev/infiniband | sort | tr '\n' ' ')
  want=$(echo "$alloc" | jq -r '.devices[].container_path' | sed 's|.*/||' | sort | tr '\n' ' ')
  uv=""
  for u in $(echo "$alloc" | jq -r '.devices[].host_path' | grep uverbs); do
    [ "$(cat "/sys/class/infiniband_verbs/${u##*/}/ibdev" 2>/dev/null)" = "$dev" ] && uv=${u##*/}
  done
  env=$(grep "^$key=" "$POD_DIR/$pod/env")
  if [ "$got" = "$want" ] && [ -n "$uv" ] && [ "$env" = "$key=$dev" ]; then
    result "$pod-devices" PASS "/dev/infiniband holds only [$got] ($uv is $dev); $env"
  else
    result "$pod-devices" FAIL "pod has [$got], Allocate gave [$want], uverbs of $dev: '${uv}', env '$env'"
  fi
}

# pod_network_up POD ADD_CHECK_NAME: CNI ADD (timed: figure cni-add-POD; its result is the
# check ADD_CHECK_NAME), then CHECK of the whole chain. Fails when ADD failed.
pod_network_up() {
  local pod=$1 check=$2 t0 t1
  t0=$(now_ms)
  if cni "$pod" ADD; then
    t1=$(now_ms)
    figure "cni-add-$pod" $((t1 - t0)) ms
    result "$check" PASS "$(jq -c '{ips: [.ips[].address], interfaces: [.interfaces[].name]}' "$POD_DIR/$pod/cni.ADD" 2>/dev/null)"
  else
    result "$check" FAIL "cni-driver add: $(tail -n 5 "$POD_DIR/$pod/cni.ADD" | tr '\n' ' ')"
    show /tmp/rdmak8s-cni.log 20
    return 1
  fi
  if cni "$pod" CHECK; then
    result "$pod-cni-check" PASS "CHECK of the whole chain passed"
  else
    result "$pod-cni-check" FAIL "cni-driver check: $(tail -n 5 "$POD_DIR/$pod/cni.CHECK" | tr '\n' ' ')"
  fi
}

# pod_network_down POD: CNI DEL of the whole chain (timed: figure cni-del-POD; check
# POD-cni-del), then a second DEL as containerd's RemovePodSandbox sends it (CNI_NETNS empty, no
# prevResult; check POD-cni-del-twice): DEL must be idempotent.
pod_network_down() {
  local pod=$1 t0
  t0=$(now_ms)
  if cni "$pod" DEL; then
    figure "cni-del-$pod" $(($(now_ms) - t0)) ms
    result "$pod-cni-del" PASS "DEL of the whole chain"
  else
    result "$pod-cni-del" FAIL "cni-driver del: $(tail -n 5 "$POD_DIR/$pod/cni.DEL" | tr '\n' ' ')"
  fi
  if cni "$pod" DEL gone; then
    result "$pod-cni-del-twice" PASS "a second DEL as containerd's RemovePodSandbox sends it (CNI_NETNS empty, no prevResult) succeeds"
  else
    result "$pod-cni-del-twice" FAIL "second DEL: $(tail -n 5 "$POD_DIR/$pod/cni.DEL" | tr '\n' ' ')"
  fi
}

# pods_reachable: A_IP and B_IP from podA's and podB's CNI results, and IP between them.
pods_reachable() {
  A_IP=$(pod_ip podA)
  B_IP=$(pod_ip podB)
  [ -n "$A_IP" ] && [ -n "$B_IP" ] || { result pod-ips FAIL "no IPv4 in the CNI results ('$A_IP', '$B_IP')"; return 1; }
  check_ping fabric-ping podB "$A_IP"
}

# check_devices_moved "POD DEV"...: each DEV is in its POD only (exclusive mode: the node's
# sysfs no longer lists it).
check_devices_moved() {
  local s root_sees pod_sees
  for s in "$@"; do
    set -- $s
    root_sees=$(ls /sys/class/infiniband 2>/dev/null | grep -x "$2")
    pod_sees=$(pod_run "$1" ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')
    if [ -z "$root_sees" ] && [ "$pod_sees" = "$2 " ]; then
      result "$1-device-moved" PASS "$2 is in the pod only (the pod sees: $pod_sees)"
    else
      result "$1-device-moved" FAIL "root sees '${root_sees}', the pod sees '$pod_sees'; wanted $2 in the pod only"
    fi
  done
}

# stack_down KIND NETNS_MODE: CNI DEL for both pods (twice: DEL must be idempotent), then checks
# the node is clean: no rdmak8s state left, addresses released, and (exclusive) every device home.
stack_down() {
  local kind=$1 mode=$2 pod left added=0
  for pod in podA podB; do
    [ -f "$POD_DIR/$pod/net.conflist" ] || continue
    added=1
    pod_network_down "$pod"
    left=$($IP -n "$(pod_slot $pod)" -4 -o addr show dev net1 2>/dev/null | awk '{print $4}' | tr '\n' ' ')
    if [ -z "$left" ]; then
      result "$pod-address-released" PASS "net1 has no IPv4 address after DEL"
    else
      result "$pod-address-released" FAIL "net1 still has $left after DEL"
    fi
  done
  check_state_clean DEL
  if [ "$mode" = exclusive ] && [ $added = 1 ]; then
    left=""
    for s in slot1 slot2; do
      [ -d "/sys/class/infiniband/${kind}_$s" ] || left="$left ${kind}_$s"
    done
    if [ -z "$left" ]; then
      result devices-home PASS "${kind}_slot1 and ${kind}_slot2 are back in the root namespace"
    else
      result devices-home FAIL "not back in the root namespace after DEL:$left (root: $($RDMA dev 2>&1 | cut -d' ' -f2 | tr '\n' ' '); slot1: $($IP netns exec slot1 $RDMA dev 2>&1 | cut -d' ' -f2 | tr '\n' ' '))"
      show /tmp/rdmak8s-cni.log 15
    fi
  fi
}
