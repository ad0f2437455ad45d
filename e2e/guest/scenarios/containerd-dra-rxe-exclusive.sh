# e2e-netns-mode: exclusive
# e2e-runtime: containerd
# e2e-default: no
# e2e-make-test: no
# e2e-needs: rdmak8s-dra-driver rdmak8s-fake-api-server rdmak8s-fake-dra-kubelet rdmak8s
# e2e-timeout: 900
# Our chain under a real runtime, with the DRA driver (issue 25): the fake API server, the DRA
# driver publishing ResourceSlices and the fake DRA kubelet as dra-rxe-exclusive runs them; one
# allocated claim per pod prepared through NodePrepareResources (before the sandbox, as kubelet
# does); then each pod through CRI: RunPodSandbox, where containerd 1.7 runs the node's conflist
# (e2e-slot plugging the claimed slot's netdev into containerd's cni-<uuid> namespace, host-local,
# rdmak8s in exclusive mode with no deviceID finding the claimed device by containerd's
# K8S_POD_UID and the pod record the driver wrote, moving it into the pod), CreateContainer with
# the claim's CDI device names from the prepare answer in CDI_devices, StartContainer. Raw verbs
# between the two containers with each side's RoCE v2 GID index read in its container. Each
# claim asks for gidIndexEnv: the container's env has NCCL_IB_GID_INDEX and UCX_IB_GID_INDEX equal
# to the GID index of its own address (the CNI wrote it into the claim's GID index CDI spec after
# its ADD, containerd read it at CreateContainer; docs/dra.md). Then
# containerd's two DELs and NodeUnprepareResources leave each device back on the host, no CNI
# state, no claim spec, no pod record. Opt-in (-s containerd-dra-rxe-exclusive).
. /e2e/containerd.sh
. /e2e/dra.sh

# Each pod: its slot, pod UID and claim UID.
CDRA_PODS="podA slot1 11111111-aaaa-4aaa-8aaa-0000000000a1 c1a1a1a1-0000-4000-8000-0000000000a1
podB slot2 22222222-bbbb-4bbb-8bbb-0000000000b2 c2b2b2b2-0000-4000-8000-0000000000b2"

# The DRA node without pods: slots, fake API server, driver, both devices published.
cdra_node_up() {
  slots_up rxe "in the root namespace: exclusive mode" slot1 slot2 || return 1
  dra_control_plane_up node-uid-e2e rxe_slot1 rxe_slot2
}

# cdra_claim_write NAME UID POD POD_UID POOL DEVICE: claim_write's claim whose own opaque config
# also asks for gidIndexEnv, handed to the fake API server in one write (staged elsewhere first:
# the server loads each file it sees written, and prepare must read the final one).
cdra_claim_write() {
  local stage=/run/e2e/claim-stage dra_dir=$DRA_DIR rc
  mkdir -p "$stage/claims"
  DRA_DIR=$stage; claim_write "$@"; rc=$?; DRA_DIR=$dra_dir
  [ $rc = 0 ] || return 1
  jq --arg drv "$DRIVER" '.status.allocation.devices.config += [{source: "FromClaim", requests: ["nic"],
       opaque: {driver: $drv, parameters: {gidIndexEnv: true}}}]' "$stage/claims/$1.json" \
    > "$DRA_DIR/claims/.$1.tmp" && mv "$DRA_DIR/claims/.$1.tmp" "$DRA_DIR/claims/$1.json"
}

# cdra_gid_env_check POD DEV IP CLAIM_UID: the check POD-gid-index-env: the env of the container's
# first process (what containerd put in its OCI spec) has NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX and
# RDMAK8S_GID_INDEX equal to the RoCE v2 GID index of the pod's address in its GID table.
cdra_gid_env_check() {
  local pod=$1 cpid want got spec
  cpid=$(tail -n 1 "$POD_DIR/$pod/keep")
  want=$(pod_gid_index "$pod" "$2" "$3")
  got=$(tr '\0' '\n' < "/proc/$cpid/environ" | grep -E '^(NCCL_IB_GID_INDEX|UCX_IB_GID_INDEX|RDMAK8S_GID_INDEX)=' | sort | tr '\n' ' ')
  spec=$(jq -c '.devices[0].containerEdits.env' "$CDI_DIR/$DRIVER-claim-gid_${4}_"*.json 2>&1)
  if [ -n "$want" ] && [ "$got" = "NCCL_IB_GID_INDEX=$want RDMAK8S_GID_INDEX=$want UCX_IB_GID_INDEX=$want " ]; then
    result "$pod-gid-index-env" PASS "the container's env: ${got}= the RoCE v2 GID index of $3 on $2 in the pod's GID table; claim GID spec env $spec"
  else
    result "$pod-gid-index-env" FAIL "the container's env: [${got}], the GID table's index of $3 on $2: '${want}'; claim GID spec env $spec"
    grep -i "gid index" /tmp/rdmak8s-cni.log | tail -n 3
  fi
}

