#!/usr/bin/env bash
# Fails when a process started from the control-plane cache or a test
# binary is still running (tests must stop everything they start).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${CONTROLPLANE_CACHE:-$root/.cache/controlplane}"
sleep 1
left="$(ps -eo pid=,args= | awk -v c="$cache" 'index($2, c) == 1 || $2 ~ /\/(cloud-controller-manager|alicloud-emulator|sandbox)$/ || $2 ~ /\.test$/ {print}' || true)"
if [[ -n "$left" ]]; then
  echo "processes left running after the tests:"
  echo "$left"
  exit 1
fi
echo "no orphan processes"
