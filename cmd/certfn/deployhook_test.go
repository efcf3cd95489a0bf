package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve --deploy-hook runs the command once per new certificate: after the
// first issuance and after a renewal, not again when nothing changed, with
// the certificate's facts (certbot's RENEWED_* names too) in its
// environment and the files in CERTFN_SECRET_DIR readable.
func TestServeDeployHook(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("CERTFN_DEPLOY_HOOK", "")
	log := filepath.Join(t.TempDir(), "hook.log")
	hook := `echo "$CERTFN_NAMESPACE/$CERTFN_CERTIFICATE $CERTFN_REVISION $RENEWED_DOMAINS $(openssl x509 -noout -serial -in "$RENEWED_LINEAGE/tls.crt")" >> ` + log
	lines := func() []string {
		b, err := os.ReadFile(log)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	ok(t, dir, "apply", "-f", "../../examples")
	ok(t, dir, "serve", "--until-idle", "--auto-approve", "*", "--deploy-hook", hook)
	got := lines()
	if len(got) != 2 {
		t.Fatalf("hook lines after the first issuance:\n%s", strings.Join(got, "\n"))
	}
	var web string
	for _, l := range got {
		if strings.HasPrefix(l, "default/web 1 ") {
			web = l
		}
	}
	if !strings.Contains(web, "api.example.internal") || !strings.Contains(web, "serial=") {
		t.Fatalf("no run for default/web revision 1 with its names and a readable tls.crt:\n%s", strings.Join(got, "\n"))
	}

	ok(t, dir, "serve", "--until-idle", "--auto-approve", "*", "--deploy-hook", hook)
	if n := len(lines()); n != 2 {
		t.Fatalf("%d hook lines after a serve with nothing new, want 2", n)
	}
	ok(t, dir, "renew", "web")
	ok(t, dir, "serve", "--until-idle", "--auto-approve", "*", "--deploy-hook", hook)
	got = lines()
	if len(got) != 3 || !strings.HasPrefix(got[2], "default/web 2 ") || got[2] == web {
		t.Fatalf("hook lines after renewing web:\n%s", strings.Join(got, "\n"))
	}
	if strings.TrimPrefix(got[2], "default/web 2 ") == strings.TrimPrefix(web, "default/web 1 ") {
		t.Fatal("the renewal's hook saw the old certificate's serial")
	}
}
