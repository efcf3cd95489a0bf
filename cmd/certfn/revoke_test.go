package main

import (
	"strings"
	"testing"
)

// `certfn revoke` checks its reason and refuses non-ACME certificates and
// remote mode; the ACME flow itself is tested against Pebble
// (tests/acme/revoke_test.go).
func TestRevokeRefusals(t *testing.T) {
	dir := setupEnv(t)
	if r := cli(t, dir, selfSignedIssuer+"---\n"+`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  issuerRef: {name: selfsigned}
`, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %s", r.stderr)
	}
	ok(t, dir, "serve", "--until-idle", "--auto-approve", "*")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"revoke", "web", "--reason", "stolen"}, `--reason "stolen": want one of affiliationChanged, cessationOfOperation, keyCompromise, superseded, unspecified (in any case, as certbot's keycompromise)`},
		{[]string{"revoke", "web", "--reason", "keyCompromise"}, "not an ACME issuer"},
		{[]string{"revoke", "web", "--reason", "keycompromise"}, "not an ACME issuer"}, // certbot's spelling: the reason is accepted
		{[]string{"revoke", "nope"}, "not found"},
		{[]string{"--server", "https://127.0.0.1:1", "revoke", "web"}, "revoke is local-only"},
	} {
		r := cli(t, dir, "", tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("certfn %s: exit %d, stderr %q, want %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
}
