#!/usr/bin/env python3
"""The product's layers, checked: every #include and every target_link_libraries points down.

Layers, lowest first (docs/layout.md):
  common/                          the device model, sysfs, netlink, netns, files: for everyone
  node/                            the node-agent core both agents run on
  device-plugin/, dra/, cni/       the three node components; none uses another
  inspect/                         rdmak8s-inspect and the node check: may use everything below
tests/, bench/ and fuzz/ may use anything and are not checked.

A file of layer A may include a file of layer B when A is B, or B is a lower layer. An include is
resolved as the compiler would find it in this tree: beside the including file, from the tree's
root, from <layer>/include/, from <layer>/src/ (a library's private "<area>/<name>.h"), or (a
generated *.pb.h) from the <layer>/proto/ that holds its .proto. Includes that resolve to nothing
in the tree (the standard library, third parties) are not the product's and are skipped. A target defined in a layer's CMakeLists.txt may link targets
of its own layer and of lower ones only.

  check_layers.py [<source root>]    prints each violation as file:line: what, exits 1 if any
"""

import os
import re
import sys

RANK = {"common": 0, "node": 1, "device-plugin": 2, "dra": 2, "cni": 2, "inspect": 3}

# Allowed exceptions, (from layer, to layer, why). Each must still be needed: an allowance that
# no include and no link uses any more fails the check, so the list only shrinks.
ALLOWED = []

# Folders inside a layer that point one way: (from folder, to folder, why). An include from a file
# under the first of a folder under the second is a violation.
FOLDER_RULES = [
    ("device-plugin/pools/", "device-plugin/kubelet/",
     "pools/ hands its state to a PoolStateSink; kubelet/ uses pools/, never the reverse"),
]

# The areas inside a layer, lowest first: an area's files include only its own area and lower ones
# (common/src/<area>/ and common/include/rdmak8s/<area>/ are one area).
AREA_RANK = {
    "common": {"base": 0, "device": 1, "netlink": 1, "records": 1, "discovery": 2, "qos": 2},
}
AREA_RE = re.compile(r"^(common)/(?:src|include/rdmak8s)/([a-z_]+)/")

SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".c", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SKIP_DIRS = {"build", ".git", "node_modules"}


def layer_of(rel):
    """The layer a path relative to the root belongs to, or None (tests/, bench/, scripts...)."""
    top = rel.split("/", 1)[0]
    return top if top in RANK else None


def allowed(frm, to):
    """(ok, allowance used or None) for a use of layer `to` from layer `frm`."""
    if frm == to or RANK[to] < RANK[frm]:
        return True, None
    for a in ALLOWED:
        if a[0] == frm and a[1] == to:
            return True, a
    return False, None


def why_not(frm, to):
    if RANK[to] == RANK[frm]:
        return f"{frm}/ and {to}/ are peers: neither may use the other"
    return f"{to}/ is a higher layer than {frm}/"


def product_files(root):
    for top in sorted(RANK):
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for f in sorted(filenames):
                yield os.path.join(dirpath, f)


def resolve_include(root, including, name):
    """The tree path (relative to root) that `#include name` in `including` finds, or None."""
    candidates = [os.path.join(os.path.dirname(including), name), os.path.join(root, name)]
    candidates += [os.path.join(root, top, "include", name) for top in sorted(RANK)]
    # A library's private headers, included as "<area>/<name>.h" (common/src/device/sysfs.h).
    candidates += [os.path.join(root, top, "src", name) for top in sorted(RANK)]
    for suffix in (".grpc.pb.h", ".pb.h"):
        if name.endswith(suffix):
            proto = name[: -len(suffix)] + ".proto"
            candidates += [os.path.join(root, top, "proto", proto) for top in sorted(RANK)]
            break
    for c in candidates:
        if os.path.isfile(c):
            return os.path.relpath(os.path.normpath(c), root)
    return None


def check_includes(root, used):
    """Violations of the include rule, as "file:line: ..." strings; adds used allowances."""
    out = []
    for path in product_files(root):
        if not path.endswith(SOURCE_SUFFIXES):
            continue
        rel = os.path.relpath(path, root)
        frm = layer_of(rel)
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target = resolve_include(root, path, m.group(2))
                to = layer_of(target) if target else None
                if to is None:
                    continue
                why = judge(frm, to, used) or folder_rule(rel, target) or area_rule(rel, target)
                if why:
                    out.append(f"{rel}:{lineno}: includes {m.group(2)} ({target}): {why}")
    return out


