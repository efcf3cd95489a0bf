package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Commands that only read refuse a data directory without certfn data,
// naming it, and create nothing: a typo in --data is an error, not an
// empty store.
func TestReadOnlyCommandsRefuseDirectoryWithoutData(t *testing.T) {
	base := setupEnv(t)
	readOnly := [][]string{
		{"get", "certificates"},
		{"get", "issuers", "selfsigned"},
		{"status", "certificate", "web"},
		{"wait", "certificate", "web", "--for=condition=Ready", "--timeout", "1s"},
		{"inspect", "secret", "web-tls"},
		{"renew", "web"},
		{"delete", "certificate", "web"},
		{"approve", "web-1"},
	}
	missing := filepath.Join(base, "typo")
	for _, args := range readOnly {
		r := cli(t, missing, "", args...)
		failsWith(t, r, "data directory "+missing+" does not exist: run 'certfn apply' or 'certfn serve' to create it, or point --data")
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Fatalf("%v created %s (stat: %v)", args, missing, err)
		}
	}
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range readOnly {
		r := cli(t, empty, "", args...)
		failsWith(t, r, "data directory "+empty+" holds no certfn data (no state.db)")
		if ents, _ := os.ReadDir(empty); len(ents) != 0 {
			t.Fatalf("%v wrote into %s: %v", args, empty, ents)
		}
	}
	// apply creates the directory; then reading works.
	fresh := filepath.Join(base, "fresh")
	if r := cli(t, fresh, selfSignedIssuer, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: exit %d stderr %q", r.code, r.stderr)
	}
	if out := ok(t, fresh, "get", "issuers"); !strings.Contains(out, "selfsigned") {
		t.Fatalf("get issuers after apply: %q", out)
	}
	if out := ok(t, fresh, "get", "certificates"); out != "No certificates found.\n" {
		t.Fatalf("get certificates: %q", out)
	}
	// create secret creates it too.
	sec := filepath.Join(base, "secret")
	ok(t, sec, "create", "secret", "s", "--from-literal", "k=v")
	if _, err := os.Stat(filepath.Join(sec, "state.db")); err != nil {
		t.Fatal(err)
	}
}

// --data defaults to CERTFN_DATA, else a per-user directory (never the
// current directory), and --help says which.
func TestDefaultDataDirectory(t *testing.T) {
	setupEnv(t)
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	want := filepath.Join(xdg, "certfn")
	uid := 1000 // a user, even when the tests run as root
	geteuid = func() int { return uid }
	t.Cleanup(func() { geteuid = os.Geteuid })
	help := func() string {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("--help: exit %d stderr %q", code, errb.String())
		}
		return out.String()
	}
	h := help()
	if !strings.Contains(h, `(default "`+want+`")`) ||
		!strings.Contains(h, "default /var/lib/certfn for root, else $XDG_DATA_HOME/certfn, else ~/.local/share/certfn") {
		t.Fatalf("--help does not state the default data directory %s:\n%s", want, h)
	}
	t.Setenv("CERTFN_DATA", "/srv/certfn-data")
	if h := help(); !strings.Contains(h, `(default "/srv/certfn-data")`) {
		t.Fatalf("--help does not show CERTFN_DATA as the default:\n%s", h)
	}
	t.Setenv("CERTFN_DATA", "")
	uid = 0
	if h := help(); !strings.Contains(h, `(default "/var/lib/certfn")`) {
		t.Fatalf("--help does not show root's default:\n%s", h)
	}
	uid = 1000
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/someone")
	if h := help(); !strings.Contains(h, `(default "/home/someone/.local/share/certfn")`) {
		t.Fatalf("--help does not show ~/.local/share/certfn:\n%s", h)
	}
	t.Setenv("XDG_DATA_HOME", xdg)
	// Without --data, apply fills the per-user directory, not the current one.
	cwd := t.TempDir()
	t.Chdir(cwd)
	var out, errb bytes.Buffer
	ctx := context.Background()
	if code := run(ctx, []string{"get", "issuers"}, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(errb.String(), want+" does not exist") {
		t.Fatalf("get without data: exit %d stderr %q", code, errb.String())
	}
	if code := run(ctx, []string{"apply", "-f", "-"}, strings.NewReader(selfSignedIssuer), &out, &errb); code != 0 {
		t.Fatalf("apply: exit %d stderr %q", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(want, "state.db")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Fatalf("apply wrote into the current directory: %v", ents)
	}
}
