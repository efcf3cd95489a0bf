package tfprovider_test

import (
	"encoding/base64"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No state file any test wrote holds a private key: neither a PEM
// "PRIVATE KEY" block nor the key of any secret certfn issued (PEM or
// base64 of its DER). Runs after the tests that write states: go test runs
// tests in the order of their files' names, and this file's is last.
func TestNoPrivateKeyInState(t *testing.T) {
	keys := issuedKeys(t)
	if len(keys) == 0 {
		t.Fatal("no issued key found in the secret store: the lifecycle test did not run first")
	}
	var states int
	err := filepath.WalkDir(env.workDirs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".tfstate") {
			return err
		}
		states++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "PRIVATE KEY") {
			t.Errorf("%s holds a PEM private key", p)
		}
		for name, k := range keys {
			if strings.Contains(string(b), k) {
				t.Errorf("%s holds the private key of %s", p, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if states == 0 {
		t.Fatalf("no state file under %s", env.workDirs)
	}
	t.Logf("%d state files checked against %d keys", states, len(keys))
}

// issuedKeys returns the key material of every secret in the secret
// store: each key's PEM body and its DER in base64, by secret.
func issuedKeys(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := filepath.Join(env.dir, "data", "secrets")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "tls.key" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Errorf("%s: no PEM", p)
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		out[rel+" (DER)"] = base64.StdEncoding.EncodeToString(blk.Bytes)[:64]
		body := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(body) > 2 {
			out[rel+" (PEM)"] = body[1]
		}
		return nil
	})
	return out
}
