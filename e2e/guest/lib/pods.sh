# Pods: their records, commands run inside them, pods built from Allocate answers.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

# Pods. A pod is recorded under /run/e2e/pods/NAME: netns (the slot), pid (a pause process holding
# its mount namespace, when it has one) and env (KEY=VALUE lines from Allocate); a container that
# containerd runs has container (its CRI ID: commands go through ExecSync) and keep instead.

POD_DIR=/run/e2e/pods

pod_register_netns() {  # pod_register_netns POD SLOT: a pod that is only a network namespace
  mkdir -p "$POD_DIR/$1" && echo "$2" > "$POD_DIR/$1/netns" && : > "$POD_DIR/$1/env"
}

# pod_run POD CMD...: runs CMD in the pod's namespaces with the pod's environment.
pod_run() {
  local pod=$1 d=$POD_DIR/$1 slot
  shift
  if [ ! -f "$d/netns" ]; then
    # Not a registered pod: a bare slot name.
    $IP netns exec "$pod" "$@"
    return
  fi
  slot=$(cat "$d/netns")
  if [ -f "$d/container" ]; then
    # A container run by containerd (containerd.sh): the command runs through CRI ExecSync.
    cri_exec "$(cat "$d/container")" "$@"
  elif [ -f "$d/pid" ]; then
    nsenter -t "$(cat "$d/pid")" -n -m env $(cat "$d/env") "$@"
  else
    $IP netns exec "$slot" env $(cat "$d/env") "$@"
  fi
}

pod_slot() { if [ -f "$POD_DIR/$1/netns" ]; then cat "$POD_DIR/$1/netns"; else echo "$1"; fi; }

# Kills every process left in the pod's network namespace except pause processes (several pods can
# share a slot's namespace) and a container's own (its sandbox and init: $POD_DIR/POD/keep), with
# their children: a stale server would answer the next test.
pod_kill() {
  local slot pids keep p
  slot=$(pod_slot "$1")
  keep=" $(cat "$POD_DIR"/*/pid "$POD_DIR"/*/keep 2>/dev/null | tr '\n' ' ') "
  pids=$($IP netns pids "$slot" 2>/dev/null)
  for p in $pids; do
    # A kept process's own children stay too (a container's init: sh waiting on its sleep).
    case $keep in *" $p "*|*" $(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) "*) ;; *) kill -9 "$p" 2>/dev/null ;; esac
  done
  return 0
}

# Waits until a TCP listener on PORT exists in the pod's network namespace (perftest and
# ibv_*_pingpong exchange their QP data over TCP before any verbs traffic).

# Pods: a slot's network namespace plus a mount namespace whose /dev/infiniband holds only the nodes
# Allocate returned, with Allocate's environment. A missing node fails a test as it fails a
# container.

# pod_create POD SLOT ALLOCATION_JSON: ALLOCATION_JSON is one container response of Allocate
# ({"envs","devices":[{"host_path","container_path","permissions"}],...}).
pod_create() {
  local pod=$1 slot=$2 alloc=$3 d=$POD_DIR/$1 host cpath hex maj min i=0
  mkdir -p "$d"
  echo "$slot" > "$d/netns"
  echo "$alloc" > "$d/allocate.json"
  echo "$alloc" | jq -r '(.envs // {}) | to_entries[] | "\(.key)=\(.value)"' > "$d/env" || return 1
  : > "$d/nodes"
  for host in $(echo "$alloc" | jq -r '(.devices // [])[] | "\(.host_path)=\(.container_path)"'); do
    cpath=${host#*=}
    host=${host%%=*}
    case $cpath in
      /dev/infiniband/*) ;;
      *) echo "pod $pod: Allocate gave container path $cpath outside /dev/infiniband" >&2; return 1 ;;
    esac
    hex=$(stat -c '%t %T' "$host" 2>/dev/null) || {
      echo "pod $pod: Allocate gave host path $host, which does not exist" >&2; return 1; }
    maj=$(printf '%d' "0x${hex% *}")
    min=$(printf '%d' "0x${hex#* }")
    echo "$cpath $maj $min" >> "$d/nodes"
  done
  rm -f "$d/ready"
  # The pause process: in the slot's netns (ip netns exec also remounts /sys for it), a private
  # mount namespace with a fresh tmpfs on /dev/infiniband and only the allocated nodes in it.
  $IP netns exec "$slot" unshare -m sh -c '
    d=$1
    mount -t tmpfs -o mode=0755 tmpfs /dev/infiniband || exit 1
    while read -r cpath maj min; do
      mknod -m 0666 "$cpath" c "$maj" "$min" || exit 1
    done < "$d/nodes"
    : > "$d/ready"
    exec sleep 2147483647' sh "$d" > "$d/pause.log" 2>&1 &
  echo $! > "$d/pid"
  while [ ! -f "$d/ready" ] && [ $i -lt 100 ]; do
    kill -0 "$(cat "$d/pid")" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
  done
  if [ ! -f "$d/ready" ]; then
    echo "pod $pod: pause process did not come up: $(cat "$d/pause.log")" >&2
    return 1
  fi
}

pod_delete() {  # pod_delete POD: kills the pod's processes and its pause process
  local d=$POD_DIR/$1
  pod_kill "$1"
  [ -f "$d/pid" ] && kill -9 "$(cat "$d/pid")" 2>/dev/null
  rm -rf "$d"
}
