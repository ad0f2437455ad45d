# The DRA node the dra-* scenarios and make demo-dra play (sourced by them; needs lib.sh): two
# rxe slots, the fake API server (HTTPS, token), rdmak8s-dra-driver publishing ResourceSlices,
# one allocated claim per pod prepared through the fake kubelet, pods built from the CDI specs,
# and CNI ADD by K8S_POD_UID (no deviceID). dra_up does all that and checks each step; dra_down
# undoes it as kubelet does (CNI DEL, unprepare) and checks the driver's exit removes its slices.
DRA_DIR=/run/e2e/dra
DRIVER=rdma.rdmak8s.io
NODE=e2e-node
REG_SOCK=/var/lib/kubelet/plugins_registry/$DRIVER-reg.sock
CDI_DIR=/var/run/cdi
DRA_LOG=/tmp/dra-driver.log
API_LOG=/tmp/fake-api-server.log
# Each pod: its slot, pod UID and claim UID (as the API server would have made them), and the
# request its allocation names: podB's claim is a firstAvailable one ("nic/rxe"), its container
# asks for "nic" as kubelet matches it.
DRA_PODS="podA:slot1:11111111-aaaa-4aaa-8aaa-000000000001:c1a1a1a1-0000-4000-8000-00000000000a:nic
podB:slot2:22222222-bbbb-4bbb-8bbb-000000000002:c2b2b2b2-0000-4000-8000-00000000000b:nic/rxe"
DRA_PODS_DIR=/run/rdmak8s/dra-pods  # the driver's and the CNI's default

api_get() {  # api_get PATH: GET on the fake API server, as the driver authenticates
  curl -sS --cacert "$DRA_DIR/tls/ca.crt" -H "Authorization: Bearer $(cat "$DRA_DIR/tls/token")" \
    "$(jq -r '.clusters[0].cluster.server' "$DRA_DIR/tls/kubeconfig")$1"
}

# The slices' device of RDMA device $1: "<pool> <device name>".
slice_device_of() {
  api_get /apis/resource.k8s.io/v1/resourceslices | jq -r --arg d "$1" --arg drv "$DRIVER" '
    .items[] | select(.spec.driver == $drv) | .spec.pool.name as $p
    | .spec.devices[] | select(.attributes.rdmaDevice.string == $d) | "\($p) \(.name)"' | head -n 1
}

# claim_write NAME UID POD POD_UID POOL DEVICE [REQUEST]: an allocated ResourceClaim reserved
# for the pod; REQUEST "nic/<sub>" makes it a firstAvailable claim allocated from that subrequest.
# claim_name <pod>: the pod's claim name. A ResourceClaim's name is a DNS-1123 subdomain (lower
# case), which the driver checks before it asks the API server; our pod names have capitals.
claim_name() { echo "nic-$1" | tr 'A-Z' 'a-z'; }

# claim_prepare <claim name> <claim uid> [prepare flags...]: NodePrepareResources' answer (or
# error) for default/<claim>. The fake API server loads a claim file on its own thread, so
# NotFound is asked again, at most 50 times 0.1 s; anything else is the answer.
claim_prepare() {
  local claim=$1 uid=$2 out n=0
  shift 2
  while :; do
    out=$(rdmak8s-fake-dra-kubelet --socket "$REG_SOCK" prepare --claim "default/$claim/$uid" "$@" 2>&1) && break
    echo "$out" | grep -q -i 'not found' || break
    [ $n -ge 50 ] && break
    sleep 0.1
    n=$((n + 1))
  done
  echo "$out"
}

