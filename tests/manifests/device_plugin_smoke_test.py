#!/usr/bin/env python3
"""The built rdmak8s-device-plugin, started with each overlay's DaemonSet arguments and ConfigMap.

  device_plugin_smoke_test.py --plugin PATH DevicePluginSmokeTest.test_name

Host paths are moved into a temp dir (the same remapping the kubelet does with hostPath mounts)
and sysfs is a kernel-shaped fixture tree of the overlay's fabric; everything else is the
manifest's own argument list. The plugin must come up, advertise every pool of the overlay in
/metrics, find healthy devices for the overlay's main pool on that fabric, answer the
liveness/readiness probe's /healthz with 503 naming the pools no kubelet registered (there is no
kubelet here), and exit 0 on SIGTERM (what the kubelet sends on a rolling update).
Without --plugin (no rdmak8s-device-plugin target on this branch) the test exits 77 (skip).
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from common import SKIP, SOURCE_DIR, one, render

PLUGIN = None
FIXTURES = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs")

# overlay -> (fixture tree, resource that must select devices there, must they be healthy).
# Exclusive pools are healthy only where the kernel answers RDMA netlink with the netns mode; a
# build machine without RDMA does not, and the plugin rightly marks them unusable there.
CASES = {
    "base": ("mlx5_roce_sriov", "rdma/roce_shared", True),
    "overlays/roce-shared": ("mlx5_roce_sriov", "rdma/roce_shared", True),
    "overlays/exclusive-vf": ("mlx5_roce_sriov", "rdma/roce_vf", False),
    "overlays/infiniband": ("mlx5_ib_2port", "rdma/ib_shared", True),
    "overlays/iwarp": ("irdma_iwarp", "rdma/iwarp", False),
    "overlays/cdi": ("mlx5_roce_sriov", "rdma/roce_shared", True),
    "overlays/verbs-health": ("mlx5_roce_sriov", "rdma/roce_shared", True),
}
DEADLINE_S = 60  # a bound for a wedged process, not a performance assertion


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None, ""


class DevicePluginSmokeTest(unittest.TestCase):
    def start(self, rel):
        objs = render(rel)
        ds = one(objs, "DaemonSet", "rdmak8s-device-plugin")
        c = ds["spec"]["template"]["spec"]["containers"][0]
        fixture = CASES[rel][0]
        tmp = tempfile.mkdtemp(prefix="rdmak8s-dp-smoke-")
        self.addCleanup(shutil.rmtree, tmp)
        # The ConfigMap volume: its files under the mount path, as the kubelet projects them.
        volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
        remap = {}
        for m in c["volumeMounts"]:
            v = volumes[m["name"]]
            local = os.path.join(tmp, m["name"])
            os.makedirs(local)
            if "configMap" in v:
                cm = one(objs, "ConfigMap", v["configMap"]["name"])
                for key, text in cm["data"].items():
                    with open(os.path.join(local, key), "w") as f:
                        f.write(text)
            if m["mountPath"] == "/sys":
                local = os.path.join(FIXTURES, fixture)
            remap[m["mountPath"]] = local
        port = free_port()
        args = []
        for a in c["args"]:
            if a.startswith("--metrics-address="):
                a = f"--metrics-address=127.0.0.1:{port}"
            elif "=" in a:
                k, v = a.split("=", 1)
                for mount, local in sorted(remap.items(), key=lambda kv: -len(kv[0])):
                    if v == mount or v.startswith(mount + "/"):
                        v = local + v[len(mount):]
                        break
                else:
                    if v == "/dev":  # --dev-root: only /dev/infiniband is mounted
                        v = os.path.dirname(remap["/dev/infiniband"])
                a = f"{k}={v}"
            args.append(a)
        for a in args:
            if "=" in a and a.split("=", 1)[1].startswith("/"):
                path = a.split("=", 1)[1]
                self.assertTrue(path.startswith(tmp) or path.startswith(FIXTURES),
                                f"{a}: a host path the DaemonSet does not mount")
        log = open(os.path.join(tmp, "log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen([PLUGIN] + args, stdout=log, stderr=subprocess.STDOUT)

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.addCleanup(stop)
        return proc, port, log, remap

    def log_text(self, log):
        log.flush()
        log.seek(0)
        return log.read()

    def check(self, rel):
        proc, port, log, remap = self.start(rel)
        _, resource, must_be_healthy = CASES[rel]
        cfg_resources = None
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            self.assertIsNone(proc.poll(), f"plugin exited: {self.log_text(log)}")
            status, metrics = get(f"http://127.0.0.1:{port}/metrics")
            if status == 200:
                found = {}
                for m in re.finditer(r'rdmak8s_pool_devices\{health="(\w+)",resource="([^"]+)"\} '
                                     r'(\S+)', metrics):
                    found[(m.group(2), m.group(1))] = int(float(m.group(3)))
                healthy = found.get((resource, "Healthy"), 0)
                selected = healthy + found.get((resource, "Unhealthy"), 0)
                # Pools are filled during start-up, before it finishes ("not serving").
                serving = get(f"http://127.0.0.1:{port}/healthz")[1].strip() != "not serving"
                if serving and (healthy > 0 or (selected > 0 and not must_be_healthy)):
                    cfg_resources = found
                    break
            time.sleep(0.2)
        self.assertIsNotNone(cfg_resources,
                             f"{resource} never showed {'healthy ' if must_be_healthy else ''}devices: "
                             f"{self.log_text(log)}")
        # Serving, but no kubelet to register with: the probes must see an unready plugin.
        healthz, why = get(f"http://127.0.0.1:{port}/healthz")
        self.assertEqual(healthz, 503, self.log_text(log))
        self.assertTrue(why.startswith("not registered with kubelet: "), why)
        self.assertIn(resource, why.strip()[len("not registered with kubelet: "):].split(", "))
        if rel == "overlays/cdi":
            self.assertTrue(os.listdir(remap["/var/run/cdi"]), "no CDI spec written")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=DEADLINE_S), 0, self.log_text(log))
        self.assertEqual(os.listdir(remap["/var/lib/kubelet/device-plugins"]), [],
                         "sockets left behind")

    def test_base_starts_with_its_daemonset_args(self):
        self.check("base")

    def test_roce_shared_overlay_starts_and_finds_roce_hcas(self):
        self.check("overlays/roce-shared")

    def test_exclusive_vf_overlay_starts_and_finds_vfs(self):
        self.check("overlays/exclusive-vf")

    def test_infiniband_overlay_starts_and_finds_ib_hcas(self):
        self.check("overlays/infiniband")

    def test_iwarp_overlay_starts_and_finds_iwarp_devices(self):
        self.check("overlays/iwarp")

    def test_cdi_overlay_starts_and_writes_cdi_specs(self):
        self.check("overlays/cdi")

    def test_verbs_health_overlay_starts_with_verbs_on(self):
        self.check("overlays/verbs-health")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", default="")
    opts, rest = parser.parse_known_args()
    if not opts.plugin:
        print("SKIP: no rdmak8s-device-plugin target on this branch yet")
        sys.exit(SKIP)
    PLUGIN = opts.plugin
    if not os.access(PLUGIN, os.X_OK):
        sys.exit(f"--plugin {PLUGIN}: not an executable file (the target exists: is it built?)")
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
