# e2e-netns-mode: shared
# e2e-timeout: 300
# e2e-needs: rdmak8s-inspect
# rdmak8s-inspect check on a real kernel: Soft-RoCE (rxe) on a slot's veth, then each knob the VM
# can break, and the check must name it (docs/node-check.md):
#   - ToS vs DSCP map: roceTos 106 (DSCP 26) mapped to priority 3 while qos.pfc says 4;
#   - PFC off: the policy wants PFC on priority 3, and a veth has no DCB at all;
#   - RDMA netns mode: an exclusive pool on this shared-mode node;
#   - a usage error (an invalid qos block) exits 2.
# The check runs inside the slot's netns (`ip netns exec` also gives it that netns's /sys), where
# the rxe device's netdev net1 lives.
need_binaries rdmak8s-inspect || return 0
A_IP=198.18.0.1
if err=$(slot_add slot1 rxe "$A_IP/24" 2>&1); then
  result slot-slot1 PASS "netns slot1, net1 $A_IP, rxe_slot1"
else
  result slot-slot1 FAIL "$err"
  return 0
fi
DEV=rxe_slot1
OUT=/run/e2e/node-check
mkdir -p "$OUT"

# node_check NAME ARGS...: runs the check (JSON) in slot1, keeps stdout in $OUT/NAME.json and the
# exit code in $OUT/NAME.rc.
node_check() {
  local name=$1
  shift
  $IP netns exec slot1 rdmak8s-inspect check --json --no-verbs --runtime none "$@" \
    > "$OUT/$name.json" 2> "$OUT/$name.err"
  echo $? > "$OUT/$name.rc"
}
# item NAME SUBJECT CHECK FIELD: one field of one check line ("" when there is no such line).
item() {
  jq -r --arg s "$2" --arg c "$3" --arg f "$4" \
    '[.checks[] | select(.subject == $s and .check == $c) | .[$f]][0] // ""' "$OUT/$1.json" 2>/dev/null
}
# expect NAME SUBJECT CHECK RESULT [FIX-WORDS]: the line has RESULT and its fix mentions FIX-WORDS.
expect() {
  local name=$1 subject=$2 check=$3 want=$4 words=$5 got fix
  got=$(item "$name" "$subject" "$check" result)
  fix=$(item "$name" "$subject" "$check" fix)
  if [ "$got" = "$want" ] && { [ -z "$words" ] || printf '%s' "$fix" | grep -qF -- "$words"; }; then
    result "$name:$check" PASS "$subject: $got${fix:+ (fix: $fix)}"
  else
    result "$name:$check" FAIL "$subject: want $want${words:+ with fix \"$words\"}, got \"$got\" (fix: $fix)"
    show "$OUT/$name.json" 40
    show "$OUT/$name.err"
  fi
}
expect_rc() {  # expect_rc NAME RC
  local rc
  rc=$(cat "$OUT/$1.rc")
  if [ "$rc" = "$2" ]; then result "$1:exit" PASS "exit $rc"; else result "$1:exit" FAIL "exit $rc, want $2"; show "$OUT/$1.err"; fi
}

# 1. No policy: the device itself is fine; the knobs are shown, not judged.
node_check baseline
expect baseline "$DEV port 1" "port state" pass
expect baseline "$DEV port 1" "roce v2 gids" pass
expect baseline "$DEV" "char devices" pass
expect baseline "$DEV on net1" pfc skip
expect baseline node "rdma netns mode" skip

# 2. ToS vs DSCP map: the ToS lands on a priority qos.pfc does not make lossless.
node_check tos-map --qos '{"roceTos":106,"dscpToPriority":{"26":3},"pfc":[4]}'
expect tos-map "$DEV on net1" "tos vs pfc" fail "map DSCP 26 to one of 4"
expect_rc tos-map 1

# 3. PFC off: a veth has no DCB, so PFC cannot be on where RoCE needs it.
node_check pfc-off --qos '{"trust":"dscp","roceTos":106,"dscpToPriority":{"26":3},"pfc":[3]}'
expect pfc-off "$DEV on net1" pfc fail "net1 has no DCB"
expect_rc pfc-off 1

# 4. RDMA netns mode: an exclusive pool needs exclusive mode; this node is shared.
printf '%s\n' '{"pools":[{"name":"slot1","mode":"exclusive","selectors":{"rdmaDevices":["rxe_slot1"]}}]}' \
  > "$OUT/config.json"
node_check netns --config "$OUT/config.json"
expect netns node "rdma netns mode" fail "rdma system set netns exclusive"
expect_rc netns 1

# 5. Usage: an invalid qos block is refused by the CNI's own parser, exit 2.
node_check usage --qos '{"pfc":[9]}'
expect_rc usage 2
if grep -qF '$.qos.pfc[0]: 9 is not a priority 0..7' "$OUT/usage.err"; then
  result usage:message PASS "$(cat "$OUT/usage.err")"
else
  result usage:message FAIL "stderr: $(cat "$OUT/usage.err")"
fi
