#!/usr/bin/env python3
"""What the built binaries load, against what the images carry.

  runtime_libs_test.py device-plugin-image BINARY...
      every shared library the binaries load (ldd) comes from a Debian package listed in
      images/device-plugin/runtime-packages.txt, and every package listed there provides one of
      them (or is a dlopen()ed plugin set we name below): the runtime image carries the libraries
      the binaries link, and only those.
  runtime_libs_test.py cni-glibc-only BINARY
      the CNI binary loads nothing beyond glibc, so it runs from any host's /opt/cni/bin.

The binaries come from ctest as $<TARGET_FILE:...>. An empty argument means the CMake target does
not exist yet on this branch: the test then exits 77 (ctest SKIP) and says so.
"""
import os
import re
import subprocess
import sys

from common import IMAGES, SKIP

PACKAGES_FILE = os.path.join(IMAGES, "device-plugin", "runtime-packages.txt")
# Loaded with dlopen(), so ldd cannot see them: libibverbs loads its providers (libmlx5...)
# from ibverbs-providers at ibv_get_device_list().
DLOPENED = {"ibverbs-providers"}
GLIBC_PACKAGES = {"libc6"}


def ldd(binary):
    """{soname: resolved path} of every library the dynamic loader maps for `binary`."""
    proc = subprocess.run(["ldd", binary], capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    if "not a dynamic executable" in out:
        return {}
    if proc.returncode != 0:
        sys.exit(f"ldd {binary}: exit {proc.returncode}: {out.strip()}")
    libs, missing = {}, []
    for line in out.splitlines():
        line = line.strip()
        m = re.match(r"(\S+) => (\S+)", line)
        if m:
            if m.group(2) == "not":
                missing.append(m.group(1))
            else:
                libs[m.group(1)] = m.group(2)
        elif line.startswith("/"):  # the dynamic loader itself
            libs[os.path.basename(line.split()[0])] = line.split()[0]
    if missing:
        sys.exit(f"ldd {binary}: libraries not found on this machine: {', '.join(missing)}")
    return libs


def package_of(path):
    """The Debian package that ships `path`, trying the usrmerge aliases dpkg may know it by."""
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        if p.startswith("/usr/"):
            candidates.append(p[len("/usr"):])
        else:
            candidates.append("/usr" + p)
    for p in candidates:
        proc = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if proc.returncode == 0:
            # "libgrpc29:amd64: /usr/lib/..." -- drop the architecture qualifier.
            return proc.stdout.split(":", 1)[0].split(",")[0].strip()
    return None


def listed_packages():
    with open(PACKAGES_FILE) as f:
        return {line.split("#", 1)[0].strip() for line in f} - {""}


def needed_packages(binaries):
    needed, unowned = {}, []
    for b in binaries:
        for soname, path in ldd(b).items():
            pkg = package_of(path)
            if pkg is None:
                unowned.append(f"{soname} ({path}, loaded by {b})")
            else:
                needed.setdefault(pkg, set()).add(soname)
    if unowned:
        sys.exit("no Debian package owns: " + "; ".join(unowned) +
                 " -- the image cannot get them from apt")
    return needed


def device_plugin_image(binaries):
    needed = needed_packages(binaries)
    listed = listed_packages()
    missing = sorted(set(needed) - listed)
    unused = sorted(listed - set(needed) - DLOPENED)
    print("packages the binaries load: " + " ".join(sorted(needed)))
    ok = True
    if missing:
        ok = False
        print(f"FAIL: {PACKAGES_FILE} lacks {', '.join(missing)}: the image would not start")
    if unused:
        ok = False
        print(f"FAIL: {PACKAGES_FILE} lists {', '.join(unused)}, which no binary loads: "
              "drop them to keep the image minimal")
    for p in DLOPENED:
        if p not in listed:
            ok = False
            print(f"FAIL: {PACKAGES_FILE} lacks {p}, which libibverbs dlopen()s")
    return 0 if ok else 1


def cni_glibc_only(binary):
    needed = needed_packages([binary])
    extra = {p: s for p, s in needed.items() if p not in GLIBC_PACKAGES}
    print(f"{binary} loads: " + (", ".join(sorted(s for ss in needed.values() for s in ss))
                                 or "nothing (fully static)"))
    if extra:
        print("FAIL: the CNI binary needs more than glibc: " + ", ".join(
            f"{p} ({' '.join(sorted(s))})" for p, s in sorted(extra.items())))
        return 1
    return 0


def main(argv):
    if len(argv) < 3 or argv[1] not in ("device-plugin-image", "cni-glibc-only"):
        sys.exit(f"usage: {argv[0]} device-plugin-image|cni-glibc-only BINARY...")
    mode, binaries = argv[1], argv[2:]
    absent = [b for b in binaries if not b]
    if absent:
        print(f"SKIP: {len(absent)} of the binaries under test has no CMake target yet on this "
              "branch; this test runs once the device plugin / CNI targets exist")
        return SKIP
    for b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"{b}: not an executable file (the target exists: is it built?)")
    return device_plugin_image(binaries) if mode == "device-plugin-image" \
        else cni_glibc_only(binaries[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
