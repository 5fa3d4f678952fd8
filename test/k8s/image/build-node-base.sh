#!/usr/bin/env bash
# Makes a stand-in for the Dockerfile's base image, node:24-bookworm-slim, without a container
# registry: a Debian bookworm root filesystem from Debian's own packages (debootstrap, minbase),
# the pinned Node.js binary from node_modules (the npm package `node` installs the same build
# nodejs.org publishes) and npm from the npm registry, laid out as the official image has them
# (/usr/local/bin/node, /usr/local/lib/node_modules/npm, a `node` user with uid 1000).
#   build-node-base.sh NODE_BINARY NPM_VERSION OUT_TAR
# The result is a tar of the root filesystem; image.sh imports it under the base's name.
set -euo pipefail
node_binary=${1:?usage: build-node-base.sh NODE_BINARY NPM_VERSION OUT_TAR}
npm_version=${2:?usage: build-node-base.sh NODE_BINARY NPM_VERSION OUT_TAR}
out=${3:?usage: build-node-base.sh NODE_BINARY NPM_VERSION OUT_TAR}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

work=$(mktemp -d "$(dirname "$out")/.base.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/rootfs

debootstrap --variant=minbase bookworm "$root" "$mirror"

install -D -m 0755 "$node_binary" "$root/usr/local/bin/node"
(cd "$work" && npm pack --silent "npm@$npm_version" > /dev/null)
mkdir -p "$root/usr/local/lib/node_modules/npm"
tar -xzf "$work/npm-$npm_version.tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

# What debian:bookworm-slim leaves out: package lists and caches, documentation, locales.
rm -rf "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
  "$root"/var/log/*.log "$root"/var/log/apt/*
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +

tar --numeric-owner -C "$root" -cf "$work/rootfs.tar" .
mv "$work/rootfs.tar" "$out"
