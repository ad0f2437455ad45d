# e2e-netns-mode: shared
# e2e-needs: rdmak8s-device-plugin rdmak8s-fake-kubelet cni-driver rdmak8s
# e2e-timeout: 900
# make demo: the pods-rxe-shared flow, narrated. Every narration line starts with "DEMO| " (the
# runner's --demo mode shows only those, and any FAIL); the checks are the suite's own
# (E2E-RESULT), so a demo whose traffic did not happen fails like the suite does.

say() { echo "DEMO| $*"; }
step() { echo "DEMO|"; echo "DEMO| == $*"; }
# Indented narration of a command's output or a file.
sayin() { sed 's/^/DEMO|     /'; }

# The non-zero GIDs of port 1 of DEV as the pod sees them: index, GID, type, netdev.
demo_gids() {  # demo_gids POD DEV
  pod_run "$1" sh -c '
    d=/sys/class/infiniband/$1/ports/1
    grep -H . $d/gids/* 2>/dev/null | grep -v ":0000:0000:0000:0000:0000:0000:0000:0000$" |
    while IFS=: read -r f gid; do
      i=${f##*/}
      printf "index %-3s %s  %-10s on %s\n" "$i" "$gid" "$(cat $d/gid_attrs/types/$i 2>/dev/null)" \
        "$(cat $d/gid_attrs/ndevs/$i 2>/dev/null)"
    done' sh "$2"
}

step "1. The node"
say "Two pod sandboxes (network namespaces slot1 and slot2), each with a NIC net1 cabled to the bridge"
say "fab0 (the switch), and a Soft-RoCE (rxe) RDMA device on it: rxe_slot1, rxe_slot2. They stand in"
say "for two SR-IOV VFs of a RoCE NIC. Then: the device plugin, a kubelet, two pods, CNI ADD..."
say "(every step is a check of the e2e suite; this takes a minute or two under TCG)"

