#!/usr/bin/env bash
# Fails when the tests left files in the temp dir that `make test` gave
# them (TMPDIR), then removes that dir either way: a test binary killed or
# a test forgetting its cleanup would otherwise leave its files in /tmp on
# every run (150 MB per built CCM once filled a CI machine's disk).
set -euo pipefail
dir="${1:?usage: check-no-leftovers.sh DIR}"
left="$(find "$dir" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort)"
if [[ -n "$left" ]]; then
  echo "files left in the tests' temp dir $dir:"
  while read -r name; do
    du -sh "$dir/$name" 2>/dev/null || echo "  $name"
  done <<<"$left"
  rm -rf "$dir"
  exit 1
fi
rm -rf "$dir"
echo "no files left in the tests' temp dir"
