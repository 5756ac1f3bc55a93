#!/usr/bin/env bash
# Real Slurm accounting for the test cluster (scripts/slurm-ci.sh): Debian's MariaDB and slurmdbd
# 22.05, run as root without systemd, everything private to one directory.
#   scripts/slurm-ci-accounting.sh up DIR       install the packages if missing, start mariadbd and
#                                               slurmdbd, add the cluster; print the slurm.conf lines
#   scripts/slurm-ci-accounting.sh down DIR     stop slurmdbd, then mariadbd (by PID files); keep data
#   scripts/slurm-ci-accounting.sh status DIR   say what runs; exit 0 only when both daemons run
# DIR must be the directory of the cluster's slurm.conf: slurmdbd finds slurmdbd.conf in the
# directory of $SLURM_CONF (22.05: get_extra_conf_path), so DIR/slurmdbd.conf sits beside
# DIR/slurm.conf. slurm.conf itself need not exist yet; `up` runs its own checks through a private
# client configuration (DIR/slurm-acct-client.conf).
# The database: mariadbd with datadir DIR/mysql, socket DIR/mysql.sock, skip-networking. slurmdbd
# 22.05 passes no socket to mysql_real_connect, so with StorageHost=localhost the MariaDB client
# library takes the socket from $MYSQL_UNIX_PORT, which is set when slurmdbd starts.
# Environment: SLURM_CI_CLUSTER (default ci) is added with sacctmgr; SLURM_CI_DBD_PORT (default
# 6819) is slurmdbd's port. Start it before slurmctld. munged is started if none runs (and then
# stopped by `down`). On stdout `up` prints only the lines slurm.conf needs (SLURM_CI_EXTRA).
set -euo pipefail
cmd=${1:-}; D=${2:-}
if [ -z "$cmd" ] || [ -z "$D" ]; then
  echo "usage: $0 up DIR | down DIR | status DIR" >&2; exit 1
fi
[ "$cmd" = up ] && mkdir -p "$D"
[ -d "$D" ] || { echo "$0: no directory $D" >&2; exit 1; }
D=$(cd "$D" && pwd)
CLUSTER=${SLURM_CI_CLUSTER:-ci}
PORT=${SLURM_CI_DBD_PORT:-6819}
WAIT=${SLURM_CI_ACCT_WAIT:-30}   # seconds, for each wait
SOCK=$D/mysql.sock
CLIENT_CONF=$D/slurm-acct-client.conf

log() { echo "slurm-ci-accounting: $*" >&2; }

# The PID in file $1 if that process runs and is called $2 (a PID file left behind by a dead
# daemon may name an unrelated process by now).
running_pid() {
  local f=$1 comm=$2 pid
  [ -s "$f" ] || return 1
  pid=$(tr -dc '0-9' < "$f")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
  echo "$pid"
}

# Stop the daemon of PID file $1 (process name $2): SIGTERM, wait up to $WAIT s, then SIGKILL.
stop_pid() {
  local f=$1 comm=$2 pid
  if ! pid=$(running_pid "$f" "$comm"); then rm -f "$f"; return 0; fi
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((WAIT * 5))); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$f"; return 0; }
    sleep 0.2
  done
  log "$comm ($pid) did not stop in ${WAIT}s; SIGKILL"
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 25); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  rm -f "$f"
}

fail() {  # message, log file
  log "$1"
  if [ -n "${2:-}" ] && [ -f "$2" ]; then echo "--- tail of $2:" >&2; tail -n 20 "$2" >&2; fi
  exit 1
}

sql() { mariadb --no-defaults --socket="$SOCK" -uroot; }   # statements on stdin

# Client configuration for our own sacctmgr calls: whatever DIR/slurm.conf says (it may not exist
# yet, or slurm-ci.sh may have written it with accounting_storage/none).
write_client_conf() {
  cat > "$CLIENT_CONF" <<CONF
ClusterName=$CLUSTER
SlurmctldHost=localhost
AuthType=auth/munge
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$PORT
NodeName=localhost CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES
CONF
}
sacct_mgr() { SLURM_CONF=$CLIENT_CONF timeout 10 sacctmgr "$@"; }

install_packages() {
  local missing=() p added_policy=0
  for p in mariadb-server slurmdbd iproute2; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]}"
  # Debian's mariadb-server postinst starts the service through invoke-rc.d: forbid that, so no
  # system-wide mariadbd runs on port 3306. A policy-rc.d already there (Docker images have one
  # that says 101) is left alone.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  local rc=0
  {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
  } || rc=$?
  [ "$added_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ "$rc" = 0 ] || fail "apt-get install ${missing[*]} failed"
}

start_munge() {
  if [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; then return 0; fi
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  [ -s /etc/munge/munge.key ] || mungekey --create --force
  chown munge:munge /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
  chmod 0400 /etc/munge/munge.key
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 1 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
  [ -s /run/munge/munged.pid ] || fail "munged wrote no PID file" /var/log/munge/munged.log
  cp /run/munge/munged.pid "$D/acct-munged.pid"   # ours: `down` stops it
}

start_mariadb() {
  if running_pid "$D/mysql.pid" mariadbd >/dev/null; then return 0; fi
  rm -f "$D/mysql.pid" "$SOCK"
  if [ ! -d "$D/mysql/mysql" ]; then
    log "initialising $D/mysql"
    rm -rf "$D/mysql"
    mariadb-install-db --no-defaults --user=root --datadir="$D/mysql" \
      --auth-root-authentication-method=socket --skip-test-db > "$D/mysql-install.log" 2>&1 ||
      fail "mariadb-install-db failed" "$D/mysql-install.log"
  fi
  setsid mariadbd --no-defaults --user=root --datadir="$D/mysql" --socket="$SOCK" \
    --pid-file="$D/mysql.pid" --log-error="$D/mysql.err" --skip-networking \
    --innodb-buffer-pool-size=512M --innodb-log-file-size=32M --innodb-lock-wait-timeout=900 \
    </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 $((WAIT * 5))); do
    if mariadb-admin --no-defaults --socket="$SOCK" -uroot ping >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  fail "mariadbd did not answer on $SOCK in ${WAIT}s" "$D/mysql.err"
}

