#!/usr/bin/env python3
"""Renders every kustomization under manifests/ and checks what an operator relies on.

Run by ctest, one entry per test (tests/manifests/CMakeLists.txt):
  manifests_test.py ManifestsTest.test_name
Renders with trixie's kustomize 5 and kubectl 1.32 (common.py: KUSTOMIZE and KUBECTL in the
environment, or the file RDMAK8S_TOOLS_ENV written by scripts/fetch-trixie-tools.sh --print).
"""
import json
import os
import re
import sys
import unittest

from common import (IMAGES, MANIFESTS, components, dockerfile_stages, find, kustomizations,
                    nad_configs, one, plugin_config, project_version, render, render_text)

BASES = ["base"]
OVERLAYS = ["overlays/roce-shared", "overlays/exclusive-vf", "overlays/infiniband",
            "overlays/iwarp", "overlays/cdi", "overlays/verbs-health"]
EXAMPLES = ["examples/perftest", "examples/nccl-multi-nic"]
DEPLOYABLE = BASES + OVERLAYS
# Features an operator adds to any overlay (`components:`), and the overlays made of a fabric
# overlay plus one of them.
COMPONENTS = ["components/cdi", "components/verbs-health"]
# Components that are not device plugin features: the images every kustomization takes, the DRA
# driver (overlays/dra and overlays/dra-split take it) and the DeviceClasses for
# resource.k8s.io/v1beta1 servers (manifests_dra_test.py).
ALL_COMPONENTS = sorted(COMPONENTS + ["components/images", "components/dra-driver",
                                      "components/dra-v1beta1"])
