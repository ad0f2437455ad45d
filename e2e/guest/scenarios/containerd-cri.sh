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
  else
    result image-import FAIL "$(echo "$err" | tail -n 5 | tr '\n' ' ')"
  fi
else
  result containerd-up FAIL "$err"
  show "$CTRD_LOG" 20
fi
containerd_down
