# e2e-netns-mode: shared
# e2e-runtime: containerd
# e2e-default: no
# e2e-make-test: no
# e2e-timeout: 600
# A real runtime in the guest, the foundation (issue 25, step 1; no project binary): trixie's
# containerd 1.7 starts with its CRI plugin loaded and enable_cdi = true (as its start log says),
# an OCI image built in the guest from busybox imports into the k8s.io namespace, and runc runs a
# container from it through containerd's shim. Opt-in (run.py -s containerd-cri): its image carries
# about 100 MB more (containerd, ctr, the shim, runc).
. /e2e/containerd.sh

# cri_pod: a pod through CRI as kubelet makes one: RunPodSandbox (containerd runs the CNI chain),
# CreateContainer with the CDI device in CDI_devices, StartContainer, ExecSync to see what the
# container holds, then the teardown (StopPodSandbox: CNI DEL). Records what the chain was given.
cri_pod() {
  local d=/tmp/cri sb cid out cfg
  mkdir -p $d /tmp/pods/poda
  jq -n --arg uid "$POD_UID" '{metadata: {name: "poda", uid: $uid, namespace: "default", attempt: 0},
    hostname: "poda", log_directory: "/tmp/pods/poda", linux: {}}' > $d/sandbox.json
  jq -n --slurpfile c $d/sandbox.json '{config: $c[0]}' > $d/run.json
  if ! out=$(cri RunPodSandbox $d/run.json 2>&1); then
    result cri-run-pod-sandbox FAIL "$out"
    tail -n 20 "$CTRD_LOG" | sed 's/^/  containerd: /'
    cnilog_show
    return 1
  fi
  sb=$(echo "$out" | jq -r .pod_sandbox_id)
  ip=$(cri PodSandboxStatus "$(jq -nc --arg id "$sb" '{pod_sandbox_id: $id}' > $d/st.json; echo $d/st.json)" 2>&1 |
       jq -r '.status.network.ip // empty')
  result cri-run-pod-sandbox PASS "sandbox ${sb%"${sb#????????????}"}, pod IP ${ip:-none} (from containerd's CNI ADD)"
  add=$(ls "$CNILOG_DIR" 2>/dev/null | grep -c -- '-ADD\.env$')
  args=$(sed -n 's/^CNI_ARGS=//p' "$(ls "$CNILOG_DIR"/*-ADD.env 2>/dev/null | head -n 1)" 2>/dev/null)
  case ";$args;" in
    *";K8S_POD_UID=$POD_UID;"*) result cri-cni-args PASS "containerd's CNI ADD ($add call(s) of the recording plugin): CNI_ARGS=$args" ;;
    *) result cri-cni-args FAIL "CNI_ARGS '${args}' ($add ADD calls) lacks K8S_POD_UID=$POD_UID" ;;
  esac
  jq -n --arg sb "$sb" --slurpfile c $d/sandbox.json '{pod_sandbox_id: $sb, sandbox_config: $c[0],
    config: {metadata: {name: "rdma"}, image: {image: "e2e.local/pause:1"},
             command: ["/bin/sh", "-c", "trap \"exit 0\" TERM; sleep 2147483647 & wait"],
             CDI_devices: [{name: "e2e.local/rdma=probe"}], log_path: "rdma.log", linux: {}}}' > $d/create.json
  if out=$(cri CreateContainer $d/create.json 2>&1) && cid=$(echo "$out" | jq -r .container_id) &&
     out=$(cri StartContainer "$(jq -nc --arg id "$cid" '{container_id: $id}' > $d/start.json; echo $d/start.json)" 2>&1); then
    jq -n --arg id "$cid" --arg c 'ls /dev/infiniband; echo E2E_CDI_DEVICE=$E2E_CDI_DEVICE' \
      '{container_id: $id, cmd: ["/bin/sh", "-c", $c], timeout: 30}' > $d/exec.json
    out=$(cri ExecSync $d/exec.json 2>&1 | jq -r '.stdout // empty' | base64 -d 2>&1 | tr '\n' ' ')
    case " $out" in
      *" $UV E2E_CDI_DEVICE=rxe_slot1 "*) result cri-cdi-device PASS "the container holds what CDI_devices named: $out" ;;
      *) result cri-cdi-device FAIL "the container shows '$out', wanted /dev/infiniband/$UV and E2E_CDI_DEVICE=rxe_slot1" ;;
    esac
    jq -nc --arg id "$cid" '{container_id: $id, timeout: 10}' > $d/stop.json
    cri StopContainer $d/stop.json >/dev/null 2>&1
    cri RemoveContainer $d/start.json >/dev/null 2>&1
  else
    result cri-cdi-device FAIL "CreateContainer/StartContainer: $out"
    tail -n 20 "$CTRD_LOG" | sed 's/^/  containerd: /'
  fi
  jq -nc --arg id "$sb" '{pod_sandbox_id: $id}' > $d/sb.json
  if out=$(cri StopPodSandbox $d/sb.json 2>&1) && out=$(cri RemovePodSandbox $d/sb.json 2>&1); then
    del=$(ls "$CNILOG_DIR" 2>/dev/null | grep -c -- '-DEL\.env$')
    if [ "$del" -ge 1 ]; then
      result cri-stop-pod-sandbox PASS "StopPodSandbox and RemovePodSandbox: $del CNI DEL call(s) of the recording plugin; calls: $(ls "$CNILOG_DIR" | grep '\.env$' | sort -n | tr '\n' ' ')"
    else
      result cri-stop-pod-sandbox FAIL "no CNI DEL recorded: $(ls "$CNILOG_DIR" | tr '\n' ' ')"
    fi
  else
    result cri-stop-pod-sandbox FAIL "$out"
  fi
  cnilog_show
  for f in $(ls "$CNILOG_DIR"/*.json 2>/dev/null); do echo "  cnilog: $(basename "$f"): $(jq -c . "$f")"; done
}
POD_UID=11111111-aaaa-4aaa-8aaa-000000000001
# What CRI meets at its start: a chain with a real first plugin (ptp: the sandbox's eth0, which
# CRI requires an address on) and the recording plugin; a CDI spec for an rxe device's uverbs node.
mkdir -p /etc/cni/net.d /var/run/cdi
jq -n '{cniVersion: "1.0.0", name: "e2e-pod", plugins: [
  {type: "ptp", ipam: {type: "host-local", ranges: [[{subnet: "10.88.0.0/24"}]], dataDir: "/var/lib/cni/networks"}},
  {type: "e2e-cnilog"}]}' > /etc/cni/net.d/10-e2e-pod.conflist
UV=""
if err=$(slot_add slot1 rxe 2>&1); then
  for u in /sys/class/infiniband_verbs/uverbs*; do
    [ "$(cat "$u/ibdev" 2>/dev/null)" = rxe_slot1 ] && UV=$(basename "$u")
  done
fi
if [ -n "$UV" ] && [ -c "/dev/infiniband/$UV" ]; then
  jq -n --arg uv "/dev/infiniband/$UV" '{cdiVersion: "0.5.0", kind: "e2e.local/rdma", devices: [
    {name: "probe", containerEdits: {deviceNodes: [{path: $uv}], env: ["E2E_CDI_DEVICE=rxe_slot1"]}}]}' \
    > /var/run/cdi/e2e-rdma.json
  result cdi-spec PASS "e2e.local/rdma=probe: /dev/infiniband/$UV (rxe_slot1)"
else
  result cdi-spec FAIL "no uverbs node for rxe_slot1 ($err)"
fi
if err=$(containerd_up 120 2>&1); then
  result containerd-up PASS "containerd answers on $CTRD_SOCK"
  v=$(ctr --address "$CTRD_SOCK" version 2>&1 | sed -n '/^Server:/,$s/^ *Version: *//p' | head -n 1)
  case $v in
    1.7.*) result containerd-version PASS "server version $v" ;;
    *) result containerd-version FAIL "server version '$v', wanted 1.7.x" ;;
  esac
  cri=$(ctr --address "$CTRD_SOCK" plugins ls 2>&1 | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" {print $NF}')
  if [ "$cri" = ok ]; then
    result cri-plugin PASS "io.containerd.grpc.v1 cri ok"
  else
    result cri-plugin FAIL "CRI plugin status '${cri}': $(grep -i 'cri' "$CTRD_LOG" | grep -i -E 'error|fail' | tail -n 3 | tr '\n' ' ')"
  fi
  # The CRI plugin logs the configuration it runs with.
  cfg=$(grep -o 'EnableCDI:[a-z]* CDISpecDirs:\[[^]]*\]' "$CTRD_LOG" | head -n 1)
  case $cfg in
    EnableCDI:true*) result cri-enable-cdi PASS "CRI start log: $cfg" ;;
    *) result cri-enable-cdi FAIL "CRI start log says '${cfg:-nothing about EnableCDI}'" ;;
  esac
  if err=$(pause_image_import 2>&1); then
    result image-import PASS "$PAUSE_IMAGE: $(ctr_k8s images ls -q 2>&1 | tr '\n' ' ')"
    out=$(ctr_k8s run --rm --snapshotter native "$PAUSE_IMAGE" e2e-probe /bin/echo hello-from-runc 2>&1)
    if [ "$out" = hello-from-runc ]; then
      result runc-container PASS "ctr run through containerd-shim-runc-v2 and runc printed '$out'"
    else
      result runc-container FAIL "ctr run: $out"
      tail -n 15 "$CTRD_LOG" | sed 's/^/  containerd: /'
    fi
    cri_pod
  else
    result image-import FAIL "$(echo "$err" | tail -n 5 | tr '\n' ' ')"
  fi
else
  result containerd-up FAIL "$err"
  show "$CTRD_LOG" 20
fi
containerd_down
