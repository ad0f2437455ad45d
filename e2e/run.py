#!/usr/bin/env python3
"""Runs the e2e scenarios, each in a fresh qemu VM (TCG) whose init is the scenario script.

Each scenario boots once (retried when the boot oopses, a known multi-threaded-TCG hiccup), streams
the guest console to e2e/.cache/logs/<scenario>.log (and to stdout), and reports one line per check
(`E2E-RESULT <scenario> <check> PASS|FAIL <detail>`). A panic, an oops, a hang (hard timeout), a VM
that stops before finishing or a scenario that reports no check is a FAIL with a clear message,
never a skip. Ends with the figures seen (informative, never asserted), then exactly
`N passed, N failed`, and exits non-zero on any failure.

  e2e/run.py                          build the image and run every scenario
  e2e/run.py -s rxe-shared            run one scenario (repeatable)
  e2e/run.py --shell [-s SCENARIO]    boot interactively: run SCENARIO (if any), then a shell
  e2e/run.py --two-nodes              the two-node scenarios of make test (two VMs per scenario)
  e2e/run.py --two-nodes --with-optional   all of them (make e2e-two-nodes)
  e2e/run.py --list                   list scenarios
  e2e/run.py --demo                   make demo: the demo scenario, showing only its narration
                                      ("DEMO| " lines) and any FAIL; the console goes to the log
"""
import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCENARIO_DIR = os.path.join(HERE, "guest", "scenarios")
# Run order: the foundations first, the scenarios needing the project's binaries after.
# The demo scenario is make demo's, not part of make e2e (pods-rxe-shared covers the same checks).
DEMO_SCENARIO = "demo"
DEMO_SCENARIOS = ("demo", "demo-dra")  # make demo, make demo-dra: not part of make e2e
ORDER = ["rxe-shared", "siw-shared", "rxe-exclusive", "pods-rxe-shared", "pods-siw-shared",
         "pods-rxe-exclusive", "dra-rxe-exclusive", "failures"]
BOOT_ATTEMPTS = 3
DEMO_RE = re.compile(r"DEMO\|( ?)(.*)")
RESULT_RE = re.compile(r"E2E-RESULT (\S+) (\S+) (PASS|FAIL) ?(.*)")
FIGURE_RE = re.compile(r"E2E-FIGURE (\S+) (\S+) (\S+) ?(\S*)")
# The console of a kernel in trouble. "Oops: int3" in the first seconds is the TCG boot hiccup.
KERNEL_TROUBLE_RE = re.compile(r"(Oops: |Kernel panic|BUG: |general protection fault|"
                               r"kernel BUG at|Unable to handle kernel)")
ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1bc")


def scenario_meta(name):
    """Reads `# e2e-<key>: <value>` header lines of a scenario script."""
    meta = {"netns-mode": "shared", "timeout": "600", "needs": "", "nodes": "1"}
    with open(os.path.join(SCENARIO_DIR, name + ".sh")) as f:
        for line in f:
            m = re.match(r"#\s*e2e-([a-z-]+):\s*(.*\S)", line)
            if m:
                meta[m.group(1)] = m.group(2)
            elif not line.startswith("#"):
                break
    return meta


def all_scenarios(include_optional=False):
    """Every scenario; those whose header says `# e2e-default: no` (benchmarks) only when asked
    for by name or with include_optional."""
    names = sorted(f[:-3] for f in os.listdir(SCENARIO_DIR)
                   if f.endswith(".sh") and f[:-3] not in DEMO_SCENARIOS)
    if not include_optional:
        names = [n for n in names if scenario_meta(n).get("default", "yes") != "no"]
    ordered = [n for n in ORDER if n in names]
    return ordered + [n for n in names if n not in ordered]


def preflight(prefix):
    """A missing qemu is a failure with a clear message, not a traceback."""
    if shutil.which("qemu-system-x86_64") is None:
        print(f"{prefix}: qemu-system-x86_64 not found in PATH (Debian package qemu-system-x86; "
              "scripts/install-deps.sh installs it)")
        print("E2E-RESULT preflight qemu FAIL qemu-system-x86_64 not found")
        print("0 passed, 1 failed")
        return False
    return True


