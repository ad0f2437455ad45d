# A real container runtime in the guest (issue 25), sourced by the scenarios that say
# `# e2e-runtime: containerd` (run.py then builds the image with containerd; needs lib.sh):
# trixie's containerd 1.7 with its CRI plugin and enable_cdi = true, Debian 12's runc, the native
# snapshotter (overlay is a module the image does not load; /var is a tmpfs), the CNI plugins
# where the e2e keeps them, and OCI images built here from what the guest has (no registry).
CTRD_SOCK=/run/containerd/containerd.sock
CTRD_CONF=/etc/containerd/config.toml
CTRD_LOG=/tmp/containerd.log
CTRD_PID=/run/e2e/containerd.pid
PAUSE_IMAGE=e2e.local/pause:1

ctr_k8s() { ctr --address "$CTRD_SOCK" -n k8s.io "$@"; }

# containerd_config: the node's config. restrict_oom_score_adj: runc cannot raise oom_score_adj
# without CAP_SYS_RESOURCE in some sandboxes (measured with 1.6 on the build machines).
containerd_config() {
  mkdir -p /etc/containerd /etc/cni/net.d /etc/cdi /var/run/cdi
  # CRI copies the node's resolv.conf into each sandbox; without one RunPodSandbox fails
  # ("failed to setup sandbox files: ... open /etc/resolv.conf: no such file", measured).
  [ -f /etc/resolv.conf ] || : > /etc/resolv.conf
  cat > "$CTRD_CONF" <<EOF
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.snapshotter.v1.overlayfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$CTRD_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  restrict_oom_score_adj = true
  sandbox_image = "$PAUSE_IMAGE"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/bin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
EOF
}

# containerd_up SECONDS: cgroup v2 for runc, the config, containerd, then waits until it answers
# on its socket (bounded). Fails with the end of its log.
containerd_up() {
  local end
  if [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
    mkdir -p /sys/fs/cgroup
    mount -t cgroup2 cgroup2 /sys/fs/cgroup || { echo "mount cgroup2 on /sys/fs/cgroup failed" >&2; return 1; }
  fi
  containerd_config
  containerd --config "$CTRD_CONF" --log-level debug >> "$CTRD_LOG" 2>&1 &
  echo $! > "$CTRD_PID"
  end=$(($(now_ms) + $1 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    ctr --address "$CTRD_SOCK" version >/dev/null 2>&1 && return 0
    kill -0 "$(cat "$CTRD_PID")" 2>/dev/null || break
    sleep 0.2
  done
  echo "containerd did not answer on $CTRD_SOCK within $1 s: $(tail -n 5 "$CTRD_LOG" | tr '\n' ' ')" >&2
  return 1
}

containerd_down() {
  [ -f "$CTRD_PID" ] && kill "$(cat "$CTRD_PID")" 2>/dev/null
  rm -f "$CTRD_PID"
}

# oci_image_import NAME ROOTFS_DIR ENTRYPOINT_JSON: an OCI image archive of ROOTFS_DIR (one
# uncompressed layer) named NAME, imported into the k8s.io namespace (where CRI looks).
oci_image_import() {
  local name=$1 rootfs=$2 entry=$3 w l c m ls cs ms
  w=$(mktemp -d /tmp/oci.XXXXXX)
  mkdir -p "$w/blobs/sha256"
  tar -C "$rootfs" -cf "$w/layer.tar" . || return 1
  l=$(sha256sum "$w/layer.tar" | cut -d' ' -f1); ls=$(stat -c %s "$w/layer.tar")
  mv "$w/layer.tar" "$w/blobs/sha256/$l"
  jq -nc --arg l "sha256:$l" --argjson e "$entry" \
    '{architecture: "amd64", os: "linux", config: {Entrypoint: $e, Env: ["PATH=/bin"]},
      rootfs: {type: "layers", diff_ids: [$l]}}' > "$w/config.json"
  c=$(sha256sum "$w/config.json" | cut -d' ' -f1); cs=$(stat -c %s "$w/config.json")
  mv "$w/config.json" "$w/blobs/sha256/$c"
  jq -nc --arg c "sha256:$c" --argjson cs "$cs" --arg l "sha256:$l" --argjson ls "$ls" \
    '{schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $c, size: $cs},
      layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $l, size: $ls}]}' > "$w/manifest.json"
  m=$(sha256sum "$w/manifest.json" | cut -d' ' -f1); ms=$(stat -c %s "$w/manifest.json")
  mv "$w/manifest.json" "$w/blobs/sha256/$m"
  jq -nc --arg m "sha256:$m" --argjson ms "$ms" --arg n "$name" \
    '{schemaVersion: 2, manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json",
      digest: $m, size: $ms, platform: {architecture: "amd64", os: "linux"},
      annotations: {"io.containerd.image.name": $n, "org.opencontainers.image.ref.name": ($n | sub(".*:"; ""))}}]}' > "$w/index.json"
  echo '{"imageLayoutVersion": "1.0.0"}' > "$w/oci-layout"
  tar -C "$w" -cf "$w.tar" oci-layout index.json blobs || return 1
  rm -rf "$w"
  ctr_k8s images import --snapshotter native "$w.tar" || { rm -f "$w.tar"; return 1; }
  rm -f "$w.tar"
}

