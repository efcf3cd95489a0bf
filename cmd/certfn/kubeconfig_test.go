package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// certfn kubeconfig writes a kubeconfig naming the files by absolute
// path, mode 0600, and refuses missing flags and files by name.
func TestKubeconfigCommand(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"ca.crt", "me.crt", "me.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	out := filepath.Join(dir, "kc")
	ok(t, dir, "kubeconfig", "--server", "https://127.0.0.1:8443", "--certificate-authority", "ca.crt",
		"--client-certificate", "me.crt", "--client-key", "me.key", "--user", "me", "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server: https://127.0.0.1:8443", "client-key: " + filepath.Join(dir, "me.key"), "certificate-authority: " + filepath.Join(dir, "ca.crt"), "name: me"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("kubeconfig lacks %q:\n%s", want, b)
		}
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	failsWith(t, cli(t, dir, "", "kubeconfig", "--certificate-authority", "ca.crt", "--client-certificate", "me.crt", "--client-key", "me.key"), "--server: required")
	failsWith(t, cli(t, dir, "", "kubeconfig", "--server", "https://x:1", "--certificate-authority", "nope.crt", "--client-certificate", "me.crt", "--client-key", "me.key"), "nope.crt")
}
