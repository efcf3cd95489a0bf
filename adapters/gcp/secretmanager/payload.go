package secretmanager

import (
	"crypto/x509"
	"encoding/pem"
	"regexp"
	"time"

	"github.com/certfn/certfn/adapters/secretpayload"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// The payload is the one of adapters/aws/secrets (docs/aws.md, "Secret
// payload"), byte for byte, both being package secretpayload: a secret
// written by either adapter reads the same in the other
// (TestPayloadSameAsAWS pins the layout with the AWS adapter's own
// example).

// MaxPayloadBytes is Secret Manager's limit on a version's data (64 KiB).
const MaxPayloadBytes = 65536

var (
	// dnsLabel is Kubernetes' DNS-1123 label: what a namespace may be.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// dnsSubdomain is Kubernetes' DNS-1123 subdomain: what a secret name may be.
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// checkNames validates a namespace (a DNS-1123 label, as core/validation
// requires of every namespace) and a secret name (a DNS-1123 subdomain).
func checkNames(namespace, name string) error {
	if len(namespace) > 63 || !dnsLabel.MatchString(namespace) {
		return errs.Permanentf("namespace: %q is not a valid namespace: want a DNS label (lower-case letters, digits and '-', at most 63 characters)", namespace)
	}
	if len(name) > 253 || !dnsSubdomain.MatchString(name) {
		return errs.Permanentf("name: %q is not a valid name: want a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)", name)
	}
	return nil
}

// encodePayload renders a secret as the version's data (the shared layout,
// see package secretpayload).
func encodePayload(sec ports.Secret) ([]byte, error) {
	return secretpayload.Encode(sec, MaxPayloadBytes, "Secret Manager")
}

// decodePayload parses data written by encodePayload. Its errors never
// quote the payload.
func decodePayload(data []byte) (ports.Secret, error) {
	return secretpayload.Decode(data)
}

// Role is what a secret holds, for access control: the values of the AWS
// adapter's certfn-role tag (docs/deploy-aws.md, "Secrets: naming and
// tags"). On Secret Manager the role decides the secret's Class, which is
// part of its ID (see Class).
type Role string

// Roles. certfn writes the first four (RoleOf); RoleCA and
// RoleSolverCredentials are installed by operators only.
const (
	RolePrivateKey        Role = "private-key"
	RoleIssuedCA          Role = "issued-ca"
	RoleCertificate       Role = "certificate"
	RoleACMEAccount       Role = "acme-account"
	RoleCA                Role = "ca"
	RoleSolverCredentials Role = "solver-credentials"
)

// RoleOf classifies a secret certfn writes, first rule that applies (the
// AWS adapter's rule): a next-private-key secret; a CA key pair (tls.crt is
// a CA and tls.key is present), which certfn writes only when it issues an
// isCA Certificate; any other key pair; anything else (ACME account keys).
func RoleOf(sec ports.Secret) Role {
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

// firstCert parses the first PEM certificate of crt (nil if none).
func firstCert(crt []byte) *x509.Certificate {
	block, _ := pem.Decode(crt)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	return c
}

func isCA(crt []byte) bool {
	c := firstCert(crt)
	return c != nil && c.IsCA
}

// notAfter returns the first certificate's notAfter in RFC 3339 (UTC), or
// "" when tls.crt holds no parsable certificate.
func notAfter(crt []byte) string {
	c := firstCert(crt)
	if c == nil {
		return ""
	}
	return c.NotAfter.UTC().Format(time.RFC3339)
}

// replaces refuses a write of next over a stored secret cur that holds
// what is never a Certificate's key pair, with content of another role: a
// next private key, or an ACME account key, credentials or a password
// (role acme-account with data: no tls.crt). Key pairs may change between
// certificate and issued-ca, and an empty secret may become anything. The
// error is permanent and names both roles, never a value.
func replaces(cur, next ports.Secret) error {
	c, n := RoleOf(cur), RoleOf(next)
	if c == n || len(cur.Data) == 0 || (c != RolePrivateKey && c != RoleACMEAccount) {
		return nil
	}
	return errs.Permanentf("the stored secret is of role %s: certfn does not replace it with a secret of role %s "+
		"(next private keys, ACME account keys, credentials and passwords are never a Certificate's key pair)", c, n)
}
