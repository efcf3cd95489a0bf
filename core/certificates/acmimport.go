package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// Reasons of the ACMImported condition.
const (
	// ReasonACMImported: ACM holds the stored certificate (True).
	ReasonACMImported = "Imported"
	// ReasonACMNotConfigured: the deployment has no importer (False).
	ReasonACMNotConfigured = "NotConfigured"
	// ReasonACMUnsupportedKey: ACM cannot import this key type or size (False).
	ReasonACMUnsupportedKey = "UnsupportedKey"
	// ReasonACMImportFailed: the import failed permanently (False); it is tried
	// again when the Certificate is next reconciled.
	ReasonACMImportFailed = "ImportFailed"
)

// MetricACMImports counts import attempts by result (imported, unchanged,
// failed).
const MetricACMImports = "certfn_acm_imports_total"

// ACMImportRequested reports whether c asks for ACM import (the annotation's value
// is "true", case-insensitive).
func ACMImportRequested(c *api.Certificate) bool {
	return strings.EqualFold(strings.TrimSpace(c.Annotations[api.AnnotationACMImport]), "true")
}

// FormatACMSerial writes a serial number as ACM shows it: lower-case hex
// octets separated by colons ("0a:1b:...").
func FormatACMSerial(n *big.Int) string {
	b := n.Bytes()
	if len(b) == 0 {
		b = []byte{0}
	}
	parts := make([]string, len(b))
	for i, o := range b {
		parts[i] = hex.EncodeToString([]byte{o})
	}
	return strings.Join(parts, ":")
}

// ACMImportStep is certfn's ACM import step for Certificates (a certfn
// extension): a Certificate annotated certfn.io/acm-import: "true"
// has its key pair imported into AWS Certificate Manager once it is Ready,
// and re-imported into the same ARN after each renewal, so that an ALB or
// CloudFront distribution attached to that ARN follows the renewals. The
// ARN and the imported serial are recorded on the status
// (acmCertificateARN, acmCertificateSerial) and the ACMImported condition
// says how it went. The import goes through ports.CertificateImporter
// (adapters/aws/acm); without one, the condition says so and nothing
// fails.
//
// It runs after readiness in the Certificate controller's steps and, like
// every step, writes at most once per invocation.
//
// ACMImportStep imports the stored key pair of a Ready Certificate that asks for it
// and records the result; it does nothing while the Certificate is issuing
// or not Ready, and nothing at all when the annotation is absent (an
// ACMImported condition left from before is removed; the ARN is kept, as
// certfn never deletes the ACM certificate). A certificate whose serial
// is already recorded for the ARN is not sent again. A transient import
// failure is returned (the message is retried with backoff); a permanent
// one is recorded on the condition.
func ACMImportStep(ctx context.Context, env *Env, st *State) (Outcome, error) {
	c := st.Cert
	s := &c.Status
	if !ACMImportRequested(c) {
		if !api.RemoveCondition(&s.Conditions, api.CertificateConditionACMImported) {
			return Outcome{Why: "no ACM import requested"}, nil
		}
		return write(ctx, env, st, "remove the ACMImported condition")
	}
	if st.IsIssuing() || !api.IsTrue(s.Conditions, api.CertificateConditionReady) {
		return Outcome{Why: "ACM import waits for a Ready certificate"}, nil
	}
	if err := st.LoadSecret(ctx); err != nil {
		return Outcome{}, err
	}
	issued, _ := st.Parse()
	if issued == nil {
		return Outcome{Why: "no certificate to import (readiness reports the problem)"}, nil
	}
	leaf := issued.Chain[0]
	serial := FormatACMSerial(leaf.SerialNumber)
	if env.Importer == nil {
		return setCondition(ctx, env, st, api.ConditionFalse, ReasonACMNotConfigured,
			"The certfn.io/acm-import annotation is set, but this deployment of certfn has no ACM importer "+
				"(AWS mode imports with CERTFN_ACM_IMPORT=true); the certificate is only in its Secret")
	}
	if s.ACMCertificateARN != "" && s.ACMCertificateSerial == serial && api.IsTrue(s.Conditions, api.CertificateConditionACMImported) {
		return Outcome{Why: "imported into ACM already"}, nil
	}
	if why := unsupportedKey(issued); why != "" {
		return setCondition(ctx, env, st, api.ConditionFalse, ReasonACMUnsupportedKey, why)
	}
	keyPEM := st.Secret.Data["tls.key"]
	req := ports.CertificateImport{
		Ref: s.ACMCertificateARN, Owner: st.Key(), Serial: leaf.SerialNumber,
		Certificate: pki.EncodeCertificatesPEM(leaf), PrivateKey: keyPEM,
	}
	if len(issued.Chain) > 1 {
		req.Chain = pki.EncodeCertificatesPEM(issued.Chain[1:]...)
	}
	res, err := env.Importer.Import(ctx, req)
	if err != nil {
		env.Metrics.Inc(MetricACMImports, "result", "failed")
		if errs.IsPermanent(err) {
			return setCondition(ctx, env, st, api.ConditionFalse, ReasonACMImportFailed,
				fmt.Sprintf("Importing the certificate with serial %s into ACM failed: %v", serial, err))
		}
		return Outcome{}, fmt.Errorf("import %s into ACM: %w", st.Key(), err)
	}
	result := "imported"
	if !res.Imported {
		result = "unchanged"
	}
	env.Metrics.Inc(MetricACMImports, "result", result)
	s.ACMCertificateARN, s.ACMCertificateSerial = res.Ref, serial
	api.SetCondition(&s.Conditions, api.Condition{
		Type: api.CertificateConditionACMImported, Status: api.ConditionTrue, Reason: ReasonACMImported,
		Message: fmt.Sprintf("The certificate with serial %s is in ACM as %s", serial, res.Ref), ObservedGeneration: c.Generation,
	}, st.Now)
	return write(ctx, env, st, "record the ACM import")
}

