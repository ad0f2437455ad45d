#!/usr/bin/env python3
"""The e2e harness's kubelet readers (e2e/guest/lib.sh) on the real fake kubelet's output.

  kubelet_output_test.py --fake-kubelet PATH --device-plugin PATH KubeletOutputTest.test_name

The e2e VM starts rdmak8s-fake-kubelet with lib.sh's kubelet_start and polls the file it writes
with kubelet_wait_registered / kubelet_allocations / kubelet_wait_health. Here the same functions
(sourced from lib.sh, run by /bin/sh as in the guest) read the output of the real fake kubelet
talking to the real device plugin on a fixture sysfs tree. The checks do what a loaded machine
does to the harness: they read only after the fake kubelet wrote everything it will write (a
poller that comes late), so nothing here depends on timing. Without --fake-kubelet/--device-plugin
the test exits 77 (skip).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = os.environ.get(
    "RDMAK8S_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LIB_SH = os.path.join(SOURCE_DIR, "e2e", "guest", "lib.sh")
LIB_DIR = os.path.join(SOURCE_DIR, "e2e", "guest", "lib")  # its parts, /e2e/lib in the guest
FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "mlx5_roce_sriov")
FAKE_KUBELET = None
DEVICE_PLUGIN = None
BOUND_S = 60  # a bound for a wedged process, never a performance assertion


class KubeletOutputTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rdmak8s-e2e-lib-")
        if not os.environ.get("RDMAK8S_KEEP_TMP"):
            self.addCleanup(shutil.rmtree, self.tmp, True)
        self.kdir = os.path.join(self.tmp, "k")
        os.makedirs(self.kdir)
        shutil.copytree(FIXTURE, os.path.join(self.tmp, "sys"), symlinks=True)
        self.out = os.path.join(self.tmp, "kubelet.out")
        self.bindir = os.path.join(self.tmp, "bin")
        os.makedirs(self.bindir)
        os.symlink(FAKE_KUBELET, os.path.join(self.bindir, "rdmak8s-fake-kubelet"))
        self.plugin = None
        self.addCleanup(self.stop_plugin)
        self.addCleanup(self.lib, "kubelet_stop")

    # Runs `/bin/sh -c '. lib.sh; <vars>; SCRIPT'` as the guest's /init does; returns the process.
    def lib(self, script, check=False):
        prelude = (
            f"E2E_LIB_DIR={LIB_DIR}\n. {LIB_SH}\n"
            f"KUBELET_DIR={self.kdir} KUBELET_OUT={self.out}\n"
            f"KUBELET_ERR={self.tmp}/kubelet.err KUBELET_PID={self.tmp}/kubelet.pid\n"
            f"PATH={self.bindir}:$PATH\n")
        p = subprocess.run(["/bin/sh", "-c", prelude + script], capture_output=True, text=True,
                           timeout=BOUND_S + 30)
        if check:
            self.assertEqual(p.returncode, 0, f"{script}: rc {p.returncode}\nstdout: {p.stdout}\n"
                             f"stderr: {p.stderr}\n{self.logs()}")
        return p

    def read_out(self):
        return self.read_file(self.out)

    @staticmethod
    def read_file(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""

    # What a failure message carries: both processes' own account of what happened.
    def logs(self):
        return (f"kubelet output:\n{self.read_out()}\n"
                f"kubelet stderr:\n{self.read_file(os.path.join(self.tmp, 'kubelet.err'))}\n"
                f"device plugin log:\n{self.read_file(os.path.join(self.tmp, 'dp.log'))}")

    def start_plugin(self, allocate=({}, {}), args=()):
        cfg = os.path.join(self.tmp, "dp.json")
        with open(cfg, "w") as f:
            json.dump({"resourcePrefix": "rdma", "pools": [
                {"name": "slot1", "selectors": {"rdmaDevices": ["mlx5_2"]}, "allocate": allocate[0]},
                {"name": "slot2", "selectors": {"rdmaDevices": ["mlx5_3"]}, "allocate": allocate[1]}]},
                f)
        with open(os.path.join(self.tmp, "dp.log"), "w") as log:
            self.plugin = subprocess.Popen(
                [DEVICE_PLUGIN, "--config", cfg, "--kubelet-dir", self.kdir, "--sysfs-root",
                 os.path.join(self.tmp, "sys"), "--cdi-dir", os.path.join(self.tmp, "cdi"),
                 "--metrics-address", "127.0.0.1:0", "--no-verbs", "-v", "1", *args],
                stdout=subprocess.DEVNULL, stderr=log)

    def stop_plugin(self):
        if self.plugin and self.plugin.poll() is None:
            self.plugin.send_signal(signal.SIGTERM)
            try:
                self.plugin.wait(BOUND_S)
            except subprocess.TimeoutExpired:
                self.plugin.kill()
                self.plugin.wait()

    # Waits (bounded) until the fake kubelet printed its --json document, which it does after every
    # wait and allocation: from then on the file holds all that a slow poller will ever find.
    # Its ListAndWatch lines are written by the stream threads and may land just after it: waits
    # for those too.
    def wait_for_summary(self):
        end = time.monotonic() + BOUND_S
        while time.monotonic() < end:
            text = self.read_out()
            if all(s in text for s in ('"errors"', '"resource":"rdma/slot1"',
                                       '"resource":"rdma/slot2"')):
                return
            time.sleep(0.05)
        self.fail(f"the fake kubelet printed no document within {BOUND_S} s:\n{self.logs()}")

    def test_every_document_is_one_complete_json_line(self):
        self.lib("kubelet_start --allocate rdma/slot1:1 --allocate rdma/slot2:1", check=True)
        self.start_plugin()
        self.wait_for_summary()
        text = self.read_out()
        self.assertTrue(text.endswith("\n"), text)
        kinds = []
        for line in text.splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                self.fail(f"not one JSON document per line: {line!r} in\n{text}")
            kinds.append(doc.get("resource", "summary"))
        self.assertIn("rdma/slot1", kinds)
        self.assertIn("rdma/slot2", kinds)
        self.assertIn("summary", kinds)

    def test_registration_is_seen_after_later_documents_were_appended(self):
        self.lib("kubelet_start --allocate rdma/slot1:1 --allocate rdma/slot2:1", check=True)
        self.start_plugin()
        self.wait_for_summary()
        # The poller comes late: slot2's update and the allocation document follow slot1's.
        self.lib("kubelet_wait_registered rdma/slot1 5", check=True)
        self.lib("kubelet_wait_registered rdma/slot2 5", check=True)
        p = self.lib("kubelet_allocations 5", check=True)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["errors"], [])
        self.assertEqual(sorted(a["resource"] for a in doc["allocations"]),
                         ["rdma/slot1", "rdma/slot2"])
        p = self.lib("kubelet_wait_health rdma/slot1 '*' Healthy 5", check=True)
        self.assertEqual(json.loads(p.stdout)["resource"], "rdma/slot1")

    # kubelet allocates only devices the plugin advertised Healthy. On a loaded machine the first
    # update the fake kubelet saw said 0 Healthy and its allocation failed ("resource rdma/slot1
    # has 0 healthy devices, wanted 1"): --allocate waits for the update that has them.
    def test_allocate_waits_for_an_update_with_enough_healthy_devices(self):
        state = os.path.join(self.tmp, "sys", "class", "infiniband", "mlx5_2", "ports", "1", "state")
        with open(state, "w") as f:
            f.write("1: DOWN\n")
        self.lib("kubelet_start --allocate rdma/slot1:1", check=True)
        self.start_plugin(args=("--rescan-interval", "1"))
        self.lib("kubelet_wait_health rdma/slot1 '*' Unhealthy 30", check=True)
        with open(state + ".tmp", "w") as f:
            f.write("4: ACTIVE\n")
        os.rename(state + ".tmp", state)
        doc = json.loads(self.lib(f"kubelet_allocations {BOUND_S}", check=True).stdout)
        self.assertEqual(doc["errors"], [], self.logs())
        self.assertEqual([a["resource"] for a in doc["allocations"]], ["rdma/slot1"])

    # One container given a device of each pool: its env merged as kubelet v1.36 merges it (a
    # key two answers set keeps one value, logged), every device named, and no NCCL_IB_HCA of
    # one pool hiding the other's HCA.
    def test_one_container_of_two_pools_gets_every_device_named(self):
        self.lib("kubelet_start --one-container --allocate rdma/slot1:1 --allocate rdma/slot2:1",
                 check=True)
        self.start_plugin(({"ncclEnv": True, "env": {"X": "1"}},
                           {"ncclEnv": True, "env": {"X": "2"}}))
        self.wait_for_summary()
        doc = json.loads(self.lib("kubelet_allocations 5", check=True).stdout)
        self.assertEqual(doc["errors"], [], self.logs())
        envs = doc["container"]["envs"]
        self.assertEqual(envs.get("RDMAK8S_SLOT1_DEVICES"), "mlx5_2", self.logs())
        self.assertEqual(envs.get("RDMAK8S_SLOT2_DEVICES"), "mlx5_3", self.logs())
        self.assertNotIn("NCCL_IB_HCA", envs)
        self.assertEqual(envs.get("X"), "1")
        self.assertEqual(doc["container"]["env_conflicts"], ["X: kept 1, dropped 2"])

    # kubelet's pod-resources API, as the CNI asks it for a NAD's deviceID: each --allocate
    # ...@NS/NAME and --pod-device is listed for its pod; Get of a pod kubelet does not know is
    # NOT_FOUND, as kubelet answers.
    def test_pod_resources_lists_each_pods_devices(self):
        try:
            import grpc  # Debian's python3-grpcio; raw bytes, no generated stubs
        except ImportError:
            self.skipTest("python3-grpcio is not installed")
        self.lib("kubelet_start --allocate rdma/slot1:1@default/poda/uid-a "
                 "--pod-device 'tenant-b/web=rdma/roce=0000:5e:00.3'", check=True)
        self.start_plugin()
        end = time.monotonic() + BOUND_S
        while '"allocations"' not in self.read_out() and time.monotonic() < end:
            time.sleep(0.05)
        doc = json.loads(self.lib("kubelet_allocations 5", check=True).stdout)
        self.assertEqual(doc["errors"], [], self.logs())
        [alloc] = doc["allocations"]
        self.assertEqual(alloc["pod"], {"namespace": "default", "name": "poda", "uid": "uid-a",
                                        "container": "main"})
        sock = os.path.join(self.tmp, "pod-resources", "kubelet.sock")
        with grpc.insecure_channel("unix://" + sock) as ch:
            listed = ch.unary_unary("/v1.PodResourcesLister/List")(b"", timeout=BOUND_S)
            for want in (b"poda", b"default", b"main", b"rdma/slot1", alloc["ids"][0].encode(),
                         b"web", b"tenant-b", b"0000:5e:00.3"):
                self.assertIn(want, listed)

            def get(name, ns):  # GetPodResourcesRequest{pod_name: 1, pod_namespace: 2}
                req = bytes([0x0a, len(name)]) + name + bytes([0x12, len(ns)]) + ns
                return ch.unary_unary("/v1.PodResourcesLister/Get")(req, timeout=BOUND_S)
            self.assertIn(b"0000:5e:00.3", get(b"web", b"tenant-b"))
            with self.assertRaises(grpc.RpcError) as err:
                get(b"intruder", b"tenant-b")
            self.assertEqual(err.exception.code(), grpc.StatusCode.NOT_FOUND)
            self.assertIn("intruder", err.exception.details())

    def test_restarted_kubelet_sees_both_registrations_again(self):
        self.lib("kubelet_start --allocate rdma/slot1:1 --allocate rdma/slot2:1", check=True)
        self.start_plugin()
        self.wait_for_summary()
        old_pid = int(open(os.path.join(self.tmp, "kubelet.pid")).read())
        # As failures.sh does: stop, restart with --restart (sockets wiped), wait for both.
        self.lib("kubelet_stop", check=True)
        self.assertFalse(os.path.exists(f"/proc/{old_pid}") and
                         open(f"/proc/{old_pid}/stat").read().split()[2] != "Z",
                         "kubelet_stop returned while the old fake kubelet still runs: it would "
                         "go on writing into the next kubelet's output file")
        self.lib("kubelet_start --restart --wait-resource rdma/slot1 --wait-resource rdma/slot2",
                 check=True)
        self.wait_for_summary()
        self.lib("kubelet_wait_registered rdma/slot1 5 && kubelet_wait_registered rdma/slot2 5",
                 check=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake-kubelet", default="")
    ap.add_argument("--device-plugin", default="")
    args, rest = ap.parse_known_args()
    if not args.fake_kubelet or not args.device_plugin:
        print("skipped: build rdmak8s-fake-kubelet and rdmak8s-device-plugin first")
        sys.exit(77)
    FAKE_KUBELET = os.path.abspath(args.fake_kubelet)
    DEVICE_PLUGIN = os.path.abspath(args.device_plugin)
    unittest.main(argv=[sys.argv[0]] + rest)
