package localmode

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePair writes a self-signed certificate with cn and its key.
func writePair(t *testing.T, dir, cn string, mod time.Time) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	for name, b := range map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
}

// The API's TLS files are read again when they change (a renewed server
// certificate is served without a restart), at most every reloadEvery;
// broken files keep the last good configuration.
func TestTLSFilesReload(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now()
	writePair(t, dir, "first", t0.Add(-time.Minute))
	var warnings []string
	f := &tlsFiles{certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key"), caFile: filepath.Join(dir, "ca.crt"),
		warn: func(msg string, _ ...any) { warnings = append(warnings, msg) }}
	cn := func(now time.Time) string {
		t.Helper()
		c, err := f.config(now)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificates[0].Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if got := cn(t0); got != "first" {
		t.Fatalf("served %q", got)
	}
	writePair(t, dir, "renewed", t0)
	if got := cn(t0.Add(time.Second)); got != "first" {
		t.Fatalf("files read again before reloadEvery: %q", got)
	}
	if got := cn(t0.Add(reloadEvery + time.Second)); got != "renewed" {
		t.Fatalf("renewed files not picked up: %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), []byte("half written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := cn(t0.Add(3 * reloadEvery)); got != "renewed" {
		t.Fatalf("a broken key pair replaced the good one: %q", got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "not taken") {
		t.Fatalf("warnings %q, want one about the broken pair", warnings)
	}
	if _, err := (&tlsFiles{certFile: "/nonexistent", keyFile: "/nonexistent", caFile: "/nonexistent"}).config(t0); err == nil {
		t.Fatal("missing files accepted at start")
	}
}
