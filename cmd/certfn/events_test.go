package main

import (
	"strings"
	"testing"
)

// A Certificate that cannot be written (its keystore password secret is
// missing) shows why in `get events` and in `status`.
func TestEventsShowWhyAStepFails(t *testing.T) {
	dir := setupEnv(t)
	r := cli(t, dir, `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ss, namespace: default}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: ks, namespace: default}
spec:
  secretName: ks-tls
  dnsNames: [ks.example.com]
  issuerRef: {name: ss}
  keystores:
    pkcs12:
      create: true
      passwordSecretRef: {name: missing-pw, key: password}
`, "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	if r := cli(t, dir, "", "serve", "--until-idle", "--auto-approve", "*"); r.code != 1 || !strings.Contains(r.stderr, "1 certificates not ready after serve --until-idle: default/ks: ") {
		t.Fatalf("serve --until-idle with a failing certificate: %d\n%s", r.code, r.stderr)
	}
	// The steps that ran are there too (Issuing, Generated, ...); the
	// failure is the one Warning.
	out := ok(t, dir, "get", "events", "-A", "--field-selector", "type=Warning")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "REASON") || !strings.Contains(lines[1], "certificate/ks") ||
		!strings.Contains(lines[1], "Warning") || !strings.Contains(lines[1], "missing-pw") {
		t.Fatalf("get events --field-selector type=Warning:\n%s", out)
	}
	if st := ok(t, dir, "status", "certificate", "ks"); !strings.Contains(st, "Recorded failures:") || !strings.Contains(st, "missing-pw") {
		t.Fatalf("status:\n%s", st)
	}
}

// eventRows are the Reason column of describe's Events table, in order,
// with each row's Type and Message.
func eventRows(t *testing.T, describe string) (reasons []string, rows []string) {
	t.Helper()
	_, table, found := strings.Cut(describe, "\nEvents:\n")
	if !found {
		t.Fatalf("no Events table:\n%s", describe)
	}
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "Type") || !strings.Contains(lines[0], "Reason") ||
		!strings.Contains(lines[0], "Age") || !strings.Contains(lines[0], "From") || !strings.Contains(lines[0], "Message") {
		t.Fatalf("Events table header:\n%s", table)
	}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) < 4 {
			t.Fatalf("Events row %q", l)
		}
		reasons = append(reasons, f[1])
		rows = append(rows, l)
	}
	return reasons, rows
}

