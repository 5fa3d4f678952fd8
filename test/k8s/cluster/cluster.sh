#!/usr/bin/env bash
# A one-node Kubernetes for the chart's tests, from binaries built from the Go module proxy
# (make cluster-tools) and Debian's etcd, containerd, runc and CNI plugins.
#   cluster.sh up      start it (nothing to do if it already answers); prints its kubeconfig
#   cluster.sh down    remove every workload, stop every daemon, and undo what they changed:
#                      mounts, network namespaces, iptables chains, the bridge, cgroups, sysctls
#   cluster.sh status  exit 0 when the API server answers
# Environment (the Makefile sets it): STATE (its directory; all state and logs live there),
# KUBE_BIN (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy,
# kubectl), IMAGES (image archives for containerd, one per line), PAUSE_IMAGE, COREDNS_IMAGE.
#
# Nothing listens beyond the machine: the API server, the kubelet and containerd's streaming
# server bind the cluster's bridge or loopback. Pods have no way out of the machine (a FORWARD
# rule drops what they send anywhere but the bridge, CoreDNS forwards no query), and the Service
# range is routed to the bridge, so no packet for it can leave either.
set -euo pipefail

: "${STATE:?STATE names the directory of the cluster}"
: "${KUBE_BIN:?KUBE_BIN names the directory of the Kubernetes binaries}"
BRIDGE=hgk0
NODE_IP=10.244.77.1
POD_CIDR=10.244.77.0/24
SERVICE_CIDR=10.96.77.0/24
SERVICE_API_IP=10.96.77.1
DNS_IP=10.96.77.10
NODE=hookgate-node
API_PORT=19703
CHAIN=HOOKGATE-K8S
PKI=$STATE/pki
LOGS=$STATE/logs
SAVED_SYSCTLS=$STATE/sysctls.saved
# What the kubelet, kube-proxy and the bridge plugin may change; restored by `down`.
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward
  net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
  net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max)
export KUBECONFIG=$PKI/admin.kubeconfig
KUBECTL="$KUBE_BIN/kubectl"
CTR="ctr --address $STATE/containerd/containerd.sock --namespace k8s.io"

log() { echo "cluster: $(date +%T) $*"; }

# wait_for SECONDS WHAT COMMAND...: polls COMMAND once a second.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  for ((i = 0; i < seconds; i++)); do
    if "$@" > /dev/null 2>&1; then return 0; fi
    sleep 1
  done
  log "$what not ready after ${seconds}s (logs: $LOGS)"
  return 1
}

start() { # name command...
  local name=$1
  shift
  setsid nice -n 5 "$@" > "$LOGS/$name.log" 2>&1 < /dev/null &
  echo "$name $!" >> "$STATE/pids"
}

api_ready() { "$KUBECTL" get --raw /readyz > /dev/null 2>&1; }

certificates() {
  mkdir -p "$PKI"
  cd "$PKI"
  local days=7
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days $days -subj /CN=hookgate-test-ca 2> /dev/null
  openssl req -x509 -newkey rsa:2048 -nodes -keyout front-proxy-ca.key -out front-proxy-ca.crt -days $days \
    -subj /CN=hookgate-test-front-proxy-ca 2> /dev/null
  issue() { # name subject ca [subjectAltName]
    local name=$1 subject=$2 ca=$3 sans=${4:-}
    openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subject" 2> /dev/null
    if [ -n "$sans" ]; then
      printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$sans" > "$name.ext"
    else
      printf 'extendedKeyUsage=clientAuth\n' > "$name.ext"
    fi
    openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -out "$name.crt" \
      -days $days -extfile "$name.ext" 2> /dev/null
  }
  issue apiserver /CN=kube-apiserver ca "IP:$NODE_IP,IP:$SERVICE_API_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  issue apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client ca
  issue front-proxy-client /CN=front-proxy-client front-proxy-ca
  issue admin /O=system:masters/CN=hookgate-test-admin ca
  issue kubelet "/O=system:nodes/CN=system:node:$NODE" ca
  issue controller-manager /CN=system:kube-controller-manager ca
  issue scheduler /CN=system:kube-scheduler ca
  issue kube-proxy /CN=system:kube-proxy ca
  openssl genrsa -out sa.key 2048 2> /dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2> /dev/null
  for user in admin kubelet controller-manager scheduler kube-proxy; do
    cat > "$user.kubeconfig" << EOF
apiVersion: v1
kind: Config
clusters:
  - name: hookgate-test
    cluster: {server: "https://$NODE_IP:$API_PORT", certificate-authority: "$PKI/ca.crt"}
users:
  - name: $user
    user: {client-certificate: "$PKI/$user.crt", client-key: "$PKI/$user.key"}
contexts:
  - name: hookgate-test
    context: {cluster: hookgate-test, user: $user}
current-context: hookgate-test
EOF
  done
  cd - > /dev/null
}

