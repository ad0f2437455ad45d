# Traffic pairs: a server and a client in two pods, readiness waits, one retry.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

wait_tcp_listen() {  # wait_tcp_listen POD PORT SECONDS [PID]
  local hex end
  hex=$(printf '%04X' "$2")
  end=$(($(now_ms) + $3 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    $IP netns exec "$(pod_slot "$1")" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
      awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" { found = 1 } END { exit !found }' && return 0
    # A server that already exited will never listen.
    [ -n "$4" ] && ! kill -0 "$4" 2>/dev/null && return 1
    sleep 0.2
  done
  return 1
}

# rdma_cm listeners open no TCP socket: readiness is an cm_id in state LISTEN.
wait_cm_listen() {  # wait_cm_listen POD SECONDS [PID]
  local end
  end=$(($(now_ms) + $2 * 1000))
  while [ "$(now_ms)" -lt $end ]; do
    pod_run "$1" $RDMA res show cm_id 2>/dev/null | grep -q LISTEN && return 0
    [ -n "$3" ] && ! kill -0 "$3" 2>/dev/null && return 1
    sleep 0.2
  done
  return 1
}

# pair NAME SERVER_POD CLIENT_POD READY SERVER_CMD CLIENT_CMD
#   READY: tcp:PORT, cm, or none. Runs the server in the background, waits until it is ready, runs
#   the client, kills the server as soon as the client fails (or every failure waits out its
#   timeout), and leaves the outputs in /tmp/NAME.server and /tmp/NAME.client. Returns the client's
#   exit status (callers check the outputs, not only this).
pair() {
  local name=$1 spod=$2 cpod=$3 ready=$4 scmd=$5 ccmd=$6 spid crc ok=1
  pod_kill "$spod"; pod_kill "$cpod"
  log "$name: server in $spod: $scmd"
  pod_run "$spod" timeout -s KILL "$E2E_TIMEOUT" $scmd > "/tmp/$name.server" 2>&1 &
  spid=$!
  case $ready in
    tcp:*) wait_tcp_listen "$spod" "${ready#tcp:}" 30 $spid || ok=0 ;;
    cm) wait_cm_listen "$spod" 30 $spid || ok=0 ;;
    *) sleep 1 ;;
  esac
  if [ $ok = 0 ]; then
    echo "server not ready (exited, or no listener after 30 s)" > "/tmp/$name.client"
    kill -9 $spid 2>/dev/null; wait $spid 2>/dev/null
    pod_kill "$spod"
    return 124
  fi
  log "$name: client in $cpod: $ccmd"
  pod_run "$cpod" timeout -s KILL "$E2E_TIMEOUT" $ccmd > "/tmp/$name.client" 2>&1
  crc=$?
  if [ $crc != 0 ]; then kill -9 $spid 2>/dev/null; fi
  wait $spid 2>/dev/null
  pod_kill "$spod"; pod_kill "$cpod"
  return $crc
}

# Reads perftest's result row (the first numeric row after the "#bytes #iterations" header) and
# prints "ITERATIONS VALUE" where VALUE is column COL (4 = BW average for *_bw, 5 = t_typical for
# *_lat).

# traffic CHECK FIGURE_UNIT READY SPOD CPOD SCMD CCMD VERIFY VERIFY_ARGS...
#   Runs a server/client pair and verifies the client's output. One retry: TCG on a loaded
#   machine occasionally stalls a run; a second failure is a FAIL, and a pass on the second
#   attempt says so in its detail.
traffic() {
  local check=$1 unit=$2 ready=$3 spod=$4 cpod=$5 scmd=$6 ccmd=$7 verify=$8 first="" attempt=1
  shift 8
  while :; do
    pair "$check" "$spod" "$cpod" "$ready" "$scmd" "$ccmd"
    if $verify "/tmp/$check.client" "$@"; then
      result "$check" PASS "$VERDICT${first:+ (on attempt 2; attempt 1: $first)}"
      [ -n "$VALUE" ] && figure "$check" "$VALUE" "$unit"
      [ "$E2E_VERBOSE" = 1 ] && show "/tmp/$check.client" 40
      return 0
    fi
    show "/tmp/$check.client"
    show "/tmp/$check.server"
    dump_dmesg
    if [ $attempt -ge 2 ]; then
      result "$check" FAIL "$VERDICT (attempt 1: $first)"
      return 1
    fi
    log "$check: attempt 1 failed ($VERDICT); once more"
    first=$VERDICT
    attempt=2
  done
}
