#!/usr/bin/env python3
"""The CMake target rdmak8s_e2e_payload is exactly what the e2e VM image needs (issue 26 item 5).

  e2e_payload_test.py --build-dir DIR E2ePayloadTest.test_name

make e2e, e2e-two-nodes, demo-two-nodes and bench-e2e build only that target, so it must hold
every binary e2e/build-image.sh copies into the image (PROJECT_BINARIES there: a missing one is
silently left out of the image and the scenario fails in the VM, minutes later), and nothing else:
a test, fuzz target or benchmark in it brings back the cold build of every target the VM never
runs. make demo and make demo-dra build less: rdmak8s_demo_payload and rdmak8s_demo_dra_payload,
the binaries their one scenario names in its `# e2e-needs:` header.
The dependency set is ninja's own (`ninja -t inputs`, every file the target's build reads).
"""
import argparse
import os
import re
import subprocess
import sys
import unittest

from common import SOURCE_DIR

BUILD_DIR = None
TARGET = "rdmak8s_e2e_payload"
# make rule -> the one CMake target it builds.
DEMO_RULES = {"demo": "rdmak8s_demo_payload", "demo-dra": "rdmak8s_demo_dra_payload",
              "demo-two-nodes": TARGET, "e2e": TARGET, "e2e-two-nodes": TARGET, "bench-e2e": TARGET}
# The demos' targets and the scenario (e2e/guest/scenarios/<name>.sh) each one runs.
DEMO_TARGETS = {"rdmak8s_demo_payload": "demo", "rdmak8s_demo_dra_payload": "demo-dra"}


def image_binaries():
    """PROJECT_BINARIES=(...) of e2e/build-image.sh: the file names the image takes from the build."""
    with open(os.path.join(SOURCE_DIR, "e2e", "build-image.sh")) as f:
        m = re.search(r"^PROJECT_BINARIES=\(([^)]*)\)", f.read(), re.M)
    assert m, "PROJECT_BINARIES=(...) not found in e2e/build-image.sh"
    names = m.group(1).split()
    assert names, "PROJECT_BINARIES of e2e/build-image.sh is empty"
    return names


def scenario_needs(scenario):
    """The `# e2e-needs:` header of e2e/guest/scenarios/<scenario>.sh: the project binaries it runs."""
    path = os.path.join(SOURCE_DIR, "e2e", "guest", "scenarios", scenario + ".sh")
    with open(path) as f:
        m = re.search(r"^# e2e-needs:(.*)$", f.read(), re.M)
    assert m, "no '# e2e-needs:' header in %s" % path
    names = m.group(1).split()
    assert names, "the '# e2e-needs:' header of %s names nothing" % path
    return names