def lock_cache(prefix):
    """Serialises runs sharing one cache: build-image.sh rewrites out/ and the project layer in
    place, and every boot reads out/initrd.cpio, so a concurrent run could boot another
    checkout's binaries. The lock lives as long as this process."""
    cache = os.environ.get("E2E_CACHE") or os.path.join(HERE, ".cache")
    os.makedirs(cache, exist_ok=True)
    fd = os.open(os.path.join(cache, ".run.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"{prefix}: another e2e run holds {cache}; waiting for it", flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def build_image(build_dirs):
    cmd = ["bash", os.path.join(HERE, "build-image.sh")]
    for d in build_dirs:
        cmd += ["--build-dir", d]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        return None, time.monotonic() - t0
    m = re.search(r"E2E-IMAGE kernel=(\S+) initrd=(\S+) kver=(\S+)", proc.stdout)
    if not m:
        return None, time.monotonic() - t0
    return {"kernel": m.group(1), "initrd": m.group(2), "kver": m.group(3)}, time.monotonic() - t0


def qemu_cmd(image, scenario, netns_mode, extra_append="", interactive=False, smp=None):
    append = ("console=ttyS0 quiet loglevel=3 panic=-1 oops=panic tsc=unstable "
              f"e2e.scenario={scenario} e2e.netns_mode={netns_mode} {extra_append}").strip()
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-M", "pc", "-cpu", "qemu64",
           "-smp", smp or os.environ.get("E2E_SMP", "2"), "-m", os.environ.get("E2E_MEM", "2G"),
           "-nographic", "-no-reboot", "-nic", "none",
           "-kernel", image["kernel"], "-initrd", image["initrd"], "-append", append]
    if not interactive:
        cmd[1:1] = ["-serial", "stdio", "-monitor", "none", "-display", "none"]
        cmd.remove("-nographic")
    return cmd


class Boot:
    """One VM run: streams the console, keeps results, figures and what went wrong."""

    def __init__(self, scenario, log, echo, demo=False):
        self.demo = demo           # echo only the narration and the failures
        self.scenario = scenario
        self.log = log
        self.echo = echo
        self.results = []
        self.figures = []
        self.trouble = None        # first kernel-trouble console line
        self.started = False       # E2E-START seen: the scenario itself runs
        self.done = False          # E2E-DONE seen
        self.last_line = ""
        self.booted_at = None

    def feed(self, line):
        line = ANSI_RE.sub("", line).rstrip("\r\n")
        self.log.write(line + "\n")
        self.log.flush()
        if self.echo:
            print(f"  [{self.scenario}] {line}", flush=True)
        elif self.demo:
            m = DEMO_RE.search(line)
            if m:
                print(m.group(2), flush=True)
            elif " FAIL " in line and RESULT_RE.search(line):
                print("  !! " + RESULT_RE.search(line).group(0), flush=True)
        if line.strip():
            self.last_line = line.strip()
        if "E2E-BOOTED" in line and self.booted_at is None:
            self.booted_at = time.monotonic()
        if "E2E-START" in line:
            self.started = True
        if "E2E-DONE" in line:
            self.done = True
        m = RESULT_RE.search(line)
        if m:
            self.results.append((m.group(1), m.group(2), m.group(3), m.group(4)))
        m = FIGURE_RE.search(line)
        if m:
            self.figures.append((m.group(1), m.group(2), m.group(3), m.group(4)))
        # Not kernel trouble: our own dumps of the kernel log (already seen live) and a user
        # process's fault the kernel merely reports ("traps: ib_send_lat[850] general protection
        # fault ... in librdmacm.so.1"): the scenario's checks judge those.
        if (self.trouble is None and KERNEL_TROUBLE_RE.search(line)
                and "dmesg: " not in line and "traps: " not in line):
            self.trouble = line.strip()


def run_scenario(image, scenario, log_dir, echo, verbose, demo=False):
    meta = scenario_meta(scenario)
    timeout = int(os.environ.get("E2E_SCENARIO_TIMEOUT", meta["timeout"]))
    extra = "e2e.verbose=1" if verbose else ""
    log_path = os.path.join(log_dir, scenario + ".log")
    info = {"attempts": 0, "boot_s": None, "wall_s": None}
    for attempt in range(1, BOOT_ATTEMPTS + 1):
        info["attempts"] = attempt
        t0 = time.monotonic()
        with open(log_path if attempt == 1 else f"{log_path}.{attempt}", "w") as log:
            boot = Boot(scenario, log, echo, demo)
            proc = subprocess.Popen(qemu_cmd(image, scenario, meta["netns-mode"], extra),
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, errors="replace")
            reader = threading.Thread(target=lambda: [boot.feed(l) for l in proc.stdout],
                                      daemon=True)
            reader.start()
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                proc.kill()
                proc.wait()
            reader.join(timeout=10)
        info["wall_s"] = time.monotonic() - t0
        if boot.booted_at is not None:
            info["boot_s"] = boot.booted_at - t0
        # A kernel that got into trouble before the scenario started is the TCG boot hiccup:
        # boot again. Anywhere else it is the scenario's failure.
        if boot.trouble and not boot.started and attempt < BOOT_ATTEMPTS:
            print(f"e2e: {scenario}: boot attempt {attempt} failed ({boot.trouble}); "
                  "booting again", flush=True)
            continue
        break
    results = list(boot.results)
    for r in results:
        if r[0] != scenario:
            print(f"e2e: warning: result for scenario {r[0]} reported while running {scenario}")
    if boot.trouble:
        results.append((scenario, "kernel", "FAIL",
                        f"kernel trouble on the console: {boot.trouble} (log {log_path})"))
    if timed_out:
        results.append((scenario, "vm", "FAIL",
                        f"hung: no end after {timeout} s (hard timeout); last console line: "
                        f"{boot.last_line!r} (log {log_path})"))
    elif not boot.done:
        results.append((scenario, "vm", "FAIL",
                        f"VM stopped (exit {proc.returncode}) before the scenario finished; last "
                        f"console line: {boot.last_line!r} (log {log_path})"))
    if not any(r[0] == scenario and r[1] not in ("kernel", "vm") for r in results):
        results.append((scenario, "checks", "FAIL", "the scenario reported no check"))
    return results, boot.figures, info


def two_node_link(link_dir, node):
    """qemu arguments of node's end of the link between the two VMs: a dgram netdev over two unix
    sockets in link_dir (nothing on the host network; neither VM needs the other to be up first:
    a datagram to a socket not bound yet is simply lost, as on an unplugged cable)."""
    me, peer = (("a", "b") if node == "a" else ("b", "a"))
    return ["-netdev", f"dgram,id=link,local.type=unix,local.path={link_dir}/{me}.sock,"
                       f"remote.type=unix,remote.path={link_dir}/{peer}.sock",
            "-device", f"virtio-net-pci,netdev=link,mac=52:54:00:e2:00:0{1 if node == 'a' else 2}"]


def run_two_node_scenario(image, scenario, log_dir, echo, verbose):
    """Boots node A and node B at once (one vCPU each, nice 10: the machine is shared), linked by
    two_node_link. Node A drives the scenario; node B serves it. Node B's checks are reported as
    `nodeB/<check>`. A boot in kernel trouble before either scenario started boots both again."""
    meta = scenario_meta(scenario)
    timeout = int(os.environ.get("E2E_SCENARIO_TIMEOUT", meta["timeout"]))
    extra = "e2e.verbose=1" if verbose else ""
    smp = os.environ.get("E2E_TWO_NODE_SMP", "1")
    info = {"attempts": 0, "boot_s": None, "wall_s": None}
    for attempt in range(1, BOOT_ATTEMPTS + 1):
        info["attempts"] = attempt
        link_dir = tempfile.mkdtemp(prefix="e2e-link-")  # short: unix socket paths are limited
        boots, procs, readers = {}, {}, {}
        t0 = time.monotonic()
        logs = {}
        try:
            for node in ("a", "b"):
                suffix = "" if attempt == 1 else f".{attempt}"
                logs[node] = open(os.path.join(log_dir, f"{scenario}.node-{node}.log{suffix}"), "w")
                boots[node] = Boot(f"{scenario}/{node}", logs[node], echo)
                cmd = qemu_cmd(image, scenario, meta["netns-mode"],
                               f"e2e.node={node} {extra}", smp=smp) + two_node_link(link_dir, node)
                procs[node] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                               text=True, errors="replace",
                                               preexec_fn=lambda: os.nice(10))
                readers[node] = threading.Thread(
                    target=lambda b=boots[node], p=procs[node]: [b.feed(l) for l in p.stdout],
                    daemon=True)
                readers[node].start()
            timed_out = {"a": False, "b": False}
            try:
                procs["a"].wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out["a"] = True
                procs["a"].kill()
                procs["a"].wait()
            # Node B ends once node A told it to; give it a little to power off.
            try:
                procs["b"].wait(timeout=60)
            except subprocess.TimeoutExpired:
                timed_out["b"] = True
                procs["b"].kill()
                procs["b"].wait()
            for node in ("a", "b"):
                readers[node].join(timeout=10)
        finally:
            for f in logs.values():
                f.close()
            shutil.rmtree(link_dir, ignore_errors=True)
        info["wall_s"] = time.monotonic() - t0
        booted = [b.booted_at for b in boots.values() if b.booted_at is not None]
        if len(booted) == 2:
            info["boot_s"] = max(booted) - t0
        troubled = [n for n, b in boots.items() if b.trouble and not b.started]
        if troubled and attempt < BOOT_ATTEMPTS:
            print(f"e2e: {scenario}: boot attempt {attempt} failed on node(s) {troubled} "
                  f"({boots[troubled[0]].trouble}); booting both again", flush=True)
            continue
        break
    results = []
    for node in ("a", "b"):
        boot = boots[node]
        log_path = os.path.join(log_dir, f"{scenario}.node-{node}.log")
        label = "" if node == "a" else "nodeB/"
        for r in boot.results:
            if r[0] != scenario:
                print(f"e2e: warning: result for scenario {r[0]} reported while running {scenario}")
            results.append((scenario, label + r[1], r[2], r[3]))
        if boot.trouble:
            results.append((scenario, f"{label}kernel", "FAIL",
                            f"node {node}: kernel trouble on the console: {boot.trouble} "
                            f"(log {log_path})"))
        if timed_out[node]:
            what = (f"hung: no end after {timeout} s (hard timeout)" if node == "a" else
                    "still running 60 s after node A ended")
            results.append((scenario, f"{label}vm", "FAIL",
                            f"node {node} {what}; last console line: {boot.last_line!r} "
                            f"(log {log_path})"))
        elif not boot.done:
            results.append((scenario, f"{label}vm", "FAIL",
                            f"node {node}'s VM stopped (exit {procs[node].returncode}) before the "
                            f"scenario finished; last console line: {boot.last_line!r} "
                            f"(log {log_path})"))
    if not any(r[1] not in ("kernel", "vm", "nodeB/kernel", "nodeB/vm") for r in results):
        results.append((scenario, "checks", "FAIL", "the scenario reported no check"))
    figures = [(scenario, f, v, u) for _, f, v, u in boots["a"].figures]
    figures += [(scenario, "nodeB/" + f, v, u) for _, f, v, u in boots["b"].figures]
    return results, figures, info


