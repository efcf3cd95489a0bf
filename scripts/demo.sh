#!/usr/bin/env bash
# make demo: issue real certificates end to end in local mode.
# A fresh data directory; `certfn serve` in the background; the examples
# applied (self-signed ClusterIssuer → CA Certificate → CA ClusterIssuer →
# leaf Certificate with DNS names, an IP, a PKCS#12 keystore); wait until
# Ready; show them; verify the leaf against the CA; exit 0. Only the
# self-signed bootstrap issuer is auto-approved: the leaf is approved by the
# CertificateRequestPolicy in examples/04-policy.yaml.
# ACME part: Pebble (Let's Encrypt's test CA, tests/cmd/pebble) runs in the
# background; the ClusterIssuer in examples/acme/ registers an account and
# a Certificate is issued over HTTP-01, answered by `certfn serve
# --http01-listen`; the chain is verified against Pebble's root. Then a
# wildcard (*.wild.example.test) over DNS-01: the issuer's dnsNames
# selector picks its DNS-01 solver, whose TXT records `certfn serve
# --dns01-challtestsrv` (a test-only provider) sets through the management
# API of the DNS server inside the Pebble dev program, the one Pebble's VA
# asks.
set -euo pipefail
cd "$(dirname "$0")/.."
# The binaries are (re)built unless given: a bin/ left by an older
# checkout may lack the flags used below (go build is a no-op when current).
# A cold build downloads and compiles a few hundred packages for minutes:
# progress is shown every 50 packages (go build -v names each one built).
build() {
  local out=$1 pkg=$2
  echo "== building $out (the first build fetches and compiles modules: minutes; later ones: seconds)"
  go build -v -o "$out" "$pkg" 2>&1 | awk '{ n++; if (n % 50 == 0) { printf "   %d packages compiled...\n", n; fflush() } } END { if (n) printf "   %d packages compiled\n", n }'
  test "${PIPESTATUS[0]}" -eq 0
}
if [ -z "${BIN:-}" ]; then BIN=bin/certfn; build "$BIN" ./cmd/certfn; fi
export CERTFN_DATA=${CERTFN_DATA:-$(mktemp -d -t certfn-demo.XXXXXX)}
echo "== data directory: $CERTFN_DATA"

if [ -z "${PEBBLE_BIN:-}" ]; then PEBBLE_BIN=bin/pebble-dev; build "$PEBBLE_BIN" ./tests/cmd/pebble; fi
ACME_LISTEN=${ACME_LISTEN:-127.0.0.1:14000}
HTTP01_PORT=${HTTP01_PORT:-5002}
ACME_DNS=${ACME_DNS:-127.0.0.1:8053}
ACME_DNS_MANAGEMENT=${ACME_DNS_MANAGEMENT:-127.0.0.1:8055}
"$PEBBLE_BIN" -listen "$ACME_LISTEN" -http01-port "$HTTP01_PORT" -dns "$ACME_DNS" -dns-management "$ACME_DNS_MANAGEMENT" \
  -tls-cert-out "$CERTFN_DATA/pebble-tls.pem" -roots-out "$CERTFN_DATA/pebble-roots.pem" >"$CERTFN_DATA/pebble.log" 2>&1 &
PEBBLE=$!

# --dns01-challtestsrv and --dns01-nameservers are for testing against
# Pebble only: DNS-01 TXT records go to Pebble's DNS server.
# --deploy-hook runs after each new certificate (certbot's --deploy-hook);
# --metrics-listen serves Prometheus metrics with cert-manager's names.
METRICS_LISTEN=${METRICS_LISTEN:-127.0.0.1:19402}
"$BIN" serve --auto-approve 'clusterissuers.cert-manager.io/selfsigned,clusterissuers.cert-manager.io/pebble' \
  --deploy-hook 'echo "$CERTFN_NAMESPACE/$CERTFN_CERTIFICATE revision $CERTFN_REVISION ($RENEWED_DOMAINS) -> $RENEWED_LINEAGE" >> "$CERTFN_DATA/deploy-hook.log"' \
  --metrics-listen "$METRICS_LISTEN" \
  --http01-listen "127.0.0.1:$HTTP01_PORT" --http01-self-check-addr "127.0.0.1:$HTTP01_PORT" \
  --dns01-challtestsrv "http://$ACME_DNS_MANAGEMENT" --dns01-nameservers "$ACME_DNS" 2>"$CERTFN_DATA/serve.log" &
SERVE=$!
trap 'kill $SERVE $PEBBLE 2>/dev/null || true; wait $SERVE $PEBBLE 2>/dev/null || true' EXIT