# cdra_spec_nodes_ok CLAIM_UID: every device node the claim's CDI spec names exists as a
# character device now (a soft device made again by the plug must come back on the same uverbs
# minor, or CDI injection would fail or give the container a stale node).
cdra_spec_nodes_ok() {
  local spec=$CDI_DIR/$DRIVER-claim_$1.json p bad=""
  for p in $(jq -r '[.containerEdits.deviceNodes[]?, .devices[].containerEdits.deviceNodes[]?] | .[] | (.hostPath // .path)' "$spec"); do
    [ -c "$p" ] || bad="$bad $p"
  done
  [ -z "$bad" ] && return 0
  echo "claim spec $spec names missing node(s):$bad; /dev/infiniband: $(ls /dev/infiniband | tr '\n' ' ')"
  return 1
}

cdra_pods_up() {
  local s pod slot puid cuid pd prep ids alloc err ns ip got want
  for s in $(echo "$CDRA_PODS" | tr ' ' ':'); do
    IFS=: read -r pod slot puid cuid <<EOF_POD
$s
EOF_POD
    # Kubelet prepares the pod's claims before it makes the sandbox.
    pd=$(slice_device_of "rxe_$slot")
    cdra_claim_write "$(claim_name "$pod")" "$cuid" "$pod" "$puid" ${pd% *} ${pd#* }
    prep=$(claim_prepare "$(claim_name "$pod")" "$cuid" --request nic)
    echo "$cuid" > "/run/e2e/$pod.prepared"  # asked: unprepared at the end whatever it answered
    ids=$(echo "$prep" | jq -c --arg u "$cuid" '.claims[$u].container_cdi_devices // empty' 2>/dev/null)
    if echo "$prep" | jq -e --arg u "$cuid" '.claims[$u].error == "" and (.claims[$u].devices | length) == 1' >/dev/null 2>&1 &&
       [ "$(echo "$ids" | jq 'length' 2>/dev/null)" -ge 1 ] 2>/dev/null && [ -e "$DRA_PODS_DIR/$puid" ]; then
      result "$pod-prepare" PASS "$(echo "$prep" | jq -c --arg u "$cuid" '.claims[$u].devices'), container CDI devices $ids, pod record $DRA_PODS_DIR/$puid"
    else
      result "$pod-prepare" FAIL "NodePrepareResources of default/$(claim_name "$pod"): $prep; records: $(ls "$DRA_PODS_DIR" 2>&1 | tr '\n' ' ')"
      show "$DRA_LOG" 30; return 1
    fi
    cri_rdma_pod_up "$pod" "$puid" "rxe_$slot" || return 1
    ns=$(cat "$POD_DIR/$pod/netns"); ip=$(cat "$POD_DIR/$pod/ip")
    # Exclusive mode: the claimed device is in containerd's namespace only, on its eth0.
    got=$($IP netns exec "$ns" $RDMA link show 2>/dev/null | grep -o "rxe_$slot/1 .* netdev [a-z0-9]*" | sed 's/.* netdev //')
    case $ns in
      cni-*) if [ "$got" = eth0 ] && [ -n "$ip" ] && [ ! -e "/sys/class/infiniband/rxe_$slot" ]; then
               result "$pod-cni-add-by-pod-uid" PASS "containerd's CNI ADD: netns $ns holds rxe_$slot on eth0 (moved in by our CNI, found by K8S_POD_UID $puid), the root no longer sees it; pod IP $ip"
             else
               result "$pod-cni-add-by-pod-uid" FAIL "netns $ns: rxe_$slot's netdev there is '${got}' (wanted eth0), root sees it: $([ -e "/sys/class/infiniband/rxe_$slot" ] && echo yes || echo no), pod IP '${ip}'"
               show /run/e2e-slot/log; show /tmp/rdmak8s-cni.log 20; return 1
             fi ;;
      *) result "$pod-cni-add-by-pod-uid" FAIL "the sandbox is in netns '$ns', not containerd's cni-<uuid>"; return 1 ;;
    esac
    if ! err=$(cdra_spec_nodes_ok "$cuid"); then
      result "$pod-claim-spec-nodes" FAIL "$err"; return 1
    fi
    result "$pod-claim-spec-nodes" PASS "every node of the claim's CDI spec exists after the plug"
    # CreateContainer with the prepare answer's CDI names (kubelet passes them as they are).
    alloc=$(jq -nc --argjson ids "$ids" '{cdi_devices: $ids, envs: {}}')
    cri_rdma_container_up "$pod" "$alloc" || return 1
    # The container holds the spec's nodes (uverbs of its device, rdma_cm) and sees only its device.
    want=$(jq -r '[.containerEdits.deviceNodes[]?, .devices[].containerEdits.deviceNodes[]?] | .[].path' \
             "$CDI_DIR/$DRIVER-claim_$cuid.json" | sed 's|.*/||'; echo "rxe_$slot")
    cri_container_holds "$pod" "$want" "$ids" sh -c 'ls /dev/infiniband; ls /sys/class/infiniband'
    cdra_gid_env_check "$pod" "rxe_$slot" "$ip" "$cuid"
  done
  A_IP=$(cat "$POD_DIR/podA/ip"); B_IP=$(cat "$POD_DIR/podB/ip")
  check_ping fabric-ping podB "$A_IP"
}

