#!/usr/bin/env bash
# Builds the Kubernetes binaries the one-node test cluster runs (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy) and kubectl from the Go module
# proxy, into DIR; or only the COMMANDs named.
#   build-kubernetes.sh VERSION DIR [COMMAND...]
# k8s.io/kubernetes cannot be `go install`ed: its go.mod points its staging modules (k8s.io/api,
# k8s.io/client-go, ...) at ./staging/src. A throwaway wrapper module requires it and points each of
# those at the release the proxy serves under the same minor (v1.34.4 -> v0.34.4), with the go and
# godebug lines of the real go.mod, so the binaries behave as the release's own.
# About 30 CPU-minutes on two cores, once per version: the Makefile runs it under `nice -n 19`.
set -euo pipefail
version=${1:?usage: build-kubernetes.sh VERSION DIR [COMMAND...]}
dir=${2:?usage: build-kubernetes.sh VERSION DIR [COMMAND...]}
shift 2
staging=v0.${version#v1.}
minor=${version#v1.}; minor=${minor%%.*}
commands=("$@")
((${#commands[@]} > 0)) || commands=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

mkdir -p "$dir"
src=$(mktemp -d "$dir/.src.XXXXXX")
trap 'rm -rf "$src"' EXIT
cd "$src"

upstream=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
{
  echo 'module hookgate.test/kubernetes-build'
  grep -E '^(go|godebug) ' "$upstream"
  echo "require k8s.io/kubernetes $version"
  echo 'replace ('
  sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$upstream"
  echo ')'
} > go.mod
for cmd in "${commands[@]}"; do go get "k8s.io/kubernetes/cmd/$cmd@$version"; done

# The version every binary reports (`kubectl version`, /version, the node's kubeletVersion).
ldflags='-s -w'
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=module-proxy-$version"
done
packages=()
for cmd in "${commands[@]}"; do packages+=("k8s.io/kubernetes/cmd/$cmd"); done
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$src/bin/" "${packages[@]}"
for cmd in "${commands[@]}"; do mv "$src/bin/$cmd" "$dir/$cmd"; done
