# e2e-netns-mode: exclusive
# e2e-needs: rdmak8s
# e2e-default: no
# e2e-timeout: 900
# Benchmark (issue 11 item 7): our CNI binary exec'ed as a runtime does, ADD then DEL, 270 pairs,
# on one rxe in RDMA netns mode exclusive, with one prevResult (the pod interface and its IPv4).
# Every ADD resolves the device, checks its port, moves it into the pod, waits for the pod's GIDs,
# writes the RoCE ToS and saves its record (fsync'd); every DEL moves it home and removes the
# record. The figures are printed, never asserted; what is asserted is that every command
# succeeded and the node is as it was after the last DEL. Run: make bench-e2e.
PAIRS=${E2E_CNI_PAIRS:-270}
A_IP=198.18.0.1
if need_binaries rdmak8s && err=$(slot_add slot1 rxe "$A_IP/24" 2>&1); then
  result slot PASS "netns slot1, net1 $A_IP, rxe_slot1 (in the root namespace)"
  mkdir -p /etc/cni/rdmak8s /tmp/cni-bench
  [ -f /etc/cni/rdmak8s/node.json ] || echo '{"logFile": "/tmp/rdmak8s-cni.log"}' > /etc/cni/rdmak8s/node.json
  jq -n --arg ip "$A_IP/24" '{
    cniVersion: "1.0.0", name: "bench", type: "rdmak8s", deviceID: "rxe_slot1",
    netnsMode: "exclusive", qos: {roceTos: 106},
    prevResult: {cniVersion: "1.0.0",
                 interfaces: [{name: "net1", sandbox: "/run/netns/slot1"}],
                 ips: [{address: $ip, interface: 0}]}}' > /tmp/cni-bench/netconf.json
  if out=$(CNI_CONTAINERID=bench-1 CNI_NETNS=/run/netns/slot1 CNI_IFNAME=net1 CNI_PATH=$CNI_BIN \
           /e2e/bin/cni_exec_loop "$CNI_BIN/rdmak8s" "$PAIRS" /tmp/cni-bench/netconf.json 2>&1); then
    result pairs PASS "$PAIRS ADD/DEL pairs, every one exited 0"
    echo "$out" | while read -r name value unit; do figure "cni-$name" "$value" "$unit"; done
    # What exec'ing any program costs here (TCG): the floor under every figure above. Twice:
    # coreutils' true (dynamic) and busybox's (static, as our binary is).
    ln -sf /usr/bin/busybox /tmp/cni-bench/true
    for t in /bin/true:exec-true /tmp/cni-bench/true:exec-static-true; do
      /e2e/bin/cni_exec_loop "${t%%:*}" "$PAIRS" /tmp/cni-bench/netconf.json 2>&1 |
        grep -E '^(add-median|add\+del-median|add-cpu-mean|peak-rss) ' |
        while read -r name value unit; do figure "${t#*:}-$name" "$value" "$unit"; done
    done
    # Syscalls of one ADD and one DEL (strace -f -c -w: calls, and where the wall time went).
    for cmd in ADD DEL; do
      CNI_COMMAND=$cmd CNI_CONTAINERID=bench-1 CNI_NETNS=/run/netns/slot1 CNI_IFNAME=net1 CNI_PATH=$CNI_BIN \
        strace -f -c -w -o /tmp/cni-bench/strace.$cmd "$CNI_BIN/rdmak8s" < /tmp/cni-bench/netconf.json > /dev/null 2>&1
      # Rows: % time, seconds, usecs/call, calls, [errors], syscall.
      rows=$(awk '$1 ~ /^[0-9.]+$/ && $NF != "total" {print $2, $4, $NF}' /tmp/cni-bench/strace.$cmd)
      figure "cni-syscalls-per-$cmd" "$(echo "$rows" | awk '{n += $2} END {print n + 0}')" calls
      figure "cni-syscall-time-top-$cmd" "$(echo "$rows" | sort -rn | head -n 5 |
        awk '{printf "%s%s=%.1fms/%d", sep, $3, $1 * 1000, $2; sep=","}')" wall
    done
  else
    result pairs FAIL "$out"
    show /tmp/rdmak8s-cni.log
  fi
  if [ -d /sys/class/infiniband/rxe_slot1 ]; then
    result device-home PASS "rxe_slot1 back in the root namespace after the last DEL"
  else
    result device-home FAIL "rxe_slot1 not in the root namespace after the last DEL"
  fi
  if left=$(cni_state_left); then
    result no-state-left PASS "no attachment record or saved knob left"
  else
    result no-state-left FAIL "left: $left"
  fi
else
  result slot FAIL "${err:-the image lacks rdmak8s}"
fi
