#!/bin/sh
# The CI cluster's RebootProgram (scripts/slurm-ci.sh): "reboots" a test node by restarting its
# slurmd. slurmd runs this through system() while it holds its configuration lock, so it returns at
# once and a detached helper does the work: stop the slurmd that ran us, wait until it is gone,
# then start it again with its own arguments plus -b. A restarted slurmd on the same host reports
# the host's boot time, which slurmctld takes for "not rebooted yet" (the node would sit in
# REBOOT_ISSUED until ResumeTimeout); -b makes it report its own start as the boot time instead.
# The second's pause keeps that start clear of the reboot request (both are whole seconds).
pid=$$
while [ "$pid" -gt 1 ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != slurmd ]; do
  pid=$(awk '/^PPid:/{print $2}' "/proc/$pid/status")
done
if [ "$pid" -le 1 ]; then
  echo "slurm-ci-reboot: not started by a slurmd" >&2
  exit 1
fi
args=$(tr '\0' ' ' < "/proc/$pid/cmdline")
case " $args " in *" -b "*) ;; *) args="$args -b" ;; esac
setsid sh -c "
  kill $pid
  n=0
  while [ -d /proc/$pid ] && ! grep -q '^State:[[:space:]]*Z' /proc/$pid/status 2>/dev/null; do
    n=\$((n + 1)); [ \$n -eq 100 ] && kill -9 $pid; sleep 0.2
  done
  sleep 1
  exec $args" </dev/null >/dev/null 2>&1 &
exit 0