def folder_rule(rel, target):
    """Why `rel` may not include `target` by FOLDER_RULES, or None."""
    for frm, to, why in FOLDER_RULES:
        if rel.startswith(frm) and target.startswith(to):
            return why
    return None


def area_rule(rel, target):
    """Why `rel` may not include `target` by AREA_RANK, or None."""
    a, b = AREA_RE.match(rel), AREA_RE.match(target)
    if not a or not b or a.group(1) != b.group(1) or a.group(2) == b.group(2):
        return None
    ranks = AREA_RANK[a.group(1)]
    frm, to = a.group(2), b.group(2)
    if frm not in ranks or to not in ranks:
        return f"{a.group(1)}/ has no area {frm if frm not in ranks else to}/ (AREA_RANK)"
    if ranks[to] >= ranks[frm]:
        return (f"{to}/ is not below {frm}/ in {a.group(1)}/ "
                f"({'a peer area' if ranks[to] == ranks[frm] else 'a higher area'})")
    return None


def cmake_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        if "CMakeLists.txt" in filenames:
            yield os.path.join(dirpath, "CMakeLists.txt")


def cmake_commands(text, command):
    """(line, argument text) of each call of `command` in a CMakeLists text, comments removed."""
    text = re.sub(r"#[^\n]*", "", text)
    for m in re.finditer(r"\b" + command + r"\s*\(", text, re.IGNORECASE):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        yield text.count("\n", 0, m.start()) + 1, text[m.end(): i - 1]


def check_links(root, used):
    """Violations of the link rule: a target of one layer linking a target of a higher one."""
    defined = {}  # target -> layer (None: tests/, bench/, fuzz/... link anything)
    texts = {}
    for path in cmake_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            texts[rel] = f.read()
        for command in ("add_library", "add_executable"):
            for _, args in cmake_commands(texts[rel], command):
                words = args.split()
                if words and not words[0].startswith("$"):
                    defined[words[0]] = layer_of(rel)
    out = []
    for rel, text in texts.items():
        for lineno, args in cmake_commands(text, "target_link_libraries"):
            words = re.findall(r"[A-Za-z0-9_.+\-]+(?:::[A-Za-z0-9_.+\-]+)*", args)
            if not words or defined.get(words[0]) is None:
                continue
            frm = defined[words[0]]
            for dep in words[1:]:
                to = defined.get(dep)
                if to is None:
                    continue
                why = judge(frm, to, used)
                if why:
                    out.append(f"{rel}:{lineno}: {words[0]} ({frm}/) links {dep} ({to}/): {why}")
    return out


# A component's namespace, as its code names it: another layer's code naming it ("dp::X" in dra/)
# reaches into that component, even where no include shows it (a forward declaration, a comment
# that sends a reader there).
NAMESPACES = {"device-plugin": "dp", "dra": "dra", "cni": "cni"}


def check_namespaces(root):
    """Uses of a peer component's namespace ("dp::" in dra/, "dra::" in device-plugin/...), as
    "file:line: ..." strings."""
    out = []
    for path in product_files(root):
        if not path.endswith(SOURCE_SUFFIXES):
            continue
        rel = os.path.relpath(path, root)
        frm = layer_of(rel)
        for to, ns in NAMESPACES.items():
            if to == frm or RANK[to] < RANK[frm]:
                continue
            pattern = re.compile(r"(?<![A-Za-z0-9_])" + ns + r"::")
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    if pattern.search(line):
                        out.append(f"{rel}:{lineno}: names {ns}:: ({to}/): {why_not(frm, to)}")
    return out


def judge(frm, to, used):
    """None when layer `frm` may use layer `to` (recording the allowance that lets it in
    `used`), else why not."""
    ok, allowance = allowed(frm, to)
    if allowance:
        used.add(allowance)
    return None if ok else why_not(frm, to)


def stale_allowances(used):
    return [f"check_layers.py: ALLOWED ({a[0]} -> {a[1]}, {a[2]}) is no longer needed: "
            f"remove it" for a in ALLOWED if a not in used]


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    used = set()
    problems = check_includes(root, used) + check_links(root, used) + check_namespaces(root)
    problems += stale_allowances(used)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} use(s) against the layers (docs/layout.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