# The pause image: busybox only; PID 1 of the sandbox waits for SIGTERM (a PID 1 has no default
# signal handlers, so it traps it).
pause_image_import() {
  local r=/tmp/rootfs-pause
  rm -rf "$r" && mkdir -p "$r/bin" "$r/dev" "$r/proc" "$r/sys" "$r/etc"
  cp /usr/bin/busybox "$r/bin/busybox"
  ln -s busybox "$r/bin/sh" && ln -s busybox "$r/bin/sleep" && ln -s busybox "$r/bin/echo" && ln -s busybox "$r/bin/cat"
  oci_image_import "$PAUSE_IMAGE" "$r" \
    '["/bin/sh", "-c", "trap \"exit 0\" TERM INT; sleep 2147483647 & wait"]'
  local rc=$?
  rm -rf "$r"
  return $rc
}

# cri METHOD [REQUEST.json|-]: one CRI call (e2e/guest-src/cri.py), its answer as JSON.
cri() { /usr/bin/python3 /e2e/cri/cri --socket "$CTRD_SOCK" "$@"; }

CNILOG_DIR=/run/e2e/cnilog

# cnilog_show: what the runtime passed to the recording plugin (e2e/cni/e2e-cnilog), call by call:
# the CNI_* variables, then the rest of the environment on one line.
cnilog_show() {
  local f
  for f in $(ls "$CNILOG_DIR"/*.env 2>/dev/null | sort -t/ -k5 -n); do
    echo "  cnilog: $(basename "$f" .env): $(grep '^CNI_' "$f" | tr '\n' ' ')"
    echo "  cnilog: $(basename "$f" .env): other env: $(grep -v '^CNI_' "$f" | tr '\n' ' ')"
  done
}

# cri_exec CONTAINER_ID CMD...: CMD in the container through CRI ExecSync (runc exec: the
# container's namespaces, cgroup, device rules and env), its stdout and stderr printed, its exit
# status returned (125 when the call itself failed). Bounded by E2E_TIMEOUT plus a margin.
cri_exec() {
  local cid=$1 req out rc a
  shift
  req=$(mktemp /tmp/cri-exec.XXXXXX)
  # One jq per word: jq 1.6 takes words after --args that look like options (-c, -d) as its own.
  for a in "$@"; do printf '%s' "$a" | jq -Rs .; done | jq -sc --arg id "$cid" --argjson t "$((E2E_TIMEOUT + 30))" \
    '{container_id: $id, cmd: ., timeout: $t}' > "$req"
  out=$(cri --timeout "$((E2E_TIMEOUT + 60))" ExecSync "$req")
  rc=$?
  rm -f "$req"
  [ $rc = 0 ] || return 125
  echo "$out" | jq -r '.stdout // empty' | base64 -d
  echo "$out" | jq -r '.stderr // empty' | base64 -d >&2
  return "$(echo "$out" | jq -r '.exit_code // 0')"
}

RDMA_POD_IMAGE=e2e.local/rdma-pod:1

# The RDMA pod image: an empty merged-/usr root (bin, lib, lib64, sbin -> usr/...) whose /usr,
# /etc/libibverbs.d and /e2e the pods bind read-only from the guest (rdma-core, perftest, busybox,
# the e2e helpers), so the image carries nothing the guest has.
rdma_pod_image_import() {
  local r=/tmp/rootfs-rdma-pod d
  rm -rf "$r" && mkdir -p "$r/usr" "$r/dev" "$r/proc" "$r/sys" "$r/etc/libibverbs.d" "$r/tmp" "$r/e2e"
  for d in bin lib lib64 sbin; do ln -s "usr/$d" "$r/$d"; done
  oci_image_import "$RDMA_POD_IMAGE" "$r" '["/bin/sh", "-c", "trap \"exit 0\" TERM INT; sleep 2147483647 & wait"]'
  local rc=$?
  rm -rf "$r"
  return $rc
}

# cri_pod_sandbox POD UID DEVICE_ID, then cri_pod_container POD ALLOCATION_JSON: a pod as
# kubelet makes it from the device plugin's Allocate answer (ALLOCATION_JSON: one container
# response). The first is RunPodSandbox (containerd's CNI ADD of the node's conflist; the pod
# annotation e2e.rdmak8s.io/device-id is what Multus would pass as deviceID, see
# e2e/cni/e2e-slot), the second CreateContainer with the answer's cdi_devices in CDI_devices and
# its envs, then StartContainer. They record the pod for pod_run and the traffic helpers
# ($POD_DIR/POD: netns = containerd's cni-<uuid>, ip, sandbox, container, keep). Each prints
# what failed.
cri_pod_sandbox() {
  local pod=$1 uid=$2 devid=$3 d=$POD_DIR/$1 w=/tmp/cri-$1 out sb spid ns
  mkdir -p "$d" "$w" "/tmp/pods/$pod"
  jq -n --arg pod "$(echo "$pod" | tr 'A-Z' 'a-z')" --arg uid "$uid" --arg id "$devid" \
    '{metadata: {name: $pod, uid: $uid, namespace: "default", attempt: 0}, hostname: $pod,
      log_directory: ("/tmp/pods/" + $pod), annotations: {"e2e.rdmak8s.io/device-id": $id}, linux: {}}' > "$w/sandbox.json"
  jq -n --slurpfile c "$w/sandbox.json" '{config: $c[0]}' > "$w/run.json"
  out=$(cri RunPodSandbox "$w/run.json" 2>&1) || { echo "RunPodSandbox: $out"; return 1; }
  sb=$(echo "$out" | jq -r .pod_sandbox_id)
  echo "$sb" > "$d/sandbox"
  jq -nc --arg id "$sb" '{pod_sandbox_id: $id, verbose: true}' > "$w/sbst.json"
  out=$(cri PodSandboxStatus "$w/sbst.json" 2>&1) || { echo "PodSandboxStatus: $out"; return 1; }
  echo "$out" | jq -r '.status.network.ip // empty' > "$d/ip"
  spid=$(echo "$out" | jq -r '.info.info // "{}" | fromjson | .pid // empty')
  ns=$($IP netns identify "$spid" 2>/dev/null)
  [ -n "$ns" ] || { echo "the sandbox (pause pid '${spid}') is in no named network namespace: $(echo "$out" | head -c 600)"; return 1; }
  echo "$ns" > "$d/netns"
  echo "$spid" > "$d/keep"
  : > "$d/env"
}

cri_pod_container() {
  local pod=$1 alloc=$2 d=$POD_DIR/$1 w=/tmp/cri-$1 out sb cid cpid
  sb=$(cat "$d/sandbox")
  jq -n --arg sb "$sb" --slurpfile c "$w/sandbox.json" --argjson a "$alloc" --arg img "$RDMA_POD_IMAGE" \
    '{pod_sandbox_id: $sb, sandbox_config: $c[0],
      config: {metadata: {name: "rdma"}, image: {image: $img},
               envs: [($a.envs // {}) | to_entries[] | {key: .key, value: .value}],
               mounts: [{container_path: "/usr", host_path: "/usr", readonly: true},
                        {container_path: "/etc/libibverbs.d", host_path: "/etc/libibverbs.d", readonly: true},
                        {container_path: "/e2e", host_path: "/e2e", readonly: true}],
               CDI_devices: [($a.cdi_devices // [])[] | {name: .}], log_path: "rdma.log", linux: {}}}' > "$w/create.json"
  out=$(cri CreateContainer "$w/create.json" 2>&1) || { echo "CreateContainer: $out"; return 1; }
  cid=$(echo "$out" | jq -r .container_id)
  jq -nc --arg id "$cid" '{container_id: $id}' > "$w/cid.json"
  out=$(cri StartContainer "$w/cid.json" 2>&1) || { echo "StartContainer: $out"; return 1; }
  jq -nc --arg id "$cid" '{container_id: $id, verbose: true}' > "$w/cst.json"
  out=$(cri ContainerStatus "$w/cst.json" 2>&1) || { echo "ContainerStatus: $out"; return 1; }
  cpid=$(echo "$out" | jq -r '.info.info // "{}" | fromjson | .pid // empty')
  [ -n "$cpid" ] || { echo "ContainerStatus (verbose) names no pid: $(echo "$out" | head -c 600)"; return 1; }
  echo "$cpid" >> "$d/keep"
  echo "$cid" > "$d/container"
}

# cri_rdma_pod_down POD: the teardown kubelet does: StopContainer, RemoveContainer, StopPodSandbox
# (containerd's first CNI DEL), RemovePodSandbox (its second). Prints what failed.
cri_rdma_pod_down() {
  local d=$POD_DIR/$1 w=/tmp/cri-$1 out cid sb
  cid=$(cat "$d/container" 2>/dev/null); sb=$(cat "$d/sandbox" 2>/dev/null)
  if [ -n "$cid" ]; then
    jq -nc --arg id "$cid" '{container_id: $id, timeout: 10}' > "$w/stop.json"
    pod_kill "$1"
    out=$(cri StopContainer "$w/stop.json" 2>&1) || { echo "StopContainer: $out"; return 1; }
    out=$(cri RemoveContainer "$w/cid.json" 2>&1) || { echo "RemoveContainer: $out"; return 1; }
  fi
  [ -n "$sb" ] || return 0
  jq -nc --arg id "$sb" '{pod_sandbox_id: $id}' > "$w/sb.json"
  out=$(cri StopPodSandbox "$w/sb.json" 2>&1) || { echo "StopPodSandbox: $out"; return 1; }
  out=$(cri RemovePodSandbox "$w/sb.json" 2>&1) || { echo "RemovePodSandbox: $out"; return 1; }
  rm -rf "$d"
}

# cri_container_holds POD WANT FROM CMD...: the check POD-container-devices: the lines CMD prints
# in POD's container (its device nodes, env, sysfs: what the runtime injected) are the words of
# WANT, in any order; FROM says where WANT came from (the CDI names the container was made with).
cri_container_holds() {
  local pod=$1 want=$2 from=$3 got
  shift 3
  got=$(pod_run "$pod" "$@" 2>&1 | sort | tr '\n' ' ')
  want=$(echo "$want" | tr ' ' '\n' | grep . | sort -u | tr '\n' ' ')
  if [ "$got" = "$want" ]; then
    result "$pod-container-devices" PASS "the container holds [$got] from CDI $from"
  else
    result "$pod-container-devices" FAIL "the container holds [$got], wanted [$want]"
  fi
}

# cri_raw_verbs SPOD SDEV SIP CPOD CDEV CIP: raw verbs between two containers (SPOD serving on
# SIP), each side's RoCE v2 GID index read in its own container for the address of its CNI
# result: battery_raw_verbs' ibv_rc_pingpong and ib_write_bw (checks ctr-gid-index,
# ctr-ibv_rc_pingpong, ctr-ib_write_bw).
cri_raw_verbs() {
  battery_raw_verbs ctr "$1" "$2" "$3" "$4" "$5" "$6" "ibv_rc_pingpong ib_write_bw"
}

# cri_node_clean: after containerd's teardown of every pod, no rdmak8s state is left (check
# state-clean) and containerd removed its cni-<uuid> namespaces (check netns-gone).
cri_node_clean() {
  local left="" ns
  check_state_clean "containerd's DELs"
  for ns in /var/run/netns/cni-*; do
    [ -e "$ns" ] && left="$left ${ns##*/}"
  done
  if [ -z "$left" ]; then
    result netns-gone PASS "containerd removed its pod namespaces"
  else
    result netns-gone FAIL "namespaces left: $left"
  fi
}

