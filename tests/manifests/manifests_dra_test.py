#!/usr/bin/env python3
"""The DRA manifests (overlays/dra, examples/dra-gpu-rdma) against the code they drive.

Run by ctest, one entry per test (tests/manifests/CMakeLists.txt). Renders with the same tools as
manifests_test.py (common.py). Names the checks rely on are read from the sources: the driver
name and records dir defaults (dra/preparer.h, cni/node_config.h), the attribute names the driver
publishes (dra/api/slice_devices.cc).
"""
import json
import os
import re
import sys
import unittest

from common import SOURCE_DIR, find, nad_configs, one, render

DRA_OVERLAY = "overlays/dra"
DRA_SPLIT_OVERLAY = "overlays/dra-split"
# The driver's own metrics port where it runs beside the device plugin (overlays/dra-split).
SPLIT_DRIVER_METRICS_PORT = 9471
DRA_V1BETA1_OVERLAY = "overlays/dra-v1beta1"
# resource.k8s.io/v1beta1 DeviceClassSpec as Kubernetes 1.32 and 1.33 serve it
# (k8s.io/api/resource/v1beta1): extendedResourceName came in 1.34.
DEVICE_CLASS_V1BETA1_SPEC_FIELDS = {"selectors", "config"}
DRA_EXAMPLE = "examples/dra-gpu-rdma"
STANDARD_PREFIX = "resource.kubernetes.io/"
TRANSPORTS = {"ib", "roce", "iwarp"}
# The agents' /metrics, /livez and /readyz port (docs/deploy.md).
METRICS_PORT = 9470
# resource.k8s.io/v1 DeviceClassSpec fields.
DEVICE_CLASS_SPEC_FIELDS = {"selectors", "config", "extendedResourceName"}


def source(rel):
    with open(os.path.join(SOURCE_DIR, rel)) as f:
        return f.read()


def default_of(rel, member):
    m = re.search(r"std::string " + member + r' = "([^"]+)";', source(rel))
    assert m, f"{rel}: no default for {member}"
    return m.group(1)


def published_attributes():
    return set(re.findall(r'a\.(?:String|Int)\("([A-Za-z]+)"', source("dra/api/slice_devices.cc")))


def args_map(c):
    """The container's `--flag=value` args, each $(VAR) of its literal env expanded as the kubelet
    does (a var from a fieldRef stays as written)."""
    env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
    out = {}
    for a in c.get("args", []):
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            out[k] = re.sub(r"\$\(([A-Z_]+)\)", lambda m: env.get(m.group(1), m.group(0)), v)
    return out


