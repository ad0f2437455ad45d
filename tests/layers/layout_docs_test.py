#!/usr/bin/env python3
"""README's layout block and docs/layout.md against the tree: every folder of the checkout is in
the README's block, and every header of the product (and every sub-folder of a component) is
named in docs/layout.md, so a room that moves or appears without its line fails here instead of
leaving a newcomer to search for it."""

import fnmatch
import os
import re
import subprocess
import unittest

SOURCE_DIR = os.environ.get("RDMAK8S_SOURCE_DIR",
                            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# The product's folders whose headers are rooms (docs/layout.md's tables).
COMPONENTS = ("common", "node", "device-plugin", "dra", "cni", "inspect")


def tracked_files(root):
    """The checkout's files as git knows them; a plain walk when it is no git checkout."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                             text=True).stdout.split("\n")
        return [f for f in out if f and os.path.exists(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subdirs, names in os.walk(root):
            subdirs[:] = [s for s in subdirs if not s.startswith(".") and s != "build"]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def readme_layout_block(text):
    m = re.search(r"^## Layout\n\n```\n(.*?)^```", text, re.S | re.M)
    return m.group(1) if m else ""


def named_in(doc, rel):
    """Whether docs/layout.md names `rel` (a path inside its component): by that path, by its
    file name in a group of one folder (`scan.h`, `count.h`), or by a glob (`check*.h`)."""
    base = os.path.basename(rel)
    if f"`{rel}`" in doc or f"`{base}`" in doc or re.search(rf"`{re.escape(rel)}[`,)]", doc):
        return True
    return any(fnmatch.fnmatch(base, g) for g in re.findall(r"`([a-z_]*\*[a-z_.]*)`", doc))


def missing_rooms(root, files, doc):
    out = []
    for f in files:
        top, _, rel = f.partition("/")
        if top not in COMPONENTS or not f.endswith(".h") or "/proto/" in f:
            continue
        if top == "common":
            rel = re.sub(r"^include/rdmak8s/", "", rel)
        if not named_in(doc, rel):
            out.append(f)
    return out


def missing_folders(files, doc, block):
    out = []
    tops = {f.split("/")[0] for f in files if "/" in f and not f.startswith(".")}
    for top in sorted(tops):
        if not re.search(rf"(^|[\s,]){re.escape(top)}/", block, re.M):
            out.append(f"README layout: {top}/")
    subs = {"/".join(f.split("/")[:2]) for f in files
            if f.split("/")[0] in ("device-plugin", "dra", "node") and f.count("/") >= 2}
    for sub in sorted(subs):
        name = sub.split("/")[1]
        if f"`{name}/" not in doc and f"`{sub}/" not in doc:
            out.append(f"docs/layout.md: {sub}/")
    # common/'s areas: common/src/<area>/ with its headers in common/include/rdmak8s/<area>/.
    areas = {m.group(1) for f in files
             for m in [re.match(r"common/(?:src|include/rdmak8s)/([a-z_]+)/", f)] if m}
    for area in sorted(areas):
        if f"`{area}/`" not in doc:
            out.append(f"docs/layout.md: common/ area {area}/")
    return out


class LayoutDocsTest(unittest.TestCase):
    def setUp(self):
        self.files = tracked_files(SOURCE_DIR)
        with open(os.path.join(SOURCE_DIR, "docs", "layout.md"), encoding="utf-8") as f:
            self.doc = f.read()
        with open(os.path.join(SOURCE_DIR, "README.md"), encoding="utf-8") as f:
            self.block = readme_layout_block(f.read())

    def test_every_room_of_the_product_is_in_docs_layout(self):
        missing = missing_rooms(SOURCE_DIR, self.files, self.doc)
        self.assertEqual(missing, [], "headers docs/layout.md does not name:\n" + "\n".join(missing))

    def test_every_folder_is_in_readme_layout_and_every_component_folder_in_docs_layout(self):
        self.assertNotEqual(self.block, "", "README.md has no ## Layout block")
        missing = missing_folders(self.files, self.doc, self.block)
        self.assertEqual(missing, [], "folders left out:\n" + "\n".join(missing))

    def test_a_room_or_folder_left_out_is_named(self):
        files = ["cni/plugin.h", "cni/new_room.h", "device-plugin/pools/pools.h", "images/x"]
        doc = "| `plugin.h` | ... |\n| `pools/pools.h` | ... |\n"
        self.assertEqual(missing_rooms("", files, doc), ["cni/new_room.h"])
        self.assertEqual(missing_folders(files, doc, "cni/  x\ndevice-plugin/  y\n"),
                         ["README layout: images/"])
        self.assertEqual(missing_folders(["device-plugin/metrics/m.h"], "`m.h`", "device-plugin/"),
                         ["docs/layout.md: device-plugin/metrics/"])
        self.assertEqual(missing_folders(["common/src/qos/q.cc", "common/include/rdmak8s/base/s.h"],
                                         "### `qos/`: the QoS policy", "common/"),
                         ["docs/layout.md: common/ area base/"])


if __name__ == "__main__":
    unittest.main()
