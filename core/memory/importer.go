package memory

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"sync"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// Importer is a ports.CertificateImporter in memory, standing where AWS
// Certificate Manager or Google's Certificate Manager stand: entries named
// "memory:certificate/<n>", each tagged with the Certificate it belongs
// to.
//
// Contract (the one of ports.CertificateImporter, checked by
// porttest.ImporterSuite): a request without Ref reuses the entry an
// earlier import for the same owner left (the lowest-numbered), else
// creates one; with Ref it re-imports that entry in place, or creates a
// new one when it is gone; an entry already holding the serial is not
// imported again. A leaf that does not parse, or a key that does not
// decode or match it, is a permanent error that names neither the key nor
// its bytes; a canceled context fails before anything changes. A test
// makes Import fail with FailWith.
//
// Importer is safe for concurrent use.
type Importer struct {
	mu      sync.Mutex
	n       int
	entries map[string]*ImportedEntry
	fail    func(ports.CertificateImport) error
}

// ImportedEntry is one entry of an Importer.
type ImportedEntry struct {
	Ref   string
	Owner api.Key
	// Serial is the serial of the certificate the entry holds.
	Serial      *big.Int
	Certificate []byte
	Chain       []byte
	// Imports counts the imports into this entry.
	Imports int
}

var _ ports.CertificateImporter = (*Importer)(nil)

// NewImporter returns an Importer with no entry.
func NewImporter() *Importer { return &Importer{entries: map[string]*ImportedEntry{}} }

// FailWith makes Import call f with each request before doing anything
// and, when f returns an error, return it (nil f: succeed again).
func (im *Importer) FailWith(f func(ports.CertificateImport) error) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.fail = f
}

// Import implements ports.CertificateImporter.
func (im *Importer) Import(ctx context.Context, req ports.CertificateImport) (ports.CertificateImported, error) {
	if err := live(ctx, "memory importer: import "+req.Owner.String()); err != nil {
		return ports.CertificateImported{}, err
	}
	im.mu.Lock()
	fail := im.fail
	im.mu.Unlock()
	if fail != nil {
		if err := fail(req); err != nil {
			return ports.CertificateImported{}, err
		}
	}
	leaf, err := checkPair(req)
	if err != nil {
		return ports.CertificateImported{}, errs.Permanent(fmt.Errorf("memory importer: import of %s: %w", req.Owner, err))
	}
	serial := req.Serial
	if serial == nil {
		serial = leaf.SerialNumber
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	e := im.entries[req.Ref]
	if req.Ref == "" {
		e = im.find(req.Owner)
	}
	if e != nil && e.Serial.Cmp(serial) == 0 {
		return ports.CertificateImported{Ref: e.Ref}, nil
	}
	if e == nil {
		im.n++
		e = &ImportedEntry{Ref: fmt.Sprintf("memory:certificate/%d", im.n), Owner: req.Owner}
		im.entries[e.Ref] = e
	}
	e.Serial, e.Imports = new(big.Int).Set(serial), e.Imports+1
	e.Certificate, e.Chain = slices.Clone(req.Certificate), slices.Clone(req.Chain)
	return ports.CertificateImported{Ref: e.Ref, Imported: true}, nil
}

// find returns the oldest entry of owner, or nil; im.mu must be held.
func (im *Importer) find(owner api.Key) *ImportedEntry {
	var found *ImportedEntry
	for _, e := range im.entries {
		if e.Owner == owner && (found == nil || refNumber(e.Ref) < refNumber(found.Ref)) {
			found = e
		}
	}
	return found
}

func refNumber(ref string) int {
	var n int
	_, _ = fmt.Sscanf(ref, "memory:certificate/%d", &n)
	return n
}

// checkPair parses req's leaf and checks that its private key decodes and
// matches it. Its errors never hold key material.
func checkPair(req ports.CertificateImport) (*x509.Certificate, error) {
	b, _ := pem.Decode(req.Certificate)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("certificate: not a PEM CERTIFICATE")
	}
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	key, err := pki.DecodePrivateKeyPEM(req.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("private key: does not decode")
	}
	if !pki.PublicKeysEqual(key.Public(), leaf.PublicKey) {
		return nil, fmt.Errorf("private key: does not match the certificate")
	}
	return leaf, nil
}

// Entries returns a copy of every entry, by reference.
func (im *Importer) Entries() []ImportedEntry {
	im.mu.Lock()
	defer im.mu.Unlock()
	out := make([]ImportedEntry, 0, len(im.entries))
	for _, e := range im.entries {
		c := *e
		c.Serial = new(big.Int).Set(e.Serial)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b ImportedEntry) int { return refNumber(a.Ref) - refNumber(b.Ref) })
	return out
}

// Held returns the leaf (PEM) the entry ref holds, and whether it exists.
func (im *Importer) Held(ref string) ([]byte, bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	e, ok := im.entries[ref]
	if !ok {
		return nil, false
	}
	return slices.Clone(e.Certificate), true
}

// Delete removes the entry ref, as a person deleting it in the console.
func (im *Importer) Delete(ref string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	delete(im.entries, ref)
}
