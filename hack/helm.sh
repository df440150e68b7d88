#!/usr/bin/env bash
# Builds helm from the module pinned in hack/helm (a module of its own, so
# that its pins never change the control-plane cache key of hack/tools) into
# a cache directory keyed by those pins; a second run does nothing.
#
# Usage: hack/helm.sh [--print-dir | --print-path]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mod="$root/hack/helm"
cache="${HELM_CACHE:-$root/.cache/helm}"

version="$(awk '$1=="helm.sh/helm/v3"{print $2; exit} $1=="require" && $2=="helm.sh/helm/v3"{print $3; exit}' "$mod/go.mod")"
key="$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-12)"
dir="$cache/${version}_${key}"

case "${1:-}" in
  --print-dir) echo "$dir"; exit 0 ;;
  --print-path) echo "$dir/helm"; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--print-dir | --print-path]" >&2; exit 2 ;;
esac

if [[ -x "$dir/helm" ]]; then
  echo "helm: up to date in $dir"
  exit 0
fi

mkdir -p "$dir"
# helm's own release build stamps its version and the Kubernetes version it
# assumes offline (helm template, helm lint's deprecation checks) from the
# client-go it is built with: client-go v0.X.Y is Kubernetes 1.X.
client_go="$(awk '$1=="k8s.io/client-go"{print $2; exit}' "$mod/go.mod")"
k8s_minor="${client_go#v0.}"; k8s_minor="${k8s_minor%%.*}"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$k8s_minor"
done

echo "helm: building helm $version (Kubernetes 1.$k8s_minor libraries) into $dir"
cd "$mod"
go mod download
start=$SECONDS
tmp="$dir/.build"
rm -rf "$tmp" && mkdir -p "$tmp"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm
mv "$tmp/helm" "$dir/helm"
rm -rf "$tmp"
echo "helm: built in $((SECONDS - start))s: $dir/helm"