if stack_up rxe shared; then
  step "2. What the device plugin advertised (ListAndWatch, as the kubelet received it)"
  for r in rdma/slot1 rdma/slot2; do
    # A shared pool advertises many IDs that all stand for the same device (one per pod that
    # may share it): summarised, not listed.
    kubelet_updates "$r" | tail -n 1 | jq -r '"\(.resource): \(.devices | length) device IDs (" +
        (if (.devices | length) > 3 then "\(.devices[0].id), \(.devices[1].id) ... \(.devices[-1].id)"
         else ([.devices[].id] | join(", ")) end) +
        "), \([.devices[] | select(.health == "Healthy")] | length) Healthy"' | sayin
  done
  say "Shared pools: every ID of rdma/slot1 stands for rxe_slot1, so that many pods may share it."
  say "The device plugin's config (/etc/rdmak8s/device-plugin.json):"
  jq -c . /etc/rdmak8s/device-plugin.json | sayin

  step "3. What each pod got from Allocate (the kubelet asked for rdma/slot1:1 and rdma/slot2:1)"
  for s in "podA slot1" "podB slot2"; do
    set -- $s
    say "$1 (rdma/$2):"
    jq -r '(.devices // [])[] | "device node \(.host_path) -> \(.container_path) (\(.permissions))"' \
      "$POD_DIR/$1/allocate.json" | sayin
    jq -r '(.envs // {}) | to_entries[] | "env \(.key)=\(.value)"' "$POD_DIR/$1/allocate.json" | sayin
    jq -r '(.mounts // [])[] | "mount \(.host_path) -> \(.container_path)"' "$POD_DIR/$1/allocate.json" | sayin
    say "  inside $1, /dev/infiniband holds only: $(pod_run "$1" ls /dev/infiniband | tr '\n' ' ')"
  done

  step "4. The CNI chain (e2e-slot + host-local IPAM, then rdmak8s with qos {\"roceTos\": 106})"
  for pod in podA podB; do
    say "$pod: CNI ADD result (through libcni, as a runtime runs it); CHECK passed too:"
    jq -c '{interfaces: [.interfaces[] | {name, sandbox}], ips: [.ips[] | {address, interface}]}' \
      "$POD_DIR/$pod/cni.ADD" | sayin
  done

  step "5. The GIDs each pod sees, and its RoCE v2 GID index (computed, never assumed)"
  AG=$(pod_gid_index podA rxe_slot1 "$A_IP")
  BG=$(pod_gid_index podB rxe_slot2 "$B_IP")
  say "podA, rxe_slot1 ($A_IP):"
  demo_gids podA rxe_slot1 | sayin
  say "  -> podA's RoCE v2 GID index for $A_IP: ${AG:-none}"
  say "podB, rxe_slot2 ($B_IP):"
  demo_gids podB rxe_slot2 | sayin
  say "  -> podB's RoCE v2 GID index for $B_IP: ${BG:-none}"
  say "(the index is the RoCE v2 GID holding the pod's IPv4 address mapped into IPv6, ::ffff:a.b.c.d;"
  say " rxe has v2 GIDs only, mlx5 puts v1 and v2 side by side: the index is read, never assumed)"

  step "6. RDMA traffic between the pods (podA serves, podB connects to $A_IP)"
  if [ -z "$AG" ] || [ -z "$BG" ]; then
    result demo-gid-index FAIL "no RoCE v2 GID for $A_IP on rxe_slot1 ('$AG') or $B_IP on rxe_slot2 ('$BG')"
    say "no RoCE v2 GID index: no traffic possible"
  else
    result demo-gid-index PASS "RoCE v2 IPv4 GID index $AG on rxe_slot1, $BG on rxe_slot2"
    say "ibv_rc_pingpong (raw verbs, RC QP, GID index $AG/$BG, $ITERS_PP round trips)..."
    if traffic demo-ibv_rc_pingpong usec/iter tcp:18515 podA podB \
         "ibv_rc_pingpong -d rxe_slot1 -i 1 -g $AG -n $ITERS_PP" \
         "ibv_rc_pingpong -d rxe_slot2 -i 1 -g $BG -n $ITERS_PP $A_IP" \
         verify_pingpong $ITERS_PP; then
      say "  $VERDICT"
    else
      say "  FAILED: $VERDICT"
    fi
    say "ib_write_bw (RDMA WRITE, 64 KiB messages, $ITERS_BW iterations)..."
    if traffic demo-ib_write_bw MB/s tcp:18515 podA podB \
         "ib_write_bw -d rxe_slot1 -i 1 -x $AG -F -n $ITERS_BW" \
         "ib_write_bw -d rxe_slot2 -i 1 -x $BG -F -n $ITERS_BW $A_IP" \
         verify_perftest $ITERS_BW 4 MB/s; then
      say "  bandwidth: $VERDICT (average)"
    else
      say "  FAILED: $VERDICT"
    fi
    say "ib_send_lat (SEND, 2-byte messages, $ITERS_LAT iterations)..."
    if traffic demo-ib_send_lat usec tcp:18515 podA podB \
         "ib_send_lat -d rxe_slot1 -i 1 -x $AG -F -n $ITERS_LAT" \
         "ib_send_lat -d rxe_slot2 -i 1 -x $BG -F -n $ITERS_LAT $A_IP" \
         verify_perftest $ITERS_LAT 5 usec; then
      say "  latency: $VERDICT (typical)"
    else
      say "  FAILED: $VERDICT"
    fi
    say "rping (connection through rdma_cm: address and route resolved from $A_IP, $RPING_COUNT pings)..."
    if traffic demo-rping pings cm podA podB \
         "rping -s -a $A_IP -v -C $RPING_COUNT" \
         "rping -c -a $A_IP -v -C $RPING_COUNT" \
         verify_rping $RPING_COUNT; then
      say "  $VERDICT"
    else
      say "  FAILED: $VERDICT"
    fi
  fi
  say "(figures under TCG emulation: software RDMA on an emulated CPU, not a benchmark)"
else
  say "the pods could not be built: see the FAIL lines"
fi

step "7. Teardown: CNI DEL of both pods (twice: DEL is idempotent)"
before=$E2E_FAILED
stack_down rxe shared
if [ "$E2E_FAILED" = "$before" ]; then
  say "node clean: no attachment record, no saved knob, addresses released back to IPAM"
else
  say "teardown left trouble: see the FAIL lines"
fi
[ "$E2E_FAILED" = 0 ] && say "DEMO OK: two pods exchanged RDMA traffic through rdmak8s" ||
  say "DEMO FAILED: $E2E_FAILED check(s) failed"
