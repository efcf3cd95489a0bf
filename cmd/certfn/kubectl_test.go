package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// kubectl and cmctl habits: several kinds in one get, -l, -o name,
// -o jsonpath, -o json of a list query always a List, describe, version,
// check and shell completion.
func TestKubectlHabits(t *testing.T) {
	t.Setenv("CERTFN_APPROVER", "")
	dir := t.TempDir()
	manifests := selfSignedIssuer + `---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, labels: {app: web, tier: frontend}}
spec: {secretName: web-tls, dnsNames: [web.example.com], issuerRef: {name: selfsigned}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: api, labels: {app: api}}
spec: {secretName: api-tls, dnsNames: [api.example.com], issuerRef: {name: selfsigned}}
`
	if r := cli(t, dir, manifests, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	// check: sane directory, but no serve: exit 1, saying so.
	r := cli(t, dir, "", "check")
	if r.code != 1 || !strings.Contains(r.stdout, "data directory "+dir+": ok") || !strings.Contains(r.stdout, "serve: not running") ||
		!strings.Contains(r.stdout, "certificates: 2 (0 ready)") || !strings.Contains(r.stderr, "no certfn serve is running") {
		t.Fatalf("check without serve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, t.TempDir(), "", "check"); r.code != 1 || !strings.Contains(r.stderr, "data directory") {
		t.Fatalf("check of an empty directory: %d %s", r.code, r.stderr)
	}
	ok(t, dir, "serve", "--until-idle")

	out := ok(t, dir, "get", "certificates,certificaterequests")
	for _, want := range []string{"certificate.cert-manager.io/web", "certificate.cert-manager.io/api", "certificaterequest.cert-manager.io/web-1", "\n\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("get certificates,certificaterequests lacks %q:\n%s", want, out)
		}
	}
	if out := ok(t, dir, "get", "secrets"); !strings.Contains(out, "web-tls   kubernetes.io/tls   ca.crt,tls.crt,tls.key   20") {
		t.Errorf("get secrets:\n%s", out)
	}
	if out := ok(t, dir, "get", "orders,challenges"); out != "No orders, challenges found.\n" {
		t.Errorf("get orders,challenges: %q", out)
	}
	if out := ok(t, dir, "get", "cert", "-l", "app=web", "-o", "name"); out != "certificate.cert-manager.io/web\n" {
		t.Errorf("-l app=web -o name: %q", out)
	}
	if out := ok(t, dir, "get", "cert", "-l", "tier notin (frontend)", "-o", "name"); out != "certificate.cert-manager.io/api\n" {
		t.Errorf("-l notin: %q", out)
	}
	if out := ok(t, dir, "get", "certificates", "-o", "jsonpath={.items[*].spec.secretName}"); out != "api-tls web-tls" {
		t.Errorf("jsonpath: %q", out)
	}
	if out := ok(t, dir, "get", "certificate", "web", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}"); out != "True" {
		t.Errorf("jsonpath filter: %q", out)
	}
	// -o json: a list query is always a List, even of one object; a named
	// object is the object.
	var list struct {
		Kind  string
		Items []json.RawMessage
	}
	if err := json.Unmarshal([]byte(ok(t, dir, "get", "cert", "-l", "app=api", "-o", "json")), &list); err != nil || list.Kind != "List" || len(list.Items) != 1 {
		t.Errorf("get -l -o json: kind %q, %d items, %v", list.Kind, len(list.Items), err)
	}
	var one struct{ Kind string }
	if err := json.Unmarshal([]byte(ok(t, dir, "get", "cert", "web", "-o", "json")), &one); err != nil || one.Kind != "Certificate" {
		t.Errorf("get cert web -o json: kind %q, %v", one.Kind, err)
	}
	if out := ok(t, dir, "get", "certificate/web", "issuer/selfsigned", "-o", "name"); out != "certificate.cert-manager.io/web\nissuer.cert-manager.io/selfsigned\n" {
		t.Errorf("get TYPE/NAME...: %q", out)
	}
	for _, bad := range []struct {
		args []string
		msg  string
	}{
		{[]string{"get", "cert", "-o", "jsonpath={.items[}"}, "-o jsonpath={.items[}"},
		{[]string{"get", "cert", "-l", "a in b"}, `labelSelector "a in b"`},
		{[]string{"get", "cert", "web", "-l", "app=api"}, "cannot be used with names"},
		{[]string{"get", "cert", "--field-selector", "spec.secretName=x"}, "field label not supported: spec.secretName"},
		{[]string{"get", "certs,issuers", "web"}, "names need one resource type"},
		{[]string{"get", "widgets"}, `unknown resource type "widgets"`},
	} {
		if r := cli(t, dir, "", bad.args...); r.code == 0 || !strings.Contains(r.stderr, bad.msg) {
			t.Errorf("%v: %d %q, want %q", bad.args, r.code, r.stderr, bad.msg)
		}
	}

	if out := ok(t, dir, "describe", "certificate", "web"); !strings.HasPrefix(out, "Ready: ") || !strings.Contains(out, "CertificateRequest: default/web-1") {
		t.Errorf("describe certificate:\n%s", out)
	}
	if out := ok(t, dir, "describe", "issuer/selfsigned"); !strings.Contains(out, "Name:         selfsigned") || !strings.Contains(out, "Spec:\n  selfSigned: {}") ||
		!strings.Contains(out, "Status:\n  conditions:") || !strings.Contains(out, "Events:       <none>") {
		t.Errorf("describe issuer:\n%s", out)
	}
	if out := ok(t, dir, "version"); !strings.HasPrefix(out, "certfn dev (revision ") {
		t.Errorf("version: %q", out)
	}
	if out := ok(t, dir, "completion", "bash"); !strings.Contains(out, "__start_certfn") {
		t.Errorf("completion bash: %.200q", out)
	}
}
