// Package signers holds the Signer interface and what the selfSigned and CA
// signers share: the certificate template built from a CertificateRequest
// (cert-manager's CertificateTemplateFromCertificateRequest) and docs/design/request-duration.md's
// lifetime rule (honoured = min(requested, the signer's maximum)). Each
// signer's contract (docs/design/certificates-api.md) is in docs/reference/signers.md.
package signers

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
)

// Signer signs an approved CertificateRequest for one issuer type.
//
// Errors are classified by core/errs: a permanent error (errs.Permanent)
// means the request can never be signed and should be marked Failed; any
// other error leaves the request pending and is retried. Errors that wrap
// ErrIssuerNotReady say the issuer's configuration or secret is missing or
// unusable.
type Signer interface {
	Sign(ctx context.Context, req Request) (Result, error)
}

// Resumer is implemented by a signer whose work on a request, once begun,
// goes on outside the signing step: the ACME issuer's Order, finalized
// (and so signed by the ACME server) by the Order's own steps. The signing
// step applies the issuance quota only to a request whose signing has not
// begun: a request whose Order exists gets that Order's certificate even
// if its namespace reached the quota meanwhile.
type Resumer interface {
	// Begun reports whether signing req has begun.
	Begun(ctx context.Context, req Request) (bool, error)
}

// Request is one signing job.
type Request struct {
	CR     *api.CertificateRequest
	Issuer api.GenericIssuer
	// SecretNamespace is where the issuer's secrets live: the Issuer's namespace, or the
	// cluster resource namespace for a ClusterIssuer.
	SecretNamespace string
	// Objects reads and creates resources within the current step, for a
	// signer that works through resources of its own (the ACME issuer's
	// Orders); the signing step sets it.
	Objects Objects
	// Owner is the object such resources belong to: nil for CR itself,
	// or the CertificateSigningRequest that CR stands for (core/certificatesigningrequests), so
	// that its Order wakes, and is deleted with, the CSR.
	Owner api.Object
}

// OwnerOf returns the object a signer's own resources belong to:
// req.Owner, else req.CR.
func (req Request) OwnerOf() api.Object {
	if req.Owner != nil {
		return req.Owner
	}
	return req.CR
}

// Objects is what a signer may do with stored resources within a step
// (kernel.Objects satisfies it).
type Objects interface {
	// Get returns the stored object at key (ports.ErrNotFound if missing).
	Get(ctx context.Context, key api.Key) (api.Object, error)
	// CreateObject stores a new object due at next and wakes it.
	CreateObject(ctx context.Context, obj api.Object, next time.Time) (int64, error)
	// Now is the kernel clock's time.
	Now() time.Time
}

// Result is the outcome of a successful Sign.
type Result struct {
	Certificate []byte        // PEM chain, leaf first
	CA          []byte        // PEM of the issuing CA (self-signed: the certificate itself)
	Requested   time.Duration // docs/design/request-duration.md
	Honoured    time.Duration
}

// ErrIssuerNotReady is wrapped by transient errors that say the issuer
// cannot sign yet: its secret is missing or undecodable, its certificate is
// not a CA or does not match its key, or its configuration is invalid. The
// request stays pending until the issuer is fixed.
var ErrIssuerNotReady = errors.New("issuer not ready")

// NotReady wraps ErrIssuerNotReady with a reason (transient).
func NotReady(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrIssuerNotReady, fmt.Sprintf(format, a...))
}

// ErrPending is matched (errors.Is) by the transient error a signer
// returns while it works on the request asynchronously (the ACME issuer
// waiting on its Order): the request stays Ready=False/Pending with the
// error's message, written once, and is woken when the work is done.
var ErrPending = errors.New("signing pending")

type pendingError struct{ msg string }

func (p pendingError) Error() string        { return p.msg }
func (p pendingError) Is(target error) bool { return target == ErrPending }

// Pending returns an ErrPending error whose message is shown on the
// request, e.g. Pending("Waiting on Order %s", name).
func Pending(format string, a ...any) error { return pendingError{fmt.Sprintf(format, a...)} }

// serialLimit bounds serial numbers to 128 bits.
var serialLimit = new(big.Int).Lsh(big.NewInt(1), 128)

