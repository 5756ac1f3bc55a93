#!/bin/sh
# HealthCheckProgram wrapper for clustermax health (install 0755, root-owned).
# slurmd runs it as root with a bare environment and SLURMD_NODENAME set.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
# Mount points every node needs; add one --require-mount per path.
exec /usr/bin/clustermax health --drain --resume \
  --require-mount /home \
  --timeout 20 \
  >>/var/log/clustermax-health.log 2>&1