write_dbd_conf() {
  # A password for the slurm user: kept across runs (the conf holds it), made on the first.
  local pass=""
  [ -f "$D/slurmdbd.conf" ] && pass=$(sed -n 's/^StoragePass=//p' "$D/slurmdbd.conf")
  [ -n "$pass" ] || pass=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
  sql <<SQL
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
SQL
  (
    umask 077
    cat > "$D/slurmdbd.conf.new" <<CONF
# written by scripts/slurm-ci-accounting.sh
AuthType=auth/munge
DbdHost=localhost
DbdPort=$PORT
SlurmUser=root
DebugLevel=info
LogFile=$D/slurmdbd.log
PidFile=$D/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$pass
StorageLoc=slurm_acct_db
CONF
  )
  chown root:root "$D/slurmdbd.conf.new"
  chmod 600 "$D/slurmdbd.conf.new"
  mv -f "$D/slurmdbd.conf.new" "$D/slurmdbd.conf"
}

# The PIDs listening on TCP port $PORT.
port_pids() { ss -H -ltnp "sport = :$PORT" 2>/dev/null | grep -o 'pid=[0-9]*' | grep -o '[0-9]*' | sort -u || true; }

# Another slurmdbd on the port would answer our checks instead of ours (and ours would die).
check_port() {
  running_pid "$D/slurmdbd.pid" slurmdbd >/dev/null && return 0
  local other
  other=$(port_pids)
  [ -z "$other" ] || fail "port $PORT is taken (pid ${other//$'\n'/ }); set SLURM_CI_DBD_PORT"
}

start_slurmdbd() {
  if running_pid "$D/slurmdbd.pid" slurmdbd >/dev/null; then return 0; fi
  rm -f "$D/slurmdbd.pid"
  check_port
  write_dbd_conf
  # slurmdbd daemonises; it reads $(dirname $SLURM_CONF)/slurmdbd.conf and reaches mariadbd
  # through the socket in $MYSQL_UNIX_PORT.
  SLURM_CONF=$D/slurm.conf MYSQL_UNIX_PORT=$SOCK slurmdbd </dev/null >"$D/slurmdbd.stderr" 2>&1 ||
    fail "slurmdbd did not start" "$D/slurmdbd.stderr"
  for _ in $(seq 1 $((WAIT * 5))); do
    running_pid "$D/slurmdbd.pid" slurmdbd >/dev/null && return 0
    sleep 0.2
  done
  fail "slurmdbd wrote no PID file in ${WAIT}s" "$D/slurmdbd.log"
}

wait_sacctmgr() {
  local end=$((SECONDS + WAIT)) pid
  while [ "$SECONDS" -lt "$end" ]; do
    pid=$(running_pid "$D/slurmdbd.pid" slurmdbd) || fail "slurmdbd died" "$D/slurmdbd.log"
    if port_pids | grep -x "$pid" >/dev/null && sacct_mgr -i show cluster >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  fail "sacctmgr got no answer from slurmdbd (port $PORT) in ${WAIT}s" "$D/slurmdbd.log"
}

add_cluster() {
  if sacct_mgr -n -P show cluster format=cluster 2>/dev/null | grep -x "$CLUSTER" >/dev/null; then return 0; fi
  sacct_mgr -i add cluster "$CLUSTER" >&2 || fail "sacctmgr add cluster $CLUSTER failed" "$D/slurmdbd.log"
}

case "$cmd" in
  up)
    [ "$(id -u)" -eq 0 ] || fail "run as root"
    install_packages
    check_port
    start_munge
    write_client_conf
    start_mariadb
    start_slurmdbd
    wait_sacctmgr
    add_cluster
    cat <<LINES
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$PORT
JobAcctGatherType=jobacct_gather/none
LINES
    ;;
  down)
    stop_pid "$D/slurmdbd.pid" slurmdbd
    stop_pid "$D/mysql.pid" mariadbd
    rm -f "$SOCK"
    [ -s "$D/acct-munged.pid" ] && stop_pid "$D/acct-munged.pid" munged
    rm -f "$D/acct-munged.pid"
    ;;
  status)
    rc=0
    # the port `up` used (its client configuration), unless SLURM_CI_DBD_PORT says otherwise
    if [ -z "${SLURM_CI_DBD_PORT:-}" ] && [ -f "$CLIENT_CONF" ]; then
      PORT=$(sed -n 's/^AccountingStoragePort=//p' "$CLIENT_CONF")
    fi
    if pid=$(running_pid "$D/mysql.pid" mariadbd); then echo "mariadbd: running (pid $pid, socket $SOCK)"; else echo "mariadbd: stopped"; rc=1; fi
    if pid=$(running_pid "$D/slurmdbd.pid" slurmdbd); then echo "slurmdbd: running (pid $pid, port $PORT)"; else echo "slurmdbd: stopped"; rc=1; fi
    if [ "$rc" = 0 ] && [ -f "$CLIENT_CONF" ]; then
      if clusters=$(sacct_mgr -n -P show cluster format=cluster 2>/dev/null); then
        echo "clusters: ${clusters//$'\n'/ }"
      else
        echo "sacctmgr: no answer"; rc=1
      fi
    fi
    exit "$rc"
    ;;
  *) echo "usage: $0 up DIR | down DIR | status DIR" >&2; exit 1 ;;
esac
