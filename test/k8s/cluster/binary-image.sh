#!/usr/bin/env bash
# An image of one static binary (the test cluster's pause, CoreDNS, KEDA, metrics-server), saved
# as an archive containerd imports: `/NAME` is its entrypoint, USER its user.
#   binary-image.sh BINARY IMAGE USER ARCHIVE [BINARY...]   (further binaries beside the first)
set -euo pipefail
binary=${1:?usage: binary-image.sh BINARY IMAGE USER ARCHIVE [BINARY...]}
image=${2:?}
user=${3:?}
archive=${4:?}
shift 4
export CONTAINERS_CONF=${CONTAINERS_CONF:-$(dirname "$0")/../image/containers.conf}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root/tmp"
chmod 1777 "$work/root/tmp"
cp "$binary" "$@" "$work/root/"
tar --numeric-owner --owner=0 --group=0 -C "$work/root" -cf "$work/root.tar" .
podman import --quiet --change "ENTRYPOINT [\"/$(basename "$binary")\"]" --change "USER $user:$user" \
  "$work/root.tar" "$image" > /dev/null
rm -f "$archive"
podman save --quiet --format docker-archive --output "$archive" "$image" > /dev/null
