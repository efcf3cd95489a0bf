package main

import (
	"strings"
	"testing"
)

// As cmctl renew: a renew during the backoff after a failed issuance
// starts a new attempt now, not when the backoff ends.
func TestRenewDuringFailureBackoff(t *testing.T) {
	t.Setenv("CERTFN_APPROVER", "")
	dir := t.TempDir()
	if r := cli(t, dir, selfSignedIssuer+"---\n"+appCert, "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	cli(t, dir, "", "serve", "--until-idle", "--approver", "policy")
	ok(t, dir, "deny", "app-1")
	cli(t, dir, "", "serve", "--until-idle", "--approver", "policy")
	if s := ok(t, dir, "status", "certificate", "app"); !strings.Contains(s, "Issuing=False (Failed)") || !strings.Contains(s, "next attempt after") {
		t.Fatalf("not in a failure backoff:\n%s", s)
	}
	if out := ok(t, dir, "renew", "app"); !strings.Contains(out, "Manually triggered issuance") {
		t.Fatalf("renew during the backoff: %q", out)
	}
	r := cli(t, dir, "", "serve", "--until-idle")
	if r.code != 0 || !strings.Contains(r.stderr, `msg="certificate issued" namespace=default certificate=app`) {
		t.Fatalf("serve after renew: %d %s", r.code, r.stderr)
	}
}
