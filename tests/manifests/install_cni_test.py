#!/usr/bin/env python3
"""images/cni/install-cni.sh against a temporary directory standing for the host's /opt/cni/bin.

  install_cni_test.py [--cni PATH] InstallCniTest.test_name

--cni is the built `rdmak8s` CNI binary ($<TARGET_FILE:rdmak8s>); without it (the target does not
exist yet) a stand-in script that answers CNI VERSION the way the spec says is installed instead.
The failure cases always use crafted stand-ins: a binary that exits non-zero, one whose answer
lacks supportedVersions, one that does not support the required spec version.
"""
import argparse
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

from common import IMAGES

SCRIPT = os.path.join(IMAGES, "cni", "install-cni.sh")
REAL_CNI = None

# Like the real binary, refuses a node configuration with a key it does not know ("bogus").
GOOD = """#!/bin/sh
[ "${CNI_COMMAND:-}" = VERSION ] || { echo '{"code":4,"msg":"unexpected command"}'; exit 1; }
cat >/dev/null
if [ -f "${RDMAK8S_CNI_NODE_CONFIG:-/nonexistent}" ] && grep -q bogus "$RDMAK8S_CNI_NODE_CONFIG"; then
  echo '{"code":7,"msg":"node configuration: \\"bogus\\" is not a node configuration key"}'; exit 1
fi
echo '{"cniVersion":"1.1.0","supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]}'
"""
FAILS = """#!/bin/sh
echo '{"code":999,"msg":"cannot run"}'
exit 1
"""
NO_VERSIONS = """#!/bin/sh
echo '{"cniVersion":"1.0.0"}'
"""
OLD_SPEC_ONLY = """#!/bin/sh
echo '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}'
"""


class InstallCniTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rdmak8s-install-cni-")
        self.bin_dir = os.path.join(self.dir, "host", "opt", "cni", "bin")
        os.makedirs(self.bin_dir)
        self.dest = os.path.join(self.bin_dir, "rdmak8s")
        self.config_dir = os.path.join(self.dir, "host", "etc", "cni", "rdmak8s")
        self.node_config = os.path.join(self.config_dir, "node.json")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text, mode=0o755):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def good_source(self):
        if REAL_CNI:
            return REAL_CNI
        return self.write("rdmak8s-standin", GOOD)

    def env(self, src, keep_running="false", node_config=None):
        env = dict(os.environ)
        env.update(RDMAK8S_CNI_SRC=src, RDMAK8S_CNI_BIN_DIR=self.bin_dir,
                   RDMAK8S_CNI_KEEP_RUNNING=keep_running,
                   RDMAK8S_CNI_NODE_CONFIG_DIR=self.config_dir)
        if node_config is not None:
            env["RDMAK8S_CNI_NODE_CONFIG_JSON"] = node_config
        return env

    def run_script(self, src, *args, node_config=None):
        return subprocess.run(["sh", SCRIPT, *args], env=self.env(src, node_config=node_config),
                              capture_output=True, text=True, timeout=60)

    def leftovers(self):
        return [n for n in os.listdir(self.bin_dir) if n != "rdmak8s"]

    def content(self, path):
        with open(path, "rb") as f:
            return f.read()

    def test_installs_an_identical_executable_and_leaves_no_temporary(self):
        src = self.good_source()
        r = self.run_script(src)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.content(self.dest), self.content(src))
        self.assertEqual(stat.S_IMODE(os.stat(self.dest).st_mode), 0o755)
        self.assertEqual(self.leftovers(), [])
        self.assertIn("supportedVersions", r.stderr)

    def test_replaces_an_old_binary_by_rename_not_in_place(self):
        old = self.write("old", GOOD.replace("1.1.0", "1.0.0") + "# old\n")
        self.assertEqual(self.run_script(old).returncode, 0)
        # A runtime that opened the old binary keeps reading the old inode; a rename gives the
        # name a new inode and leaves the old one intact.
        with open(self.dest, "rb") as held:
            old_inode = os.fstat(held.fileno()).st_ino
            src = self.good_source()
            r = self.run_script(src)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotEqual(os.stat(self.dest).st_ino, old_inode)
            self.assertTrue(held.read().endswith(b"# old\n"))
        self.assertEqual(self.content(self.dest), self.content(src))
        self.assertEqual(self.leftovers(), [])

    def test_keeps_the_installed_binary_when_the_new_one_fails_version(self):
        good = self.good_source()
        self.assertEqual(self.run_script(good).returncode, 0)
        for name, text in (("fails", FAILS), ("no-versions", NO_VERSIONS),
                           ("old-spec", OLD_SPEC_ONLY)):
            with self.subTest(name):
                r = self.run_script(self.write(name, text))
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("VERSION", r.stderr)
                self.assertIn("left as it was", r.stderr)
                self.assertEqual(self.content(self.dest), self.content(good))
                self.assertEqual(self.leftovers(), [])

    def test_removes_temporaries_left_by_an_interrupted_run(self):
        stale = os.path.join(self.bin_dir, ".rdmak8s.tmp.12345")
        with open(stale, "w") as f:
            f.write("half a binary")
        r = self.run_script(self.good_source())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.leftovers(), [])

    def test_an_unchanged_binary_is_not_rewritten(self):
        src = self.good_source()
        self.assertEqual(self.run_script(src).returncode, 0)
        inode = os.stat(self.dest).st_ino
        r = self.run_script(src)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.stat(self.dest).st_ino, inode)
        self.assertIn("already this binary", r.stderr)

    def test_names_the_missing_source_or_destination(self):
        r = self.run_script(os.path.join(self.dir, "nope"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(os.path.join(self.dir, "nope") + ": source binary not found", r.stderr)
        shutil.rmtree(self.bin_dir)
        r = self.run_script(self.good_source())
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(self.bin_dir + ": not a directory", r.stderr)

    def test_check_passes_only_for_an_installed_binary_that_answers(self):
        src = self.good_source()
        self.assertNotEqual(self.run_script(src, "check").returncode, 0, "nothing installed yet")
        self.assertEqual(self.run_script(src).returncode, 0)
        self.assertEqual(self.run_script(src, "check").returncode, 0)
        shutil.copy(self.write("fails", FAILS), self.dest)
        r = self.run_script(src, "check")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("exited non-zero", r.stderr)

    def config_leftovers(self):
        return [n for n in os.listdir(self.config_dir) if n != "node.json"]

    def test_writes_the_node_configuration_atomically_readable_by_all_writable_by_root(self):
        src = self.good_source()
        node = '{"stateDir": "/var/lib/cni/rdmak8s", "allowNetconfOverrides": false}'
        r = self.run_script(src, node_config=node)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.content(self.node_config), (node + "\n").encode())
        self.assertEqual(stat.S_IMODE(os.stat(self.node_config).st_mode), 0o644)
        self.assertEqual(self.config_leftovers(), [])
        # Unchanged: not rewritten. Changed: a new inode by rename, the old one intact for a
        # plugin that has it open.
        inode = os.stat(self.node_config).st_ino
        self.assertEqual(self.run_script(src, node_config=node).returncode, 0)
        self.assertEqual(os.stat(self.node_config).st_ino, inode)
        with open(self.node_config, "rb") as held:
            r = self.run_script(src, node_config='{"logFile": "/var/log/rdmak8s-cni.log"}')
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotEqual(os.stat(self.node_config).st_ino, inode)
            self.assertEqual(held.read(), (node + "\n").encode())
        self.assertEqual(self.config_leftovers(), [])

    def test_without_a_configuration_the_defaults_are_written(self):
        r = self.run_script(self.good_source())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.content(self.node_config), b"{}\n")

    def test_keeps_the_node_configuration_the_binary_refuses_and_check_fails_on_a_bad_one(self):
        src = self.good_source()
        good = '{"stateDir": "/var/lib/cni/rdmak8s"}'
        self.assertEqual(self.run_script(src, node_config=good).returncode, 0)
        stale = os.path.join(self.config_dir, ".node.json.tmp.12345")
        with open(stale, "w") as f:
            f.write("half")
        r = self.run_script(src, node_config='{"bogus": true}')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("refused the new node configuration", r.stderr)
        self.assertIn(self.node_config + " left as it was", r.stderr)
        self.assertEqual(self.content(self.node_config), (good + "\n").encode())
        self.assertEqual(self.config_leftovers(), [])
        self.assertEqual(self.run_script(src, "check").returncode, 0)
        with open(self.node_config, "w") as f:  # broken behind our back
            f.write('{"bogus": 1}')
        r = self.run_script(src, "check")
        self.assertNotEqual(r.returncode, 0, "readiness checks the installed configuration too")
        self.assertIn("bogus", r.stderr + r.stdout)

    def test_stays_up_after_installing_and_exits_cleanly_on_sigterm(self):
        proc = subprocess.Popen(["sh", SCRIPT], env=self.env(self.good_source(), "true"),
                                stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            while "waiting for termination" not in line:
                line = proc.stderr.readline()
                self.assertNotEqual(line, "", "installer exited before waiting")
            self.assertIsNone(proc.poll(), "installer must keep running")
            self.assertTrue(os.path.exists(self.dest))
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=30), 0)
            self.assertTrue(os.path.exists(self.dest), "the binary stays installed")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stderr.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cni", default="")
    opts, rest = parser.parse_known_args()
    REAL_CNI = opts.cni or None
    if REAL_CNI and not os.access(REAL_CNI, os.X_OK):
        sys.exit(f"--cni {REAL_CNI}: not an executable file (is the target built?)")
    print("install-cni tests use " + (REAL_CNI or "a stand-in CNI binary (no rdmak8s target yet)"))
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