// A CA issuance tells its story in `describe certificate`, in order, with
// cert-manager's reasons (certfn's Issued last); a request a policy
// denies shows Denied with the policy's message on the request and on
// `get events` selected as kubectl selects them; deleting the
// Certificate removes its Events and its requests'.
func TestDescribeShowsTheIssuanceEvents(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("CERTFN_APPROVER", "")
	for _, f := range []string{"01-selfsigned-clusterissuer.yaml", "02-ca.yaml", "04-policy.yaml"} {
		ok(t, dir, "apply", "-f", "../../examples/"+f)
	}
	leaf := func(name, dns string) string {
		return "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: " + name + "}\nspec:\n  secretName: " + name +
			"-tls\n  dnsNames: [" + dns + "]\n  duration: 720h\n  privateKey: {algorithm: ECDSA, size: 256}\n  issuerRef: {name: demo-ca, kind: ClusterIssuer}\n"
	}
	// The CA first: its issuer is Ready before the leaves are requested.
	if r := cli(t, dir, "", "serve", "--until-idle", "--approver", "policy", "--auto-approve", "clusterissuers.cert-manager.io/selfsigned"); r.code != 0 {
		t.Fatalf("serve --until-idle (the CA): %d\n%s", r.code, r.stderr)
	}
	if r := cli(t, dir, leaf("good", "app.example.internal")+"---\n"+leaf("evil", "evil.example.com"), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	r := cli(t, dir, "", "serve", "--until-idle", "--approver", "policy", "--auto-approve", "clusterissuers.cert-manager.io/selfsigned")
	if r.code != 1 || !strings.Contains(r.stderr, "default/evil") {
		t.Fatalf("serve --until-idle: %d\n%s", r.code, r.stderr)
	}
	// serve logs every Event: INFO for Normal, WARN for Warning.
	if !strings.Contains(r.stderr, "reason=Issued") || !strings.Contains(r.stderr, "level=WARN msg=event") || !strings.Contains(r.stderr, "reason=Denied") {
		t.Fatalf("serve's log lacks the Events:\n%s", r.stderr)
	}

	reasons, rows := eventRows(t, ok(t, dir, "describe", "certificate", "good"))
	want := []string{"Issuing", "Generated", "Requested", "Approved", "CertificateIssued", "Issued"}
	if strings.Join(reasons, ",") != strings.Join(want, ",") {
		t.Fatalf("describe certificate good: Events %v, want %v\n%s", reasons, want, strings.Join(rows, "\n"))
	}
	for i, row := range rows {
		if !strings.Contains(row, "Normal") || !strings.Contains(row, "certfn") {
			t.Errorf("row %d: %q", i, row)
		}
	}
	if !strings.Contains(rows[3], "CertificateRequest/good-1: ") || !strings.Contains(rows[5], "The certificate has been successfully issued") {
		t.Errorf("rows:\n%s", strings.Join(rows, "\n"))
	}

	// The denied request: Denied with the policy's message.
	d := ok(t, dir, "describe", "certificaterequest", "evil-1")
	reasons, rows = eventRows(t, d)
	var denied string
	for i, reason := range reasons {
		if reason == "Denied" {
			denied = rows[i]
		}
	}
	if denied == "" || !strings.Contains(denied, "Warning") || !strings.Contains(denied, "evil.example.com") {
		t.Fatalf("describe certificaterequest evil-1: no Denied Warning naming the policy's reason:\n%s", d)
	}
	// get events with kubectl's field selectors.
	out := ok(t, dir, "get", "events", "--field-selector", "involvedObject.kind=CertificateRequest,involvedObject.name=evil-1,reason=Denied")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "certificaterequest/evil-1") ||
		!strings.Contains(lines[1], "Denied") {
		t.Fatalf("get events by field selector:\n%s", out)
	}
	if r := cli(t, dir, "", "get", "events", "--field-selector", "involvedObject.color=red"); r.code == 0 ||
		!strings.Contains(r.stderr, "field label not supported: involvedObject.color") {
		t.Fatalf("an unknown field: %d %s", r.code, r.stderr)
	}
	// Deleting the Certificate deletes its Events and its requests'.
	ok(t, dir, "delete", "certificate", "evil")
	for _, sel := range []string{"involvedObject.name=evil", "involvedObject.name=evil-1"} {
		if out := ok(t, dir, "get", "events", "--field-selector", sel); !strings.Contains(out, "No events found") {
			t.Fatalf("Events of a deleted object (%s):\n%s", sel, out)
		}
	}
}

// An ACME issuer that cannot register its account shows
// ErrRegisterACMEAccount as a Warning in `describe`.
func TestDescribeShowsACMERegistrationFailure(t *testing.T) {
	dir := setupEnv(t)
	r := cli(t, dir, `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: le}
spec:
  acme:
    server: https://127.0.0.1:1/directory
    email: ops@example.com
    privateKeySecretRef: {name: le-account}
    solvers: [{http01: {ingress: {}}}]
`, "apply", "-f", "-")
	if r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	cli(t, dir, "", "serve", "--until-idle")
	d := ok(t, dir, "describe", "clusterissuer", "le")
	reasons, rows := eventRows(t, d)
	for i, reason := range reasons {
		if reason == "ErrRegisterACMEAccount" && strings.Contains(rows[i], "Warning") && strings.Contains(rows[i], "Failed to register ACME account") {
			return
		}
	}
	t.Fatalf("describe clusterissuer le: no ErrRegisterACMEAccount Warning:\n%s", d)
}