claim_write() {
  jq -n --arg name "$1" --arg uid "$2" --arg pod "$3" --arg puid "$4" --arg pool "$5" \
    --arg dev "$6" --arg req "${7:-nic}" --arg drv "$DRIVER" '{
    apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim",
    metadata: {namespace: "default", name: $name, uid: $uid, resourceVersion: "1"},
    spec: {devices: {requests: [if ($req | contains("/"))
      then {name: "nic", firstAvailable: [{name: ($req | split("/")[1]), deviceClassName: "rdma-roce"}]}
      else {name: "nic", exactly: {deviceClassName: "rdma-roce"}} end]}},
    status: {
      allocation: {devices: {results: [{request: $req, driver: $drv, pool: $pool, device: $dev}],
                             config: [{source: "FromClass", requests: ["nic"],
                                       opaque: {driver: $drv, parameters: {ncclEnv: true}}}]}},
      reservedFor: [{resource: "pods", name: $pod, uid: $puid}]}}' > "$DRA_DIR/claims/.$1.tmp" &&
  mv "$DRA_DIR/claims/.$1.tmp" "$DRA_DIR/claims/$1.json"
}

# The Allocate-shaped JSON pod_create takes, from the CDI spec of claim UID $1: the spec-level
# containerEdits (rdma_cm, shared by every device) and those of the devices named in $2 (a JSON
# array of CDI IDs, what kubelet hands the runtime for the container), as a runtime applies them.
cdi_as_allocation() {
  jq -c --argjson ids "${2:-null}" '.kind as $k |
    [.containerEdits // {}] + [.devices[] | select($ids == null or ([$k + "=" + .name] | inside($ids))) | .containerEdits] |
    {envs: ([.[].env // [] | .[] | capture("^(?<k>[^=]+)=(?<v>.*)$")] | map({(.k): .v}) | add // {}),
     devices: [.[].deviceNodes // [] | .[]
               | {host_path: (.hostPath // .path), container_path: .path, permissions: "rw"}]}' \
    "$CDI_DIR/$DRIVER-claim_$1.json"
}

# dra_slices_missing DEV...: prints the DEVs no ResourceSlice device of this driver names yet;
# fails when any is missing.
dra_slices_missing() {
  local d missing=""
  for d in "$@"; do
    [ -n "$(slice_device_of "$d")" ] || missing="$missing $d"
  done
  echo "${missing# }"
  [ -z "$missing" ]
}

# dra_control_plane_up NODE_UID DEV...: node $NODE's fake API server (node UID NODE_UID), then
# rdmak8s-dra-driver (--delete-slices-on-exit). Waits for the events, each bounded: the API
# server's kubeconfig (30 s), then the slices naming every DEV (90 s; figure
# dra-slices-published); gives up early when the process waited on exits. Checks api-server (on
# failure only) and slices-published; fails with what was missing.
dra_control_plane_up() {
  local uid=$1 end t0 missing
  shift
  mkdir -p "$DRA_DIR/claims" "$DRA_DIR/tls" /var/lib/kubelet/plugins_registry "$CDI_DIR"
  rdmak8s-fake-api-server --tls-dir "$DRA_DIR/tls" --claims-dir "$DRA_DIR/claims" \
    --node "$NODE:$uid" --grant-claim-status "$DRIVER" > "$API_LOG" 2>&1 < /dev/null &
  echo $! > /run/e2e/fake-api-server.pid
  end=$(($(now_ms) + 30000))
  while [ ! -f "$DRA_DIR/tls/kubeconfig" ] && [ "$(now_ms)" -lt $end ] &&
        _alive "$(cat /run/e2e/fake-api-server.pid)"; do
    sleep 0.1
  done
  if [ ! -f "$DRA_DIR/tls/kubeconfig" ]; then
    result api-server FAIL "the fake API server wrote no kubeconfig in 30 s ($(_alive "$(cat /run/e2e/fake-api-server.pid)" && echo running || echo exited)): $(tail -n 5 "$API_LOG" | tr '\n' ' ')"
    return 1
  fi
  t0=$(now_ms)
  rdmak8s-dra-driver --kubeconfig "$DRA_DIR/tls/kubeconfig" --node-name "$NODE" \
    --cdi-dir "$CDI_DIR" --delete-slices-on-exit -v 1 >> "$DRA_LOG" 2>&1 < /dev/null &
  echo $! > /run/e2e/dra-driver.pid
  end=$((t0 + 90000))
  while ! missing=$(dra_slices_missing "$@") && [ "$(now_ms)" -lt $end ] &&
        _alive "$(cat /run/e2e/dra-driver.pid)"; do
    sleep 0.1
  done
  if ! missing=$(dra_slices_missing "$@"); then
    result slices-published FAIL "no ResourceSlice device for $missing within 90 s (driver $(_alive "$(cat /run/e2e/dra-driver.pid)" && echo running || echo exited)): $(api_get /apis/resource.k8s.io/v1/resourceslices | head -c 600)"
    show "$DRA_LOG" 30
    return 1
  fi
  figure dra-slices-published $(($(now_ms) - t0)) ms
  [ "$E2E_VERBOSE" = 1 ] && show "$DRA_LOG" 40
  result slices-published PASS "node $NODE: $(api_get /apis/resource.k8s.io/v1/resourceslices | jq -c --arg drv "$DRIVER" '[.items[] | select(.spec.driver == $drv) | {pool: .spec.pool.name, node: .spec.nodeName, devices: [.spec.devices[] | {name, transport: .attributes.transport.string, rdmaDevice: .attributes.rdmaDevice.string}]}]')"
}

# dra_control_plane_down: uninstall as the DaemonSet's deletion does: SIGTERM to the driver, a
# bounded wait (30 s) for its exit, then the check slices-deleted-on-exit (its exit removed this
# node's slices); then the fake API server goes. Does nothing for a driver never started.
dra_control_plane_down() {
  local pid end left
  if [ -f /run/e2e/dra-driver.pid ]; then
    pid=$(cat /run/e2e/dra-driver.pid)
    kill "$pid" 2>/dev/null
    end=$(($(now_ms) + 30000))
    while _alive "$pid" && [ "$(now_ms)" -lt $end ]; do sleep 0.1; done
    left=$(api_get /apis/resource.k8s.io/v1/resourceslices | jq --arg drv "$DRIVER" '[.items[] | select(.spec.driver == $drv)] | length')
    if _alive "$pid"; then
      result slices-deleted-on-exit FAIL "the driver (pid $pid) did not exit within 30 s of SIGTERM; $left slice(s) of $DRIVER listed"
      show "$DRA_LOG" 15
    elif [ "$left" = 0 ]; then
      result slices-deleted-on-exit PASS "after SIGTERM the driver exited and node $NODE's slices are gone"
    else
      result slices-deleted-on-exit FAIL "$left slice(s) of $DRIVER left after the driver's exit"
      show "$DRA_LOG" 15
    fi
    rm -f /run/e2e/dra-driver.pid
  fi
  if [ -f /run/e2e/fake-api-server.pid ]; then
    kill "$(cat /run/e2e/fake-api-server.pid)" 2>/dev/null
    rm -f /run/e2e/fake-api-server.pid
  fi
}

# dra_unprepare POD POD_UID CLAIM_UID: NodeUnprepareResources of the pod's claim as kubelet sends
# it after the pod's teardown; the check POD-unprepare: it succeeds and leaves no claim CDI spec
# and no pod device record.
dra_unprepare() {
  local out
  if out=$(rdmak8s-fake-dra-kubelet --socket "$REG_SOCK" unprepare --claim "default/$(claim_name "$1")/$3" 2>&1) &&
     [ ! -e "$CDI_DIR/$DRIVER-claim_$3.json" ] && [ ! -e "$DRA_PODS_DIR/$2" ]; then
    result "$1-unprepare" PASS "claim unprepared: its CDI spec and the pod's device record are gone"
  else
    result "$1-unprepare" FAIL "unprepare: $out; CDI specs left: $(ls "$CDI_DIR" | tr '\n' ' '); records: $(ls "$DRA_PODS_DIR" 2>&1 | tr '\n' ' ')"
  fi
}

# dra_pod_conflist POD POD_UID: POD's conflist (pod_conflist, exclusive mode; E2E_IPAM_RANGE as
# it takes it) without deviceID: the CNI finds the pod's device through its claim, by
# K8S_POD_UID. CNI_ARGS as containerd's CRI passes them (IgnoreUnknown=1 keeps host-local from
# refusing the K8S_ keys).
dra_pod_conflist() {
  pod_conflist "$1" "" exclusive
  jq 'del(.plugins[1].deviceID)' "$POD_DIR/$1/net.conflist" > "$POD_DIR/$1/net.tmp" &&
    mv "$POD_DIR/$1/net.tmp" "$POD_DIR/$1/net.conflist"
  echo "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$1;K8S_POD_INFRA_CONTAINER_ID=e2e-$1;K8S_POD_UID=$2" > "$POD_DIR/$1/cni_args"
}

# dra_up: dra_node_up, then dra_pods_up.
dra_up() {
  dra_node_up && dra_pods_up
}

# dra_node_up: the node without pods: two rxe slots, the fake API server and the driver
# publishing both devices.
dra_node_up() {
  need_binaries rdmak8s-dra-driver rdmak8s-fake-api-server rdmak8s-fake-dra-kubelet cni-driver rdmak8s curl || return 1
  slots_up rxe "no address until CNI ADD" slot1 slot2 || return 1
  dra_control_plane_up node-uid-e2e rxe_slot1 rxe_slot2
}

# The taints of RDMA device $1's slice device, as JSON ("null" when it has none).
slice_taints_of() {
  api_get /apis/resource.k8s.io/v1/resourceslices | jq -c --arg d "$1" --arg drv "$DRIVER" '
    [.items[] | select(.spec.driver == $drv) | .spec.devices[]
     | select(.attributes.rdmaDevice.string == $d) | .taints] | first'
}

# wait_for MS CMD...: runs CMD every 0.2 s until it succeeds, at most MS milliseconds; its status.
wait_for() {
  local end=$(($(now_ms) + $1))
  shift
  until "$@"; do
    [ "$(now_ms)" -ge $end ] && return 1
    sleep 0.2
  done
}
_tainted() { [ "$(slice_taints_of "$1" | jq '[.[]? | select(.key == "rdma.rdmak8s.io/unhealthy")] | length')" -ge 1 ] 2>/dev/null; }
_untainted() { ! _tainted "$1" && [ -n "$(slice_device_of "$1")" ]; }
_claim_annotation() {  # _claim_annotation CLAIM KEY
  api_get "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$1" | jq -r --arg k "$2" '.metadata.annotations[$k] // ""'
}
_claim_settled() { [ "$(_claim_annotation "$1" fake.rdmak8s.io/binding)" = bound ]; }

# dra_taint_steers_allocation: a RoCE port that goes down, as the scheduler sees it (issue 34),
# on the node before any pod holds a device: slot1's netdev set down -> its device tainted
# rdma.rdmak8s.io/unhealthy in its slice (waited for, 30 s) -> a claim written WITHOUT an
# allocation is allocated by the fake API server's allocator (tests/fakes/fake_allocator.h, the
# scheduler's stand-in: a NoSchedule taint not tolerated is skipped) from slot2's device (10 s)
# -> link up -> the taint gone (30 s). The claim file is then removed (the claim deleted, its
# device free for podB). Checks taint-on-port-down, allocation-skips-tainted-device,
# taint-gone-on-port-up.
dra_taint_steers_allocation() {
  local t0 pd2 got name=nic-probe
  pd2=$(slice_device_of rxe_slot2)
  t0=$(now_ms)
  $IP -n slot1 link set net1 down
  if wait_for 30000 _tainted rxe_slot1; then
    figure dra-taint-after-port-down $(($(now_ms) - t0)) ms
    result taint-on-port-down PASS "slot1's net1 down: rxe_slot1's slice device has $(slice_taints_of rxe_slot1)"
  else
    result taint-on-port-down FAIL "slot1's net1 down: no rdma.rdmak8s.io/unhealthy taint on rxe_slot1 within 30 s ($(slice_taints_of rxe_slot1))"
    show "$DRA_LOG" 20
  fi
  jq -n --arg name "$name" '{apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim",
    metadata: {namespace: "default", name: $name, uid: "c0c0c0c0-0000-4000-8000-0000000000f0"},
    spec: {devices: {requests: [{name: "nic", exactly: {deviceClassName: "rdma-roce"}}]}}}' \
    > "$DRA_DIR/claims/.$name.tmp" && mv "$DRA_DIR/claims/.$name.tmp" "$DRA_DIR/claims/$name.json"
  wait_for 10000 _claim_settled "$name"
  got=$(api_get "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$name" |
        jq -r '.status.allocation.devices.results[0] | "\(.pool) \(.device)"' 2>/dev/null)
  if [ "$got" = "$pd2" ]; then
    result allocation-skips-tainted-device PASS "a claim without allocation got rxe_slot2's device ($got), not the tainted rxe_slot1"
  else
    result allocation-skips-tainted-device FAIL "the claim got '$got' (want rxe_slot2's '$pd2'); binding: $(_claim_annotation "$name" fake.rdmak8s.io/binding) $(_claim_annotation "$name" fake.rdmak8s.io/binding-reason)"
  fi
  rm -f "$DRA_DIR/claims/$name.json"
  t0=$(now_ms)
  $IP -n slot1 link set net1 up
  if wait_for 30000 _untainted rxe_slot1; then
    figure dra-untaint-after-port-up $(($(now_ms) - t0)) ms
    result taint-gone-on-port-up PASS "slot1's net1 up: rxe_slot1's slice device has no taint"
  else
    result taint-gone-on-port-up FAIL "slot1's net1 up: rxe_slot1 still tainted after 30 s ($(slice_taints_of rxe_slot1))"
    show "$DRA_LOG" 20
  fi
}

# dra_pods_up: podA and podB (DRA_PODS), each with its hand-allocated claim prepared, built from
# the CDI spec and attached by the CNI; then traffic between them.
dra_pods_up() {
  local s
  # Registration with kubelet's plugin watcher happens on the first fake-kubelet call below.
  for s in $DRA_PODS; do
    local pod slot puid cuid req pd prep alloc got want ids
    IFS=: read -r pod slot puid cuid req <<EOF_POD
$s
EOF_POD
    pd=$(slice_device_of "rxe_$slot")
    claim_write "$(claim_name "$pod")" "$cuid" "$pod" "$puid" ${pd% *} ${pd#* } "$req"
    prep=$(claim_prepare "$(claim_name "$pod")" "$cuid" --request nic)
    if echo "$prep" | jq -e --arg u "$cuid" '.claims[$u].error == "" and (.claims[$u].devices | length) == 1' >/dev/null 2>&1; then
      result "$pod-prepare" PASS "$(echo "$prep" | jq -c --arg u "$cuid" '{service, devices: .claims[$u].devices}')"
    else
      result "$pod-prepare" FAIL "NodePrepareResources of default/$(claim_name "$pod"): $prep"
      show "$DRA_LOG" 30
      return 1
    fi
    # The container's devices as kubelet picks them: those answered for its `request: nic`.
    ids=$(echo "$prep" | jq -c --arg u "$cuid" '.claims[$u].container_cdi_devices')
    if [ "$(echo "$ids" | jq 'length')" -ge 1 ] 2>/dev/null; then
      result "$pod-container-gets-claim" PASS "request $req: a container naming \"nic\" gets $ids"
    else
      result "$pod-container-gets-claim" FAIL "request $req: a container naming \"nic\" gets none of the claim's devices ($(echo "$prep" | jq -c --arg u "$cuid" '.claims[$u].devices'))"
      return 1
    fi
    echo "$puid" > "/run/e2e/$pod.uid"
    if ! alloc=$(cdi_as_allocation "$cuid" "$ids" 2>&1) || ! err=$(pod_create "$pod" "$slot" "$alloc" 2>&1); then
      result "$pod-create" FAIL "pod from the CDI spec of claim $cuid: $alloc $err"
      return 1
    fi
    got=$(pod_run "$pod" ls /dev/infiniband | sort | tr '\n' ' ')
    want=$(echo "$alloc" | jq -r '.devices[].container_path' | sed 's|.*/||' | sort | tr '\n' ' ')
    if [ "$got" = "$want" ] && echo "$got" | grep -q uverbs && echo "$got" | grep -q rdma_cm; then
      result "$pod-devices-from-cdi" PASS "/dev/infiniband holds [$got], as the CDI spec says; env: $(tr '\n' ' ' < "$POD_DIR/$pod/env")"
    else
      result "$pod-devices-from-cdi" FAIL "pod has [$got], the CDI spec gave [$want]"
    fi
    dra_pod_conflist "$pod" "$puid"
    pod_network_up "$pod" "$pod-cni-add-by-pod-uid" || return 1
  done
  pods_reachable
}

# dra_claim_status: each pod's claim, as the API server holds it, has one status.devices entry of
# our driver (KEP-4817, docs/dra.md#claim-status-what-the-pod-got) with the pod's address and the
# RoCE v2 GID index of it, which only the CNI's ADD knew (its attachment facts, read by the
# driver every 2 s): waited for at most 15 s. Check POD-claim-status; prints the entries.
dra_claim_status() {
  local s pod slot puid cuid req name st end
  local want='length == 1 and .[0].data.gidIndex != null and (.[0].networkData.ips | length) >= 1 and
              ([.[0].conditions[] | select(.type == "Ready" and .status == "True")] | length) == 1'
  for s in $DRA_PODS; do
    IFS=: read -r pod slot puid cuid req <<EOF_POD
$s
EOF_POD
    name=$(claim_name "$pod")
    end=$(($(now_ms) + 15000))
    while :; do
      st=$(api_get "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$name" |
           jq -c --arg drv "$DRIVER" '[.status.devices[]? | select(.driver == $drv)]' 2>/dev/null)
      if echo "$st" | jq -e "$want" >/dev/null 2>&1 || [ "$(now_ms)" -ge $end ]; then break; fi
      sleep 0.2
    done
    if echo "$st" | jq -e "$want" >/dev/null 2>&1; then
      result "$pod-claim-status" PASS "$(echo "$st" | jq -c '.[0] | {device, conditions: [.conditions[] | "\(.type)=\(.status)"], gidIndex: .data.gidIndex, gid: .data.gid, ips: .networkData.ips}')"
    else
      result "$pod-claim-status" FAIL "status.devices of default/$name after 15 s: $st"
      show "$DRA_LOG" 20
    fi
  done
}

# Steady-state health as kubelet shows it: every device Healthy in kubelet's view (a 30 s
# staleness timeout, kubelet's default) at a message 60 s after the stream opened, past two
# timeouts: what turns Unknown when a driver sends health only on changes. The driver's own
# messages mark the time; the wait is bounded.
dra_health_steady() {
  local s pod slot puid cuid req pd out
  for s in $DRA_PODS; do
    IFS=: read -r pod slot puid cuid req <<EOF_POD
$s
EOF_POD
    pd=$(slice_device_of "rxe_$slot")
    if out=$(rdmak8s-fake-dra-kubelet --socket "$REG_SOCK" health --devices 2 --health-timeout 30 \
               --past 60 --wait-health "${pd% *}/${pd#* }=Healthy" --timeout 120 2>&1); then
      result "$pod-health-after-60s" PASS "$(echo "$out" | jq -c '.devices')"
    else
      result "$pod-health-after-60s" FAIL "$out"
    fi
    return 0  # one stream shows every device; the first pod's device is enough to wait on
  done
}

dra_down() {
  local s
  # As kubelet tears a pod down: CNI DEL (twice), then NodeUnprepareResources.
  stack_down rxe exclusive
  if [ "${DRA_UP:-0}" = 1 ]; then
    for s in $DRA_PODS; do
      local pod slot puid cuid req
      IFS=: read -r pod slot puid cuid req <<EOF_POD
$s
EOF_POD
      dra_unprepare "$pod" "$puid" "$cuid"
    done
  fi
  # Uninstall: the driver's exit removes this node's slices.
  dra_control_plane_down
}

# dra_kubelet_restart_republishes: kubelet restarts as the real one does (issue 23): at its start
# it deletes every ResourceSlice of its node (DeleteCollection, fieldSelector spec.nodeName), then
# registers the driver again. The driver must publish them again (its watch on its slices sees
# the deletions) and a new pod must then be allocated from them, prepared and get traffic. podB
# goes first (as a finished job would), freeing rxe_slot2 for the new pod podC; podC is torn down
# here too, so dra_down finds what it expects.
dra_kubelet_restart_republishes() {
  local server left t0 t1 n pd prep alloc c_ip
  local puid=33333333-cccc-4ccc-8ccc-000000000003 cuid=c3c3c3c3-0000-4000-8000-00000000000c
  # podB's end: CNI DEL, unprepare, its pause process gone.
  cni podB DEL
  rdmak8s-fake-dra-kubelet --socket "$REG_SOCK" unprepare --claim "default/nic-podb/c2b2b2b2-0000-4000-8000-00000000000b" > /dev/null 2>&1
  pod_delete podB
  server=$(jq -r '.clusters[0].cluster.server' "$DRA_DIR/tls/kubeconfig")
  # What the DeleteCollection answered is what it deleted: the driver may have published
  # again by the time anyone lists.
  t0=$(now_ms)
  left=$(curl -sS -X DELETE --cacert "$DRA_DIR/tls/ca.crt" -H "Authorization: Bearer $(cat "$DRA_DIR/tls/token")" \
    "$server/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D$NODE" |
    jq --arg drv "$DRIVER" '[.items[] | select(.spec.driver == $drv)] | length')
  if [ "${left:-0}" -ge 1 ]; then
    result kubelet-restart-deletes-slices PASS "kubelet's start-up DeleteCollection deleted $left slice(s) of $DRIVER"
  else
    result kubelet-restart-deletes-slices FAIL "kubelet's start-up DeleteCollection deleted no slice of $DRIVER ('$left')"
  fi
  # Back through the driver's watch alone (kubelet registers it again at the prepare below).
  n=0
  while [ -z "$(slice_device_of rxe_slot2)" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
  pd=$(slice_device_of rxe_slot2)
  if [ -z "$pd" ]; then
    result slices-republished FAIL "no ResourceSlice device for rxe_slot2 within 30 s after kubelet deleted the slices"
    show "$DRA_LOG" 20
    return 1
  fi
  t1=$(now_ms)
  figure dra-slices-republished $((t1 - t0)) ms
  result slices-republished PASS "after kubelet's restart the driver published $pd again"
  claim_write nic-podc "$cuid" podC "$puid" ${pd% *} ${pd#* }
  prep=$(claim_prepare "nic-podc" "$cuid")
  if ! echo "$prep" | jq -e --arg u "$cuid" '.claims[$u].error == "" and (.claims[$u].devices | length) == 1' >/dev/null 2>&1; then
    result podC-prepare FAIL "NodePrepareResources of default/nic-podc after the kubelet restart: $prep"
    show "$DRA_LOG" 30
    return 1
  fi
  result podC-prepare PASS "a claim allocated from the republished slice prepares"
  echo "$puid" > /run/e2e/podC.uid
  if ! alloc=$(cdi_as_allocation "$cuid" 2>&1) || ! err=$(pod_create podC slot2 "$alloc" 2>&1); then
    result podC-create FAIL "pod from the CDI spec of claim $cuid: $alloc $err"
    return 1
  fi
  dra_pod_conflist podC "$puid"
  pod_network_up podC podC-cni-add-by-pod-uid || return 1
  c_ip=$(pod_ip podC)
  battery_raw_verbs dra-after-kubelet-restart podA rxe_slot1 "$A_IP" podC rxe_slot2 "$c_ip"
  # podC's end, as kubelet does it.
  cni podC DEL
  if rdmak8s-fake-dra-kubelet --socket "$REG_SOCK" unprepare --claim "default/nic-podc/$cuid" > /dev/null 2>&1; then
    result podC-unprepare PASS "claim of the pod made after the kubelet restart unprepared"
  else
    result podC-unprepare FAIL "unprepare of default/nic-podc failed"
  fi
  pod_delete podC
}
