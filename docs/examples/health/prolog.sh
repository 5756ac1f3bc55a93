#!/bin/sh
# Slurm Prolog: refuse to start a job on an unhealthy node. A non-zero prolog status makes Slurm
# drain the node and requeue the job; --drain first sets our own reason ("clustermax: <check>: ...").
# Exit 75 means another health run (the HealthCheckProgram) holds the lock right now: that run
# decides, so the job may start.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
/usr/bin/clustermax health --drain --timeout 10 >/dev/null 2>>/var/log/clustermax-health.log
rc=$?
[ "$rc" -eq 75 ] && exit 0
exit "$rc"