configuration() {
  mkdir -p "$STATE/cni/net.d" "$STATE/containerd"
  cat > "$STATE/cni/net.d/10-hookgate.conflist" << EOF
{
  "cniVersion": "1.0.0",
  "name": "hookgate-test",
  "plugins": [{
    "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
             "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$STATE/cni/ipam"}
  }]
}
EOF
  # restrict_oom_score_adj: this VM forbids lowering oom_score_adj, which runc would otherwise
  # try for every container (and fail to start it).
  cat > "$STATE/containerd/config.toml" << EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
[grpc]
  address = "$STATE/containerd/containerd.sock"
[ttrpc]
  address = "$STATE/containerd/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "19730"
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOF
  # No upstream resolver for pods with dnsPolicy Default (CoreDNS): nothing is resolved outside.
  echo '# the test cluster resolves its own names only' > "$STATE/resolv.conf"
  cat > "$STATE/kubelet.yaml" << EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 19704
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 19705
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: "unix://$STATE/containerd/containerd.sock"
resolvConf: "$STATE/resolv.conf"
clusterDomain: cluster.local
clusterDNS: ["$DNS_IP"]
podLogsDir: "$STATE/pod-logs"
maxPods: 40
serializeImagePulls: false
evictionHard: {memory.available: 500Mi, nodefs.available: 3%, imagefs.available: 3%}
EOF
  # conntrack limits at 0: kube-proxy leaves the machine's conntrack sysctls as they are.
  cat > "$STATE/kube-proxy.yaml" << EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$PKI/kube-proxy.kubeconfig"}
hostnameOverride: $NODE
mode: iptables
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:19708
metricsBindAddress: 127.0.0.1:19709
nodePortAddresses: ["$POD_CIDR"]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

network() {
  if ! ip link show "$BRIDGE" > /dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$NODE_IP/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
  ip route replace "$SERVICE_CIDR" dev "$BRIDGE"
  if ! iptables -nL "$CHAIN" > /dev/null 2>&1; then
    iptables -N "$CHAIN"
    iptables -A "$CHAIN" -s "$POD_CIDR" ! -o "$BRIDGE" -j DROP
    iptables -I FORWARD 1 -j "$CHAIN"
  fi
}

