# Traffic verifiers: perftest, ibv_rc_pingpong and rping outputs read into VERDICT/VALUE.
# Sourced by e2e/guest/lib.sh; needs the rest of it.

perftest_row() {  # perftest_row FILE COL
  awk -v col="$2" '/#bytes/ { hdr = 1; next }
                   hdr && $1 ~ /^[0-9]+$/ && NF >= col { print $2, $col; exit }' "$1"
}

# Verifiers: each reads a client output, sets VERDICT (a sentence) and VALUE (a figure, or empty),
# and returns 0 when the traffic really happened. Checked by iterations and figures, never by exit
# codes alone (perftest can exit 0 after "0 iterations").
verify_perftest() {  # verify_perftest FILE ITERS COL UNIT
  local row n v
  row=$(perftest_row "$1" "$3")
  n=${row% *}
  v=${row#* }
  VALUE=""
  # The proof of traffic is the row with every iteration done; the figure beside it is only a
  # figure. A finite positive number is recorded. perftest prints "inf" or "nan" when its cycle
  # clock went wrong (under TCG its sampled CPU frequency can come out 0: seen in CI as
  # "300 inf" for ib_send_lat -R); that run still completed, so it passes without a figure.
  if [ -n "$row" ] && [ "$n" = "$2" ]; then
    if echo "$v" | grep -Eq '^[0-9]+(\.[0-9]+)?$' && awk -v v="$v" 'BEGIN { exit !(v + 0 > 0) }'; then
      VERDICT="$n iterations, $v $4"
      VALUE=$v
      return 0
    fi
    if echo "$v" | grep -Eiq '^[-+]?(inf|nan)$'; then
      VERDICT="$n iterations, no figure (perftest's clock gave '$v')"
      return 0
    fi
  fi
  VERDICT="expected $2 iterations with a positive result, got '${row:-no result row}'"
  return 1
}

verify_pingpong() {  # verify_pingpong FILE ITERS: "N iters in S seconds = U usec/iter"
  local line
  line=$(grep -m1 " iters in " "$1")
  VALUE=""
  if [ "$(echo "$line" | awk '{print $1}')" = "$2" ]; then
    VERDICT=$line
    VALUE=$(echo "$line" | awk '{print $(NF-1)}')
    return 0
  fi
  VERDICT="expected '$2 iters in', got '${line:-nothing}'"
  return 1
}

verify_rping() {  # verify_rping FILE COUNT: rping -v prints one "ping data:" line per iteration
  local n
  n=$(grep -c "ping data: rdma-ping-" "$1")
  VALUE=""
  if [ "$n" -ge "$2" ]; then
    VERDICT="$n verified pings"
    return 0
  fi
  VERDICT="expected $2 verified pings, got $n"
  return 1
}
