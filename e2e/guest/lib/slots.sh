# Node hardware emulation: the fabric, slots (VF-like netdevs with soft RDMA), GID indexes.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

# Node hardware emulation.

fabric_up() {
  $IP link show $FABRIC >/dev/null 2>&1 && return 0
  $IP link add $FABRIC type bridge || return 1
  $IP link set $FABRIC up
}

# slot_add SLOT KIND [ADDR/PREFIX]: netns SLOT with net1 on the fabric and soft device KIND_SLOT
# (KIND rxe or siw) created on net1 inside the namespace. Without ADDR, net1 gets its address later
# (from IPAM through CNI ADD).
slot_add() {
  local slot=$1 kind=$2 addr=$3 err
  fabric_up || return 1
  $IP netns add "$slot" || return 1
  $IP link add "${slot}h" type veth peer name net1 netns "$slot" || return 1
  $IP link set "${slot}h" master $FABRIC up || return 1
  $IP -n "$slot" link set lo up
  $IP -n "$slot" link set net1 up || return 1
  if [ -n "$addr" ]; then $IP -n "$slot" addr add "$addr" dev net1 || return 1; fi
  # `rdma link add ... netdev X` looks X up in the caller's namespace.
  if ! err=$($IP netns exec "$slot" $RDMA link add "${kind}_$slot" type "$kind" netdev net1 2>&1); then
    echo "rdma link add ${kind}_$slot type $kind netdev net1 (in netns $slot): $err" >&2
    return 1
  fi
}

# slots_up KIND NOTE SLOT...: slot_add SLOT KIND for each SLOT, each the check slot-SLOT (NOTE
# said after the device on success); stops at the first that fails.
slots_up() {
  local kind=$1 note=$2 s err
  shift 2
  for s in "$@"; do
    if err=$(slot_add "$s" "$kind" 2>&1); then
      result "slot-$s" PASS "netns $s, net1 on $FABRIC, ${kind}_$s${note:+ ($note)}"
    else
      result "slot-$s" FAIL "$err"
      return 1
    fi
  done
}

slot_dev() { ls /sys/class/infiniband 2>/dev/null | grep "_$1\$" | head -n 1; }

# Index of the RoCE v2 GID that carries IPv4 address IP4 on port 1 of DEV, computed from gids/* and
# gid_attrs/types/* (never assumed: mlx5 uses 3, rxe 1). One grep per table: forking per slot
# (rxe has 1024) costs a minute under TCG.
gid_index() {  # gid_index DEV IP4
  _gid_index_here "$@"
}
# The same, read from inside a pod (in exclusive mode only the pod's sysfs shows its device).
pod_gid_index() {  # pod_gid_index POD DEV IP4
  pod_run "$1" sh -c ". /e2e/lib.sh; _gid_index_here $2 $3"
}
_gid_index_here() {
  local d=/sys/class/infiniband/$1/ports/1 want
  want=$(echo "$2" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4}')
  { grep -H . "$d"/gid_attrs/types/* 2>/dev/null | sed 's|.*/types/\([0-9]*\):|T \1 |'
    grep -H "^$want\$" "$d"/gids/* 2>/dev/null | sed 's|.*/gids/\([0-9]*\):|G \1 |'
  } | awk '$1 == "T" && $3 == "RoCE" && $4 == "v2" { v2[$2] = 1 }
           $1 == "G" { g[$2] = 1 }
           END { best = -1; for (i in g) if (i in v2 && (best < 0 || i + 0 < best)) best = i + 0;
                 if (best >= 0) print best; else exit 1 }'
}
