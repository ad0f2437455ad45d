"""Shared helpers of the manifest and image tests: paths, rendering, small accessors."""
import functools
import hashlib
import json
import os
import re
import subprocess
import tempfile

SOURCE_DIR = os.environ.get(
    "RDMAK8S_SOURCE_DIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
MANIFESTS = os.path.join(SOURCE_DIR, "manifests")
IMAGES = os.path.join(SOURCE_DIR, "images")
KUBECTL = os.environ.get("KUBECTL", "kubectl")

SKIP = 77  # ctest SKIP_RETURN_CODE


def project_version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        m = re.search(r"project\(rdmak8s VERSION ([0-9.]+)", f.read())
    assert m, "project(rdmak8s VERSION ...) not found in CMakeLists.txt"
    return m.group(1)


def kustomizations():
    """Every directory under manifests/ holding a kustomization.yaml, relative to manifests/."""
    found = []
    for dirpath, _, files in os.walk(MANIFESTS):
        if "kustomization.yaml" in files:
            found.append(os.path.relpath(dirpath, MANIFESTS))
    return sorted(found)


@functools.lru_cache(maxsize=None)
def _tree_key():
    """Digest of the kubectl used and of every file under manifests/: the render cache key."""
    h = hashlib.sha256(KUBECTL.encode())
    for dirpath, dirs, files in sorted(os.walk(MANIFESTS)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, MANIFESTS).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read() + b"\0")
    return h.hexdigest()[:16]


def _kustomize(rel):
    proc = subprocess.run([KUBECTL, "kustomize", os.path.join(MANIFESTS, rel)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"{KUBECTL} kustomize manifests/{rel}: exit {proc.returncode}: "
                             f"{proc.stderr.strip()}")
    return proc.stdout


@functools.lru_cache(maxsize=None)
def render(rel):
    """`kubectl kustomize manifests/<rel>` parsed into a list of objects; raises with stderr.

    Renders are cached under $RDMAK8S_RENDER_CACHE (set by ctest to a build directory) keyed by
    the content of manifests/ and the kubectl used, so the ~40 test processes share one render
    per directory. Writes go to a temporary name and are renamed: safe under ctest -j.
    """
    import yaml
    cache_dir = os.environ.get("RDMAK8S_RENDER_CACHE")
    text = None
    if cache_dir:
        cached = os.path.join(cache_dir, f"{_tree_key()}-{rel.replace('/', '_')}.yaml")
        if os.path.exists(cached):
            with open(cached) as f:
                text = f.read()
        else:
            text = _kustomize(rel)
            os.makedirs(cache_dir, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=cache_dir)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, cached)
    else:
        text = _kustomize(rel)
    return [d for d in yaml.safe_load_all(text) if d]


def find(objs, kind, name=None):
    return [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objs, kind, name):
    found = find(objs, kind, name)
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def plugin_config(objs):
    """The device plugin's config JSON as the DaemonSet sees it (ConfigMap volume + --config)."""
    ds = one(objs, "DaemonSet", "rdmak8s-device-plugin")
    spec = ds["spec"]["template"]["spec"]
    container = spec["containers"][0]
    config_arg = [a for a in container["args"] if a.startswith("--config=")]
    assert len(config_arg) == 1, f"one --config= argument expected, got {config_arg}"
    path = config_arg[0].split("=", 1)[1]
    mounts = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
    assert mounts, f"--config={path} is not under any volume mount"
    volume = [v for v in spec["volumes"] if v["name"] == mounts[0]["name"]][0]
    assert "configMap" in volume, f"{path} is mounted from {volume}, not a ConfigMap"
    cm = one(objs, "ConfigMap", volume["configMap"]["name"])
    assert cm["metadata"].get("namespace") == ds["metadata"].get("namespace"), \
        "ConfigMap and DaemonSet must share a namespace"
    key = path[len(mounts[0]["mountPath"]) + 1:]
    assert key in cm["data"], f"ConfigMap {cm['metadata']['name']} has no key {key}"
    return json.loads(cm["data"][key])


def nad_configs(objs):
    """(NAD object, parsed conflist) for every NetworkAttachmentDefinition."""
    return [(n, json.loads(n["spec"]["config"])) for n in find(objs, "NetworkAttachmentDefinition")]


def dockerfile_stages(path):
    """[(base image, stage name or None, [instruction lines])] of a Dockerfile."""
    stages = []
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?", line, re.I)
        if m:
            stages.append((m.group(1), m.group(2), []))
        elif stages:
            stages[-1][2].append(line)
    return stages