IMAGES_COMPONENT = "components/images"
WORKLOAD_KINDS = ("DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "Job", "Pod")
FABRIC_OVERLAYS = ["overlays/roce-shared", "overlays/exclusive-vf", "overlays/infiniband",
                   "overlays/iwarp"]
FEATURE_OVERLAYS = {"overlays/cdi": ("overlays/roce-shared", "components/cdi"),
                    "overlays/verbs-health": ("overlays/roce-shared", "components/verbs-health")}
# Every fabric overlay with every non-empty set of components: what operators may combine.
COMPOSITIONS = [(o, cs) for o in FABRIC_OVERLAYS
                for cs in (("components/cdi",), ("components/verbs-health",),
                           ("components/cdi", "components/verbs-health"))]
# Kinds without a namespace (the tree has none today; a namespace on one is an error).
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "PriorityClass", "StorageClass", "RuntimeClass", "DeviceClass",
                  "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
# Fields kustomize 5 deprecates (it warns, and `kustomize edit fix` rewrites them).
DEPRECATED_FIELDS = {"bases", "patchesJson6902", "patchesStrategicMerge", "commonLabels", "vars",
                     "imageTags"}

# Per overlay: what its pools must select, which main CNI plugins its NADs chain before rdmak8s,
# and whether those NADs are RoCE (qos block expected) or InfiniBand (pkey expected).
OVERLAY_PURPOSE = {
    "overlays/roce-shared": dict(mode="shared", key="transports", value="roce",
                                 main={"macvlan"}, fabric="roce"),
    "overlays/exclusive-vf": dict(mode="exclusive", key="linkTypes", value="ethernet",
                                  main={"host-device", "sriov"}, fabric="roce"),
    "overlays/infiniband": dict(mode="shared", key="linkTypes", value="infiniband",
                                main={"ipoib"}, fabric="ib"),
    "overlays/iwarp": dict(mode="exclusive", key="transports", value="iwarp",
                           main={"host-device"}, fabric="iwarp"),
    "overlays/cdi": dict(mode="shared", key="transports", value="roce",
                         main={"macvlan"}, fabric="roce"),
    "overlays/verbs-health": dict(mode="shared", key="transports", value="roce",
                                  main={"macvlan"}, fabric="roce"),
}

# Device plugin flags (BRIEF.md "Names every helper relies on").
PLUGIN_FLAGS = {"--config", "--kubelet-dir", "--plugins-registry-dir", "--registration",
                "--sysfs-root", "--dev-root", "--cdi", "--cdi-dir", "--metrics-address",
                "--rescan-interval", "--no-verbs", "-v", "--v", "--nfd-features-dir",
                "--node-check-results", "--port-poll-interval"}
BOOL_FLAGS = {"--cdi", "--no-verbs"}  # CLI11 flags: given bare, never as --flag=value
SELECTOR_KEYS = {"vendors", "deviceIDs", "drivers", "pciAddresses", "rdmaDevices", "netdevs",
                 "linkTypes", "transports", "numaNodes", "isVF", "pfNames"}
# rdmak8s netconf fields (docs/cni.md, "Netconf reference").
# Host paths (sysfsRoot, configfsRoot, stateDir, logFile) are not among them: they are the node's
# (the installer's node configuration), and the CNI refuses a netconf that sets one.
RDMAK8S_NETCONF_KEYS = {"type", "deviceID", "draRequest", "port", "gidTimeoutMs", "ensureIPv6Gid", "pkey",
                        "netnsMode", "qos", "logLevel"}
RDMAK8S_QOS_KEYS = {"trust", "pfc", "dscpToPriority", "ecn", "roceTos", "trafficClass", "strict"}
OUR_REPO = "ghcr.io/rdmak8s/"
METRICS_PORT = 9470


def plugin_ds(rel):
    return one(render(rel), "DaemonSet", "rdmak8s-device-plugin")


def installer_ds(rel):
    return one(render(rel), "DaemonSet", "rdmak8s-cni-installer")


def container(ds):
    return ds["spec"]["template"]["spec"]["containers"][0]


def args_map(c):
    """--opt=value as {'--opt': value}; '-v N' as {'-v': 'N'}; a bare flag as {'--flag': 'true'}."""
    out, it = {}, iter(c.get("args", []))
    for a in it:
        if "=" in a:
            k, v = a.split("=", 1)
            out[k] = v
        elif a in ("-v", "--v"):
            out[a] = next(it, "")
        else:
            out[a] = "true"
    return out


def host_mounts(ds):
    """{host path: (mount path, readOnly)} for every hostPath volume mounted in the container."""
    spec = ds["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    out = {}
    for m in container(ds).get("volumeMounts", []):
        v = vols[m["name"]]
        if "hostPath" in v:
            out[v["hostPath"]["path"]] = (m["mountPath"], bool(m.get("readOnly", False)))
    return out


def resolve_port(c, port):
    if isinstance(port, int):
        return port
    return [p["containerPort"] for p in c["ports"] if p["name"] == port][0]


def pods(objs):
    return find(objs, "Pod")


def pod_networks(pod):
    raw = pod["metadata"].get("annotations", {}).get("k8s.v1.cni.cncf.io/networks", "")
    raw = raw.strip()
    if not raw:
        return []
    if raw.startswith("["):
        return [e["name"] for e in json.loads(raw)]
    return [n.strip().split("@")[0].split("/")[-1] for n in raw.split(",")]


class ManifestsTest(unittest.TestCase):
    maxDiff = None

    def test_every_kustomization_renders(self):
        found = kustomizations()
        for rel in DEPLOYABLE + EXAMPLES:
            self.assertIn(rel, found, f"manifests/{rel}/kustomization.yaml missing")
        failures = []
        for rel in found:
            try:
                self.assertTrue(render(rel), f"manifests/{rel} renders nothing")
            except AssertionError as e:
                failures.append(str(e))
        self.assertEqual(failures, [])

    def test_kustomizations_use_current_syntax(self):
        # kustomize 5 (trixie's 5.6, kubectl 1.32's 5.5) warns on the fields of kustomize v2/v3;
        # checked statically too, so that the reason is named before anything renders.
        import yaml
        self.assertEqual(components(), ALL_COMPONENTS)
        for rel in kustomizations() + components():
            with self.subTest(rel):
                with open(os.path.join(MANIFESTS, rel, "kustomization.yaml")) as f:
                    k = yaml.safe_load(f)
                self.assertEqual(set(k) & DEPRECATED_FIELDS, set())
                if rel.startswith("components/"):
                    self.assertEqual((k["apiVersion"], k["kind"]),
                                     ("kustomize.config.k8s.io/v1alpha1", "Component"))
                else:
                    self.assertEqual((k["apiVersion"], k["kind"]),
                                     ("kustomize.config.k8s.io/v1beta1", "Kustomization"))
                for r in k.get("resources", []):
                    self.assertTrue(os.path.exists(os.path.join(MANIFESTS, rel, r)), r)
                for c in k.get("components", []):
                    target = os.path.normpath(os.path.join(rel, c))
                    self.assertIn(target, ALL_COMPONENTS, f"{c}: not a component under components/")
                for p in k.get("patches", []):
                    self.assertTrue(os.path.isfile(os.path.join(MANIFESTS, rel, p["path"])),
                                    p["path"])
                    # A target names exactly one object, so a patch never lands twice (a
                    # cluster-scoped object by kind and name alone).
                    exact = {"kind", "name"}
                    if p["target"].get("kind") not in CLUSTER_SCOPED:
                        exact.add("namespace")
                    self.assertLessEqual(exact, set(p["target"]))

    def test_kustomize5_and_kubectl132_render_everything_alike_without_warnings(self):
        # render_text raises on a non-zero exit or any stderr (kustomize's warnings).
        failures = []
        for rel, comps in [(r, ()) for r in kustomizations()] + COMPOSITIONS:
            try:
                by_kustomize = render_text(rel, comps, tool="kustomize")
                by_kubectl = render_text(rel, comps, tool="kubectl")
                if by_kustomize != by_kubectl:
                    failures.append(f"manifests/{rel} {comps}: kubectl kustomize and kustomize "
                                    "build render differently")
            except AssertionError as e:
                failures.append(str(e))
        self.assertEqual(failures, [])

    def test_every_rendered_object_has_api_version_kind_and_a_unique_name(self):
        for rel, comps in [(r, ()) for r in kustomizations()] + COMPOSITIONS:
            with self.subTest(f"{rel} {comps}"):
                seen = set()
                for o in render(rel, comps):
                    self.assertRegex(o.get("apiVersion", ""), r"^([a-z0-9.-]+/)?v[0-9]+[a-z0-9]*$", o)
                    self.assertRegex(o.get("kind", ""), r"^[A-Z][A-Za-z]+$", o)
                    name = o.get("metadata", {}).get("name", "")
                    self.assertRegex(name, r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", o.get("kind"))
                    key = (o["apiVersion"].split("/")[0], o["kind"],
                           o["metadata"].get("namespace"), name)
                    self.assertNotIn(key, seen, "an object rendered twice")
                    seen.add(key)

    def test_namespaces_are_consistent(self):
        # Namespaced objects say where they go (no reliance on kubectl's current context), the
        # node agents and everything they mount live in kube-system, and an example's objects all
        # share one namespace with the networks its pods attach.
        for rel, comps in [(r, ()) for r in kustomizations()] + COMPOSITIONS:
            with self.subTest(f"{rel} {comps}"):
                objs = render(rel, comps)
                for o in objs:
                    ns = o["metadata"].get("namespace")
                    if o["kind"] in CLUSTER_SCOPED:
                        self.assertIsNone(ns, f"{o['kind']}/{o['metadata']['name']}")
                    else:
                        self.assertTrue(ns, f"{o['kind']}/{o['metadata']['name']} has no namespace")
                for ds in find(objs, "DaemonSet"):
                    ns = ds["metadata"]["namespace"]
                    self.assertEqual(ns, "kube-system")
                    spec = ds["spec"]["template"]["spec"]
                    sa = spec.get("serviceAccountName")
                    self.assertTrue(sa, "an agent runs under its own ServiceAccount")
                    self.assertEqual(one(objs, "ServiceAccount", sa)["metadata"]["namespace"], ns)
                    for v in spec.get("volumes", []):
                        if "configMap" in v:
                            cm = one(objs, "ConfigMap", v["configMap"]["name"])
                            self.assertEqual(cm["metadata"]["namespace"], ns)
                if rel.startswith("examples/"):
                    self.assertEqual(len({o["metadata"]["namespace"] for o in objs}), 1)

    def test_every_service_account_is_used(self):
        # A ServiceAccount no workload runs under is an identity nobody needs (the DRA overlay
        # once kept the device plugin's).
        for rel, comps in [(r, ()) for r in kustomizations()] + COMPOSITIONS:
            with self.subTest(f"{rel} {comps}"):
                objs = render(rel, comps)
                used = {(o["metadata"].get("namespace"),
                         o["spec"]["template"]["spec"].get("serviceAccountName", "default"))
                        for o in objs if o["kind"] in ("DaemonSet", "Deployment", "StatefulSet", "Job")}
                for sa in find(objs, "ServiceAccount"):
                    key = (sa["metadata"].get("namespace"), sa["metadata"]["name"])
                    self.assertIn(key, used, f"ServiceAccount {key[0]}/{key[1]} is used by no workload")

    def test_workload_selectors_match_their_template_labels(self):
        for rel, comps in [(r, ()) for r in kustomizations()] + COMPOSITIONS:
            objs = render(rel, comps)
            for o in objs:
                name = f"{rel} {comps} {o['kind']}/{o['metadata']['name']}"
                if o["kind"] in ("DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "Job"):
                    with self.subTest(name):
                        sel = o["spec"]["selector"]
                        self.assertEqual(set(sel), {"matchLabels"}, "matchLabels only")
                        self.assertTrue(sel["matchLabels"])
                        labels = o["spec"]["template"]["metadata"]["labels"]
                        for k, v in sel["matchLabels"].items():
                            self.assertEqual(labels.get(k), v, "selector must match the template")
                elif o["kind"] == "Service" and o["spec"].get("selector"):
                    with self.subTest(name):
                        sel = o["spec"]["selector"]
                        self.assertTrue(any(all(p["metadata"].get("labels", {}).get(k) == v
                                                for k, v in sel.items())
                                            for p in pods(objs)
                                            if p["metadata"]["namespace"] ==
                                            o["metadata"]["namespace"]),
                                        "a Service that selects no pod of its kustomization")

    def test_components_add_their_feature_to_every_fabric_overlay_and_change_nothing_else(self):
        for overlay, comps in COMPOSITIONS:
            with self.subTest(f"{overlay} + {comps}"):
                plain, objs = render(overlay), render(overlay, comps)
                ds_key = ("DaemonSet", "rdmak8s-device-plugin")
                others = lambda os_: sorted((json.dumps(o, sort_keys=True) for o in os_
                                             if (o["kind"], o["metadata"]["name"]) != ds_key))
                self.assertEqual(others(objs), others(plain))
                c = container(one(objs, "DaemonSet", "rdmak8s-device-plugin"))
                a = args_map(c)
                self.assertLessEqual(set(a), PLUGIN_FLAGS)
                self.assertEqual(len(c["args"]), len(set(c["args"])), "an argument given twice")
                m = host_mounts(one(objs, "DaemonSet", "rdmak8s-device-plugin"))
                cdi = "components/cdi" in comps
                verbs = "components/verbs-health" in comps
                self.assertEqual(a.get("--cdi") == "true", cdi)
                self.assertEqual(a.get("--cdi-dir") == "/var/run/cdi", cdi)
                self.assertEqual(m.get("/var/run/cdi") == ("/var/run/cdi", False), cdi)
                self.assertEqual("--no-verbs" not in c["args"], verbs)
                self.assertEqual(c["securityContext"].get("privileged", False), verbs)
                self.assertEqual(c["securityContext"].get("allowPrivilegeEscalation"), verbs)
                # The images stay ours, at the project version.
                for cc in c, container(one(objs, "DaemonSet", "rdmak8s-cni-installer")):
                    self.assertTrue(cc["image"].startswith(OUR_REPO), cc["image"])
                    self.assertTrue(cc["image"].endswith(":" + project_version()), cc["image"])

    def test_feature_overlays_are_roce_shared_plus_their_component(self):
        for rel, (overlay, comp) in FEATURE_OVERLAYS.items():
            with self.subTest(rel):
                self.assertEqual(render(rel), render(overlay, (comp,)))

    def test_device_plugin_mounts_kubelet_dirs_sysfs_and_dev_infiniband(self):
        for rel in DEPLOYABLE:
            with self.subTest(rel):
                m = host_mounts(plugin_ds(rel))
                # Same path inside and out; kubelet dirs writable, discovery paths read-only.
                self.assertEqual(m.get("/var/lib/kubelet/device-plugins"),
                                 ("/var/lib/kubelet/device-plugins", False))
                self.assertEqual(m.get("/var/lib/kubelet/plugins_registry"),
                                 ("/var/lib/kubelet/plugins_registry", False))
                self.assertEqual(m.get("/sys"), ("/sys", True))
                self.assertEqual(m.get("/dev/infiniband"), ("/dev/infiniband", True))
                a = args_map(container(plugin_ds(rel)))
                self.assertEqual(a["--kubelet-dir"], "/var/lib/kubelet/device-plugins")
                self.assertEqual(a["--plugins-registry-dir"], "/var/lib/kubelet/plugins_registry")
                self.assertEqual(a.get("--sysfs-root", "/sys"), "/sys")
                self.assertEqual(a.get("--dev-root", "/dev"), "/dev")

    def test_cdi_overlay_turns_cdi_on_with_writable_cdi_dir_and_others_leave_it_off(self):
        for rel in DEPLOYABLE:
            with self.subTest(rel):
                ds = plugin_ds(rel)
                a, m = args_map(container(ds)), host_mounts(ds)
                if rel == "overlays/cdi":
                    self.assertEqual(a.get("--cdi"), "true")
                    self.assertEqual(a.get("--cdi-dir"), "/var/run/cdi")
                    self.assertEqual(m.get("/var/run/cdi"), ("/var/run/cdi", False))
                else:
                    self.assertNotIn(a.get("--cdi"), ("true", ""))
                    self.assertNotIn("/var/run/cdi", m)

    def test_device_plugin_args_are_flags_the_binary_knows(self):
        for rel in DEPLOYABLE:
            with self.subTest(rel):
                args = container(plugin_ds(rel))["args"]
                self.assertLessEqual(set(args_map(container(plugin_ds(rel)))), PLUGIN_FLAGS)
                for a in args:
                    self.assertNotIn(a.split("=", 1)[0] if "=" in a else None, BOOL_FLAGS,
                                     f"{a}: a flag takes no value")
                self.assertEqual(len(args), len(set(args)), "an argument given twice")

    def test_device_plugin_skips_verbs_exactly_where_it_cannot_open_devices(self):
        for rel in DEPLOYABLE:
            with self.subTest(rel):
                c = container(plugin_ds(rel))
                self.assertEqual("--no-verbs" in c["args"],
                                 not c["securityContext"].get("privileged", False))

    def test_agents_run_on_rdma_labelled_nodes_and_tolerate_gpu_taints(self):
        for rel in DEPLOYABLE:
            for ds in (plugin_ds(rel), installer_ds(rel)):
                with self.subTest(f"{rel} {ds['metadata']['name']}"):
                    spec = ds["spec"]["template"]["spec"]
                    terms = spec["affinity"]["nodeAffinity"][
                        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                    keys = {e["key"] for t in terms for e in t["matchExpressions"]}
                    self.assertEqual(keys, {"feature.node.kubernetes.io/rdma.capable",
                                            "rdmak8s.io/rdma"})
                    tolerated = {t.get("key") for t in spec["tolerations"]}
                    self.assertLessEqual({"nvidia.com/gpu", "amd.com/gpu"}, tolerated)
                    labels = ds["spec"]["template"]["metadata"]["labels"]
                    for k, v in ds["spec"]["selector"]["matchLabels"].items():
                        self.assertEqual(labels.get(k), v, "selector must match the template")

    def test_device_plugin_probes_livez_and_readyz_and_exposes_scraped_metrics_port(self):
        # Liveness must not depend on kubelet (a plugin kubelet has not accepted yet is not
        # ready, not dead): /livez for liveness, /readyz for readiness (docs/device-plugin.md).
        for rel in DEPLOYABLE:
            with self.subTest(rel):
                ds = plugin_ds(rel)
                c = container(ds)
                for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
                    get = c[probe]["httpGet"]
                    self.assertEqual(get["path"], path, probe)
                    self.assertEqual(resolve_port(c, get["port"]), METRICS_PORT)
                addr = args_map(c).get("--metrics-address", "0.0.0.0:9470")
                self.assertEqual(int(addr.rsplit(":", 1)[1]), METRICS_PORT)
                ann = ds["spec"]["template"]["metadata"]["annotations"]
                self.assertEqual(ann["prometheus.io/scrape"], "true")
                self.assertEqual(int(ann["prometheus.io/port"]), METRICS_PORT)
                self.assertEqual(ann["prometheus.io/path"], "/metrics")
                # hostNetwork: a hostPort makes the scheduler see a port clash on the node.
                self.assertEqual([p.get("hostPort") for p in c["ports"]], [METRICS_PORT])

    def test_device_plugin_binds_metrics_to_the_node_ip_not_every_address(self):
        # /metrics is unauthenticated and the pod is hostNetwork: 0.0.0.0 would open it on every
        # address of the node (issue 24). The node's IP is where kubelet probes the pod IP and
        # where Prometheus scrapes it.
        for rel in DEPLOYABLE:
            with self.subTest(rel):
                c = container(plugin_ds(rel))
                addr = args_map(c).get("--metrics-address", "")
                self.assertEqual(addr, "[$(NODE_IP)]:9470")
                env = {e["name"]: e for e in c.get("env", [])}
                self.assertEqual(env["NODE_IP"]["valueFrom"]["fieldRef"]["fieldPath"],
                                 "status.hostIP")
                self.assertIn("--port-poll-interval", args_map(c))

    def test_agents_run_with_least_privilege(self):
        for rel in DEPLOYABLE:
            for ds in (plugin_ds(rel), installer_ds(rel)):
                name = ds["metadata"]["name"]
                with self.subTest(f"{rel} {name}"):
                    spec = ds["spec"]["template"]["spec"]
                    sc = container(ds)["securityContext"]
                    privileged = sc.get("privileged", False)
                    # Only the verbs-health overlay grants device access, and only to the plugin.
                    self.assertEqual(privileged, rel == "overlays/verbs-health"
                                     and name == "rdmak8s-device-plugin")
                    # The API rejects privileged with allowPrivilegeEscalation: false.
                    self.assertEqual(sc.get("allowPrivilegeEscalation"), privileged)
                    self.assertEqual(sc["capabilities"].get("drop"), ["ALL"])
                    self.assertEqual(sc["capabilities"].get("add", []), [])
                    self.assertTrue(sc["readOnlyRootFilesystem"])
                    self.assertEqual(spec["securityContext"]["seccompProfile"]["type"],
                                     "RuntimeDefault")
                    self.assertFalse(spec["automountServiceAccountToken"])
                    self.assertEqual(spec.get("hostNetwork", False),
                                     name == "rdmak8s-device-plugin")
                    self.assertFalse(spec.get("hostPID", False))
                    self.assertFalse(spec.get("hostIPC", False))

    def test_agents_are_node_critical_and_roll_one_node_at_a_time(self):
        for rel in DEPLOYABLE:
            for ds in (plugin_ds(rel), installer_ds(rel)):
                with self.subTest(f"{rel} {ds['metadata']['name']}"):
                    self.assertEqual(ds["metadata"]["namespace"], "kube-system")
                    self.assertEqual(ds["spec"]["template"]["spec"]["priorityClassName"],
                                     "system-node-critical")
                    us = ds["spec"]["updateStrategy"]
                    self.assertEqual(us["type"], "RollingUpdate")
                    self.assertEqual(us["rollingUpdate"]["maxUnavailable"], 1)
                    self.assertEqual(us["rollingUpdate"]["maxSurge"], 0)
                    res = container(ds)["resources"]
                    for k in ("cpu", "memory"):
                        self.assertIn(k, res["requests"])
                        self.assertIn(k, res["limits"])

    def test_device_plugin_config_is_mounted_and_valid(self):
        for rel in DEPLOYABLE:
            with self.subTest(rel):
                cfg = plugin_config(render(rel))
                self.assertRegex(cfg["resourcePrefix"], r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
                names = [p["name"] for p in cfg["pools"]]
                self.assertTrue(names)
                self.assertEqual(len(names), len(set(names)), "pool names must be unique")
                for p in cfg["pools"]:
                    self.assertRegex(p["name"], r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
                    self.assertIn(p["mode"], ("shared", "exclusive"))
                    self.assertLessEqual(set(p), {"name", "mode", "capacity", "selectors",
                                                  "allocate"})
                    self.assertLessEqual(set(p["selectors"]), SELECTOR_KEYS)
                    if p["mode"] == "shared":
                        cap = p.get("capacity", "auto")
                        self.assertTrue(cap == "auto" or (isinstance(cap, int) and 1 <= cap <= 1000))
                    else:
                        self.assertNotIn("capacity", p, "an exclusive device has one user")

    def test_each_overlay_config_selects_what_the_overlay_is_for(self):
        for rel, want in OVERLAY_PURPOSE.items():
            with self.subTest(rel):
                pools = plugin_config(render(rel))["pools"]
                self.assertTrue(any(p["mode"] == want["mode"] and
                                    want["value"] in p["selectors"].get(want["key"], [])
                                    for p in pools), pools)
                if rel == "overlays/exclusive-vf":
                    self.assertTrue(any(p["selectors"].get("isVF") is True for p in pools))

    def test_network_attachments_chain_the_main_plugin_then_rdmak8s(self):
        for rel, want in OVERLAY_PURPOSE.items():
            with self.subTest(rel):
                objs = render(rel)
                cfg = plugin_config(objs)
                resources = {f"{cfg['resourcePrefix']}/{p['name']}" for p in cfg["pools"]}
                nads = nad_configs(objs)
                self.assertTrue(nads, "no NetworkAttachmentDefinition")
                for nad, conf in nads:
                    self.assertEqual(conf["name"], nad["metadata"]["name"])
                    self.assertRegex(conf["cniVersion"], r"^1\.[01]\.0$")
                    types = [p["type"] for p in conf["plugins"]]
                    self.assertEqual(len(types), 2, types)
                    self.assertIn(types[0], want["main"])
                    self.assertEqual(types[1], "rdmak8s")
                    self.assertIn("ipam", conf["plugins"][0])
                    # Multus uses the resourceName to hand the allocated device to the chain.
                    self.assertIn(nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"],
                                  resources)

    def test_pci_taking_main_plugins_get_pci_addresses_from_exclusive_pools(self):
        # Multus hands the allocated ID to every plugin as deviceID/pciBusID: host-device and
        # sriov-cni need a PCI address, which only an exclusive pool advertises for a PCI function
        # (a shared pool's IDs are "<rdma_dev>-<k>").
        for rel in OVERLAY_PURPOSE:
            objs = render(rel)
            cfg = plugin_config(objs)
            pools = {f"{cfg['resourcePrefix']}/{p['name']}": p for p in cfg["pools"]}
            for nad, conf in nad_configs(objs):
                if conf["plugins"][0]["type"] not in {"host-device", "sriov"}:
                    continue
                with self.subTest(f"{rel} {nad['metadata']['name']}"):
                    pool = pools[nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]]
                    self.assertEqual(pool.get("mode"), "exclusive", pool)

    def test_attachments_require_the_rdma_netns_mode_their_pools_need(self):
        # Shared HCAs are only visible in pods in shared mode; moving a device into a pod needs
        # exclusive mode. With netnsMode the CNI fails ADD clearly on a misconfigured node.
        for rel, want in OVERLAY_PURPOSE.items():
            for nad, conf in nad_configs(render(rel)):
                with self.subTest(f"{rel} {nad['metadata']['name']}"):
                    rdma = conf["plugins"][-1]
                    self.assertEqual(rdma["netnsMode"], want["mode"])
                    self.assertLessEqual(set(rdma), RDMAK8S_NETCONF_KEYS)
                    self.assertLessEqual(set(rdma.get("qos", {})), RDMAK8S_QOS_KEYS)

    def test_roce_attachments_carry_a_consistent_qos_block(self):
        for rel, want in OVERLAY_PURPOSE.items():
            for nad, conf in nad_configs(render(rel)):
                rdma = conf["plugins"][-1]
                with self.subTest(f"{rel} {nad['metadata']['name']}"):
                    if want["fabric"] != "roce":
                        self.assertNotIn("qos", rdma, "Ethernet QoS on a non-RoCE network")
                        continue
                    qos = rdma["qos"]
                    self.assertEqual(qos["trust"], "dscp")
                    prios = set(qos["pfc"])
                    self.assertTrue(prios and prios <= set(range(8)))
                    self.assertLessEqual(set(qos["ecn"]), set(range(8)))
                    # The traffic the pod sends (ToS) must map to a lossless (PFC) priority.
                    dscp = qos["roceTos"] >> 2
                    self.assertIn(str(dscp), qos["dscpToPriority"])
                    self.assertIn(qos["dscpToPriority"][str(dscp)], prios)
                    self.assertEqual(qos["trafficClass"], qos["roceTos"])
                    self.assertIsInstance(qos["strict"], bool)

    def test_infiniband_attachment_sets_a_full_membership_pkey(self):
        for nad, conf in nad_configs(render("overlays/infiniband")):
            with self.subTest(nad["metadata"]["name"]):
                pkey = int(conf["plugins"][-1]["pkey"], 16)
                self.assertTrue(0 < pkey <= 0xFFFF)
                self.assertTrue(pkey & 0x8000, "full-membership bit")

    def test_cni_installer_writes_into_host_cni_bin_and_is_ready_when_binary_answers(self):
        with open(os.path.join(IMAGES, "cni", "Dockerfile")) as f:
            cni_df = f.read()
        for rel in DEPLOYABLE:
            with self.subTest(rel):
                ds = installer_ds(rel)
                c = container(ds)
                env = {e["name"]: e["value"] for e in c["env"]}
                self.assertEqual(host_mounts(ds), {"/opt/cni/bin": ("/host/opt/cni/bin", False),
                                                   "/etc/cni/rdmak8s": ("/host/etc/cni/rdmak8s", False)})
                self.assertEqual(env["RDMAK8S_CNI_BIN_DIR"], "/host/opt/cni/bin")
                # The CNI reads /etc/cni/rdmak8s/node.json (cni/node_config.h): the installer
                # writes it there, with no NAD-settable path and no netconf overrides.
                self.assertEqual(env["RDMAK8S_CNI_NODE_CONFIG_DIR"], "/host/etc/cni/rdmak8s")
                node = json.loads(env["RDMAK8S_CNI_NODE_CONFIG_JSON"])
                self.assertLessEqual(set(node), {"sysfsRoot", "configfsRoot", "stateDir", "logFile",
                                                 "logLevel", "allowNetconfOverrides"})
                self.assertIs(node.get("allowNetconfOverrides", False), False)
                self.assertEqual(env["RDMAK8S_CNI_KEEP_RUNNING"], "true")
                # The script and the binary are where the CNI Dockerfile puts them.
                self.assertEqual(c["command"], ["/usr/local/bin/install-cni.sh"])
                self.assertIn("COPY images/cni/install-cni.sh /usr/local/bin/install-cni.sh", cni_df)
                self.assertIn("/out" + env["RDMAK8S_CNI_SRC"], cni_df)
                self.assertEqual(c["readinessProbe"]["exec"]["command"],
                                 ["/usr/local/bin/install-cni.sh", "check"])

    def test_examples_request_pools_and_networks_that_an_overlay_provides(self):
        pools, nads = {}, {}
        for rel in OVERLAYS:
            objs = render(rel)
            cfg = plugin_config(objs)
            for p in cfg["pools"]:
                pools[f"{cfg['resourcePrefix']}/{p['name']}"] = p
            for nad, _ in nad_configs(objs):
                nads[nad["metadata"]["name"]] = nad
        for rel in EXAMPLES:
            for pod in pods(render(rel)):
                with self.subTest(f"{rel} {pod['metadata']['name']}"):
                    c = pod["spec"]["containers"][0]
                    req = {k: int(v) for k, v in c["resources"]["requests"].items()
                           if k.startswith("rdma/")}
                    self.assertEqual(len(req), 1, "one RDMA pool per example pod")
                    (res, count), = req.items()
                    self.assertIn(res, pools)
                    self.assertEqual(c["resources"]["limits"][res], str(count))
                    nets = pod_networks(pod)
                    self.assertTrue(nets)
                    for n in nets:
                        self.assertIn(n, nads)
                        self.assertEqual(nads[n]["metadata"]["namespace"],
                                         pod["metadata"].get("namespace"))
                        self.assertEqual(
                            nads[n]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"],
                            res)
                    if pools[res]["mode"] == "exclusive":
                        # One attachment per exclusive device, or a device goes unwired.
                        self.assertEqual(len(nets), count)
                    # Verbs register (pin) memory.
                    self.assertIn("IPC_LOCK", c["securityContext"]["capabilities"]["add"])

    def test_perftest_example_runs_ib_write_bw_server_and_client(self):
        objs = render("examples/perftest")
        script = one(objs, "ConfigMap", "perftest-scripts")["data"]["run.sh"]
        self.assertIn("ib_write_bw", script)
        roles = sorted(p["spec"]["containers"][0]["command"][-1] for p in pods(objs))
        self.assertEqual(roles, ["client", "server"])
        svc = one(objs, "Service", "perftest-server")
        server = one(objs, "Pod", "perftest-server")
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(server["metadata"]["labels"][k], v)

    def test_multi_nic_example_asks_for_as_many_vfs_as_gpus(self):
        pod = one(render("examples/nccl-multi-nic"), "Pod", "nccl-multi-nic")
        req = pod["spec"]["containers"][0]["resources"]["requests"]
        self.assertEqual(req["nvidia.com/gpu"], req["rdma/roce_vf"])
        self.assertGreater(int(req["rdma/roce_vf"]), 1)

    def test_our_images_match_dockerfiles_and_the_project_version(self):
        dirs = sorted(d for d in os.listdir(IMAGES)
                      if os.path.isfile(os.path.join(IMAGES, d, "Dockerfile")))
        used = set()
        for rel in DEPLOYABLE + EXAMPLES:
            for o in render(rel):
                spec = o.get("spec", {})
                spec = spec.get("template", {}).get("spec", spec)
                for c in spec.get("containers", []) + spec.get("initContainers", []):
                    with self.subTest(f"{rel} {c['image']}"):
                        repo, _, tag = c["image"].rpartition(":")
                        self.assertTrue(repo.startswith(OUR_REPO), c["image"])
                        name = repo[len(OUR_REPO):]
                        self.assertTrue(name.startswith("rdmak8s-"))
                        self.assertIn(name[len("rdmak8s-"):], dirs)
                        self.assertEqual(tag, project_version())
                        used.add(name[len("rdmak8s-"):])
        self.assertEqual(sorted(used), dirs, "every image is used and every used image is built")

    def test_every_container_of_every_kustomization_runs_our_image_at_the_project_version(self):
        # Issue 23, item 8: overlays/dra rendered `image: rdmak8s-device-plugin` (the base's
        # `images:` never reaches an overlay's own DaemonSet), which a cluster pulls as
        # docker.io/library/rdmak8s-device-plugin:latest. Every kustomization in the tree, found
        # by walking it (a new overlay is checked without being listed here).
        for rel in kustomizations():
            for o in render(rel):
                if o["kind"] not in WORKLOAD_KINDS:
                    continue
                spec = o["spec"] if o["kind"] == "Pod" else o["spec"]["template"]["spec"]
                for c in spec.get("containers", []) + spec.get("initContainers", []):
                    with self.subTest(f"{rel} {o['kind']}/{o['metadata']['name']} {c['name']}"):
                        repo, _, tag = c["image"].rpartition(":")
                        self.assertTrue(repo.startswith(OUR_REPO + "rdmak8s-"),
                                        f"{c['image']}: not ours (components/images not applied?)")
                        self.assertEqual(tag, project_version(), c["image"])

    def test_images_are_named_in_one_place(self):
        # The registry and tag are set once: in components/images, which base, overlays/dra and
        # the examples take. Another `images:` would be a second place to forget at an upgrade.
        import yaml
        for rel in kustomizations() + components():
            with self.subTest(rel):
                with open(os.path.join(MANIFESTS, rel, "kustomization.yaml")) as f:
                    k = yaml.safe_load(f)
                if rel == IMAGES_COMPONENT:
                    self.assertTrue(k.get("images"))
                else:
                    self.assertNotIn("images", k, "images are set in components/images only")
        with open(os.path.join(MANIFESTS, IMAGES_COMPONENT, "kustomization.yaml")) as f:
            images = yaml.safe_load(f)["images"]
        for i in images:
            with self.subTest(i["name"]):
                self.assertEqual(i["newName"], OUR_REPO + i["name"])
                self.assertEqual(i["newTag"], project_version())

    def test_dockerfiles_build_on_debian12_and_builders_run_install_deps(self):
        for d in ("device-plugin", "cni"):
            with self.subTest(d):
                stages = dockerfile_stages(os.path.join(IMAGES, d, "Dockerfile"))
                self.assertGreaterEqual(len(stages), 2, "multi-stage")
                for base, _, _ in stages:
                    self.assertRegex(base, r"^debian:12(-slim)?$")
                builder = stages[0][2]
                self.assertTrue(any(re.match(r"RUN .*bash scripts/install-deps.sh", i)
                                    for i in builder))
                final = stages[-1]
                self.assertEqual(final[0], "debian:12-slim")
                self.assertFalse(any("install-deps" in i for i in final[2]),
                                 "runtime image must not carry the build dependencies")
                self.assertTrue(any(i.startswith("ENTRYPOINT") for i in final[2]))

    def test_make_images_builds_every_dockerfile(self):
        with open(os.path.join(MANIFESTS, "..", "Makefile")) as f:
            mk = f.read()
        self.assertRegex(mk, r"(?m)^images:\n\t@bash images/build.sh$")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:], verbosity=2)
