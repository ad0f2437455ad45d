#!/usr/bin/env python3
"""The layer check (check_layers.py) on the product, and on small trees that break each rule, so
a checker that stopped seeing includes or links cannot pass the product by accident."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_layers  # noqa: E402

SOURCE_DIR = os.environ.get("RDMAK8S_SOURCE_DIR",
                            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def tree(files):
    """A temporary source tree with `files` (path -> text); the caller cleans it up."""
    d = tempfile.TemporaryDirectory()
    for rel, text in files.items():
        path = os.path.join(d.name, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return d


class LayersTest(unittest.TestCase):
    def test_product_includes_point_down(self):
        used = set()
        problems = check_layers.check_includes(SOURCE_DIR, used)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_product_links_point_down(self):
        used = set()
        problems = check_layers.check_links(SOURCE_DIR, used)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_product_names_no_peer_components_namespace(self):
        # Both agents run on node/: no dp:: in dra/, no dra:: in device-plugin/ (issue 26).
        problems = check_layers.check_namespaces(SOURCE_DIR)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_every_allowance_is_still_needed(self):
        used = set()
        check_layers.check_includes(SOURCE_DIR, used)
        check_layers.check_links(SOURCE_DIR, used)
        stale = check_layers.stale_allowances(used)
        self.assertEqual(stale, [], "\n" + "\n".join(stale))

    def test_common_including_a_component_is_named_with_file_and_line(self):
        with tree({"common/src/a.cc": '#include <vector>\n#include "cni/netconf.h"\n',
                   "cni/netconf.h": ""}) as root:
            problems = check_layers.check_includes(root, set())
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("common/src/a.cc:2: includes cni/netconf.h", problems[0])
        self.assertIn("higher layer", problems[0])

    def test_peer_components_may_not_include_each_other(self):
        with tree({"cni/a.cc": '#include "device-plugin/config/config.h"\n',
                   "device-plugin/config/config.h": ""}) as root:
            problems = check_layers.check_includes(root, set())
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("peers", problems[0])

    def test_the_device_plugins_pools_may_not_include_its_kubelet_rooms(self):
        with tree({"device-plugin/pools/a.h": '#include "device-plugin/kubelet/plugin_server.h"\n',
                   "device-plugin/kubelet/plugin_server.h": '#include "device-plugin/pools/a.h"\n'}) as root:
            problems = check_layers.check_includes(root, set())
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("device-plugin/pools/a.h:1: includes device-plugin/kubelet/plugin_server.h", problems[0])
        self.assertIn("PoolStateSink", problems[0])

    def test_commons_areas_include_only_lower_areas(self):
        # base/ under everything; device/, netlink/, records/ on base/; discovery/, qos/ above.
        with tree({"common/src/base/a.cc": '#include "rdmak8s/device/device.h"\n',
                   "common/src/device/b.cc": '#include "rdmak8s/netlink/netns.h"\n'
                                             '#include "rdmak8s/base/status.h"\n',
                   "common/src/discovery/c.cc": '#include "rdmak8s/device/device.h"\n'
                                                '#include "device/sysfs.h"\n#include "d.h"\n',
                   "common/src/discovery/d.h": "",
                   "common/src/misc/e.cc": '#include "rdmak8s/base/status.h"\n',
                   "common/src/device/sysfs.h": '#include "discovery/d.h"\n',
                   "common/include/rdmak8s/device/device.h": "",
                   "common/include/rdmak8s/netlink/netns.h": "",
                   "common/include/rdmak8s/base/status.h": ""}) as root:
            problems = check_layers.check_includes(root, set())
        self.assertEqual(len(problems), 4, problems)
        self.assertIn("common/src/base/a.cc:1: includes rdmak8s/device/device.h", problems[0])
        self.assertIn("a higher area", problems[0])
        self.assertIn("common/src/device/b.cc:1: includes rdmak8s/netlink/netns.h", problems[1])
        self.assertIn("a peer area", problems[1])
        self.assertIn("common/src/device/sysfs.h:1: includes discovery/d.h "
                      "(common/src/discovery/d.h)", problems[2])
        self.assertIn("common/ has no area misc/", problems[3])

    def test_includes_resolve_beside_the_file_from_include_dirs_and_protos(self):
        with tree({"common/src/a.cc": '#include "b.h"\n#include "rdmak8s/node/x.h"\n'
                                      '#include "deviceplugin/v1/api.grpc.pb.h"\n',
                   "common/src/b.h": "",
                   "node/include/rdmak8s/node/x.h": "",
                   "device-plugin/proto/deviceplugin/v1/api.proto": ""}) as root:
            problems = check_layers.check_includes(root, set())
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("rdmak8s/node/x.h (node/include/rdmak8s/node/x.h)", problems[0])
        self.assertIn("deviceplugin/v1/api.grpc.pb.h", problems[1])

    def test_dra_naming_the_device_plugins_namespace_is_named_with_file_and_line(self):
        with tree({"dra/a.cc": "// see dp::Foo\nint x = rdmak8s::dp::Bar();\nint y = kdp::z;\n",
                   "device-plugin/b.h": "dra::Claim c;\n",
                   "inspect/c.cc": "dp::Foo f;\n",
                   "device-plugin/d.cc": "dp::Foo f;\n"}) as root:
            problems = check_layers.check_namespaces(root)
        self.assertEqual(len(problems), 3, problems)
        self.assertIn("device-plugin/b.h:1: names dra::", problems[0])
        self.assertIn("dra/a.cc:1: names dp::", problems[1])
        self.assertIn("dra/a.cc:2: names dp::", problems[2])
        self.assertIn("peers", problems[1])

    def test_top_layer_and_tests_may_include_anything_below(self):
        with tree({"inspect/a.cc": '#include "cni/netconf.h"\n#include "rdmak8s/base/status.h"\n',
                   "tests/unit/a.cc": '#include "inspect/a.cc"\n',
                   "cni/netconf.h": "", "common/include/rdmak8s/base/status.h": ""}) as root:
            self.assertEqual(check_layers.check_includes(root, set()), [])

    def test_common_library_linking_a_component_is_named(self):
        with tree({"common/CMakeLists.txt": "add_library(c STATIC a.cc)\n"
                                            "target_link_libraries(c PUBLIC\n  Threads::Threads # x\n  k)\n",
                   "cni/CMakeLists.txt": "add_library(k STATIC b.cc)\n"
                                         "target_link_libraries(k PUBLIC c)\n"}) as root:
            problems = check_layers.check_links(root, set())
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("common/CMakeLists.txt:2: c (common/) links k (cni/)", problems[0])

    def test_allowance_no_include_uses_is_reported_stale(self):
        with tree({"dra/a.cc": '#include "rdmak8s/base/status.h"\n',
                   "common/include/rdmak8s/base/status.h": ""}) as root:
            used = set()
            check_layers.check_includes(root, used)
            check_layers.check_links(root, used)
        stale = check_layers.stale_allowances(used)
        self.assertEqual(len(stale), len(check_layers.ALLOWED), stale)


if __name__ == "__main__":
    unittest.main()
