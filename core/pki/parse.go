// Package pki holds certfn's X.509 helpers: parsing and checking CSRs and
// chains, keys, CSR building, matching against a Certificate spec, and the
// encoding of stored secrets.
package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
)

// verifiedCSRs caches CSRs whose signature verified, by the SHA-256 of
// their PEM: a request's CSR is immutable and is checked by several steps
// per reconcile (requestmanager, issuing, trigger, signing), and an ECDSA
// or RSA verification costs far more than a hash. Bounded: cleared when full.
var verifiedCSRs = struct {
	sync.RWMutex
	m map[[32]byte]*x509.CertificateRequest
}{m: map[[32]byte]*x509.CertificateRequest{}}

const maxVerifiedCSRs = 4096

// MaxPEMSize bounds any PEM input certfn parses (a CSR or a chain).
const MaxPEMSize = 256 << 10

// ParseCSRPEM decodes exactly one PEM "CERTIFICATE REQUEST" block (also
// accepting the legacy "NEW CERTIFICATE REQUEST" label) and verifies its
// self-signature. Errors name the rule broken and never echo the input.
// The returned request may be shared between callers: do not modify it.
func ParseCSRPEM(b []byte) (*x509.CertificateRequest, error) {
	sum := sha256.Sum256(b)
	verifiedCSRs.RLock()
	csr, ok := verifiedCSRs.m[sum]
	verifiedCSRs.RUnlock()
	if ok {
		return csr, nil
	}
	csr, err := parseCSRPEM(b)
	if err != nil {
		return nil, err
	}
	verifiedCSRs.Lock()
	if len(verifiedCSRs.m) >= maxVerifiedCSRs {
		verifiedCSRs.m = map[[32]byte]*x509.CertificateRequest{}
	}
	verifiedCSRs.m[sum] = csr
	verifiedCSRs.Unlock()
	return csr, nil
}

func parseCSRPEM(b []byte) (*x509.CertificateRequest, error) {
	if len(b) == 0 {
		return nil, errors.New("empty: want a PEM-encoded CERTIFICATE REQUEST")
	}
	if len(b) > MaxPEMSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxPEMSize)
	}
	block, rest := pem.Decode(b)
	if block == nil {
		return nil, errors.New("not PEM: want a PEM-encoded CERTIFICATE REQUEST")
	}
	if block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("PEM block is %q, want CERTIFICATE REQUEST", block.Type)
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, errors.New("more than one PEM block: want exactly one CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a valid PKCS#10 request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("signature does not verify: %w", err)
	}
	return csr, nil
}

// ParseChainPEM validates status.certificate as docs/design/certificates-api.md requires: one or
// more PEM blocks, all labelled CERTIFICATE, without headers, each a valid
// X.509 certificate; non-PEM text before or after is allowed. The first
// certificate is the leaf.
func ParseChainPEM(b []byte) ([]*x509.Certificate, error) {
	if len(b) > MaxPEMSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxPEMSize)
	}
	var out []*x509.Certificate
	rest := b
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q, want CERTIFICATE", len(out)+1, block.Type)
		}
		if len(block.Headers) != 0 {
			return nil, fmt.Errorf("PEM block %d has headers, which are not allowed", len(out)+1)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d is not a valid certificate: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no CERTIFICATE PEM block found")
	}
	return out, nil
}