def run_shell(image, scenario):
    meta = scenario_meta(scenario) if scenario != "shell" else {"netns-mode": os.environ.get(
        "E2E_NETNS_MODE", "shared")}
    cmd = qemu_cmd(image, scenario, meta["netns-mode"], "e2e.shell=1", interactive=True)
    print("e2e: interactive VM; Ctrl-A X quits qemu, 'poweroff -f' the guest", flush=True)
    return subprocess.call(cmd)


def run_demo(args):
    """make demo (make demo-dra): one narrated scenario; exits non-zero when any of its checks
    failed."""
    scenario = args.demo_scenario
    os.makedirs(args.log_dir, exist_ok=True)
    if not preflight("demo"):
        return 1
    lock_cache("demo")
    print("demo: building the VM image (cached after the first run; the first one takes a while)",
          flush=True)
    image, build_s = build_image(args.build_dir or [os.path.join(ROOT, "build", "default")])
    if image is None:
        print("demo: image build failed (see the build-image messages above)")
        return 1
    print(f"demo: image for kernel {image['kver']} ready in {build_s:.1f} s; booting the VM "
          f"(qemu, TCG); console log: {os.path.join(args.log_dir, scenario + '.log')}",
          flush=True)
    results, figures, info = run_scenario(image, scenario, args.log_dir, False, False, demo=True)
    passed = sum(1 for r in results if r[2] == "PASS")
    failed = [r for r in results if r[2] == "FAIL"]
    print()
    boot = f"{info['boot_s']:.1f} s" if info["boot_s"] is not None else "-"
    print(f"demo: VM wall time {info['wall_s']:.1f} s (to /init {boot}, boots {info['attempts']}); "
          f"{passed} checks passed, {len(failed)} failed")
    for scen, check, status, detail in failed:
        print(f"  FAIL {check}: {detail}")
    traffic = [r for r in results if r[1].startswith("demo-") and r[1] != "demo-gid-index"]
    if not traffic or any(r[2] != "PASS" for r in traffic):
        print("demo: the pods did not exchange RDMA traffic")
        return 1
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-s", "--scenario", action="append", help="run only this scenario")
    ap.add_argument("--build-dir", action="append",
                    help="where the project's binaries were built (default build/default); "
                         "repeatable, the first holding a binary wins")
    ap.add_argument("--log-dir", default=os.path.join(HERE, ".cache", "logs"))
    ap.add_argument("--shell", action="store_true", help="boot interactively and get a shell")
    ap.add_argument("--list", action="store_true", help="list the scenarios")
    ap.add_argument("--two-nodes", action="store_true",
                    help="run the two-node scenarios (two VMs joined by a link; make e2e-two-nodes)")
    ap.add_argument("--with-optional", action="store_true",
                    help="with --two-nodes: also the scenarios make test leaves out "
                         "(`# e2e-make-test: no`: two-node-link, two-node-mtu)")
    ap.add_argument("-q", "--quiet", action="store_true",
                    help="do not echo the guest console (it still goes to the log)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="show the tools' output of passing checks too")
    ap.add_argument("--demo", action="store_true",
                    help="run the demo scenario, showing its narration only (make demo)")
    ap.add_argument("--demo-scenario", default=DEMO_SCENARIO, choices=DEMO_SCENARIOS,
                    help="which narrated scenario --demo runs (demo-dra: make demo-dra)")
    args = ap.parse_args()
    if args.demo:
        return run_demo(args)

    if args.list:
        for s in all_scenarios(include_optional=True):
            meta = scenario_meta(s)
            only = "  (only when named: -s)" if meta.get("default", "yes") == "no" else ""
            nodes = "  (two nodes)" if meta["nodes"] == "2" else ""
            if meta["nodes"] == "2" and meta.get("make-test", "yes") == "no":
                nodes += " (not in make test: --two-nodes --with-optional)"
            print(f"{s:28} netns mode {meta['netns-mode']:9} needs: {meta['needs'] or '-'}"
                  f"{nodes}{only}")
        return 0
    if args.two_nodes and not args.scenario:
        # make test's set; `# e2e-make-test: no` ones (what another scenario already proves)
        # only with --with-optional (make e2e-two-nodes).
        args.scenario = [s for s in all_scenarios(include_optional=True)
                         if scenario_meta(s)["nodes"] == "2" and
                         (args.with_optional or scenario_meta(s).get("make-test", "yes") != "no")]
    scenarios = args.scenario or all_scenarios()
    for s in scenarios:
        if not os.path.exists(os.path.join(SCENARIO_DIR, s + ".sh")):
            print(f"e2e: no scenario {s} (see --list)", file=sys.stderr)
            return 2
    os.makedirs(args.log_dir, exist_ok=True)
    if not preflight("e2e"):
        return 1
    lock_cache("e2e")

    image, build_s = build_image(args.build_dir or [os.path.join(ROOT, "build", "default")])
    if image is None:
        print("e2e: image build failed (see the build-image messages above)")
        print("E2E-RESULT image build FAIL build-image.sh failed")
        print("0 passed, 1 failed")
        return 1
    print(f"e2e: image for kernel {image['kver']} ready in {build_s:.1f} s", flush=True)
    if args.shell:
        return run_shell(image, (args.scenario or ["shell"])[0])

    all_results, all_figures, infos = [], [], {}
    for s in scenarios:
        print(f"e2e: scenario {s} (netns mode {scenario_meta(s)['netns-mode']})", flush=True)
        run = run_two_node_scenario if scenario_meta(s)["nodes"] == "2" else run_scenario
        results, figures, info = run(image, s, args.log_dir, not args.quiet, args.verbose)
        infos[s] = info
        all_results += results
        all_figures += figures
        failed = sum(1 for r in results if r[2] == "FAIL")
        print(f"e2e: scenario {s}: {len(results) - failed} passed, {failed} failed "
              f"({info['wall_s']:.0f} s, {info['attempts']} boot(s))", flush=True)

    print()
    print("e2e results:")
    for scen, check, status, detail in all_results:
        print(f"  {status:4} {scen:20} {check:28} {detail}")
    print()
    print("e2e figures (informative, never asserted):")
    print(f"  image build: {build_s:.1f} s")
    for s, info in infos.items():
        boot = f"{info['boot_s']:.1f} s" if info["boot_s"] is not None else "-"
        print(f"  {s}: VM wall time {info['wall_s']:.1f} s, to /init {boot}, "
              f"boots {info['attempts']}")
    for scen, name, value, unit in all_figures:
        print(f"  {scen:20} {name:36} {value:>12} {unit}")
    passed = sum(1 for r in all_results if r[2] == "PASS")
    failed = sum(1 for r in all_results if r[2] == "FAIL")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
