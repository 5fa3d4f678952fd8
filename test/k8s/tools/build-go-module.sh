#!/usr/bin/env bash
# Builds commands of a Go module from the Go module proxy into DIR, for modules `go install`
# refuses because their go.mod has `replace` directives: a throwaway wrapper module
# requires MODULE@VERSION with the go, godebug, replace and exclude lines of its own go.mod, so
# the build resolves every dependency as the release's own build does.
#   build-go-module.sh MODULE VERSION DIR PACKAGE...   (LDFLAGS in the environment, optional)
# Each PACKAGE's binary lands in DIR under its last path element (.../cmd/operator -> operator).
set -euo pipefail
module=${1:?usage: build-go-module.sh MODULE VERSION DIR PACKAGE...}
version=${2:?usage: build-go-module.sh MODULE VERSION DIR PACKAGE...}
dir=${3:?usage: build-go-module.sh MODULE VERSION DIR PACKAGE...}
shift 3
(($# > 0)) || { echo 'build-go-module.sh: name at least one package' >&2; exit 2; }

mkdir -p "$dir"
src=$(mktemp -d "$dir/.src.XXXXXX")
trap 'rm -rf "$src"' EXIT
cd "$src"

upstream=$(go mod download -json "$module@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
if grep -qE '=> *\.{1,2}/' "$upstream"; then
  echo "build-go-module.sh: $module@$version replaces modules with local directories; it needs a build of its own" >&2
  exit 2
fi
{
  echo 'module hookgate.test/go-module-build'
  grep -E '^(go|godebug) ' "$upstream"
  echo "require $module $version"
  # replace and exclude, one line or a parenthesised block
  awk '/^(replace|exclude) *\(/ { block = 1 } block { print } block && /^\)/ { block = 0; next }
       /^(replace|exclude) [^(]/ { print }' "$upstream"
} > go.mod
for package in "$@"; do go get "$package@$version"; done
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w ${LDFLAGS:-}" -o "$src/bin/" "$@"
for package in "$@"; do mv "$src/bin/${package##*/}" "$dir/${package##*/}"; done