// TemplateFromRequest builds the certificate template for cr at now, as
// cert-manager's CertificateTemplateFromCertificateRequest, from the
// parsed, checked view of the CSR (pki.ParseCSRExtensions, the reader the
// approval step's policy view and name checks use): every extension of
// the certificate is encoded here, none is copied from the CSR.
//   - the CSR (spec.request) must parse, its signature verify, and its
//     public key pass pki.CheckPublicKey (RSA 2048..8192 bits, ECDSA
//     P-256/P-384/P-521, Ed25519);
//   - serial: 128 random bits; notBefore = now; notAfter = now + the
//     requested duration (pki.RequestedDuration: duration, expirationSeconds
//     or 90 days); signers then shorten it to their limits;
//   - subject: the CSR's, once proved DER with every value a string
//     (pki.CheckRawSubject), so the bytes signed are the subject judged;
//   - subjectAltName: re-encoded in DER, in the CSR's order, from the
//     parsed names (DNS, e-mail, IP, URI, otherName); critical when the
//     subject is empty; a CSR with another kind of name (directoryName,
//     registeredID, ...) is refused;
//   - keyUsage / extKeyUsage from spec.usages (default digital signature +
//     key encipherment, "cert sign" for isCA); when the CSR encodes usages
//     they must equal these;
//   - basicConstraints from spec.isCA (no path length); when the CSR encodes
//     basicConstraints its CA bit must equal spec.isCA;
//   - nameConstraints: re-encoded from the parsed extension (its critical
//     bit kept), for a CA certificate only; a non-CA request carrying
//     nameConstraints is refused;
//   - any other CSR extension: refused when critical, else not signed
//     (dropped).
//
// Every error is permanent (errs.Permanent) and names spec.request or the
// spec field, except a failure of the random source.
func TemplateFromRequest(cr *api.CertificateRequest, now time.Time) (*x509.Certificate, error) {
	if cr == nil {
		return nil, errs.Permanentf("no certificate request")
	}
	csr, err := pki.ParseCSRPEM(cr.Spec.Request)
	if err != nil {
		return nil, errs.Permanentf("spec.request: %w", err)
	}
	if err := pki.CheckPublicKey(csr.PublicKey); err != nil {
		return nil, errs.Permanentf("spec.request: %w", err)
	}
	exts, err := pki.ParseCSRExtensions(csr)
	if err != nil {
		return nil, errs.Permanentf("spec.request: %w", err)
	}
	requested, err := pki.RequestedDuration(&cr.Spec)
	if err != nil {
		return nil, errs.Permanent(err)
	}
	ku, eku, err := pki.KeyUsages(cr.Spec.Usages, cr.Spec.IsCA)
	if err != nil {
		return nil, errs.Permanent(err)
	}
	if exts.KeyUsage != nil || exts.HasExtKeyUsage {
		var have x509.KeyUsage
		if exts.KeyUsage != nil {
			have = *exts.KeyUsage
		}
		if have != ku {
			return nil, errs.Permanentf("spec.request: the CSR's keyUsage (%#x) does not match spec.usages/spec.isCA (%#x)", int(have), int(ku))
		}
		if len(exts.UnknownExtKeyUsage) > 0 {
			return nil, errs.Permanentf("spec.request: the CSR asks for extended key usages %v that spec.usages does not list", exts.UnknownExtKeyUsage)
		}
		if !sameEKUs(exts.ExtKeyUsage, eku) {
			return nil, errs.Permanentf("spec.request: the CSR's extended key usages do not match spec.usages")
		}
	}
	if exts.IsCA != nil && *exts.IsCA != cr.Spec.IsCA {
		return nil, errs.Permanentf("spec.request: the CSR's basicConstraints CA=%t does not match spec.isCA=%t", *exts.IsCA, cr.Spec.IsCA)
	}
	var extra []pkix.Extension
	var sans pki.SANs
	if san := exts.SubjectAltName; san != nil {
		for i, g := range san.Names {
			if !g.Signable() {
				return nil, errs.Permanentf("spec.request: subjectAltName entry %d is %s; certfn signs DNS names, IP addresses, e-mail addresses, URIs and otherNames only", i+1, pki.GeneralNameKind(g.Tag))
			}
		}
		v, err := pki.MarshalGeneralNames(san.Names)
		if err != nil {
			return nil, errs.Permanentf("spec.request: encode subjectAltName: %w", err)
		}
		extra = append(extra, pkix.Extension{Id: pki.OIDExtensionSubjectAltName, Critical: isEmptyRawSubject(csr.RawSubject), Value: v})
		sans = pki.SANsOf(san.Names)
	}
	if nc := exts.NameConstraints; nc != nil {
		if !cr.Spec.IsCA {
			return nil, errs.Permanentf("spec.request: the CSR carries nameConstraints, which only a CA certificate holds, and spec.isCA is false")
		}
		v, err := pki.MarshalNameConstraints(nc)
		if err != nil {
			return nil, errs.Permanentf("spec.request: nameConstraints: %w", err)
		}
		if v != nil {
			extra = append(extra, pkix.Extension{Id: pki.OIDExtensionNameConstraints, Critical: nc.Critical, Value: v})
		}
	}
	serial, err := rand.Int(rand.Reader, serialLimit)
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return &x509.Certificate{
		SerialNumber:          serial,
		PublicKeyAlgorithm:    csr.PublicKeyAlgorithm,
		PublicKey:             csr.PublicKey,
		Subject:               csr.Subject,
		RawSubject:            csr.RawSubject,
		NotBefore:             now,
		NotAfter:              now.Add(requested),
		KeyUsage:              ku,
		ExtKeyUsage:           eku,
		BasicConstraintsValid: true,
		IsCA:                  cr.Spec.IsCA,
		// The parsed names, for readers of the template; the certificate
		// carries the subjectAltName of extra, which overrides them.
		DNSNames:        sans.DNSNames,
		IPAddresses:     sans.IPAddresses,
		EmailAddresses:  sans.EmailAddresses,
		URIs:            sans.URIs,
		ExtraExtensions: extra,
	}, nil
}