up() {
  mkdir -p "$STATE" "$LOGS"
  if api_ready; then
    log "already up ($KUBECONFIG)"
    return 0
  fi
  if [ -s "$STATE/pids" ]; then
    log "a previous start left processes behind: taking it down first"
    down
    set -e
  fi
  if [ ! -f "$SAVED_SYSCTLS" ]; then
    for key in "${SYSCTLS[@]}"; do
      if sysctl -n "$key" > /dev/null 2>&1; then echo "$key=$(sysctl -n "$key")"; fi
    done > "$SAVED_SYSCTLS"
  fi
  : > "$STATE/pids"
  certificates
  configuration
  network
  start etcd etcd --name hookgate-test --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:19701 --advertise-client-urls http://127.0.0.1:19701 \
    --listen-peer-urls http://127.0.0.1:19702 --initial-advertise-peer-urls http://127.0.0.1:19702 \
    --initial-cluster hookgate-test=http://127.0.0.1:19702 --listen-metrics-urls http://127.0.0.1:19700
  # --kubelet-preferred-address-types: the node's name is not in the machine's resolver.
  start kube-apiserver "$KUBE_BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:19701 \
    --bind-address=$NODE_IP --secure-port=$API_PORT --advertise-address=$NODE_IP \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --service-cluster-ip-range=$SERVICE_CIDR \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP,Hostname \
    --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
    --enable-aggregator-routing=true --allow-privileged=false --profiling=false \
    --cert-dir="$STATE/apiserver-certs"
  wait_for 180 kube-apiserver api_ready
  start kube-controller-manager "$KUBE_BIN/kube-controller-manager" \
    --kubeconfig="$PKI/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=19706 --leader-elect=false --profiling=false \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --use-service-account-credentials=true --cluster-signing-cert-file="$PKI/ca.crt" \
    --cluster-signing-key-file="$PKI/ca.key" --horizontal-pod-autoscaler-sync-period=5s \
    --horizontal-pod-autoscaler-downscale-stabilization=30s
  start kube-scheduler "$KUBE_BIN/kube-scheduler" --kubeconfig="$PKI/scheduler.kubeconfig" \
    --authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
    --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=19707 --leader-elect=false --profiling=false
  start containerd containerd --config "$STATE/containerd/config.toml"
  wait_for 60 containerd $CTR version
  while read -r archive; do
    [ -n "$archive" ] && $CTR images import "$archive" > /dev/null && log "imported $(basename "$archive")"
  done <<< "${IMAGES:-}"
  start kubelet "$KUBE_BIN/kubelet" --config="$STATE/kubelet.yaml" --kubeconfig="$PKI/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" --hostname-override=$NODE --node-ip=$NODE_IP --v=1
  start kube-proxy "$KUBE_BIN/kube-proxy" --config="$STATE/kube-proxy.yaml"
  wait_for 180 "node $NODE" "$KUBECTL" wait --for=condition=Ready "node/$NODE" --timeout=1s
  sed -e "s|@DNS_IP@|$DNS_IP|" -e "s|@COREDNS_IMAGE@|$COREDNS_IMAGE|" \
    "$(dirname "$0")/coredns.yaml" | "$KUBECTL" apply -f - > /dev/null
  wait_for 180 coredns "$KUBECTL" -n kube-system wait --for=condition=Available deployment/coredns --timeout=1s
  log "up: kubeconfig $KUBECONFIG"
}

stop_process() { # name pid
  local name=$1 pid=$2
  kill -0 "$pid" 2> /dev/null || return 0
  kill -TERM "$pid"
  for ((i = 0; i < 60; i++)); do
    kill -0 "$pid" 2> /dev/null || return 0
    sleep 1
  done
  log "$name ($pid) still running after 60s: SIGKILL"
  kill -KILL "$pid"
}

