# Fetching packages of another Debian release without touching this machine's apt sources:
# a private apt configuration (its own sources, lists, cache and an empty dpkg status) under a
# directory the caller owns, used through APT_CONFIG by `apt-get update`, `apt-cache` and
# `apt-get download`. Sourced by e2e/build-image.sh (trixie-backports' kernel) and
# scripts/fetch-trixie-tools.sh (trixie's kustomize and kubectl) and scripts/fetch-trixie-containerd.sh
# (trixie's containerd 1.7, Debian 12's runc). Needs bash, apt and python3.

# debian_mirror: prints the Debian main-archive mirror this machine's apt configuration uses
# (the first URI ending in /debian with a suite that is not -security, from sources.list,
# sources.list.d/*.list and deb822 *.sources), or $DEBIAN_MIRROR when set. Exits non-zero with
# the reason on stderr when there is none.
debian_mirror() {
  if [[ -n ${DEBIAN_MIRROR:-} ]]; then echo "$DEBIAN_MIRROR"; return; fi
  python3 - <<'EOF'
import glob, re, sys
uris = []
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        for line in open(path):
            line = line.split("#", 1)[0].strip()
            m = re.match(r"deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m:
                uris.append((m.group(2), [m.group(3)]))
    except OSError:
        pass
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    try:
        text = open(path).read()
    except OSError:
        continue
    for stanza in re.split(r"\n\s*\n", text):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            fields[k.strip().lower()] = v.split()
        if "deb" in fields.get("types", []):
            for u in fields.get("uris", []):
                uris.append((u, fields.get("suites", [])))
for uri, suites in uris:
    if uri.rstrip("/").endswith("/debian") and any(not s.endswith("-security") for s in suites):
        print(uri.rstrip("/"))
        sys.exit(0)
sys.exit("no Debian main-archive mirror (a URI ending in /debian) in /etc/apt/sources.list*; "
         "set DEBIAN_MIRROR")
EOF
}

# private_apt ROOT MIRROR SUITE: writes a private apt configuration under ROOT whose only source
# is "MIRROR SUITE main" (signed by Debian's archive keyring), and exports APT_CONFIG to use it.
# Idempotent; downloads nothing.
private_apt() {
  local root=$1 mirror=$2 suite=$3
  mkdir -p "$root"/{etc/apt/sources.list.d,etc/apt/preferences.d,etc/apt/apt.conf.d,etc/apt/trusted.gpg.d} \
           "$root"/state/lists/partial "$root"/cache/archives/partial
  touch "$root/state/status"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
    > "$root/etc/apt/sources.list"
  # As root, apt would drop to _apt for downloads, which cannot write into the caller's dirs.
  local sandbox=""
  [[ $(id -u) -eq 0 ]] && sandbox='APT::Sandbox::User "root";'
  cat > "$root/apt.conf" <<EOF
Dir::Etc "$root/etc/apt";
Dir::State "$root/state";
Dir::State::status "$root/state/status";
Dir::Cache "$root/cache";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
Acquire::Languages "none";
$sandbox
EOF
  export APT_CONFIG=$root/apt.conf
}

# private_apt_lists_fresh ROOT MAX_AGE_SECONDS: true when ROOT's package lists exist and the last
# successful private_apt_update is younger than MAX_AGE_SECONDS.
private_apt_lists_fresh() {
  local root=$1 max_age=$2 stamp=$1/state/updated
  [[ -f $stamp && $(( $(date +%s) - $(stat -c %Y "$stamp") )) -lt $max_age ]] && \
    [[ -n $(ls "$root"/state/lists/*Packages* 2>/dev/null) ]]
}

# private_apt_update ROOT LOG NAME: `apt-get update` of the private configuration (private_apt
# first), its output in LOG. Returns 0 on success, and also when it failed but lists from an earlier
# update remain (then says so on stderr, prefixed "NAME: ": stale lists beat no run offline);
# returns 1, saying why, when it failed and there are no lists at all.
private_apt_update() {
  local root=$1 log=$2 name=$3
  if apt-get update -qq >"$log" 2>&1; then
    touch "$root/state/updated"
  elif [[ -n $(ls "$root"/state/lists/*Packages* 2>/dev/null) ]]; then
    echo "$name: apt-get update failed (see $log); using the package lists already cached" >&2
  else
    echo "$name: error: apt-get update failed: $(tail -3 "$log")" >&2
    return 1
  fi
}
