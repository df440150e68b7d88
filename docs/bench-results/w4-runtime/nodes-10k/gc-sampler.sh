#!/bin/bash
# prints the CCM's GC CPU, total CPU and heap gauges every 30 s
pid=$(pgrep -n -f '^/work/wt-mem3/.cache/test-bin/cloud-controller-manager')
port=$(tr '\0' '\n' < /proc/$pid/cmdline | sed -n 's/--secure-port=//p')
while [ -e /proc/$pid ]; do
  echo "$(date +%s) $(curl -sk --cert /tmp/ccm-bench-1809406881/w4/cluster/pki/admin.crt --key /tmp/ccm-bench-1809406881/w4/cluster/pki/admin.key https://127.0.0.1:$port/metrics | grep -E '^go_cpu_classes_(gc_total|total|idle|user)_cpu_seconds_total|^process_cpu_seconds_total|^go_gc_heap_(live|goal)_bytes|^go_gc_cycles_total_gc_cycles_total' | tr '\n' ' ')"
  sleep 30
done
