#!/usr/bin/env bash
# KEDA's certificates for the test cluster, made with openssl as cluster.sh makes the cluster's:
# a CA of their own and one key pair for KEDA's services, into DIR as the Secret kedaorg-certs
# holds them (ca.crt, tls.crt, tls.key). The metrics API server serves the APIService with it
# (the APIService's caBundle is ca.crt), and the operator's gRPC metrics service and the
# adapter, its client, authenticate each other with it (mutual TLS, both trusting ca.crt). The
# operator runs with --enable-cert-rotation=false, so it neither makes nor rotates them.
#   keda-certs.sh DIR [NAMESPACE]
set -euo pipefail
dir=${1:?usage: keda-certs.sh DIR [NAMESPACE]}
namespace=${2:-keda}
days=7
mkdir -p "$dir"
cd "$dir"
sans=
for service in keda-operator keda-metrics-apiserver keda-admission-webhooks; do
  for name in "$service" "$service.$namespace" "$service.$namespace.svc" "$service.$namespace.svc.cluster.local"; do
    sans+="${sans:+,}DNS:$name"
  done
done
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days $days -subj /CN=hookgate-test-keda-ca 2> /dev/null
openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj /CN=keda-operator 2> /dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$sans" > tls.ext
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days $days \
  -extfile tls.ext 2> /dev/null
rm -f ca.key ca.srl tls.csr tls.ext
