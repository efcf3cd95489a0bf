package porttest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// ImporterHarness is one fresh importer (a deployment of its own: nothing
// it finds was imported by another harness) and ways to look into the
// certificate manager behind it.
type ImporterHarness struct {
	// Importer is the implementation under test.
	Importer ports.CertificateImporter
	// Held returns the leaf (PEM) the entry ref holds; ok false when the
	// entry does not exist.
	Held func(t *testing.T, ref string) (leaf string, ok bool)
	// Delete removes the entry ref (a person deleting it in the console).
	Delete func(t *testing.T, ref string)
	// Now is a time the backend accepts as inside a certificate's
	// validity (ACM refuses certificates that are not valid now).
	Now time.Time
}

// ImporterSuite runs the ports.CertificateImporter contract against
// harnesses made by newHarness.
func ImporterSuite(t *testing.T, newHarness func(t *testing.T) ImporterHarness) {
	t.Run("Lifecycle", func(t *testing.T) { importLifecycle(t, newHarness(t)) })
	t.Run("UnrecordedImportIsReused", func(t *testing.T) { importUnrecorded(t, newHarness(t)) })
	t.Run("DeletedEntryIsReplaced", func(t *testing.T) { importDeleted(t, newHarness(t)) })
	t.Run("InvalidPairIsPermanent", func(t *testing.T) { importInvalid(t, newHarness(t)) })
	t.Run("CanceledContext", func(t *testing.T) { importCanceled(t, newHarness(t)) })
}

// importPair is a self-signed ECDSA leaf for owner, as the acmimport step
// sends it (no chain).
func importPair(t *testing.T, h ImporterHarness, owner api.Key) (ports.CertificateImport, crypto.Signer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	name := owner.Name + ".example.com"
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: h.Now.Add(-time.Hour), NotAfter: h.Now.Add(90 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return ports.CertificateImport{Owner: owner, Serial: serial,
		Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		PrivateKey:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})}, key
}

// importOwner is a Certificate key no other run of the suite uses (the
// backend may be shared).
func importOwner(t *testing.T, name string) api.Key {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return api.Key{Kind: api.KindCertificate, Namespace: "porttest", Name: fmt.Sprintf("%s-%x", name, b)}
}

func mustImport(t *testing.T, h ImporterHarness, req ports.CertificateImport, what string) ports.CertificateImported {
	t.Helper()
	got, err := h.Importer.Import(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: Import: %v", what, err)
	}
	if got.Ref == "" {
		t.Fatalf("%s: Import returned no reference", what)
	}
	return got
}

func trimmed(b []byte) string { return strings.TrimSpace(string(b)) }

// A first import creates an entry; the same serial again is not imported;
// a renewal is imported into the same entry.
func importLifecycle(t *testing.T, h ImporterHarness) {
	req, _ := importPair(t, h, importOwner(t, "life"))
	first := mustImport(t, h, req, "first")
	if !first.Imported {
		t.Fatalf("first import not Imported: %+v", first)
	}
	if leaf, ok := h.Held(t, first.Ref); !ok || trimmed([]byte(leaf)) != trimmed(req.Certificate) {
		t.Fatalf("entry %s does not hold the imported leaf (exists %t)", first.Ref, ok)
	}
	req.Ref = first.Ref
	if again := mustImport(t, h, req, "same serial"); again.Imported || again.Ref != first.Ref {
		t.Fatalf("same serial again = %+v, want %s not imported", again, first.Ref)
	}
	renewed, _ := importPair(t, h, req.Owner)
	renewed.Ref = first.Ref
	if got := mustImport(t, h, renewed, "renewal"); !got.Imported || got.Ref != first.Ref {
		t.Fatalf("renewal = %+v, want a re-import into %s", got, first.Ref)
	}
	if leaf, _ := h.Held(t, first.Ref); trimmed([]byte(leaf)) != trimmed(renewed.Certificate) {
		t.Fatal("the entry still holds the old leaf after the re-import")
	}
}

// Without a recorded reference (a crash after the import, before its
// reference was written), the owner's earlier entry is reused, not
// duplicated; another owner gets an entry of its own.
func importUnrecorded(t *testing.T, h ImporterHarness) {
	owner := importOwner(t, "unrec")
	req, _ := importPair(t, h, owner)
	first := mustImport(t, h, req, "first")
	if again := mustImport(t, h, req, "unrecorded, same serial"); again.Ref != first.Ref || again.Imported {
		t.Fatalf("unrecorded import = %+v, want %s not imported again", again, first.Ref)
	}
	renewed, _ := importPair(t, h, owner)
	if got := mustImport(t, h, renewed, "unrecorded renewal"); got.Ref != first.Ref || !got.Imported {
		t.Fatalf("unrecorded renewal = %+v, want a re-import into %s", got, first.Ref)
	}
	other, _ := importPair(t, h, importOwner(t, "other"))
	if got := mustImport(t, h, other, "other owner"); got.Ref == first.Ref {
		t.Fatalf("another Certificate's import took entry %s", first.Ref)
	}
}

// A recorded entry deleted outside certfn is replaced by a new one.
func importDeleted(t *testing.T, h ImporterHarness) {
	req, _ := importPair(t, h, importOwner(t, "del"))
	first := mustImport(t, h, req, "first")
	h.Delete(t, first.Ref)
	req.Ref = first.Ref
	got := mustImport(t, h, req, "after the deletion")
	if got.Ref == first.Ref || !got.Imported {
		t.Fatalf("import into a deleted entry = %+v, want a new entry", got)
	}
	if _, ok := h.Held(t, got.Ref); !ok {
		t.Fatalf("new entry %s does not exist", got.Ref)
	}
}

// A leaf that does not parse, or a key that does not match it, is refused
// for good, and the error never shows the key.
func importInvalid(t *testing.T, h ImporterHarness) {
	owner := importOwner(t, "bad")
	good, _ := importPair(t, h, owner)
	other, _ := importPair(t, h, owner)
	for name, req := range map[string]ports.CertificateImport{
		"garbage leaf": {Owner: owner, Serial: good.Serial, Certificate: []byte("not a certificate"), PrivateKey: good.PrivateKey},
		"other key":    {Owner: owner, Serial: good.Serial, Certificate: good.Certificate, PrivateKey: other.PrivateKey},
	} {
		_, err := h.Importer.Import(context.Background(), req)
		if !errs.IsPermanent(err) {
			t.Errorf("%s: Import = %v, want a permanent error", name, err)
			continue
		}
		if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), trimmed(req.PrivateKey)[30:60]) {
			t.Errorf("%s: the error shows the private key: %v", name, err)
		}
	}
	if got := mustImport(t, h, good, "valid after refusals"); !got.Imported {
		t.Fatalf("a refused import left an entry holding the certificate: %+v", got)
	}
}

// A canceled context fails before anything is imported.
func importCanceled(t *testing.T, h ImporterHarness) {
	req, _ := importPair(t, h, importOwner(t, "cancel"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Importer.Import(ctx, req); err == nil {
		t.Fatal("Import with a canceled context succeeded")
	}
	if got := mustImport(t, h, req, "after the canceled import"); !got.Imported {
		t.Fatalf("the canceled import left an entry: %+v", got)
	}
}
