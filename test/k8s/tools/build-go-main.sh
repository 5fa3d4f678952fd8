#!/usr/bin/env bash
# Builds the main package in SRC (one main.go of the project's own) into DIR/NAME, static, with
# the modules it imports at the versions named: a throwaway module around it.
#   build-go-main.sh SRC DIR NAME [MODULE@VERSION...]
set -euo pipefail
src=$(realpath "${1:?usage: build-go-main.sh SRC DIR NAME [MODULE@VERSION...]}")
dir=${2:?usage: build-go-main.sh SRC DIR NAME [MODULE@VERSION...]}
name=${3:?usage: build-go-main.sh SRC DIR NAME [MODULE@VERSION...]}
shift 3

mkdir -p "$dir"
work=$(mktemp -d "$dir/.src.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$src"/*.go "$work/"
cd "$work"
go mod init "hookgate.test/$name" 2> /dev/null
for requirement in "$@"; do go get "$requirement"; done
go mod tidy
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/$name" .
mv "$work/$name" "$dir/$name"
