#!/bin/bash
# samples the newest cloud-controller-manager process's memory every second
out=$1
pid=""
for i in $(seq 1 300); do pid=$(pgrep -n -f '^/work/wt-int/.cache/test-bin/cloud-controller-manager' 2>/dev/null); [ -n "$pid" ] && break; sleep 1; done
echo "pid $pid" > $out
start=$(date +%s)
while [ -e /proc/$pid/status ]; do
  now=$(date +%s)
  awk -v t=$((now-start)) '/VmHWM|VmRSS|RssAnon|RssFile/{a=a" "$1$2} END{print t a}' /proc/$pid/status >> $out 2>/dev/null
  sleep 1
done
