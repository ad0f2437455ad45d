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
