package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// result is one CLI invocation's outcome.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs certfn with --data dir and the given stdin.
func cli(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, append([]string{"--data", dir}, args...), strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// ok runs certfn and fails the test unless it exits 0.
func ok(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := cli(t, dir, "", args...)
	if r.code != 0 {
		t.Fatalf("certfn %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// failsWith checks exit code 1 and exactly one "error:" line on stderr containing want.
func failsWith(t *testing.T, r result, want string) {
	t.Helper()
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (stderr %q)", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") {
		t.Fatalf("stderr = %q, want exactly one \"error: \" line", r.stderr)
	}
	if !strings.Contains(lines[0], want) {
		t.Fatalf("error %q does not mention %q", lines[0], want)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func setupEnv(t *testing.T) string {
	t.Helper()
	// The CLI reads these; the tests must not depend on the caller's shell.
	t.Setenv("CERTFN_AUTO_APPROVE", "")
	t.Setenv("CERTFN_DATA", "")
	t.Setenv("CERTFN_CLUSTER_RESOURCE_NAMESPACE", "")
	for _, k := range []string{"CERTFN_SERVER", "CERTFN_AUTH", "CERTFN_AUDIENCE", "CERTFN_TOKEN", "CERTFN_CLIENT_CERT", "CERTFN_CLIENT_KEY", "CERTFN_SERVER_CA"} {
		t.Setenv(k, "")
	}
	t.Setenv("CERTFN_QUOTA_OBJECTS", "")
	t.Setenv("CERTFN_QUOTA_ISSUANCES_PER_HOUR", "")
	for _, k := range []string{"CERTFN_NOTIFY_WEBHOOK_URL", "CERTFN_NOTIFY_WEBHOOK_SECRET_FILE", "CERTFN_NOTIFY_DEPLOYMENT"} {
		t.Setenv(k, "")
	}
	return t.TempDir()
}

const selfSignedIssuer = `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: selfsigned, namespace: default}
spec: {selfSigned: {}}
`

const appCert = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: app, namespace: default}
spec:
  secretName: app-tls
  dnsNames: [app.example.com]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned}
`

func TestApplyFromFileAndStdin(t *testing.T) {
	dir := setupEnv(t)
	f := writeFile(t, t.TempDir(), "issuer.yaml", selfSignedIssuer)
	if out := ok(t, dir, "apply", "-f", f); out != "issuer.cert-manager.io/selfsigned (default) created\n" {
		t.Fatalf("apply file: %q", out)
	}
	if out := ok(t, dir, "apply", "-f", f); out != "issuer.cert-manager.io/selfsigned (default) unchanged\n" {
		t.Fatalf("re-apply: %q", out)
	}
	r := cli(t, dir, appCert, "apply", "-f", "-")
	if r.code != 0 || r.stdout != "certificate.cert-manager.io/app (default) created\n" {
		t.Fatalf("apply stdin: %+v", r)
	}
	r = cli(t, dir, strings.Replace(appCert, "[app.example.com]", "[app.example.com, b.example.com]", 1), "apply", "-f", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "configured") {
		t.Fatalf("apply changed stdin: %+v", r)
	}
	// -n overrides the namespace of namespaced resources.
	if out := ok(t, dir, "apply", "-f", f, "-n", "team-b"); !strings.Contains(out, "(team-b) created") {
		t.Fatalf("apply -n: %q", out)
	}
	// A directory applies every manifest in it.
	d := t.TempDir()
	writeFile(t, d, "a.yaml", selfSignedIssuer)
	writeFile(t, d, "b.yml", strings.Replace(appCert, "name: app,", "name: other,", 1))
	writeFile(t, d, "notes.txt", "not a manifest")
	out := ok(t, dir, "apply", "-f", d)
	if !strings.Contains(out, "selfsigned (default) unchanged") || !strings.Contains(out, "certificate.cert-manager.io/other (default) created") {
		t.Fatalf("apply dir: %q", out)
	}
}

func TestInvalidInputFailsWithOneErrorLine(t *testing.T) {
	dir := setupEnv(t)
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"invalid SAN", strings.Replace(appCert, "[app.example.com]", "[app.example.com, a..b]", 1), []string{"apply", "-f", "-"}, "spec.dnsNames[1]"},
		{"one bad document of two", selfSignedIssuer + "---\n" + strings.Replace(appCert, "size: 256", "size: 255", 1),
			[]string{"apply", "-f", "-"}, "spec.privateKey.size"},
		{"unknown field", strings.Replace(appCert, "secretName:", "secretNme:", 1), []string{"apply", "-f", "-"}, "spec.secretNme: unknown field"},
		{"malformed YAML", "kind: [", []string{"apply", "-f", "-"}, "stdin: document 1"},
		{"empty input", "", []string{"apply", "-f", "-"}, "no resources found"},
		{"missing -f", "", []string{"apply"}, "-f is required"},
		{"missing file", "", []string{"apply", "-f", "/nonexistent/x.yaml"}, "no such file"},
		{"unknown kind", "", []string{"get", "widgets"}, `unknown resource type "widgets"`},
		{"bad output format", "", []string{"get", "certificates", "-o", "xml"}, `-o "xml"`},
		{"missing certificate", "", []string{"get", "certificate", "nope"}, "certificate.cert-manager.io/nope (default) not found"},
		{"status of another kind", "", []string{"status", "issuer", "x"}, "status supports only: certificate"},
		{"inspect something else", "", []string{"inspect", "configmap", "x"}, "inspect supports only: secret"},
		{"inspect missing secret", "", []string{"inspect", "secret", "nope"}, "secret default/nope"},
		{"renew without a name", "", []string{"renew"}, "give one certificate NAME or --all"},
		{"renew missing", "", []string{"renew", "nope"}, "not found"},
		{"wait bad --for", "", []string{"wait", "certificate", "x", "--for", "ready"}, "--for"},
		{"unknown command", "", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", "", []string{"get", "--bogus"}, "unknown flag: --bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, dir, tc.stdin, tc.args...)
			failsWith(t, r, tc.want)
			if r.stdout != "" && !strings.HasPrefix(tc.args[0], "wait") {
				t.Errorf("stdout not empty: %q", r.stdout)
			}
		})
	}
	// Nothing was stored by the refused applies.
	if out := ok(t, dir, "get", "certificates", "-A"); out != "No certificates found.\n" {
		t.Fatalf("get after refused applies: %q", out)
	}
	if out := ok(t, dir, "get", "issuers", "-A"); out != "No issuers found.\n" {
		t.Fatalf("get after refused applies: %q", out)
	}
}

// The examples are applied and served until idle; then every read command
// is checked against what was issued.
func TestServeIssuesTheExamples(t *testing.T) {
	dir := setupEnv(t)
	out := ok(t, dir, "apply", "-f", "../../examples")
	for _, want := range []string{"clusterissuer.cert-manager.io/selfsigned created", "certificate.cert-manager.io/web (default) created",
		"certificate.cert-manager.io/demo-ca (cert-manager) created"} {
		if !strings.Contains(out, want) {
			t.Fatalf("apply examples: %q lacks %q", out, want)
		}
	}
	ok(t, dir, "serve", "--until-idle", "--auto-approve", "*")

	t.Run("get", func(t *testing.T) {
		out := ok(t, dir, "get", "certificates", "-A")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE") || !strings.Contains(lines[0], "READY") {
			t.Fatalf("get -A:\n%s", out)
		}
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) < 3 || f[2] != "True" {
				t.Errorf("not ready: %q", l)
			}
		}
		wide := ok(t, dir, "get", "certificate", "web", "-o", "wide")
		for _, h := range []string{"NAME", "READY", "SECRET", "ISSUER", "STATUS", "NOT AFTER", "RENEWAL", "AGE", "web-tls", "demo-ca"} {
			if !strings.Contains(wide, h) {
				t.Errorf("-o wide lacks %q:\n%s", h, wide)
			}
		}
		var one map[string]any
		if err := json.Unmarshal([]byte(ok(t, dir, "get", "certificate", "web", "-o", "json")), &one); err != nil {
			t.Fatalf("-o json: %v", err)
		}
		if one["kind"] != "Certificate" || one["metadata"].(map[string]any)["name"] != "web" || one["status"] == nil {
			t.Fatalf("-o json: %v", one)
		}
		var list struct {
			Kind  string           `json:"kind"`
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal([]byte(ok(t, dir, "get", "cr", "-A", "-o", "json")), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 {
			t.Fatalf("-o json list: %v %+v", err, list)
		}
		y := ok(t, dir, "get", "clusterissuer", "demo-ca", "-o", "yaml")
		if !strings.Contains(y, "kind: ClusterIssuer") || !strings.Contains(y, "secretName: demo-ca") || !strings.Contains(y, "status: \"True\"") {
			t.Fatalf("-o yaml:\n%s", y)
		}
		if strings.Contains(ok(t, dir, "get", "certificate", "web", "-o", "yaml"), "PRIVATE KEY") {
			t.Fatal("key material in get output")
		}
	})

	t.Run("status", func(t *testing.T) {
		out := ok(t, dir, "status", "certificate", "web")
		first := strings.SplitN(out, "\n", 2)[0]
		if !strings.HasPrefix(first, "Ready: ") {
			t.Fatalf("first line %q, want Ready:", first)
		}
		for _, want := range []string{"Certificate: default/web (generation 1, revision 1)", "Issuer: ClusterIssuer \"demo-ca\"",
			"Secret: default/web-tls", "CertificateRequest: default/web-1 (revision 1"} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("inspect --verify", func(t *testing.T) {
		out := ok(t, dir, "inspect", "secret", "web-tls", "--verify")
		for _, want := range []string{"Keys: ca.crt, keystore.p12, tls-combined.pem, tls.crt, tls.key, truststore.p12",
			"Private key: ECDSA P-256 (tls.key, never printed)", "SANs:         www.example.internal, api.example.internal, 10.0.0.10",
			"Verified: tls.crt chains to ca.crt"} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "BEGIN") {
			t.Fatal("inspect printed PEM")
		}
		// The CA's own secret has ca.crt = itself, so it verifies too.
		ok(t, dir, "inspect", "secret", "demo-ca", "-n", "cert-manager", "--verify")
	})

	t.Run("renew", func(t *testing.T) {
		if out := ok(t, dir, "renew", "web"); out != "Manually triggered issuance of certificate.cert-manager.io/web (default)\n" {
			t.Fatalf("renew: %q", out)
		}
		// Already being issued: woken, not refused.
		if out := ok(t, dir, "renew", "web"); out != "certificate.cert-manager.io/web (default) is already being issued: woke Certificate/default/web to run now\n" {
			t.Fatalf("renew again: %q", out)
		}
		if s := ok(t, dir, "status", "certificate", "web"); !strings.Contains(s, "Issuing=True (ManuallyTriggered)") {
			t.Fatalf("status after renew:\n%s", s)
		}
		if r := cli(t, dir, "", "serve", "--until-idle", "--auto-approve", "*"); r.code != 0 ||
			!strings.Contains(r.stderr, `msg="certificate renewed" namespace=default certificate=web secret=web-tls revision=2`) ||
			!strings.Contains(r.stderr, "this run: 0 issued, 1 renewed, 0 failed attempts") {
			t.Fatalf("serve after renew: %d\n%s", r.code, r.stderr)
		}
		if s := ok(t, dir, "status", "certificate", "web"); !strings.Contains(s, "revision 2)") || !strings.HasPrefix(s, "Ready: ") {
			t.Fatalf("status after the renewal:\n%s", s)
		}
		out := ok(t, dir, "wait", "certificate", "web", "--for", "condition=Ready", "--timeout", "5s")
		if !strings.Contains(out, "certificate.cert-manager.io/web (default) condition met: Ready=True") {
			t.Fatalf("wait: %q", out)
		}
	})
}

func TestApproveAndDeny(t *testing.T) {
	dir := setupEnv(t)
	r := cli(t, dir, selfSignedIssuer+"---\n"+appCert+"---\n"+strings.ReplaceAll(appCert, "app", "other"), "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	// Policies only, and none: the requests wait, and serve --until-idle
	// says so and exits 1 (cron sees it).
	r = cli(t, dir, "", "serve", "--until-idle", "--approver", "policy")
	if r.code != 1 || !strings.Contains(r.stderr, "2 certificates not ready after serve --until-idle: default/app: ") ||
		!strings.Contains(r.stderr, "msg=\"serve --until-idle: 2 certificates: 0 ready, 2 not ready; this run: 0 issued, 0 renewed, 0 failed attempts\"") {
		t.Fatalf("serve with pending requests: %d\n%s", r.code, r.stderr)
	}
	out := ok(t, dir, "get", "cr", "-o", "wide")
	if !strings.Contains(out, "app-1") || !strings.Contains(out, "no policy applies") {
		t.Fatalf("requests not pending:\n%s", out)
	}

	if out := ok(t, dir, "deny", "app-1", "--reason", "Nope", "--message", "not today"); out != "certificaterequest.cert-manager.io/app-1 (default) denied\n" {
		t.Fatalf("deny: %q", out)
	}
	failsWith(t, cli(t, dir, "", "approve", "app-1"), "already Denied")
	failsWith(t, cli(t, dir, "", "deny", "app-1"), "already Denied")
	if out := ok(t, dir, "approve", "other-1"); out != "certificaterequest.cert-manager.io/other-1 (default) approved\n" {
		t.Fatalf("approve: %q", out)
	}
	failsWith(t, cli(t, dir, "", "deny", "other-1"), "already Approved")
	failsWith(t, cli(t, dir, "", "approve", "missing-1"), "not found")

	// The approved one issues (logged at the default level); the denied one
	// fails: exit 1, naming it.
	r = cli(t, dir, "", "serve", "--until-idle", "--approver", "policy")
	if r.code != 1 || !strings.Contains(r.stderr, "msg=\"certificate issued\" namespace=default certificate=other secret=other-tls revision=1") ||
		!strings.Contains(r.stderr, "msg=\"certificate issuance failed\" namespace=default certificate=app") ||
		!strings.Contains(r.stderr, "1 certificates not ready after serve --until-idle: default/app: ") {
		t.Fatalf("serve after approve and deny: %d\n%s", r.code, r.stderr)
	}
	if s := ok(t, dir, "status", "certificate", "other"); !strings.HasPrefix(s, "Ready: ") {
		t.Fatalf("approved certificate not ready:\n%s", s)
	}
	s := ok(t, dir, "status", "certificate", "app")
	if !strings.HasPrefix(s, "Not ready: ") || !strings.Contains(s, "not today") || !strings.Contains(s, "Failed issuance attempts: 1") {
		t.Fatalf("denied certificate status:\n%s", s)
	}
	// A waiting client stops at once on a denied request (a permanent
	// blocker), exit 1, naming it; it does not wait for its timeout.
	start := time.Now()
	r = cli(t, dir, "", "wait", "certificate", "app", "--timeout", "1h")
	failsWith(t, r, "certificate.cert-manager.io/app (default) will not become Ready=True without a change: Not ready: request app-1 denied: not today")
	if time.Since(start) > 30*time.Second {
		t.Fatalf("wait on a denied request took %s", time.Since(start))
	}
	// After `certfn renew` the denial is history: a wait does not end on
	// it (it waits for the new request, here until its timeout: no serve
	// runs), and the renewed issuance, once approved, ends the wait.
	ok(t, dir, "renew", "app")
	r = cli(t, dir, "", "wait", "certificate", "app", "--timeout", "300ms")
	failsWith(t, r, "timed out after 300ms waiting for certificate.cert-manager.io/app (default) Ready=True")
	// The renewed attempt's request (the same revision: the same name)
	// waits for approval.
	_ = cli(t, dir, "", "serve", "--until-idle", "--approver", "policy")
	if out := ok(t, dir, "approve", "app-1"); out != "certificaterequest.cert-manager.io/app-1 (default) approved\n" {
		t.Fatalf("approve the renewed request: %q", out)
	}
	ok(t, dir, "serve", "--until-idle", "--approver", "policy")
	if out := ok(t, dir, "wait", "certificate", "app", "--timeout", "10s"); !strings.Contains(out, "condition met") {
		t.Fatalf("wait after the renewed issuance: %q", out)
	}
	// A name that does not exist fails at once, as kubectl wait does.
	start = time.Now()
	failsWith(t, cli(t, dir, "", "wait", "certificate", "nope", "--timeout", "1h"), `certificates.cert-manager.io "nope" not found`)
	if time.Since(start) > 30*time.Second {
		t.Fatalf("wait on a missing name took %s", time.Since(start))
	}
	// A blocker that may pass: the wait times out with the last one.
	r = cli(t, dir, "", "wait", "certificate", "other", "--for", "condition=Issuing", "--timeout", "300ms")
	failsWith(t, r, "timed out after 300ms waiting for certificate.cert-manager.io/other (default) Issuing=True")
	if !strings.Contains(r.stdout, "waiting for certificate.cert-manager.io/other (default): no Issuing condition yet (no certfn serve is running on data directory "+dir) {
		t.Fatalf("wait did not show the reason: %q", r.stdout)
	}
}

// Every command's --help mentions each of its flags (own and inherited).
func TestHelpMentionsEveryFlag(t *testing.T) {
	dir := setupEnv(t)
	root := newRoot(&target{}, streams{})
	cmds := append([]*cobra.Command{root}, root.Commands()...)
	for _, c := range cmds {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		args := []string{"--help"}
		if c != root {
			args = []string{c.Name(), "--help"}
		}
		t.Run(c.Name(), func(t *testing.T) {
			r := cli(t, dir, "", args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("%v: exit %d stderr %q", args, r.code, r.stderr)
			}
			n := 0
			check := func(f *pflag.Flag) {
				n++
				if f.Hidden {
					return
				}
				if !strings.Contains(r.stdout, "--"+f.Name) {
					t.Errorf("certfn %s --help does not mention --%s", c.Name(), f.Name)
				}
				if f.Shorthand != "" && !strings.Contains(r.stdout, "-"+f.Shorthand+",") {
					t.Errorf("certfn %s --help does not mention -%s", c.Name(), f.Shorthand)
				}
			}
			c.NonInheritedFlags().VisitAll(check)
			c.InheritedFlags().VisitAll(check)
			if c != root && n < 2 {
				t.Fatalf("found only %d flags for %s", n, c.Name())
			}
			desc := c.Short
			if c.Long != "" {
				desc = strings.SplitN(c.Long, "\n", 2)[0]
			}
			if !strings.Contains(r.stdout, desc) {
				t.Errorf("help lacks the description %q", desc)
			}
		})
	}
}