def metrics_port_of(ds):
    """The one port an agent's DaemonSet serves /metrics on, checked to be the same in its
    --metrics-address, its metrics containerPort and hostPort and its prometheus.io/port."""
    c = ds["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p for p in c["ports"]}
    port = ports["metrics"]["containerPort"]
    assert ports["metrics"]["hostPort"] == port, ds["metadata"]["name"]
    assert args_map(c)["--metrics-address"] == f"[$(NODE_IP)]:{port}", args_map(c)
    assert int(ds["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"]) == port
    return port


class ManifestsDraTest(unittest.TestCase):
    def test_dra_overlay_runs_the_driver_instead_of_the_device_plugin(self):
        objs = render(DRA_OVERLAY)
        names = {d["metadata"]["name"] for d in find(objs, "DaemonSet")}
        self.assertIn("rdmak8s-dra-driver", names)
        self.assertIn("rdmak8s-cni-installer", names)
        self.assertNotIn("rdmak8s-device-plugin", names, "a node runs one or the other")
        self.assertEqual([c for c in find(objs, "ConfigMap")
                          if c["metadata"]["name"] == "rdmak8s-device-plugin-config"], [])

    def test_dra_driver_mounts_what_it_writes_and_runs_as_its_service_account(self):
        objs = render(DRA_OVERLAY)
        ds = one(objs, "DaemonSet", "rdmak8s-dra-driver")
        self.assertEqual(ds["metadata"]["namespace"], "kube-system")
        spec = ds["spec"]["template"]["spec"]
        sa = spec["serviceAccountName"]
        one(objs, "ServiceAccount", sa)
        binding = one(objs, "ClusterRoleBinding", "rdmak8s-dra-driver")
        self.assertIn({"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"},
                      binding["subjects"])
        c = spec["containers"][0]
        vols = {v["name"]: v for v in spec["volumes"]}
        mounts = {vols[m["name"]]["hostPath"]["path"]: m["mountPath"] for m in c["volumeMounts"]}
        for path in ("/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins", "/var/run/cdi",
                     "/sys", "/dev"):
            self.assertEqual(mounts.get(path), path)
        args = args_map(c)
        self.assertEqual(args["--driver-name"], default_of("dra/preparer.h", "driver_name"))
        # The records dir the driver writes is the one the CNI reads by default.
        records = default_of("cni/node_config.h", "pod_devices_dir")
        self.assertEqual(args["--pod-devices-dir"], records)
        self.assertEqual(default_of("dra/preparer.h", "pod_devices_dir"), records)
        self.assertEqual(mounts.get(records), records)
        for flag in ("--plugins-registry-dir", "--cdi-dir", "--state-dir", "--sysfs-root", "--dev-root"):
            self.assertIn(args[flag], mounts.values(), flag)

    def test_dra_driver_rbac_is_least_privilege_and_may_write_only_its_own_claim_status(self):
        # Issue 34 item 1: the driver writes its status.devices entries of a claim (PUT .../status);
        # v1.36's granular status authorization also asks for resourceclaims/driver with the
        # driver's name, on the claim's own node only (associated-node).
        for rel in DRA_OVERLAY, DRA_V1BETA1_OVERLAY, DRA_SPLIT_OVERLAY:
            with self.subTest(rel):
                objs = render(rel)
                driver = args_map(one(objs, "DaemonSet", "rdmak8s-dra-driver")["spec"]["template"]["spec"]
                                  ["containers"][0])["--driver-name"]
                role = one(objs, "ClusterRole", "rdmak8s-dra-driver")
                rules = sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r.get("resourceNames", [])),
                                tuple(sorted(r["verbs"]))) for r in role["rules"])
                self.assertEqual(rules, sorted([
                    (("",), ("nodes",), (), ("get",)),
                    # Issue 34 item 4: claims held at binding on our devices are found by a
                    # list+watch of every namespace's claims (no create, update or delete).
                    (("resource.k8s.io",), ("resourceclaims",), (), ("get", "list", "watch")),
                    (("resource.k8s.io",), ("resourceclaims/driver",), (driver,), ("associated-node:update",)),
                    (("resource.k8s.io",), ("resourceclaims/status",), (), ("update",)),
                    (("resource.k8s.io",), ("resourceslices",), (),
                     ("create", "delete", "get", "list", "update", "watch")),
                ]))

    def test_dra_driver_probes_livez_and_readyz_on_the_scraped_port_bound_to_the_node_ip(self):
        # Issue 26: the DRA DaemonSet has metrics and probes as the device plugin's has
        # (docs/dra.md#metrics-and-the-probes): liveness on /livez (its own loops), readiness on
        # /readyz (registered with kubelet, slices published), the port bound to the node's IP.
        for rel in DRA_OVERLAY, DRA_V1BETA1_OVERLAY:
            with self.subTest(rel):
                ds = one(render(rel), "DaemonSet", "rdmak8s-dra-driver")
                c = ds["spec"]["template"]["spec"]["containers"][0]
                ports = {p["name"]: p for p in c["ports"]}
                self.assertEqual(ports["metrics"]["containerPort"], METRICS_PORT)
                # hostNetwork: the hostPort makes the scheduler see a clash with the device plugin.
                self.assertEqual(ports["metrics"]["hostPort"], METRICS_PORT)
                for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
                    get = c[probe]["httpGet"]
                    self.assertEqual(get["path"], path, probe)
                    self.assertEqual(get["port"], "metrics", probe)
                    self.assertLessEqual(c[probe]["timeoutSeconds"], c[probe]["periodSeconds"], probe)
                self.assertEqual(args_map(c)["--metrics-address"], f"[$(NODE_IP)]:{METRICS_PORT}")
                env = {e["name"]: e for e in c.get("env", [])}
                self.assertEqual(env["NODE_IP"]["valueFrom"]["fieldRef"]["fieldPath"], "status.hostIP")
                ann = ds["spec"]["template"]["metadata"]["annotations"]
                self.assertEqual(ann["prometheus.io/scrape"], "true")
                self.assertEqual(int(ann["prometheus.io/port"]), METRICS_PORT)
                self.assertEqual(ann["prometheus.io/path"], "/metrics")
        # The flag is the driver's, with the device plugin's default (loopback unless told).
        for flags, defaults in (("dra/driver_flags.cc", "dra/driver_flags.h"),
                                ("device-plugin/main.cc", "device-plugin/main.cc")):
            self.assertIn('"--metrics-address"', source(flags), flags)
            self.assertEqual(default_of(defaults, "metrics_address"), f"127.0.0.1:{METRICS_PORT}", defaults)

    def test_split_overlay_runs_both_agents_on_the_same_nodes_with_disjoint_devices_and_ports(self):
        # Issue 34: docs/dra.md promised a node's devices partly to each agent, but both
        # DaemonSets took hostPort 9470, so the scheduler never placed both on one node.
        objs = render(DRA_SPLIT_OVERLAY)
        dp = one(objs, "DaemonSet", "rdmak8s-device-plugin")
        driver = one(objs, "DaemonSet", "rdmak8s-dra-driver")
        self.assertEqual(dp["spec"]["template"]["spec"]["affinity"],
                         driver["spec"]["template"]["spec"]["affinity"], "the same nodes")
        self.assertEqual(metrics_port_of(dp), METRICS_PORT)
        self.assertEqual(metrics_port_of(driver), SPLIT_DRIVER_METRICS_PORT)
        # Disjoint selections: every pool of the device plugin takes PFs, the driver's --devices
        # file (mounted from its ConfigMap) takes VFs.
        config = json.loads(one(objs, "ConfigMap", "rdmak8s-device-plugin-config")["data"]["config.json"])
        self.assertTrue(config["pools"])
        for pool in config["pools"]:
            self.assertIs(pool["selectors"].get("isVF"), False, pool["name"])
        spec = driver["spec"]["template"]["spec"]
        c = spec["containers"][0]
        devices = args_map(c)["--devices"]
        mount = next(m for m in c["volumeMounts"] if devices.startswith(m["mountPath"] + "/"))
        self.assertTrue(mount.get("readOnly"))
        volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
        cm = one(objs, "ConfigMap", volume["configMap"]["name"])
        selection = json.loads(cm["data"][devices[len(mount["mountPath"]) + 1:]])
        self.assertEqual(selection, {"selectors": {"isVF": True}})
        # Everything else of the DRA overlay's driver is there: RBAC, DeviceClasses.
        one(objs, "ClusterRoleBinding", "rdmak8s-dra-driver")
        self.assertTrue(find(objs, "DeviceClass"))

    def test_device_classes_select_our_driver_by_transport_with_extended_resource_names(self):
        driver = default_of("dra/preparer.h", "driver_name")
        attrs = published_attributes()
        self.assertIn("transport", attrs)
        classes = find(render(DRA_OVERLAY), "DeviceClass")
        by_transport, extended = {}, set()
        for dc in classes:
            with self.subTest(dc["metadata"]["name"]):
                self.assertEqual(dc["apiVersion"], "resource.k8s.io/v1")
                self.assertNotIn("namespace", dc["metadata"])
                self.assertLessEqual(set(dc["spec"]), DEVICE_CLASS_SPEC_FIELDS)
                exprs = [s["cel"]["expression"] for s in dc["spec"]["selectors"]]
                cel = " && ".join(exprs)
                self.assertIn(f'device.driver == "{driver}"', cel)
                for name in re.findall(r'device\.attributes\["' + re.escape(driver) + r'"\]\.(\w+)', cel):
                    self.assertIn(name, attrs)
                t = re.findall(r'\.transport == "(\w+)"', cel)
                by_transport[t[0] if t else "any"] = dc["metadata"]["name"]
                ern = dc["spec"]["extendedResourceName"]
                self.assertRegex(ern, r"^rdma/[a-z0-9_.-]+$")
                self.assertNotIn(ern, extended, "an extended resource name names one class")
                extended.add(ern)
        self.assertEqual(set(by_transport), TRANSPORTS | {"any"})
        self.assertEqual(by_transport, {"any": "rdma", "ib": "rdma-ib", "roce": "rdma-roce",
                                        "iwarp": "rdma-iwarp"})

    def test_v1beta1_overlay_is_the_dra_overlay_with_device_classes_a_132_server_takes(self):
        # Issue 23, item 9: on a v1beta1-only server the v1 DeviceClasses are "no matches for
        # kind DeviceClass in version resource.k8s.io/v1". Everything else is the same objects.
        v1, beta = render(DRA_OVERLAY), render(DRA_V1BETA1_OVERLAY)
        others = lambda objs: sorted(json.dumps(o, sort_keys=True) for o in objs
                                     if o["kind"] != "DeviceClass")
        self.assertEqual(others(beta), others(v1))
        classes_v1 = {c["metadata"]["name"]: c for c in find(v1, "DeviceClass")}
        classes_beta = {c["metadata"]["name"]: c for c in find(beta, "DeviceClass")}
        self.assertEqual(sorted(classes_beta), sorted(classes_v1))
        self.assertTrue(classes_beta)
        for name, c in classes_beta.items():
            with self.subTest(name):
                self.assertEqual(c["apiVersion"], "resource.k8s.io/v1beta1")
                self.assertLessEqual(set(c["spec"]), DEVICE_CLASS_V1BETA1_SPEC_FIELDS)
                self.assertEqual(c["spec"]["selectors"], classes_v1[name]["spec"]["selectors"])
                self.assertEqual(c["metadata"], classes_v1[name]["metadata"])
        for name, c in classes_v1.items():
            self.assertEqual(c["apiVersion"], "resource.k8s.io/v1", name)

    def test_dra_overlays_run_our_image_for_the_driver(self):
        for rel in DRA_OVERLAY, DRA_V1BETA1_OVERLAY:
            with self.subTest(rel):
                ds = one(render(rel), "DaemonSet", "rdmak8s-dra-driver")
                for c in ds["spec"]["template"]["spec"]["containers"]:
                    self.assertRegex(c["image"], r"^ghcr\.io/rdmak8s/rdmak8s-device-plugin:[0-9.]+$")

    def test_gpu_example_pairs_a_gpu_and_our_nic_on_one_pcie_root(self):
        objs = render(DRA_EXAMPLE)
        ours = {dc["metadata"]["name"] for dc in find(render(DRA_OVERLAY), "DeviceClass")}
        tmpl = one(objs, "ResourceClaimTemplate", "gpu-and-nic")
        self.assertEqual(tmpl["apiVersion"], "resource.k8s.io/v1")
        devices = tmpl["spec"]["spec"]["devices"]
        classes = {r["name"]: r["exactly"]["deviceClassName"] for r in devices["requests"]}
        self.assertEqual(classes["gpu"], "gpu.nvidia.com")
        self.assertIn(classes["nic"], ours)
        (constraint,) = devices["constraints"]
        self.assertEqual(constraint["matchAttribute"], STANDARD_PREFIX + "pcieRoot")
        self.assertEqual(sorted(constraint["requests"]), ["gpu", "nic"])
        # The driver publishes the standard attribute the constraint compares.
        self.assertIn('std_prefix + "pcieRoot"', source("dra/api/slice_devices.cc"))
        pod = one(objs, "Pod", "gpu-rdma")
        claims = {c["name"]: c["resourceClaimTemplateName"] for c in pod["spec"]["resourceClaims"]}
        self.assertEqual(claims, {"gpu-and-nic": "gpu-and-nic"})
        self.assertEqual(pod["spec"]["containers"][0]["resources"]["claims"], [{"name": "gpu-and-nic"}])
        # The NAD's rdmak8s entry names the claim's NIC request, and has no deviceID to give.
        (nad, conflist), = nad_configs(objs)
        self.assertEqual(pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"],
                         nad["metadata"]["name"])
        rdma = [p for p in conflist["plugins"] if p["type"] == "rdmak8s"][0]
        self.assertEqual(rdma["draRequest"], "nic")
        self.assertNotIn("deviceID", rdma)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:], verbosity=2)
