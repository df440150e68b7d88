#!/usr/bin/env bash
# Fails when a process started by this test run is still running: one
# started from the control-plane cache, a CCM, emulator or sandbox binary,
# or a test binary (tests must stop everything they start).
#
# `make test` exports ALICLOUD_TEST_RUN, a fresh id, which every process
# the tests start inherits; only processes carrying that id are flagged,
# so a sandbox (`make sandbox`) running from the same checkout in another
# terminal, or another checkout's tests, are left alone. Without the
# variable every matching process is flagged, as a check run by hand
# cannot tell whose they are.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${CONTROLPLANE_CACHE:-$root/.cache/controlplane}"
run="${ALICLOUD_TEST_RUN:-}"
# A second for processes stopped by the last test to exit (its own test
# sets ORPHAN_CHECK_SETTLE=0).
sleep "${ORPHAN_CHECK_SETTLE:-1}"
candidates="$(ps -eo pid=,args= | awk -v c="$cache" 'index($2, c) == 1 || $2 ~ /\/(cloud-controller-manager|alicloud-emulator|sandbox)$/ || $2 ~ /\.test$/ {print}' || true)"
left=""
while read -r pid args; do
  [[ -n "$pid" ]] || continue
  if [[ -n "$run" ]]; then
    # Unreadable or gone: not a process of ours.
    env="$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null)" || continue
    grep -qxF "ALICLOUD_TEST_RUN=$run" <<<"$env" || continue
  fi
  left+="$pid $args"$'\n'
done <<<"$candidates"
if [[ -n "$left" ]]; then
  echo "processes left running after the tests${run:+ (run $run)}:"
  printf '%s' "$left"
  exit 1
fi
echo "no orphan processes${run:+ of run $run}"