# cri_node_conflist NETNS_MODE: the node's one conflist, as containerd reads it from
# /etc/cni/net.d: e2e-slot (with the pod annotations capability, standing in for Multus's
# deviceID) and host-local, rdmak8s in NETNS_MODE with no deviceID (shared: it finds the device by
# CNI_IFNAME's netdev; exclusive: the pod's claimed device by K8S_POD_UID), the recording plugin
# last.
cri_node_conflist() {
  mkdir -p /etc/cni/net.d /etc/cni/rdmak8s
  [ -f /etc/cni/rdmak8s/node.json ] || echo '{"logFile": "/tmp/rdmak8s-cni.log"}' > /etc/cni/rdmak8s/node.json
  jq -n --arg mode "$1" '{cniVersion: "1.0.0", name: "e2e-fabric", plugins: [
    {type: "e2e-slot", capabilities: {"io.kubernetes.cri.pod-annotations": true},
     ipam: {type: "host-local", ranges: [[{subnet: "198.18.0.0/24"}]], dataDir: "/var/lib/cni/networks"}},
    {type: "rdmak8s", netnsMode: $mode, qos: {roceTos: 106}, logLevel: "debug"},
    {type: "e2e-cnilog"}]}' > /etc/cni/net.d/10-e2e-fabric.conflist
}

