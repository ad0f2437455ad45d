#!/usr/bin/env python3
"""images/build.sh (`make images`) with stand-in container engines on a private PATH.

  build_images_test.py BuildImagesTest.test_name
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from common import IMAGES, SOURCE_DIR, project_version

SCRIPT = os.path.join(IMAGES, "build.sh")
TOOLS = ["bash", "sh", "sed", "dirname", "basename", "cat", "printf"]

# A stand-in engine: `info` succeeds when $ENGINE_UP says so; `build`/`bud` logs its arguments
# and fails when $ENGINE_FAIL_ON is part of them.
ENGINE = """#!/bin/sh
name=$(basename "$0")
case " $ENGINE_UP " in *" $name "*) up=1 ;; *) up=0 ;; esac
case $1 in
  info) [ $up = 1 ] ;;
  build|bud)
    echo "$name $*" >> "$ENGINE_LOG"
    case "$*" in *"${ENGINE_FAIL_ON:-@none@}"*) exit 1 ;; esac ;;
  *) exit 1 ;;
esac
"""


class BuildImagesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rdmak8s-build-images-")
        self.bin = os.path.join(self.dir, "bin")
        os.makedirs(self.bin)
        for t in TOOLS:
            os.symlink(shutil.which(t), os.path.join(self.bin, t))
        self.log = os.path.join(self.dir, "log")
        self.dirs = sorted(d for d in os.listdir(IMAGES)
                           if os.path.isfile(os.path.join(IMAGES, d, "Dockerfile")))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def engines(self, *names):
        for n in names:
            p = os.path.join(self.bin, n)
            with open(p, "w") as f:
                f.write(ENGINE)
            os.chmod(p, 0o755)

    def run_build(self, up="", fail_on="", **extra):
        env = {"PATH": self.bin, "ENGINE_UP": up, "ENGINE_LOG": self.log,
               "ENGINE_FAIL_ON": fail_on or "@none@", **extra}
        return subprocess.run([os.path.join(self.bin, "bash"), SCRIPT], env=env,
                              capture_output=True, text=True, timeout=60)

    def logged(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().splitlines()

    def test_without_a_working_engine_says_so_and_exits_2(self):
        self.engines("docker")  # a CLI whose daemon is not there
        r = self.run_build()
        self.assertEqual(r.returncode, 2)
        self.assertIn("no working container engine; no image was built", r.stderr)
        self.assertIn("docker: installed but 'docker info' fails", r.stderr)
        self.assertIn("podman: not installed", r.stderr)
        self.assertIn("buildah: not installed", r.stderr)
        self.assertEqual(self.logged(), [])

    def test_builds_every_dockerfile_with_the_manifests_image_names(self):
        self.engines("docker")
        r = self.run_build(up="docker")
        self.assertEqual(r.returncode, 0, r.stderr)
        tag = project_version()
        self.assertEqual(self.logged(), [
            f"docker build -f {IMAGES}/{d}/Dockerfile -t ghcr.io/rdmak8s/rdmak8s-{d}:{tag} "
            f"{SOURCE_DIR}" for d in self.dirs])

    def test_falls_back_to_the_first_engine_that_answers(self):
        self.engines("docker", "podman", "buildah")
        r = self.run_build(up="buildah podman")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(self.logged())
        self.assertTrue(all(line.startswith("podman build ") for line in self.logged()))
        r = self.run_build(up="buildah", IMAGE_REPO="registry.local/x", IMAGE_TAG="dev")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"buildah bud -f {IMAGES}/cni/Dockerfile -t registry.local/x/rdmak8s-cni:dev "
                      f"{SOURCE_DIR}", self.logged())

    def test_a_failed_build_fails_make_images(self):
        self.engines("docker")
        r = self.run_build(up="docker", fail_on="rdmak8s-cni:")
        self.assertEqual(r.returncode, 1)
        self.assertIn("rdmak8s-cni:", r.stderr)
        self.assertIn("failed", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:], verbosity=2)
