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

SKIP = 77  # ctest SKIP_RETURN_CODE


def project_version():
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        m = re.search(r"project\(rdmak8s VERSION ([0-9.]+)", f.read())
    assert m, "project(rdmak8s VERSION ...) not found in CMakeLists.txt"
    return m.group(1)


def _tools():
    """{'KUSTOMIZE': path, 'KUBECTL': path}: trixie's kustomize 5 and kubectl 1.32.

    From the environment when both are set, else from $RDMAK8S_TOOLS_ENV, the file that the ctest
    fixture manifests.trixie_tools_fetched writes with `scripts/fetch-trixie-tools.sh --print`.
    """
    if os.environ.get("KUSTOMIZE") and os.environ.get("KUBECTL"):
        return {"KUSTOMIZE": os.environ["KUSTOMIZE"], "KUBECTL": os.environ["KUBECTL"]}
    path = os.environ.get("RDMAK8S_TOOLS_ENV", "")
    tools = {}
    try:
        with open(path) as f:
            for line in f:
                k, sep, v = line.strip().partition("=")
                if sep:
                    tools[k] = v
    except OSError as e:
        raise AssertionError(f"no kustomize/kubectl: cannot read RDMAK8S_TOOLS_ENV={path!r} ({e}); "
                             "run scripts/fetch-trixie-tools.sh --print, or set KUSTOMIZE and "
                             "KUBECTL") from None
    missing = {"KUSTOMIZE", "KUBECTL"} - set(tools)
    assert not missing, f"{path} names no {sorted(missing)}"
    return tools


def kustomize():
    return _tools()["KUSTOMIZE"]


def kubectl():
    return _tools()["KUBECTL"]


def _kustomization_kind(rel):
    import yaml
    with open(os.path.join(MANIFESTS, rel, "kustomization.yaml")) as f:
        return (yaml.safe_load(f) or {}).get("kind", "Kustomization")


def _kustomization_dirs():
    found = []
    for dirpath, _, files in os.walk(MANIFESTS):
        if "kustomization.yaml" in files:
            found.append(os.path.relpath(dirpath, MANIFESTS))
    return sorted(found)


def kustomizations():
    """Every directory under manifests/ holding a buildable kustomization.yaml (kind
    Kustomization), relative to manifests/."""
    return [rel for rel in _kustomization_dirs() if _kustomization_kind(rel) == "Kustomization"]


def components():
    """Every directory under manifests/ holding a kustomize Component, relative to manifests/."""
    return [rel for rel in _kustomization_dirs() if _kustomization_kind(rel) == "Component"]


@functools.lru_cache(maxsize=None)
def _tree_key():
    """Digest of the kustomize used and of every file under manifests/: the render cache key."""
    h = hashlib.sha256(os.path.realpath(kustomize()).encode())
    for dirpath, dirs, files in sorted(os.walk(MANIFESTS)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, MANIFESTS).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read() + b"\0")
    return h.hexdigest()[:16]


def run_render(argv, what):
    """Runs a render command; its stdout, or raises naming `what` on a non-zero exit or on any
    output on stderr (kustomize prints its deprecation warnings there and still exits 0)."""
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv[:2])} {what}: exit {proc.returncode}: "
                             f"{proc.stderr.strip()}")
    if proc.stderr.strip():
        raise AssertionError(f"{' '.join(argv[:2])} {what}: warns: {proc.stderr.strip()}")
    return proc.stdout


def _composition_dir(resource, comps):
    """A kustomization (in a fresh directory under the render cache or /tmp) of manifests/<resource>
    with manifests/<comps...>: how an operator adds a component to an overlay. kustomize takes
    only relative paths, so they are written relative to that directory."""
    import yaml
    parent = os.environ.get("RDMAK8S_RENDER_CACHE") or None
    if parent:
        os.makedirs(parent, exist_ok=True)
    d = tempfile.mkdtemp(prefix="compose-", dir=parent)
    rel = lambda r: os.path.relpath(os.path.join(MANIFESTS, r), d)
    with open(os.path.join(d, "kustomization.yaml"), "w") as f:
        yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                        "resources": [rel(resource)], "components": [rel(c) for c in comps]}, f)
    return d


def render_text(rel, comps=(), tool="kustomize"):
    """The rendered YAML of manifests/<rel> (plus manifests/<comps...> when given) by trixie's
    kustomize (`kustomize build`) or kubectl (`kubectl kustomize`); raises on an error or warning."""
    import shutil
    d = _composition_dir(rel, comps) if comps else os.path.join(MANIFESTS, rel)
    what = f"manifests/{rel}" + "".join(f" + manifests/{c}" for c in comps)
    argv = [kustomize(), "build", d] if tool == "kustomize" else [kubectl(), "kustomize", d]
    try:
        return run_render(argv, what)
    finally:
        if comps:
            shutil.rmtree(d, ignore_errors=True)


@functools.lru_cache(maxsize=None)
def render(rel, comps=()):
    """`kustomize build manifests/<rel>` (with the components manifests/<comps...> added, when
    given) parsed into a list of objects; raises with stderr on an error or any warning.

    Renders are cached under $RDMAK8S_RENDER_CACHE (set by ctest to a build directory) keyed by
    the content of manifests/ and the kustomize used, so the ~40 test processes share one render
    per directory. Writes go to a temporary name and are renamed: safe under ctest -j.
    """
    import yaml
    comps = tuple(comps)
    cache_dir = os.environ.get("RDMAK8S_RENDER_CACHE")
    text = None
    if cache_dir:
        name = "+".join((rel,) + comps).replace("/", "_")
        cached = os.path.join(cache_dir, f"{_tree_key()}-{name}.yaml")
        if os.path.exists(cached):
            with open(cached) as f:
                text = f.read()
        else:
            text = render_text(rel, comps)
            os.makedirs(cache_dir, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=cache_dir)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, cached)
    else:
        text = render_text(rel, comps)
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
