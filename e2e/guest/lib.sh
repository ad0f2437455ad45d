# Helpers for the e2e scenarios, sourced by /init (busybox ash) and by the debug shell (ENV).
#
# Vocabulary:
#   fabric  the bridge fab0 standing in for the switch between the node's NICs.
#   slot    a VF-like port: a pod-sandbox network namespace created up front (as a runtime creates
#           it before CNI ADD) holding netdev net1, a veth whose peer sits on the fabric, with a soft
#           RDMA device created on it INSIDE the namespace. A soft device dies when its netdev
#           changes namespace, so it has to be born where it will stay; real VFs don't have this
#           limit and none of this leaks into the product.
#   pod     a slot's network namespace, optionally plus a mount namespace whose /dev/infiniband
#           holds only the nodes the device plugin allocated (see pod_create), and an environment.
#
# Results: one line per check, `E2E-RESULT <scenario> <check> PASS|FAIL <detail>`, and figures,
# `E2E-FIGURE <scenario> <name> <value> <unit>` (informative, never asserted). The runner parses
# both from the console.

IP=/bin/ip          # iproute2: busybox's own ip applet has no netns support
RDMA=/usr/bin/rdma
FABRIC=fab0
E2E_SCENARIO=${E2E_SCENARIO:-shell}
E2E_TIMEOUT=${E2E_TIMEOUT:-120}   # seconds any one traffic command may take (TCG is slow)
E2E_FAILED=${E2E_FAILED:-0}
E2E_VERBOSE=${E2E_VERBOSE:-0}     # 1: show tool outputs of passing checks too

# The helpers, one file per job (in the guest /e2e/lib; the host tests set E2E_LIB_DIR to
# e2e/guest/lib). Functions only resolve when called, so the order matters only for variables.
E2E_LIB_DIR=${E2E_LIB_DIR:-/e2e/lib}
for _e2e_lib in report slots pods traffic verify batteries agents cni stack; do
  . "$E2E_LIB_DIR/$_e2e_lib.sh" || echo "e2e lib.sh: cannot source $E2E_LIB_DIR/$_e2e_lib.sh" >&2
done
unset _e2e_lib