echo "== certfn apply -f examples/"
"$BIN" apply -f examples/
echo "== certfn wait certificate web --for=condition=Ready"
"$BIN" wait certificate demo-ca -n cert-manager --for=condition=Ready --timeout 60s
"$BIN" wait certificate web --for=condition=Ready --timeout 60s
echo "== certfn get certificates -A -o wide"
"$BIN" get certificates -A -o wide
echo "== certfn status certificate web"
"$BIN" status certificate web
echo "== certfn inspect secret web-tls --verify"
"$BIN" inspect secret web-tls --verify
echo "== files nginx/haproxy can read:"
ls -l "$CERTFN_DATA/secrets/default/web-tls/"
if command -v openssl >/dev/null 2>&1; then
  echo "== openssl verify"
  openssl verify -CAfile "$CERTFN_DATA/secrets/default/web-tls/ca.crt" "$CERTFN_DATA/secrets/default/web-tls/tls.crt"
fi

echo "== ACME: Pebble at https://$ACME_LISTEN/dir; HTTP-01 answered by certfn on 127.0.0.1:$HTTP01_PORT;"
echo "   DNS-01 records set through http://$ACME_DNS_MANAGEMENT in Pebble's DNS server ($ACME_DNS)"
# Pebble writes its roots once its DNS management API and ACME server listen.
for _ in $(seq 100); do [ -s "$CERTFN_DATA/pebble-roots.pem" ] && break; kill -0 $PEBBLE 2>/dev/null || break; sleep 0.1; done
if [ ! -s "$CERTFN_DATA/pebble-roots.pem" ]; then
  echo "demo: Pebble did not start (ports $ACME_LISTEN, $ACME_DNS, $ACME_DNS_MANAGEMENT in use?):" >&2
  cat "$CERTFN_DATA/pebble.log" >&2
  exit 1
fi
sed "s#https://127.0.0.1:14000/dir#https://$ACME_LISTEN/dir#" examples/acme/01-pebble-clusterissuer.yaml | "$BIN" apply -f -
"$BIN" apply -f examples/acme/02-certificate.yaml
"$BIN" wait clusterissuer pebble --for=condition=Ready --timeout 60s
"$BIN" wait certificate acme-demo --for=condition=Ready --timeout 60s
echo "== certfn get orders,challenges (the Challenges are deleted once the Order is valid)"
"$BIN" get orders -A
"$BIN" get challenges -A
echo "== certfn status certificate acme-demo"
"$BIN" status certificate acme-demo
if command -v openssl >/dev/null 2>&1; then
  echo "== openssl verify (against Pebble's root)"
  openssl verify -CAfile "$CERTFN_DATA/pebble-roots.pem" -untrusted "$CERTFN_DATA/secrets/default/acme-demo-tls/tls.crt" \
    "$CERTFN_DATA/secrets/default/acme-demo-tls/tls.crt"
fi

echo "== ACME over DNS-01: certfn apply -f examples/acme/03-wildcard.yaml (*.wild.example.test, wild.example.test)"
"$BIN" apply -f examples/acme/03-wildcard.yaml
"$BIN" wait certificate wildcard-demo --for=condition=Ready --timeout 60s
echo "== certfn get certificates -A -o wide (private CA leaf, HTTP-01, DNS-01 wildcard)"
"$BIN" get certificates -A -o wide
echo "== certfn status certificate wildcard-demo"
"$BIN" status certificate wildcard-demo
if command -v openssl >/dev/null 2>&1; then
  echo "== openssl verify the wildcard (against Pebble's root)"
  WILD="$CERTFN_DATA/secrets/default/wildcard-demo-tls/tls.crt"
  openssl x509 -in "$WILD" -noout -ext subjectAltName
  openssl verify -CAfile "$CERTFN_DATA/pebble-roots.pem" -untrusted "$WILD" "$WILD"
fi
echo "== deploy hook runs ($CERTFN_DATA/deploy-hook.log), one per new certificate"
for _ in $(seq 50); do
  [ "$(wc -l <"$CERTFN_DATA/deploy-hook.log" 2>/dev/null || echo 0)" -ge 4 ] && break
  sleep 0.1
done
cat "$CERTFN_DATA/deploy-hook.log"
[ "$(wc -l <"$CERTFN_DATA/deploy-hook.log")" -ge 4 ] || { echo "demo: the deploy hook did not run for every certificate" >&2; exit 1; }
if command -v curl >/dev/null 2>&1; then
  echo "== curl http://$METRICS_LISTEN/metrics | grep certmanager_certificate_expiration"
  curl -fsS "http://$METRICS_LISTEN/metrics" | grep '^certmanager_certificate_expiration_timestamp_seconds'
fi
echo "== demo OK"