// unsupportedKey explains why ACM cannot import the key ("" when it can):
// ACM imports RSA keys of 1024 to 4096 bits (RSA 1024, 2048, 3072, 4096)
// and ECDSA keys on P-256, P-384 and P-521; not Ed25519.
func unsupportedKey(issued *Issued) string {
	switch k := issued.Key.(type) {
	case *rsa.PrivateKey:
		switch n := k.N.BitLen(); n {
		case 1024, 2048, 3072, 4096:
			return ""
		default:
			return fmt.Sprintf("ACM imports RSA keys of 1024, 2048, 3072 or 4096 bits, not %d (spec.privateKey.size)", n)
		}
	case *ecdsa.PrivateKey:
		return ""
	case ed25519.PrivateKey:
		return "ACM does not import Ed25519 keys (spec.privateKey.algorithm): use RSA or ECDSA to import this certificate"
	}
	return fmt.Sprintf("ACM cannot import a %T key", issued.Key)
}

// setCondition sets the ACMImported condition and writes the Certificate
// when it changed.
func setCondition(ctx context.Context, env *Env, st *State, status api.ConditionStatus, reason, msg string) (Outcome, error) {
	changed := api.SetCondition(&st.Cert.Status.Conditions, api.Condition{
		Type: api.CertificateConditionACMImported, Status: status, Reason: reason, Message: msg, ObservedGeneration: st.Cert.Generation,
	}, st.Now)
	if !changed {
		return Outcome{Why: "the ACMImported condition is up to date: " + msg}, nil
	}
	return write(ctx, env, st, "record the ACMImported condition")
}

// write stores st.Cert, keeping the renewal time as its due time.
func write(ctx context.Context, env *Env, st *State, what string) (Outcome, error) {
	next := st.NextRunAt
	if rt := RenewalTime(st); !rt.IsZero() && !st.IsIssuing() {
		next = rt
	}
	if err := env.Writer.UpdateCertificate(ctx, st, next); err != nil {
		return Outcome{}, fmt.Errorf("%s: %w", what, err)
	}
	return Outcome{Wrote: true}, nil
}