# Every KUBE-* chain (the kubelet's and kube-proxy's) in every table, rules jumping to it first.
delete_kube_chains() {
  local tool table chain
  for tool in iptables ip6tables; do
    for table in filter nat mangle; do
      for chain in $($tool -t $table -S 2> /dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ { print $2 }'); do
        $tool -t $table -S | grep -E -- "-j $chain( |$)" | sed 's/^-A /-D /' |
          while read -r rule; do eval "$tool -t $table $rule"; done
      done
      for chain in $($tool -t $table -S 2> /dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ { print $2 }'); do
        $tool -t $table -F "$chain"
        $tool -t $table -X "$chain"
      done
    done
  done
}

down() {
  # Best effort to the end: every step runs whatever the one before it found, and the last line
  # says what is left.
  set +e
  mkdir -p "$LOGS"
  # 1. Workloads away first, so that the kubelet unmounts their volumes, the bridge plugin frees
  #    their addresses and network namespaces, and containerd removes their containers.
  if api_ready; then
    "$KUBECTL" delete namespaces --wait=false \
      $("$KUBECTL" get namespaces -o name | grep -v -E '/(default|kube-system|kube-public|kube-node-lease)$') \
      > /dev/null 2>&1 || true
    "$KUBECTL" delete apiservices --all --wait=false > /dev/null 2>&1 || true
    "$KUBECTL" -n kube-system delete deployments,daemonsets --all --wait=false > /dev/null 2>&1 || true
    "$KUBECTL" -n default delete deployments,pods --all --wait=false > /dev/null 2>&1 || true
    wait_for 180 "pods gone" bash -c "[ -z \"\$('$KUBECTL' get pods -A --no-headers 2> /dev/null)\" ]" || true
  fi
  if [ -S "$STATE/containerd/containerd.sock" ]; then
    # Whatever the kubelet did not stop (a pod stuck terminating): its containers and sandboxes.
    for task in $($CTR tasks ls -q 2> /dev/null); do $CTR tasks kill -s KILL "$task" > /dev/null 2>&1 || true; done
    wait_for 30 "tasks gone" bash -c "[ -z \"\$($CTR tasks ls -q 2> /dev/null)\" ]" || true
  fi
  # 2. Daemons by the pids they were started with: the node first, then the control plane.
  if [ -f "$STATE/pids" ]; then
    for name in kube-proxy kubelet containerd kube-scheduler kube-controller-manager kube-apiserver etcd; do
      pid=$(awk -v name=$name '$1 == name { print $2 }' "$STATE/pids" | tail -1)
      [ -n "$pid" ] && stop_process "$name" "$pid"
    done
    rm -f "$STATE/pids"
  fi
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $STATE/containerd/containerd.sock" || true); do
    stop_process containerd-shim "$pid"
  done
  # 3. iptables: kube-proxy's own clean-up, then every KUBE-* chain left, then ours.
  "$KUBE_BIN/kube-proxy" --cleanup > "$LOGS/kube-proxy-cleanup.log" 2>&1 || true
  delete_kube_chains
  if iptables -nL "$CHAIN" > /dev/null 2>&1; then
    iptables -D FORWARD -j "$CHAIN" 2> /dev/null || true
    iptables -F "$CHAIN"
    iptables -X "$CHAIN"
  fi
  # 4. Mounts under the state directory (volumes, root filesystems, shm, the kubelet's own) and
  #    the network namespaces the bridge plugin left (cni-*, with no process in them).
  for mount in $(awk -v state="$STATE/" 'index($2, state) == 1 { print $2 }' /proc/self/mounts | sort -r); do
    umount "$mount" 2> /dev/null || umount -l "$mount"
  done
  for netns in $(ip netns list 2> /dev/null | awk '$1 ~ /^cni-/ { print $1 }'); do
    [ -z "$(ip netns pids "$netns" 2> /dev/null)" ] && ip netns delete "$netns" 2> /dev/null || true
  done
  # 5. The bridge (its route and the Service range's go with it), the pods' cgroups, the sysctls.
  ip link delete "$BRIDGE" 2> /dev/null || true
  for root in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$root" ] && find "$root" -depth -type d -exec rmdir {} \; 2> /dev/null || true
  done
  if [ -f "$SAVED_SYSCTLS" ]; then
    while IFS='=' read -r key value; do sysctl -q -w "$key=$value" 2> /dev/null || true; done < "$SAVED_SYSCTLS"
  fi
  # 6. The state, all but the logs.
  find "$STATE" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
  local mounts chains
  mounts=$(awk -v state="$STATE/" 'index($2, state) == 1' /proc/self/mounts | wc -l)
  chains=$( (iptables-save; ip6tables-save) 2> /dev/null | grep -c -E "^:(KUBE-|$CHAIN)" || true)
  log "down: mounts left $mounts, iptables chains left $chains, bridge $(ip link show $BRIDGE > /dev/null 2>&1 && echo left || echo gone)"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) api_ready ;;
  *)
    echo 'usage: cluster.sh up|down|status' >&2
    exit 2
    ;;
esac
