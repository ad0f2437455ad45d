#!/usr/bin/env bash
# make demo-inspect: what rdmak8s discovers, on this host and on every bundled example
# tree, and how InfiniBand, RoCE and iWARP differ in what a pod needs (make demo runs real pods
# in the e2e VM). Usage: scripts/demo.sh <build dir>
set -euo pipefail
BUILD=${1:-build/default}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
INSPECT="$BUILD/inspect/rdmak8s-inspect"
FIXTURES="$ROOT/tests/fixtures/sysfs"
if [[ ! -x "$INSPECT" ]]; then
  echo "demo: $INSPECT not built (run: make build)" >&2
  exit 1
fi

bold() { if [[ -t 1 ]]; then printf '\033[1m%s\033[0m\n' "$*"; else printf '%s\n' "$*"; fi; }
say() { fold -s -w 100 <<<"$*"; echo; }

bold "== rdmak8s-inspect on this host (/sys)"
"$INSPECT"
echo

say "rdmak8s discovers every RDMA device from sysfs alone (libibverbs only adds detail), and \
classifies it by what a pod will need. The trees below are mini /sys copies shaped exactly like \
the kernel's, one per kind of hardware; rdmak8s-inspect --sysfs-root reads them like a real host."

show() {
  local case=$1; shift
  bold "== $case"
  say "$*"
  "$INSPECT" --sysfs-root "$FIXTURES/$case"
  echo
}

show mlx5_ib_2port "InfiniBand (transport ib): the link layer is InfiniBand. Addresses are LIDs \
handed out by a subnet manager; partitions are PKeys. A pod needs /dev/infiniband/uverbsN and \
rdma_cm, plus umadN (and issmN only for an SM agent) for MAD tools; IPoIB netdevs (ib0, PKey \
children like ib0.8001) carry the IP side."

show mlx5_roce_sriov "RoCE (transport roce): a CA on Ethernet. Each IP address of a netdev becomes \
a GID (RoCE v1 and v2 entries), so the pod's GID index depends on its own IP and netdev — here \
the PF, its VLAN and a macvlan each own GIDs. SR-IOV VFs (VF 0/1 of the PF) and a scalable \
function (auxiliary mlx5_core.sf.2) are separate RDMA devices that can each go to one pod with \
their netdev. RoCE wants lossless Ethernet (PFC/ECN, DSCP trust) on the node."

show bnxt_re_roce "RoCE on Broadcom: same model, different driver (the PCI function's driver \
bnxt_en is what selectors see)."

show rxe_veth "Soft-RoCE (rxe): no bus device; the RDMA device sits on a netdev (its 'parent'), \
with RoCE v2 GIDs only. Moving that netdev to another namespace destroys the device, so it is \
created where it will stay."

show irdma_iwarp "iWARP (transport iwarp): node type RNIC, RDMA over TCP. No subnet manager, no \
PFC needed, no MADs: no umad/issm to hand to a pod — uverbs and rdma_cm only, and connections go \
through rdma_cm. Locality: the PCIe path from the root port through the switch, NUMA node 1."

show cxgb4_iwarp "Chelsio iWARP: one RDMA device with two ports on one PCI function; dev_port maps \
each netdev to its port."

show siw_veth "Soft-iWARP (siw): also an RNIC. Its GID shows type 'IB/RoCE v1' in sysfs, so \
rdmak8s classifies by node type, never by GID type."

show efa_unknown "Something else (an EFA-like device, node type 7 'unspecified'): reported as \
transport unknown, never silently dropped."

show no_rdma "A host with no RDMA at all: said plainly, exit 0."

bold "== the same as JSON (what tools consume): rxe_veth"
"$INSPECT" --json --sysfs-root "$FIXTURES/rxe_veth"
