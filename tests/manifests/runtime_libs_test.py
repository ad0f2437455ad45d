#!/usr/bin/env python3
"""What the built binaries load, against what the images carry.

  runtime_libs_test.py device-plugin-image BINARY...
      every shared library the binaries load (ldd) comes from a Debian package listed in
      images/device-plugin/runtime-packages.txt, and every package listed there provides one of
      them (or is a dlopen()ed plugin set we name below): the runtime image carries the libraries
      the binaries link, and only those.
  runtime_libs_test.py cni-glibc-only BINARY
  --sanitized (anywhere): the binaries come from a sanitizer build; ignore its runtime libraries.
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
# A sanitizer build (cmake --preset debug) also loads these; images are built from the release
# preset, so with --sanitized they are left out of the comparison (and only they).
SANITIZER_PACKAGES = {"libasan8", "libubsan1", "liblsan0", "libtsan2"}


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


def aliases(path):
    """The names dpkg may know a library by: as given, resolved, and across the usrmerge."""
    out = []
    for p in (path, os.path.realpath(path)):
        out += [p, p[len("/usr"):] if p.startswith("/usr/") else "/usr" + p]
    return list(dict.fromkeys(out))


def packages_of(paths):
    """{path: Debian package or None}, with one `dpkg -S` for all of them (it is slow per call)."""
    candidates = sorted({a for p in paths for a in aliases(p)})
    proc = subprocess.run(["dpkg", "-S"] + candidates, capture_output=True, text=True)
    owner = {}
    for line in proc.stdout.splitlines():
        # "libgrpc29:amd64: /usr/lib/x86_64-linux-gnu/libgrpc.so.29" (several: "a, b: path")
        pkgs, sep, path = line.rpartition(": ")
        if sep and not line.startswith("diversion"):
            owner[path] = pkgs.split(",")[0].strip().split(":")[0]
    return {p: next((owner[a] for a in aliases(p) if a in owner), None) for p in paths}


def listed_packages():
    with open(PACKAGES_FILE) as f:
        return {line.split("#", 1)[0].strip() for line in f} - {""}


IGNORED = set()


def needed_packages(binaries):
    needed, unowned = {}, []
    loaded = [(b, soname, path) for b in binaries for soname, path in ldd(b).items()]
    owners = packages_of({path for _, _, path in loaded})
    for b, soname, path in loaded:
        pkg = owners[path]
        if pkg in IGNORED:
            continue
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
    if IGNORED:
        # libasan/libubsan themselves load libstdc++ and libgcc_s: the property only holds for
        # the builds that ship (default and release presets), where it is checked.
        print("SKIP: sanitizer build: its runtime loads libstdc++/libgcc_s, so 'nothing beyond "
              "glibc' is checked by the default and release builds only")
        return SKIP
    needed = needed_packages([binary])
    extra = {p: s for p, s in needed.items() if p not in GLIBC_PACKAGES}
    print(f"{binary} loads: " + (", ".join(sorted(s for ss in needed.values() for s in ss))
                                 or "nothing (fully static)"))
    # The newest glibc symbol version it binds to: the oldest glibc a node may have.
    dyn = subprocess.run(["objdump", "-T", binary], capture_output=True, text=True).stdout
    versions = sorted({tuple(int(x) for x in v.split(".")) for v in
                       re.findall(r"GLIBC_([0-9]+(?:\.[0-9]+)+)", dyn)})
    if versions:
        print("needs glibc >= " + ".".join(str(x) for x in versions[-1]) + " on the node")
    if extra:
        print("FAIL: the CNI binary needs more than glibc: " + ", ".join(
            f"{p} ({' '.join(sorted(s))})" for p, s in sorted(extra.items())))
        return 1
    return 0


def main(argv):
    if len(argv) < 3 or argv[1] not in ("device-plugin-image", "cni-glibc-only"):
        sys.exit(f"usage: {argv[0]} device-plugin-image|cni-glibc-only BINARY...")
    if "--sanitized" in argv:
        argv = [a for a in argv if a != "--sanitized"]
        IGNORED.update(SANITIZER_PACKAGES)
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
