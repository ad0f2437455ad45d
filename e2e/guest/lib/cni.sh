# CNI through a real runtime library (cni-driver): conflists, ADD/CHECK/DEL/GC, state left.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

# CNI through a real runtime library: cni-driver (Go, Debian's libcni) executes a conflist as a
# runtime does. Plugins in /opt/cni/bin: e2e-slot (e2e/cni), host-local, rdmak8s.

CNI_BIN=/opt/cni/bin
CNI_CACHE=/var/lib/cni/cache

# pod_conflist POD DEVICE_ID NETNS_MODE [QOS_JSON]: the pod's chained network: e2e-slot with
# host-local IPAM on the fabric subnet, then rdmak8s with deviceID DEVICE_ID (an RDMA device name
# or an allocated device-plugin ID, as Multus injects it). E2E_IPAM_RANGE (a JSON object such as
# {"rangeStart": ..., "rangeEnd": ...}) narrows the node's range: the two-node e2e gives each node
# its own part of the subnet.
pod_conflist() {
  local qos=${4:-'{"roceTos": 106}'} range=${E2E_IPAM_RANGE:-'{}'}
  # The CNI's log file is the node's to choose (its node configuration), not the netconf's.
  mkdir -p /etc/cni/rdmak8s
  [ -f /etc/cni/rdmak8s/node.json ] || echo '{"logFile": "/tmp/rdmak8s-cni.log"}' > /etc/cni/rdmak8s/node.json
  jq -n --arg dev "$2" --arg mode "$3" --argjson qos "$qos" --argjson range "$range" '{
    cniVersion: "1.0.0", name: "e2e-fabric",
    plugins: [
      {type: "e2e-slot",
       ipam: {type: "host-local", ranges: [[{subnet: "198.18.0.0/24"} + $range]],
              dataDir: "/var/lib/cni/networks"}},
      {type: "rdmak8s", deviceID: $dev, netnsMode: $mode, qos: $qos, logLevel: "debug"}
    ]}' > "$POD_DIR/$1/net.conflist"
}

# cni POD ADD|CHECK|DEL|GC [gone]: runs cni-driver on the pod's conflist (ADD, CHECK, DEL through
# libcni; GC with no valid attachment), with the CNI_ARGS in $POD_DIR/POD/cni_args when there is
# one (K=V;K=V, as runtimes pass K8S_POD_UID); its stdout (result or CNI error object) and stderr
# go to $POD_DIR/POD/cni.CMD and cni.CMD.err. As containerd 1.7 was measured to pass them (see
# e2e/README.md, "A real runtime in the guest"): CNI_ARGS of ADD end with IgnoreUnknown=1, those
# of DEL start with it, whatever order the file has. DEL ... gone is containerd's second DEL
# (RemovePodSandbox's): CNI_NETNS empty (the namespace is gone) and, as libcni dropped its cache
# at the first DEL, no prevResult.
cni() {
  local pod=$1 cmd=$2 d=$POD_DIR/$1 slot args="" netns
  slot=$(cat "$d/netns")
  netns=/run/netns/$slot
  [ "$3" = gone ] && netns=""
  # containerd passes these four for every pod; a pod without its own gets them once (a fresh UID).
  [ -f "$d/cni_args" ] || echo "K8S_POD_NAMESPACE=default;K8S_POD_NAME=$(echo "$pod" | tr 'A-Z' 'a-z');K8S_POD_INFRA_CONTAINER_ID=e2e-$pod;K8S_POD_UID=$(cat /proc/sys/kernel/random/uuid)" > "$d/cni_args"
  if [ -f "$d/cni_args" ]; then
    args=$(tr ';' '\n' < "$d/cni_args" | grep -v -x -e 'IgnoreUnknown=1' -e '' | tr '\n' ';')
    args=${args%;}
    case $cmd in
      DEL) args="IgnoreUnknown=1${args:+;$args}" ;;
      *) args="${args:+$args;}IgnoreUnknown=1" ;;
    esac
  fi
  cni-driver -conflist "$d/net.conflist" -cmd "$cmd" -netns "$netns" -id "e2e-$pod" \
    -ifname net1 -plugin-dirs "$CNI_BIN" -cache-dir "$CNI_CACHE" ${args:+-args "$args"} \
    > "$d/cni.$cmd" 2> "$d/cni.$cmd.err"
}

# Prints what rdmak8s state remains (attachment records, saved knobs) and fails when any does.
# The lock file and an empty knobs.json are not state.
cni_state_left() {
  local dir=/var/lib/cni/rdmak8s left knobs
  left=$(find "$dir/attachments" -type f 2>/dev/null | tr '\n' ' ')
  if [ -f "$dir/knobs.json" ]; then
    knobs=$(jq -c . "$dir/knobs.json" 2>&1)
    case $knobs in '{}'|'[]'|null|'') ;; *) left="$left knobs.json: $knobs" ;; esac
  fi
  echo "$left"
  [ -z "$left" ]
}

# check_state_clean AFTER: the check state-clean: no rdmak8s state is left (cni_state_left) AFTER
# the teardown named (e.g. "DEL", "containerd's DELs"); the failure lists what is left.
check_state_clean() {
  local left
  if left=$(cni_state_left); then
    result state-clean PASS "no attachment record and no saved knob left in /var/lib/cni/rdmak8s"
  else
    result state-clean FAIL "state left after $1: $left"
  fi
}

# The pod's IPv4 address from its CNI ADD result.
pod_ip() { jq -r '.ips[0].address' "$POD_DIR/$1/cni.ADD" 2>/dev/null | cut -d/ -f1; }