# Kubelet's teardown: CRI (containerd's two DELs), then NodeUnprepareResources; each device back
# in the root namespace on net1 of its slot, no CNI state, no claim spec, no pod record.
cdra_pods_down() {
  local s pod slot puid cuid sb dels n
  for s in $(echo "$CDRA_PODS" | tr ' ' ':'); do
    IFS=: read -r pod slot puid cuid <<EOF_POD
$s
EOF_POD
    if [ -f "$POD_DIR/$pod/sandbox" ]; then
      sb=$(cat "$POD_DIR/$pod/sandbox")
      check_cri_rdma_pod_down "$pod"
      dels=$(grep -l "^CNI_CONTAINERID=$sb\$" "$CNILOG_DIR"/*-DEL.env 2>/dev/null)
      n=$(echo "$dels" | grep -c .)
      if [ "$n" = 2 ] && grep -q "^CNI_ARGS=.*K8S_POD_UID=$puid" $dels; then
        result "$pod-cni-dels" PASS "containerd's two DELs reached the chain, K8S_POD_UID=$puid in CNI_ARGS"
      else
        result "$pod-cni-dels" FAIL "wanted two DELs with K8S_POD_UID=$puid, recorded $n"
      fi
      # Home: the device in the root namespace again, its netdev net1 back in the slot.
      if [ -e "/sys/class/infiniband/rxe_$slot" ] && $IP -n "$slot" link show net1 >/dev/null 2>&1; then
        result "$pod-device-home" PASS "rxe_$slot is in the root namespace again, net1 in netns $slot: $(tail -n 1 /run/e2e-slot/log | cut -d' ' -f4-)"
      else
        result "$pod-device-home" FAIL "rxe_$slot in the root: $(ls /sys/class/infiniband | tr '\n' ' '); net1 in $slot: $($IP -n "$slot" -o link show 2>&1 | cut -d: -f2 | tr '\n' ' '); slot log: $(tail -n 2 /run/e2e-slot/log | tr '\n' ' ')"
      fi
    fi
    [ -f "/run/e2e/$pod.prepared" ] || continue
    dra_unprepare "$pod" "$puid" "$cuid"
    if ls "$CDI_DIR/$DRIVER-claim-gid_${cuid}_"* >/dev/null 2>&1; then
      result "$pod-gid-spec-gone" FAIL "left after unprepare: $(ls "$CDI_DIR" | tr '\n' ' ')"
    else
      result "$pod-gid-spec-gone" PASS "the claim's GID index CDI spec went at unprepare"
    fi
  done
  cri_node_clean
}

cri_node_conflist exclusive
if cdra_node_up; then
  cri_rdma_session cdra_pods_up cdra_pods_down
fi
dra_control_plane_down
