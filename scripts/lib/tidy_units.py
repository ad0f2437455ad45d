#!/usr/bin/env python3
"""The translation units scripts/tidy.sh checks, and their cache keys.

usage: tidy_units.py <compile_commands.json> <source dir> <build dir> <clang-tidy> <cache dir|off> <jobs>

Prints "file<TAB>key" for each of the product's own translation units (common/, device-plugin/,
cni/, dra/; not the generated *.pb.cc) that the cache has not seen pass, then "CACHED<TAB>n".
A key hashes clang-tidy's version, .clang-tidy, the file's compile flags and its preprocessed
text (every header it includes, macros expanded), with the checkout's and the build dir's paths
replaced by placeholders, so fresh clones share entries and any change that can change a verdict
changes the key. A key of "-" means the file did not preprocess: clang-tidy will say why.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys


def main():
    db, src, build, tidy, cache, jobs = sys.argv[1:7]
    ours = tuple(os.path.join(src, d) + os.sep for d in ("common", "device-plugin", "cni", "dra"))
    entries = {}
    for entry in json.load(open(db)):
        f = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if f.startswith(build + os.sep) or f.endswith(".pb.cc") or not f.startswith(ours):
            continue
        entries.setdefault(f, entry)
    if not entries:
        sys.exit(f"tidy: no product sources in {db}")
    base = hashlib.sha256()
    base.update(subprocess.run([tidy, "--version"], capture_output=True, check=False).stdout)
    with open(os.path.join(src, ".clang-tidy"), "rb") as cfg:
        base.update(cfg.read())

    def flags_of(f):
        e = entries[f]
        args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
        out, skip = [], False
        for a in args[1:]:  # the compiler's flags, without its output and compile-only options
            if skip:
                skip = False
            elif a == "-o":
                skip = True
            elif a not in ("-c", f, e["file"]):
                out.append(a)
        return e["directory"], out

    def key(f):
        cwd, flags = flags_of(f)
        pp = subprocess.run(["clang++", "-E", "-P", "-Wno-unknown-warning-option", *flags, f],
                            cwd=cwd, capture_output=True, check=False)
        if pp.returncode != 0:
            return "-"
        h = base.copy()
        for part in (" ".join(flags), f, pp.stdout.decode(errors="replace")):
            h.update(part.replace(build, "@BUILD@").replace(src, "@SRC@").encode() + b"\0")
        return h.hexdigest()

    cached = 0
    names = sorted(entries)
    with concurrent.futures.ThreadPoolExecutor(max(1, int(jobs))) as pool:
        for f, k in zip(names, pool.map(key, names)):
            if cache != "off" and k != "-" and os.path.exists(os.path.join(cache, k)):
                cached += 1
            else:
                print(f"{f}\t{k}")
    print(f"CACHED\t{cached}")


if __name__ == "__main__":
    main()
