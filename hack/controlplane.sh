#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
# and kwok from the modules pinned in hack/tools into a cache directory keyed by
# those pins, so a second run with the same pins does nothing.
#
# Usage: hack/controlplane.sh [--print-dir]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/hack/tools"
cache="${CONTROLPLANE_CACHE:-$root/.cache/controlplane}"

k8s_version="$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$tools/go.mod")"
etcd_version="$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' "$tools/go.mod")"
kwok_version="$(awk '$1=="sigs.k8s.io/kwok"{print $2; exit}' "$tools/go.mod")"
key="$(cat "$tools/go.mod" "$tools/go.sum" | sha256sum | cut -c1-12)"
dir="$cache/k8s-${k8s_version}_etcd-${etcd_version}_kwok-${kwok_version}_${key}"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$dir"
  exit 0
fi

bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)
missing=()
for b in "${bins[@]}"; do
  [[ -x "$dir/$b" ]] || missing+=("$b")
done
if [[ ${#missing[@]} -eq 0 && -s "$dir/kwok-stages.yaml" ]]; then
  echo "controlplane: up to date in $dir"
  exit 0
fi

mkdir -p "$dir"
major="${k8s_version#v}"; major="${major%%.*}"
minor="${k8s_version#v*.}"; minor="${minor%%.*}"
vpkg="k8s.io/component-base/version"
cpkg="k8s.io/client-go/pkg/version"
date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ldflags="-s -w"
for p in "$vpkg" "$cpkg"; do
  ldflags+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=$major -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=$date"
done

declare -A pkgs=(
  [etcd]="go.etcd.io/etcd/server/v3"
  [kube-apiserver]="k8s.io/kubernetes/cmd/kube-apiserver"
  [kube-controller-manager]="k8s.io/kubernetes/cmd/kube-controller-manager"
  [kube-scheduler]="k8s.io/kubernetes/cmd/kube-scheduler"
  [kubectl]="k8s.io/kubernetes/cmd/kubectl"
  [kwok]="sigs.k8s.io/kwok/cmd/kwok"
)

echo "controlplane: building ${missing[*]} (Kubernetes $k8s_version, etcd $etcd_version, kwok $kwok_version) into $dir"
echo "controlplane: the first build takes about ten minutes on 2 cores"
cd "$tools"
echo "controlplane: downloading modules"
go mod download
# One go build for every missing binary lets the compiler schedule all
# their packages together and link them in parallel. -v lists each package
# as it is compiled; count them so a ten-minute build shows progress.
tmp="$dir/.build"
rm -rf "$tmp" && mkdir -p "$tmp"
targets=()
for b in "${missing[@]}"; do targets+=("${pkgs[$b]}"); done
start=$SECONDS
set +e
CGO_ENABLED=0 go build -v -trimpath -ldflags "$ldflags" -o "$tmp/" "${targets[@]}" 2>&1 |
  awk -v t0="$start" '
    /^(#|go: |[^ ]+\.go:|\t)/ { print; next }   # errors pass through
    { n++; if (n % 250 == 0) { printf "controlplane: %d packages compiled...\n", n; fflush() } }
    END { printf "controlplane: %d packages compiled\n", n }'
rc=${PIPESTATUS[0]}
set -e
if [[ $rc -ne 0 ]]; then
  echo "controlplane: build failed" >&2
  exit "$rc"
fi
for b in "${missing[@]}"; do
  built="$(basename "${pkgs[$b]}")"
  [[ "$built" == "v3" ]] && built="server"   # go names a /vN module's binary after the element before it
  mv "$tmp/$built" "$dir/$b"
done
rm -rf "$tmp"
echo "controlplane: built ${missing[*]} in $((SECONDS - start))s"
# kwok needs Stage definitions to drive nodes and pods; use the ones its
# release ships (fast node init, lease heartbeats, fast pod lifecycle).
kwok_dir="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
{
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    echo "---"
    cat "$kwok_dir/kustomize/stage/$f"
  done
} > "$dir/kwok-stages.yaml.tmp"
mv "$dir/kwok-stages.yaml.tmp" "$dir/kwok-stages.yaml"
echo "controlplane: ready in $dir"