def payload_inputs(build_dir=None, target=TARGET):
    """Every path ninja reads to build target (transitively), relative to the build dir."""
    build_dir = build_dir or BUILD_DIR
    r = subprocess.run(["ninja", "-C", build_dir, "-t", "inputs", target],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, (
        "ninja -t inputs %s in %s failed (exit %d): %s" %
        (target, build_dir, r.returncode, (r.stderr or r.stdout).strip()))
    paths = {line.strip() for line in r.stdout.splitlines() if line.strip()}
    # -t inputs leaves out what phony edges name directly (the binaries of the target itself):
    # follow those with -t query.
    todo, seen = [target], set()
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        q = subprocess.run(["ninja", "-C", build_dir, "-t", "query", node],
                           capture_output=True, text=True, check=False)
        assert q.returncode == 0, "ninja -t query %s in %s failed: %s" % (node, build_dir, q.stderr.strip())
        m = re.search(r"^  input: phony\n((?:    .*\n)*)", q.stdout, re.M)
        if not m:
            continue  # a real build edge: its inputs are in -t inputs already
        for line in m.group(1).splitlines():
            dep = line.strip().lstrip("|").strip()
            if dep:
                paths.add(dep)
                todo.append(dep)
    return sorted(paths)


def not_shipped(paths):
    """The inputs that belong to a test, a fuzz target or a benchmark, with why."""
    bad = []
    for p in paths:
        base = os.path.basename(p)
        parts = p.split("/")
        if parts[0] in ("fuzz", "bench"):
            bad.append((p, "built from the %s/ directory" % parts[0]))
        elif re.search(r"lib(gtest|gmock|benchmark)(_main)?\.(a|so)", base):
            bad.append((p, "links %s, which only tests and benchmarks link" % base))
        elif re.search(r"CMakeFiles/[^/]*_tests?\.dir/", p) or re.search(r"_tests?$", base):
            bad.append((p, "a test's object or binary"))
    return bad


class E2ePayloadTest(unittest.TestCase):
    def test_e2e_payload_target_builds_every_binary_the_vm_image_copies(self):
        produced = {os.path.basename(p) for p in payload_inputs()}
        missing = [b for b in image_binaries() if b not in produced]
        self.assertEqual(missing, [], "e2e/build-image.sh copies %s into the VM image but the CMake "
                         "target %s does not build it: add it to add_dependencies(%s ...) in "
                         "CMakeLists.txt" % (missing, TARGET, TARGET))

    def test_e2e_payload_target_builds_no_test_fuzz_target_or_benchmark(self):
        bad = not_shipped(payload_inputs())
        self.assertEqual(bad, [], "the CMake target %s (what make demo builds) reaches beyond the "
                         "binaries the VM runs:\n%s" % (TARGET, "\n".join("  %s: %s" % b for b in bad)))

    def test_demo_payloads_build_every_binary_their_scenario_needs(self):
        for target, scenario in DEMO_TARGETS.items():
            produced = {os.path.basename(p) for p in payload_inputs(target=target)}
            missing = [b for b in scenario_needs(scenario) if b not in produced]
            self.assertEqual(missing, [], "e2e/guest/scenarios/%s.sh needs %s but the CMake target %s "
                             "(what make %s builds) does not build it: add it to add_dependencies(%s ...) "
                             "in CMakeLists.txt" % (scenario, missing, target, scenario, target))

    def test_demo_payloads_build_no_test_fuzz_target_or_benchmark(self):
        for target in DEMO_TARGETS:
            bad = not_shipped(payload_inputs(target=target))
            self.assertEqual(bad, [], "the CMake target %s reaches beyond the binaries the VM runs:\n%s"
                             % (target, "\n".join("  %s: %s" % b for b in bad)))

    def test_not_shipped_names_a_test_a_fuzz_target_and_gtest(self):
        # The rule itself, on paths shaped like this build's: a check that can never fail proves nothing.
        bad = dict(not_shipped([
            "tests/unit/common/CMakeFiles/common_discovery_test.dir/discovery_test.cc.o",
            "fuzz/fuzz_netconf", "/usr/lib/x86_64-linux-gnu/libgtest_main.a",
            "bench/rdmak8s_bench", "device-plugin/rdmak8s-device-plugin",
            "tests/rdmak8s-fake-kubelet", "tests/tools/cni-driver/cni-driver"]))
        self.assertEqual(sorted(bad), sorted([
            "tests/unit/common/CMakeFiles/common_discovery_test.dir/discovery_test.cc.o",
            "fuzz/fuzz_netconf", "/usr/lib/x86_64-linux-gnu/libgtest_main.a", "bench/rdmak8s_bench"]))

    def test_demo_rules_of_the_makefile_build_only_the_payload(self):
        for rule, target in DEMO_RULES.items():
            r = subprocess.run(["make", "-n", "-C", SOURCE_DIR, "--no-print-directory", rule],
                               capture_output=True, text=True, check=False)
            self.assertEqual(r.returncode, 0, "make -n %s failed: %s" % (rule, r.stderr.strip()))
            builds = [l for l in r.stdout.splitlines() if "cmake --build" in l]
            self.assertTrue(builds, "make %s builds nothing with cmake --build:\n%s" % (rule, r.stdout))
            for l in builds:
                self.assertTrue(l.rstrip().endswith("--target %s" % target),
                                "make %s should build only the CMake target %s: %s" % (rule, target, l.strip()))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    args, rest = ap.parse_known_args()
    BUILD_DIR = args.build_dir
    unittest.main(argv=[sys.argv[0]] + rest)
