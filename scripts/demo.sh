#!/usr/bin/env bash
# make demo: issue real certificates end to end in local mode.
# A fresh data directory; `certfn serve` in the background; the examples
# applied (self-signed ClusterIssuer → CA Certificate → CA ClusterIssuer →
# leaf Certificate with DNS names, an IP, a PKCS#12 keystore); wait until
# Ready; show them; verify the leaf against the CA; exit 0. Only the
# self-signed bootstrap issuer is auto-approved: the leaf is approved by the
# CertificateRequestPolicy in examples/04-policy.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/certfn}
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/certfn
export CERTFN_DATA=${CERTFN_DATA:-$(mktemp -d -t certfn-demo.XXXXXX)}
echo "== data directory: $CERTFN_DATA"

"$BIN" serve --auto-approve 'clusterissuers.cert-manager.io/selfsigned' 2>"$CERTFN_DATA/serve.log" &
SERVE=$!
trap 'kill $SERVE 2>/dev/null || true; wait $SERVE 2>/dev/null || true' EXIT

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
echo "== demo OK"
