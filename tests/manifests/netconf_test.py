#!/usr/bin/env python3
"""Every rdmak8s entry of the manifests' NetworkAttachmentDefinitions through the real CNI binary.

  netconf_test.py --cni PATH NetconfTest.test_name

A runtime hands each plugin of a conflist its own object plus the list's name and cniVersion
(CNI SPEC.md, "Deriving execution configuration from plugin configuration"); this test builds
that object for the rdmak8s entry of every NAD and runs `rdmak8s` with CNI_COMMAND=STATUS, the
one command that parses the whole netconf without a container. cniVersion is raised to 1.1.0 for
the run (STATUS needs it; the NADs keep 1.0.0 for older Multus). The node configuration (host
paths are the node's, never a NAD's) points sysfsRoot at a fixture tree, so the answer does not
depend on this machine's hardware. Passing means the binary did not
reject the configuration: exit 0, or error 50 (plugin not available: no RDMA netlink on a build
machine, or a node in the other netns mode), never 1/2/6/7 (version, field, decoding, config).
Without --cni (no rdmak8s target on this branch yet) the tests exit 77 (skip).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

from common import SKIP, SOURCE_DIR, nad_configs, render

CNI = None
OVERLAYS = ["overlays/roce-shared", "overlays/exclusive-vf", "overlays/infiniband",
            "overlays/iwarp"]
FIXTURE = {"overlays/roce-shared": "mlx5_roce_sriov", "overlays/exclusive-vf": "mlx5_roce_sriov",
           "overlays/infiniband": "mlx5_ib_2port", "overlays/iwarp": "irdma_iwarp"}
ACCEPTED_CODES = {50}  # plugin not available here: the config itself was accepted


def run_status(conf, sysfs_root):
    with tempfile.TemporaryDirectory() as d:
        node = os.path.join(d, "node.json")
        with open(node, "w") as f:
            json.dump({"sysfsRoot": sysfs_root, "stateDir": os.path.join(d, "state")}, f)
        env = {"PATH": "/usr/bin:/bin", "CNI_COMMAND": "STATUS", "CNI_PATH": "/opt/cni/bin",
               "RDMAK8S_CNI_NODE_CONFIG": node}
        return subprocess.run([CNI], input=json.dumps(conf), env=env, capture_output=True,
                              text=True, timeout=60)


class NetconfTest(unittest.TestCase):
    def exec_conf(self, rel, conflist, plugin):
        conf = dict(plugin)
        conf["name"] = conflist["name"]
        conf["cniVersion"] = "1.1.0"
        return conf

    def status(self, rel, conf):
        return run_status(conf, os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", FIXTURE[rel]))

    def test_every_rdmak8s_netconf_in_the_manifests_is_accepted_by_the_cni(self):
        seen = 0
        for rel in OVERLAYS:
            for nad, conflist in nad_configs(render(rel)):
                for plugin in conflist["plugins"]:
                    if plugin["type"] != "rdmak8s":
                        continue
                    seen += 1
                    with self.subTest(f"{rel} {nad['metadata']['name']}"):
                        r = self.status(rel, self.exec_conf(rel, conflist, plugin))
                        if r.returncode == 0:
                            continue
                        err = json.loads(r.stdout)
                        self.assertIn(err["code"], ACCEPTED_CODES,
                                      f"{err}\nstderr: {r.stderr}")
        self.assertEqual(seen, 5)

    def test_a_bad_value_is_rejected_so_the_check_above_can_fail(self):
        # (Unknown fields are ignored, as CNI plugins conventionally do; bad values are not.)
        nad, conflist = nad_configs(render("overlays/roce-shared"))[0]
        plugin = dict(conflist["plugins"][-1])
        plugin["qos"] = dict(plugin["qos"], pfc=[9])
        r = self.status("overlays/roce-shared", self.exec_conf("overlays/roce-shared", conflist, plugin))
        self.assertNotEqual(r.returncode, 0)
        err = json.loads(r.stdout)
        self.assertNotIn(err["code"], ACCEPTED_CODES, err)
        self.assertIn("pfc", err["msg"])

    def test_a_host_path_in_a_nad_is_refused(self):
        nad, conflist = nad_configs(render("overlays/roce-shared"))[0]
        for key in ("sysfsRoot", "configfsRoot", "stateDir", "logFile"):
            with self.subTest(key):
                plugin = dict(conflist["plugins"][-1])
                plugin[key] = "/tmp/rdmak8s-netconf-test-" + key
                r = self.status("overlays/roce-shared",
                                self.exec_conf("overlays/roce-shared", conflist, plugin))
                err = json.loads(r.stdout)
                self.assertEqual(err["code"], 7, err)
                self.assertIn(f'"{key}"', err["msg"])
                self.assertFalse(os.path.exists(plugin[key]))

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cni", default="")
    opts, rest = parser.parse_known_args()
    if not opts.cni:
        print("SKIP: no rdmak8s (CNI) target on this branch yet")
        sys.exit(SKIP)
    CNI = opts.cni
    if not os.access(CNI, os.X_OK):
        sys.exit(f"--cni {CNI}: not an executable file (the target exists: is it built?)")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
