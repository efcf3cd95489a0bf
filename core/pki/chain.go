package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// MaxChainLength bounds the certificates BuildChain orders.
const MaxChainLength = 100

// EncodeCertificatesPEM writes certs as consecutive PEM CERTIFICATE blocks.
func EncodeCertificatesPEM(certs ...*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return buf.Bytes()
}

// IsSelfSigned reports whether cert is signed by its own key with its own
// subject as issuer (a root).
func IsSelfSigned(cert *x509.Certificate) bool {
	return bytes.Equal(cert.RawIssuer, cert.RawSubject) && cert.CheckSignatureFrom(cert) == nil
}

// Bundle is a certificate chain split as cert-manager stores it.
type Bundle struct {
	// ChainPEM is leaf first, then each issuer up to the highest certificate
	// that is not self-signed (a self-signed root is left out, RFC 5246
	// 7.4.2: the peer must already have it). A lone self-signed certificate
	// is its own chain.
	ChainPEM []byte
	// CAPEM is the top of the chain: the self-signed root when present,
	// else the highest certificate above the leaf; empty for a lone
	// certificate that is not self-signed.
	CAPEM []byte
}

// BuildChain orders leaf and the given issuer certificates into one chain,
// as cert-manager's ParseSingleCertificateChain: duplicates are dropped and
// every certificate must belong to the chain that starts at leaf (each
// certificate's issuer signed it), else it is an error.
func BuildChain(leaf *x509.Certificate, issuers []*x509.Certificate) (Bundle, error) {
	if leaf == nil {
		return Bundle{}, errors.New("build chain: no leaf certificate")
	}
	if len(issuers) > MaxChainLength {
		return Bundle{}, fmt.Errorf("build chain: more than %d certificates", MaxChainLength)
	}
	var pool []*x509.Certificate
	for _, c := range issuers {
		if c == nil || bytes.Equal(c.Raw, leaf.Raw) {
			continue
		}
		dup := false
		for _, p := range pool {
			dup = dup || bytes.Equal(p.Raw, c.Raw)
		}
		if !dup {
			pool = append(pool, c)
		}
	}
	chain := []*x509.Certificate{leaf}
	for cur := leaf; len(pool) > 0 && !IsSelfSigned(cur); {
		found := -1
		for i, c := range pool {
			if bytes.Equal(cur.RawIssuer, c.RawSubject) && cur.CheckSignatureFrom(c) == nil {
				found = i
				break
			}
		}
		if found < 0 {
			break
		}
		cur = pool[found]
		chain = append(chain, cur)
		pool = append(pool[:found], pool[found+1:]...)
	}
	if len(pool) > 0 {
		return Bundle{}, fmt.Errorf("build chain: %d certificate(s) do not belong to the chain of %q", len(pool), leaf.Subject.String())
	}
	top := chain[len(chain)-1]
	if len(chain) == 1 {
		if IsSelfSigned(top) {
			p := EncodeCertificatesPEM(top)
			return Bundle{ChainPEM: p, CAPEM: p}, nil
		}
		return Bundle{ChainPEM: EncodeCertificatesPEM(top)}, nil
	}
	if IsSelfSigned(top) {
		chain = chain[:len(chain)-1]
	}
	return Bundle{ChainPEM: EncodeCertificatesPEM(chain...), CAPEM: EncodeCertificatesPEM(top)}, nil
}
