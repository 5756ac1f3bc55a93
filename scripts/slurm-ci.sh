#!/usr/bin/env bash
# A real Slurm cluster on this machine for the fleet tests: Debian's slurmctld, slurmd and munge;
# N slurmd (default 3) on one host, each on its own port with 8 fake GPUs declared as GRES
# through character devices (mknod c 195 N, outside /dev). Everything lives under one directory.
#   scripts/slurm-ci.sh install         apt packages (once)
#   scripts/slurm-ci.sh up DIR [N]      write slurm.conf/gres.conf, start munge, slurmctld, N slurmd; wait until idle
#   scripts/slurm-ci.sh down DIR        stop by the PIDs in DIR (never by name), SIGKILL after 10 s
#   scripts/slurm-ci.sh restart-node DIR NAME   start one slurmd again: stops it first when it runs
#                                       (a slurmd restart, as a drill does), else after a test killed it
# Tests plant configurations through the environment: SLURM_CI_EXTRA (extra slurm.conf lines),
# SLURM_CI_NODE_LINES (NodeName lines instead of the default; @HOST@ is this host's short name),
# SLURM_CI_GRES_NODES (the nodes gres.conf declares, default n[1-N]) and SLURM_CI_TOPOLOGY
# (the content of topology.conf).
set -euo pipefail
cmd=${1:-}; D=${2:-/tmp/slurm-ci}
start_slurmd() {
  local name=$1
  mkdir -p "$D/spool/$name"
  slurmd -f "$D/slurm.conf" -N "$name"
  # slurmd writes its PID file after it forks: wait for it, so a `down` right after stops it too.
  for _ in $(seq 1 100); do
    [ -s "$D/slurmd-$name.pid" ] && kill -0 "$(cat "$D/slurmd-$name.pid")" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "slurmd $name wrote no PID file" >&2
}
# The slurmd ports are fixed (17001..): a slurmd another cluster directory left behind (a test run
# that was stopped, a race at its teardown) would answer for our node. Stop any slurmd on them.
free_ports() {
  local n=$1 pids=""
  for i in $(seq 1 "$n"); do
    pids="$pids $(ss -H -ltnp "sport = :$((17000 + i))" 2>/dev/null | grep -o '"slurmd",pid=[0-9]*' | grep -o '[0-9]*$' || true)"
  done
  pids=$(echo $pids)
  [ -z "$pids" ] && return 0
  echo "stopping slurmd left on the test ports: $pids" >&2
  kill $pids 2>/dev/null || true
  for _ in $(seq 1 50); do
    local alive=""; for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
    [ -z "$alive" ] && return 0; sleep 0.2
  done
  kill -9 $pids 2>/dev/null || true
}
case "$cmd" in
  install)
    pkgs=(slurmctld slurmd slurm-client munge libpmix2 libpmix-dev iproute2)
    missing=()
    for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p"); done
    if ((${#missing[@]})); then
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    ;;
  up)
    N=${3:-3}
    free_ports "$N"
    mkdir -p "$D/state" "$D/spool" "$D/dev" /run/munge /var/log/munge /var/lib/munge
    # mpi/pmix makes its client directory spmix_appdir_<uid>_<job>.<step> under TmpFS: with one
    # /tmp for every slurmd of this host the nodes' steps would collide, so each node gets its own.
    for i in $(seq 1 "$N"); do mkdir -p "$D/tmp/n$i"; done
    [ -s /etc/munge/munge.key ] || mungekey --create --force
    chown munge:munge /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
    chmod 0400 /etc/munge/munge.key
    if ! { [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; }; then
      runuser -u munge -- /usr/sbin/munged
      cp /run/munge/munged.pid "$D/munged.pid"   # ours: the down script stops it
    fi
    for i in 0 1 2 3 4 5 6 7; do [ -e "$D/dev/nvidia$i" ] || mknod "$D/dev/nvidia$i" c 195 $i; done
    host=$(hostname -s)
    default_nodes="NodeName=n[1-$N] NodeHostname=$host NodeAddr=127.0.0.1 Port=[17001-$((17000 + N))] CPUs=2 RealMemory=4000 Gres=gpu:h100:8 State=UNKNOWN"
    node_lines=$(printf '%s' "${SLURM_CI_NODE_LINES:-$default_nodes}" | sed "s/@HOST@/$host/g")
    if [ -n "${SLURM_CI_TOPOLOGY:-}" ]; then printf '%s\n' "$SLURM_CI_TOPOLOGY" > "$D/topology.conf"; else rm -f "$D/topology.conf"; fi
    cat > "$D/slurm.conf" <<CONF
ClusterName=ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd-%n.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd-%n.log
SlurmctldPort=$((16800 + RANDOM % 100))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=10
MpiDefault=none
GresTypes=gpu
TmpFS=$D/tmp/%n
# scontrol reboot restarts the node's slurmd (bench lifecycle --reboot times it)
RebootProgram=$(cd "$(dirname "$0")" && pwd)/slurm-ci-reboot.sh
${SLURM_CI_EXTRA:-}
${node_lines}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
    cat > "$D/gres.conf" <<CONF
AutoDetect=off
NodeName=${SLURM_CI_GRES_NODES:-n[1-$N]} Name=gpu Type=h100 File=$D/dev/nvidia[0-7]
CONF
    export SLURM_CONF=$D/slurm.conf
    slurmctld -f "$SLURM_CONF"
    for i in $(seq 1 "$N"); do start_slurmd "n$i"; done
    for _ in $(seq 1 150); do
      if [ -s "$D/slurmctld.pid" ] && ! kill -0 "$(cat "$D/slurmctld.pid")" 2>/dev/null; then
        echo "slurmctld died:" >&2; tail -n 5 "$D/slurmctld.log" >&2; exit 1
      fi
      idle=$(timeout 5 sinfo -h -o '%D %t' 2>/dev/null | awk '$2=="idle"{s+=$1} END{print s+0}')
      [ "$idle" = "$N" ] && exit 0
      sleep 0.2
    done
    echo "slurm did not become idle" >&2; timeout 5 sinfo >&2 || true; exit 1
    ;;
  restart-node)
    export SLURM_CONF=$D/slurm.conf
    pidf=$D/slurmd-$3.pid
    if [ -s "$pidf" ] && pid=$(cat "$pidf") && kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$pidf"
    fi
    start_slurmd "$3"
    ;;
  down)
    pids=""
    for f in "$D"/slurmd-*.pid "$D/slurmctld.pid" "$D/munged.pid"; do [ -s "$f" ] && pids="$pids $(cat "$f")"; done
    [ -n "$pids" ] && kill $pids 2>/dev/null || true
    for _ in $(seq 1 50); do
      alive=""; for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
      [ -z "$alive" ] && break; sleep 0.2
    done
    [ -n "${alive:-}" ] && kill -9 $alive 2>/dev/null || true
    rm -f "$D"/slurmd-*.pid "$D/slurmctld.pid" "$D/munged.pid"
    ;;
  *) echo "usage: $0 install | up DIR [N] | down DIR | restart-node DIR NAME" >&2; exit 1 ;;
esac
