#!/usr/bin/env python3
"""The translation units scripts/tidy.sh checks, and their cache keys.

usage: tidy_units.py <compile_commands.json> <source dir> <build dir> <clang-tidy> <cache dir|off>
                     <jobs> <scope: full|ci> <out dir>

Prints "file<TAB>key<TAB>checks" for each of the product's own translation units (common/,
device-plugin/, cni/, dra/, inspect/; not the generated *.pb.cc) that the cache has not seen
pass, then
"CACHED<TAB>n", and writes <out dir>/compile_commands.json with one entry per such file: the
product's own compile, not a test-only variant of it (the CNI library is built a second time
with its crash points for tests/reliability; checking both doubled the CNI's share of the run).

checks is what clang-tidy's --checks adds to .clang-tidy: nothing in scope full (make tidy);
in scope ci (make test) the path-sensitive clang-analyzer-* checks are kept where .clang-tidy
says they pay, the code that decodes bytes a kernel, a file or a tenant wrote (common/, cni/,
inspect/), and left out of the gRPC and API glue of device-plugin/ and dra/, where they cost half the run
and the AST checks, the sanitizers and the tests cover the same code.

A key hashes clang-tidy's version, .clang-tidy, the checks, the file's compile flags and its
preprocessed text (every header it includes, macros expanded), with the checkout's and the build
dir's paths replaced by placeholders, so fresh clones share entries and any change that can change
a verdict changes the key. A key of "-" means the file did not preprocess: clang-tidy will say why.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys


def without_pch(entry):
    """The compile without the precompiled header (-Xclang -include-pch -Xclang <pch> and its
    -Xclang -include -Xclang <header>): clang-tidy sees only what the file itself includes.

    A PCH saves the compiler's parse, but clang-tidy's matchers walk every declaration of the
    translation unit, the PCH's too: with it, each of the 49 files that include neither JSON nor
    gRPC had both walked, and checking a file took 1.5-6x as long (device_id.cc 2.8 s, 0.5 s
    without). Every file compiles without it: the g++ presets build with none.
    """
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], 0
    for i, a in enumerate(args):
        if skip:
            skip -= 1
        elif a == "-Xclang" and args[i + 1:i + 2] in (["-include-pch"], ["-include"]):
            skip = 3  # -Xclang -include(-pch) -Xclang <file>
        else:
            out.append(a)
    e = {k: v for k, v in entry.items() if k != "command"}
    e["arguments"] = out
    return e


def main():
    db, src, build, tidy, cache, jobs, scope, out_dir = sys.argv[1:9]
    ours = tuple(os.path.join(src, d) + os.sep for d in ("common", "device-plugin", "cni", "dra", "inspect"))
    analysed = tuple(os.path.join(src, d) + os.sep for d in ("common", "cni", "inspect"))
    entries = {}
    for entry in json.load(open(db)):
        f = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if f.startswith(build + os.sep) or f.endswith(".pb.cc") or not f.startswith(ours):
            continue
        test_variant = "-DRDMAK8S_CRASH_POINTS" in (entry.get("command") or " ".join(entry["arguments"]))
        if f not in entries or (entries[f][1] and not test_variant):
            entries[f] = (entry, test_variant)
    entries = {f: without_pch(e) for f, (e, _) in entries.items()}
    if not entries:
        sys.exit(f"tidy: no product sources in {db}")
    base = hashlib.sha256()
    base.update(subprocess.run([tidy, "--version"], capture_output=True, check=False).stdout)
    with open(os.path.join(src, ".clang-tidy"), "rb") as cfg:
        base.update(cfg.read())

    def checks_of(f):
        return "" if scope == "full" or f.startswith(analysed) else "-clang-analyzer-*"

    def flags_of(f):
        e = entries[f]
        args = e["arguments"]
        out, skip = [], 0
        for a in args[1:]:  # the compiler's flags, without output and -c
            if skip:
                skip -= 1
            elif a == "-o":
                skip = 1
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
        for part in (checks_of(f), " ".join(flags), f, pp.stdout.decode(errors="replace")):
            h.update(part.replace(build, "@BUILD@").replace(src, "@SRC@").encode() + b"\0")
        return h.hexdigest()

    with open(os.path.join(out_dir, "compile_commands.json"), "w") as out:
        json.dump(list(entries.values()), out, indent=1)

    cached = 0
    names = sorted(entries)
    with concurrent.futures.ThreadPoolExecutor(max(1, int(jobs))) as pool:
        for f, k in zip(names, pool.map(key, names)):
            if cache != "off" and k != "-" and os.path.exists(os.path.join(cache, k)):
                cached += 1
            else:
                print(f"{f}\t{k}\t{checks_of(f)}")
    print(f"CACHED\t{cached}")


if __name__ == "__main__":
    main()
