package secrets

import (
	"crypto/x509"
	"encoding/pem"
	"regexp"
	"strings"
	"time"

	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// MaxPayloadBytes is Secrets Manager's limit on a secret value (64 KiB).
const MaxPayloadBytes = 65536

// dnsSubdomain is Kubernetes' DNS-1123 subdomain: what a namespace and a
// secret name may be.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// checkName validates a namespace or secret name.
func checkName(field, v string) error {
	if len(v) > 253 || !dnsSubdomain.MatchString(v) {
		return errs.Permanentf("%s: %q is not a valid name: want a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)", field, v)
	}
	return nil
}

// encodePayload renders a secret as the JSON secret string (the layout of
// package secretpayload, shared with adapters/gcp/secretmanager).
func encodePayload(sec ports.Secret) (string, error) {
	b, err := secretpayload.Encode(sec, MaxPayloadBytes, "Secrets Manager")
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// decodePayload parses a secret string written by encodePayload. Its
// errors never quote the payload.
func decodePayload(s string) (ports.Secret, error) {
	return secretpayload.Decode([]byte(s))
}

// Tag keys set on every secret (see tagsFor).
const (
	TagNamespace   = "certfn.io/namespace"
	TagCertificate = "certfn.io/certificate"
	TagIssuer      = "certfn.io/issuer"
	TagRevision    = "certfn.io/revision"
	TagNotAfter    = "certfn.io/not-after"
	// TagRole is what IAM separates on (docs/deploy/aws.md, "Secrets"):
	// only the signer may read CA key pairs. See RoleOf.
	TagRole = "certfn-role"
)

// Values of TagRole written by certfn. "ca" (an operator-installed CA key
// pair) and "solver-credentials" are set by operators, never by certfn.
const (
	RolePrivateKey  = "private-key"
	RoleIssuedCA    = "issued-ca"
	RoleCertificate = "certificate"
	RoleACMEAccount = "acme-account"
)

// RoleOf classifies a secret certfn writes, first rule that applies: a
// next-private-key secret; a CA key pair (tls.crt is a CA and tls.key is
// present) issued from an isCA Certificate; any other key pair; anything
// else (ACME account keys).
func RoleOf(sec ports.Secret) string {
	switch {
	case sec.Labels[api.LabelNextPrivateKey] == "true":
		return RolePrivateKey
	case len(sec.Data["tls.crt"]) > 0 && len(sec.Data["tls.key"]) > 0 && isCA(sec.Data["tls.crt"]):
		return RoleIssuedCA
	case len(sec.Data["tls.crt"]) > 0:
		return RoleCertificate
	}
	return RoleACMEAccount
}

func isCA(crt []byte) bool {
	block, _ := pem.Decode(crt)
	if block == nil || block.Type != "CERTIFICATE" {
		return false
	}
	c, err := x509.ParseCertificate(block.Bytes)
	return err == nil && c.IsCA
}

// maxTagValue is the longest tag value AWS accepts.
const maxTagValue = 256

// tagsFor derives the managed tags of a secret: its namespace, the
// certificate and issuer named by cert-manager's annotations, the
// certificate revision annotation, and the leaf certificate's notAfter
// (RFC 3339) parsed from tls.crt, and the role IAM separates on (RoleOf).
// Every managed key is always present (empty
// when unknown), so that a write replaces stale values without UntagResource.
func tagsFor(sec ports.Secret) map[string]string {
	a := sec.Annotations
	issuer := ""
	if n := a[api.AnnotationIssuerName]; n != "" {
		issuer = n
		if k := a[api.AnnotationIssuerKind]; k != "" {
			issuer = k + "/" + n
		}
	}
	tags := map[string]string{
		TagNamespace:   sec.Namespace,
		TagCertificate: a[api.AnnotationCertificateName],
		TagIssuer:      issuer,
		TagRevision:    a[api.AnnotationRevision],
		TagNotAfter:    notAfter(sec.Data["tls.crt"]),
		TagRole:        RoleOf(sec),
	}
	for k, v := range tags {
		tags[k] = tagValue(v)
	}
	return tags
}

// notAfter returns the first certificate's notAfter in RFC 3339 (UTC), or
// "" when tls.crt holds no parsable certificate.
func notAfter(crt []byte) string {
	block, _ := pem.Decode(crt)
	if block == nil || block.Type != "CERTIFICATE" {
		return ""
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return ""
	}
	return c.NotAfter.UTC().Format(time.RFC3339)
}

// tagValue keeps v within AWS's tag value rules: at most 256 characters of
// letters, digits, spaces and _ . : / = + - @; others become '_'.
func tagValue(v string) string {
	var b strings.Builder
	n := 0
	for _, r := range v {
		if n == maxTagValue {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" _.:/=+-@", r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		n++
	}
	return b.String()
}

// Replaces refuses a write of next over a stored secret cur that holds
// what is never a Certificate's key pair, with content of another role: a
// next private key (only ever created, then deleted), or an ACME account
// key, credentials or a password (role acme-account with data: no
// tls.crt). A Certificate's key pair written over either would destroy it.
// Key pairs may change between certificate and issued-ca (an isCA
// Certificate), and an empty secret may become anything. The error is
// permanent and names both roles, never a value.
func Replaces(cur, next ports.Secret) error {
	c, n := RoleOf(cur), RoleOf(next)
	if c == n || len(cur.Data) == 0 || (c != RolePrivateKey && c != RoleACMEAccount) {
		return nil
	}
	return errs.Permanentf("the stored secret is of role %s (%s): certfn does not replace it with a secret of role %s", c, roleWhat(c), n)
}

// roleWhat describes a role in an error.
func roleWhat(role string) string {
	if role == RolePrivateKey {
		return "a Certificate's next private key"
	}
	return "no certificate: an ACME account key, credentials or a password"
}