# cri_rdma_pod_up POD UID DEVICE_ID: cri_pod_sandbox (figure run-pod-sandbox-POD); on failure the
# check POD-run-pod-sandbox with the ends of containerd's, the slot plugin's and our CNI's logs.
cri_rdma_pod_up() {
  local t0 err
  t0=$(now_ms)
  if ! err=$(cri_pod_sandbox "$1" "$2" "$3" 2>&1); then
    result "$1-run-pod-sandbox" FAIL "$err"
    tail -n 15 "$CTRD_LOG" | sed 's/^/  containerd: /'
    show /run/e2e-slot/log; show /tmp/rdmak8s-cni.log 20
    return 1
  fi
  figure "run-pod-sandbox-$1" $(($(now_ms) - t0)) ms
}

# cri_rdma_container_up POD ALLOCATION_JSON: cri_pod_container; on failure the check
# POD-container with the end of containerd's log.
cri_rdma_container_up() {
  local err
  if ! err=$(cri_pod_container "$1" "$2" 2>&1); then
    result "$1-container" FAIL "$err"
    tail -n 15 "$CTRD_LOG" | sed 's/^/  containerd: /'
    return 1
  fi
}

# check_cri_rdma_pod_down POD: cri_rdma_pod_down as the check POD-cri-down.
check_cri_rdma_pod_down() {
  local err
  if err=$(cri_rdma_pod_down "$1" 2>&1); then
    result "$1-cri-down" PASS "StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox"
  else
    result "$1-cri-down" FAIL "$err"; show /run/e2e-slot/log; show /tmp/rdmak8s-cni.log 20
  fi
}

# cri_rdma_session PODS_UP PODS_DOWN: what both containerd RDMA scenarios run once their node's
# agents are up: containerd (check containerd-up), the pause and RDMA pod images (check images),
# PODS_UP (podA and podB through CRI, setting A_IP and B_IP), raw verbs between their containers
# when they came up (cri_raw_verbs), PODS_DOWN whatever happened, then containerd stops.
cri_rdma_session() {
  local err
  if err=$(containerd_up 120 2>&1); then
    result containerd-up PASS "containerd $(ctr --address "$CTRD_SOCK" version 2>&1 | sed -n '/^Server:/,$s/^ *Version: *//p' | head -n 1) answers"
    if err=$(pause_image_import 2>&1) && err=$(rdma_pod_image_import 2>&1); then
      result images PASS "$(ctr_k8s images ls -q 2>&1 | tr '\n' ' ')"
      if $1; then
        cri_raw_verbs podA rxe_slot1 "$A_IP" podB rxe_slot2 "$B_IP"
      fi
      $2
    else
      result images FAIL "$(echo "$err" | tail -n 5 | tr '\n' ' ')"
    fi
  else
    result containerd-up FAIL "$err"
    show "$CTRD_LOG" 20
  fi
  containerd_down
}
