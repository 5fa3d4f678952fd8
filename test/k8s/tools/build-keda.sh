#!/usr/bin/env bash
# Builds KEDA's operator (`keda`) and metrics API server (`keda-adapter`) from the Go module proxy
# into DIR, with the module's CRDs beside them (DIR/crd, the module's own config/crd kustomization,
# for `kubectl apply -k`). The admission webhooks (cmd/webhooks) are not built: they only
# validate KEDA's objects, and the test cluster's API server already checks them against the CRDs.
#   build-keda.sh VERSION DIR
# `go install` refuses KEDA (its go.mod has replace and exclude directives), so the build runs in
# a copy of the downloaded module, with its own go.mod and go.sum: the dependency versions of the
# release. Its go.mod may ask for a newer Go than the machine's: GOTOOLCHAIN=auto then fetches
# that toolchain, itself a module on the Go module proxy (golang.org/toolchain).
# Tens of CPU-minutes (every scaler's SDK is linked in): the Makefile runs it under `nice -n 19`.
set -euo pipefail
version=${1:?usage: build-keda.sh VERSION DIR}
dir=${2:?usage: build-keda.sh VERSION DIR}
module=github.com/kedacore/keda/v2
export GOTOOLCHAIN=auto

mkdir -p "$dir"
src=$(mktemp -d "$dir/.src.XXXXXX")
trap 'rm -rf "$src"' EXIT

module_dir=$(cd "$src" && go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -f "$module_dir/go.mod" ] || { echo "build-keda.sh: $module@$version was not downloaded" >&2; exit 1; }
cp -R "$module_dir/." "$src/"
chmod -R u+w "$src"
cd "$src"

# What KEDA's own Makefile stamps into the binaries (`keda` prints it at start and in its metrics).
ldflags="-s -w -X $module/version.Version=${version#v} -X $module/version.GitCommit=module-proxy-$version"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$src/bin/keda" ./cmd/operator
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$src/bin/keda-adapter" ./cmd/adapter
rm -rf "$dir/crd"
cp -R config/crd "$dir/crd"
mv bin/keda-adapter "$dir/keda-adapter"
mv bin/keda "$dir/keda"
