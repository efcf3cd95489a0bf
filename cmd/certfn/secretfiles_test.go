package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// certbot habit: a non-root web server reads the key. serve's
// --secret-file-mode and --secret-file-group set the files of
// Certificates' secrets; a Certificate's secretTemplate annotation
// overrides them; a CA key pair stays private; invalid values are refused
// naming the flag or the field.
func TestSecretFilePermissions(t *testing.T) {
	t.Setenv("CERTFN_APPROVER", "")
	dir := t.TempDir()
	gid := strconv.Itoa(os.Getgid())
	manifest := selfSignedIssuer + `---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web}
spec: {secretName: web-tls, dnsNames: [web.example.com], issuerRef: {name: selfsigned}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: public}
spec:
  secretName: public-tls
  dnsNames: [public.example.com]
  issuerRef: {name: selfsigned}
  secretTemplate:
    annotations: {certfn.io/secret-file-mode: "0644"}
`
	if r := cli(t, dir, manifest, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	ok(t, dir, "serve", "--until-idle", "--secret-file-mode", "0640", "--secret-file-group", gid, "--secret-file-max-mode", "0644")
	for _, tc := range []struct {
		file string
		mode os.FileMode
	}{{"web-tls/tls.key", 0o640}, {"web-tls/tls.crt", 0o640}, {"public-tls/tls.key", 0o644}} {
		st, err := os.Stat(filepath.Join(dir, "secrets", "default", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != tc.mode || strconv.Itoa(int(st.Sys().(*syscall.Stat_t).Gid)) != gid {
			t.Errorf("%s: mode %#o group %d, want %#o and %s", tc.file, st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Gid, tc.mode, gid)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "state.db")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("state.db: %v %v, want 0600", st.Mode().Perm(), err)
	}
	for _, bad := range []struct {
		args  []string
		stdin string
		msg   string
	}{
		{[]string{"serve", "--until-idle", "--secret-file-mode", "0666"}, "", `--secret-file-mode: "0666": no write or execute permission for group or others`},
		{[]string{"serve", "--until-idle", "--secret-file-group", "www data"}, "", `--secret-file-group: "www data": want a user or group name, or a number`},
		{[]string{"serve", "--until-idle", "--secret-file-max-mode", "0666"}, "", `--secret-file-max-mode: "0666": no write or execute permission for group or others`},
		{[]string{"serve", "--until-idle", "--secret-file-allow-groups", "www data"}, "", `--secret-file-allow-groups[0]: "www data": want a user or group name, or a number`},
		{[]string{"apply", "-f", "-"}, strings.Replace(manifest, `"0644"`, `"0777"`, 1),
			`spec.secretTemplate.annotations[certfn.io/secret-file-mode]: "0777": no write or execute permission`},
	} {
		if r := cli(t, dir, bad.stdin, bad.args...); r.code == 0 || !strings.Contains(r.stderr, bad.msg) {
			t.Errorf("%v: %d %q, want %q", bad.args, r.code, r.stderr, bad.msg)
		}
	}
}

// By default a tenant's secretTemplate cannot make a key world-readable,
// nor name a group the operator did not allow: such a Certificate is not
// Ready, naming the annotation and the bound, and no file of it exists;
// the data directory gains no bit for others.
func TestSecretFileBoundsByDefault(t *testing.T) {
	t.Setenv("CERTFN_APPROVER", "")
	dir := t.TempDir()
	manifest := selfSignedIssuer + `---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: public}
spec:
  secretName: public-tls
  dnsNames: [public.example.com]
  issuerRef: {name: selfsigned}
  secretTemplate:
    annotations: {certfn.io/secret-file-mode: "0644"}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: grouped}
spec:
  secretName: grouped-tls
  dnsNames: [grouped.example.com]
  issuerRef: {name: selfsigned}
  secretTemplate:
    annotations: {certfn.io/secret-file-mode: "0640", certfn.io/secret-file-group: "` + strconv.Itoa(os.Getgid()) + `"}
`
	if r := cli(t, dir, manifest, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	r := cli(t, dir, "", "serve", "--until-idle")
	for _, want := range []string{
		`default/public: spec.secretTemplate.annotations[certfn.io/secret-file-mode]: "0644" is more permissive than this deployment allows (at most 0640`,
		`default/grouped: spec.secretTemplate.annotations[certfn.io/secret-file-group]: "` + strconv.Itoa(os.Getgid()) + `" is not one this deployment allows (allowed: none`,
	} {
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("serve --until-idle: %d, want %q in\n%s", r.code, want, r.stderr)
		}
	}
	if out := ok(t, dir, "get", "certificate", "public", "-o", "yaml"); !strings.Contains(out, "reason: "+"SecretFilePermsNotAllowed") {
		t.Errorf("certificate public: no reason SecretFilePermsNotAllowed in\n%s", out)
	}
	for _, s := range []string{"public-tls", "grouped-tls"} {
		if _, err := os.Lstat(filepath.Join(dir, "secrets", "default", s)); err == nil {
			t.Errorf("secret %s written", s)
		}
	}
	for _, p := range []string{filepath.Join(dir, "secrets"), filepath.Join(dir, "secrets", "default")} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o007 != 0 {
			t.Errorf("%s mode %#o: bits for others", p, st.Mode().Perm())
		}
	}
}