func isEmptyRawSubject(raw []byte) bool {
	var seq pkix.RDNSequence
	rest, err := asn1.Unmarshal(raw, &seq)
	return err == nil && len(rest) == 0 && len(seq) == 0
}

func sameEKUs(a, b []x509.ExtKeyUsage) bool {
	in := func(x x509.ExtKeyUsage, s []x509.ExtKeyUsage) bool {
		for _, y := range s {
			if x == y {
				return true
			}
		}
		return false
	}
	for _, x := range a {
		if !in(x, b) {
			return false
		}
	}
	for _, x := range b {
		if !in(x, a) {
			return false
		}
	}
	return true
}

// MaxDuration returns the issuer's maximum lifetime from the annotation
// api.AnnotationMaxDuration (a Go duration such as "720h"), and whether one
// is set. A value that does not parse or is not positive is an
// ErrIssuerNotReady error.
func MaxDuration(issuer api.GenericIssuer) (time.Duration, bool, error) {
	if issuer == nil {
		return 0, false, nil
	}
	v, ok := issuer.GetObjectMeta().Annotations[api.AnnotationMaxDuration]
	if !ok {
		return 0, false, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, false, NotReady("metadata.annotations[%q]: %q is not a positive duration such as \"720h\"", api.AnnotationMaxDuration, v)
	}
	return d, true, nil
}

// Lifetime applies docs/design/request-duration.md to a template built by TemplateFromRequest:
// honoured = min(requested, the issuer's maximum), and notAfter never later
// than notAfterLimit when that is not zero (a CA cannot sign beyond its own
// expiry). It sets tmpl.NotAfter and returns the requested and honoured
// durations.
func Lifetime(tmpl *x509.Certificate, issuer api.GenericIssuer, notAfterLimit time.Time) (requested, honoured time.Duration, err error) {
	requested = tmpl.NotAfter.Sub(tmpl.NotBefore)
	honoured = requested
	max, ok, err := MaxDuration(issuer)
	if err != nil {
		return 0, 0, err
	}
	if ok && max < honoured {
		honoured = max
	}
	notAfter := tmpl.NotBefore.Add(honoured)
	if !notAfterLimit.IsZero() && notAfter.After(notAfterLimit) {
		notAfter = notAfterLimit
		honoured = notAfter.Sub(tmpl.NotBefore)
	}
	tmpl.NotAfter = notAfter
	return requested, honoured, nil
}

// IssuerLabel is the metrics label for an issuer: "Kind/namespace/name" or
// "Kind/name" (api.KeyOf), with the kind taken from the Go type when the
// object's TypeMeta is empty.
func IssuerLabel(issuer api.GenericIssuer) string {
	if issuer == nil {
		return ""
	}
	k := api.KeyOf(issuer)
	if k.Kind == "" {
		switch issuer.(type) {
		case *api.ClusterIssuer:
			k.Kind = api.KindClusterIssuer
		default:
			k.Kind = api.KindIssuer
		}
	}
	return k.String()
}
