# e2e-netns-mode: exclusive
# e2e-needs: rdmak8s-dra-driver rdmak8s-fake-api-server rdmak8s-fake-dra-kubelet cni-driver rdmak8s
# e2e-timeout: 900
# e2e-default: no
# make demo-dra: the dra-rxe-exclusive flow, narrated (with each claim's status, what the pod got) (make demo's narration, the DRA way). Every
# narration line starts with "DEMO| "; the checks are the suite's own, so a demo whose traffic
# did not happen fails like the suite does.
. /e2e/dra.sh

say() { echo "DEMO| $*"; }
step() { echo "DEMO|"; echo "DEMO| == $*"; }
sayin() { sed 's/^/DEMO|     /'; }

step "1. The node"
say "Two pod sandboxes (network namespaces slot1 and slot2), each with a NIC net1 cabled to the bridge"
say "fab0 (the switch), and a Soft-RoCE (rxe) RDMA device on it: rxe_slot1, rxe_slot2, standing in for"
say "two SR-IOV VFs. RDMA netns mode is exclusive: a device lives in one network namespace at a time."
say "A (fake) API server serves resource.k8s.io over HTTPS with a token; rdmak8s-dra-driver runs as"
say "kubelet's DRA plugin. (Every step is a check of the e2e suite; a few minutes under TCG.)"

if dra_up; then
  step "2. What the driver published (ResourceSlices, read back from the API server)"
  api_get /apis/resource.k8s.io/v1/resourceslices | jq -r --arg drv "$DRIVER" '
    .items[] | select(.spec.driver == $drv) |
    "slice \(.metadata.name): node \(.spec.nodeName), pool \(.spec.pool.name)",
    (.spec.devices[] | "  device \(.name): " +
      ([.attributes | to_entries[] | "\(.key)=\(.value | to_entries[0].value)"] | join(" ")))' | sayin

  step "3. The claims (allocated as a scheduler would: one device each, reserved for one pod)"
  for f in "$DRA_DIR"/claims/*.json; do
    jq -r '"\(.metadata.namespace)/\(.metadata.name) (uid \(.metadata.uid)): " +
      ([.status.allocation.devices.results[] | "\(.request) -> \(.pool)/\(.device)"] | join(", ")) +
      "; reserved for pod \(.status.reservedFor[0].name) (uid \(.status.reservedFor[0].uid))"' "$f" | sayin
  done

  step "4. NodePrepareResources: the CDI spec each claim got (what the runtime adds to the container)"
  for s in $DRA_PODS; do
    IFS=: read -r pod slot puid cuid _ <<EOF_POD
$s
EOF_POD
    say "$pod: $CDI_DIR/$DRIVER-claim_$cuid.json"
    jq -r '.devices[] | "  CDI device \(.name):",
      (.containerEdits.deviceNodes[]? | "    node \(.path)"),
      (.containerEdits.env[]? | "    env  \(.)")' "$CDI_DIR/$DRIVER-claim_$cuid.json" | sayin
    say "  the pod's /dev/infiniband: $(pod_run "$pod" ls /dev/infiniband | tr '\n' ' ')"
  done
  say "(rdma_cm sits in the spec's own containerEdits, shared by its devices; NCCL_IB_HCA's leading"
  say " '=' is NCCL's syntax for an exact device name, not a typo)"

  step "5. CNI ADD with no deviceID: the device comes from the pod's claim (K8S_POD_UID)"
  for s in "podA rxe_slot1" "podB rxe_slot2"; do
    set -- $s
    say "$1: $(jq -c '{ips: [.ips[].address]}' "$POD_DIR/$1/cni.ADD"); the pod sees RDMA device(s): $(pod_run "$1" ls /sys/class/infiniband | tr '\n' ' ')"
    say "  the node's root namespace no longer lists $2: $(ls /sys/class/infiniband | grep -x "$2" || echo 'right, it is gone')"
  done

  step "6. RDMA traffic between the pods (raw verbs, RoCE v2 GIDs of the pods' addresses)"
  battery_raw_verbs demo podA rxe_slot1 "$A_IP" podB rxe_slot2 "$B_IP"
  for c in demo-ibv_rc_pingpong demo-ib_write_bw demo-ib_send_lat; do
    tail -n 3 "/tmp/$c.client" 2>/dev/null | sayin
  done
  DRA_UP=1

  # The claim as kubectl -o yaml prints it (jq has no YAML output): block style, strings quoted
  # where YAML would read them otherwise.
  CLAIM_AS_YAML='
    def yml($i):
      if type == "object" then
        if length == 0 then "{}" else
          to_entries | map(($i + .key + ":") +
            (if (.value | type) == "object" and (.value | length) > 0 then "\n" + (.value | yml($i + "  "))
             elif (.value | type) == "array" and (.value | length) > 0 then "\n" + (.value | yml($i))
             else " " + (.value | yml("")) end)) | join("\n")
        end
      elif type == "array" then
        if length == 0 then "[]" else
          map(if type == "object" and length > 0 then $i + "- " + (yml($i + "  ") | ltrimstr($i + "  "))
              else $i + "- " + yml("") end) | join("\n")
        end
      elif type == "string" then
        if test("^[A-Za-z][A-Za-z0-9_./ ()-]*$") and (test("^(true|false|null|yes|no|on|off)$"; "i") | not)
        then . else tojson end
      else tojson end;
    {apiVersion, kind, metadata: {name: .metadata.name, namespace: .metadata.namespace},
     status: {devices: .status.devices}} | yml("")'
  step "7. What each pod got, as the claim's status says it (kubectl get resourceclaim -o yaml)"
  say "The driver writes one status.devices entry per device of its claims: conditions, the RDMA facts,"
  say "and, from the CNI's ADD, the pod's address and the GID index RDMA applications must use."
  dra_claim_status
  for s in $DRA_PODS; do
    IFS=: read -r pod slot puid cuid req <<EOF_POD
$s
EOF_POD
    say "$pod: kubectl get resourceclaim -n default $(claim_name "$pod") -o yaml (its status)"
    api_get "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/$(claim_name "$pod")" |
      jq -r "$CLAIM_AS_YAML" | sayin
  done
fi

step "8. Teardown as kubelet does it: CNI DEL, NodeUnprepareResources; uninstall removes the slices"
dra_down
say "done: see the checks above (E2E-RESULT lines in the console log)"
