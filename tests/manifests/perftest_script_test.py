#!/usr/bin/env python3
"""The perftest example's run.sh (from the rendered ConfigMap) against a kernel-shaped sysfs tree.

  perftest_script_test.py PerftestScriptTest.test_name

ib_write_bw, ip and getent are stand-ins on PATH that log their arguments; the sysfs tree has two
RoCE HCAs whose GID tables hold, as the kernel's do, link-local and IPv4-mapped entries of both
RoCE types for the node's address and for the pod's net1 address.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from common import one, render

POD_ADDR = "192.168.100.2"
NODE_ADDR = "10.0.0.5"
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def mapped(addr):
    a, b, c, d = (int(x) for x in addr.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"


# (gid, type) per index, as /sys/class/infiniband/<dev>/ports/1/{gids,gid_attrs/types}/<n>.
GID_TABLE = [
    ("fe80:0000:0000:0000:0a00:27ff:fe00:0001", "IB/RoCE v1"),
    ("fe80:0000:0000:0000:0a00:27ff:fe00:0001", "RoCE v2"),
    (mapped(NODE_ADDR), "IB/RoCE v1"),
    (mapped(NODE_ADDR), "RoCE v2"),
    (mapped(POD_ADDR), "IB/RoCE v1"),
    (mapped(POD_ADDR), "RoCE v2"),
    (ZERO_GID, ""),
]

STUB_IP = f"""#!/bin/sh
# ip -4 -o addr show dev net1
echo "3: net1    inet {POD_ADDR}/24 brd 192.168.100.255 scope global net1\\\\       valid_lft forever preferred_lft forever"
"""
STUB_GETENT = """#!/bin/sh
echo "10.244.1.7      $2.default.svc.cluster.local"
"""
# Fails the first $FAIL_FIRST calls (the server not listening yet), then succeeds.
STUB_IB_WRITE_BW = """#!/bin/sh
echo "$*" >> "$STUB_LOG"
n=$(wc -l < "$STUB_LOG")
[ "$n" -gt "${FAIL_FIRST:-0}" ] || { echo " Couldn't connect to $1" >&2; exit 1; }
echo " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
"""


class PerftestScriptTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rdmak8s-perftest-")
        cm = one(render("examples/perftest"), "ConfigMap", "perftest-scripts")
        self.script = os.path.join(self.dir, "run.sh")
        with open(self.script, "w") as f:
            f.write(cm["data"]["run.sh"])
        self.bin = os.path.join(self.dir, "bin")
        os.makedirs(self.bin)
        for name, text in (("ip", STUB_IP), ("getent", STUB_GETENT),
                           ("ib_write_bw", STUB_IB_WRITE_BW)):
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        self.log = os.path.join(self.dir, "ib_write_bw.log")
        self.sys = os.path.join(self.dir, "sys")
        self.add_hca("mlx5_0", "0000:3b:00.0")
        self.add_hca("mlx5_1", "0000:3b:00.1")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def add_hca(self, dev, pci):
        # devices/pci0000:3a/<pci>/infiniband/<dev>, with class/infiniband/<dev> and
        # bus/pci/devices/<pci> as relative symlinks, as the kernel lays them out.
        real = os.path.join(self.sys, "devices", "pci0000:3a", pci)
        port = os.path.join(real, "infiniband", dev, "ports", "1")
        os.makedirs(os.path.join(port, "gids"))
        os.makedirs(os.path.join(port, "gid_attrs", "types"))
        for n, (gid, gtype) in enumerate(GID_TABLE):
            with open(os.path.join(port, "gids", str(n)), "w") as f:
                f.write(gid + "\n")
            with open(os.path.join(port, "gid_attrs", "types", str(n)), "w") as f:
                f.write(gtype + "\n")
        for link_dir, name, target in (
                ("class/infiniband", dev, f"../../devices/pci0000:3a/{pci}/infiniband/{dev}"),
                ("bus/pci/devices", pci, f"../../../devices/pci0000:3a/{pci}")):
            os.makedirs(os.path.join(self.sys, link_dir), exist_ok=True)
            os.symlink(target, os.path.join(self.sys, link_dir, name))

    def run_role(self, role, **env):
        full = {"PATH": self.bin + ":/usr/bin:/bin", "SYSFS_ROOT": self.sys,
                "STUB_LOG": self.log, **env}
        r = subprocess.run(["sh", self.script, role], env=full, capture_output=True, text=True,
                           timeout=120)
        calls = []
        if os.path.exists(self.log):
            with open(self.log) as f:
                calls = [line.split() for line in f.read().splitlines()]
        return r, calls

    def test_server_uses_the_allocated_device_and_the_rocev2_gid_of_net1(self):
        r, calls = self.run_role("server", RDMAK8S_ROCE_SHARED_DEVICES="mlx5_1,mlx5_0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(calls, [["-d", "mlx5_1", "-F", "--report_gbits", "-s", "65536",
                                  "-n", "5000", "-x", "5"]])
        self.assertIn(f"device=mlx5_1 net1={POD_ADDR} gid_index=5", r.stdout)

    def test_a_pci_address_in_the_allocation_maps_to_its_rdma_device(self):
        r, calls = self.run_role("server", RDMAK8S_ROCE_SHARED_DEVICES="0000:3b:00.1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(calls[0][:2], ["-d", "mlx5_1"])

    def test_gid_index_can_be_forced(self):
        r, calls = self.run_role("server", RDMAK8S_ROCE_SHARED_DEVICES="mlx5_0", GID_INDEX="3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(calls[0][-2:], ["-x", "3"])

    def test_without_a_matching_gid_perftest_chooses(self):
        # net1's address has no GID (e.g. still being added): no -x, perftest picks.
        for dev in ("mlx5_0", "mlx5_1"):
            types = os.path.join(self.sys, "class", "infiniband", dev, "ports", "1",
                                 "gid_attrs", "types", "5")
            with open(types, "w") as f:
                f.write("IB/RoCE v1\n")
        r, calls = self.run_role("server")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("-x", calls[0])
        self.assertIn("gid_index=auto", r.stdout)

    def test_client_retries_until_the_server_accepts(self):
        r, calls = self.run_role("client", RDMAK8S_ROCE_SHARED_DEVICES="mlx5_0", FAIL_FIRST="2",
                                 PERFTEST_SERVER="perftest-server")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(calls), 3)
        for c in calls:
            self.assertEqual(c[-1], "perftest-server")
            self.assertEqual(c[:2], ["-d", "mlx5_0"])
            self.assertIn("-x", c)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:], verbosity=2)
