package gsm

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// The payload is the one of adapters/aws/secrets (docs/aws.md, "Secret
// payload"), byte for byte: a secret written by either adapter reads the
// same in the other (TestPayloadSameAsAWS pins the layout with the AWS
// adapter's own example).

// MaxPayloadBytes is Secret Manager's limit on a version's data (64 KiB).
const MaxPayloadBytes = 65536

// metadataKey is the payload member holding labels, annotations and the
// list of base64-encoded keys. Data keys never start with "..", so it
// cannot collide with one.
const metadataKey = "..metadata"

// metadata is the payload's metadataKey member.
type metadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Base64 lists the data keys whose value is not UTF-8 text and is
	// stored base64-encoded (keystores, DER).
	Base64 []string `json:"base64,omitempty"`
}

var (
	// dnsLabel is Kubernetes' DNS-1123 label: what a namespace may be.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// dnsSubdomain is Kubernetes' DNS-1123 subdomain: what a secret name may be.
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// dataKeyRE is Kubernetes' rule for a secret data key.
	dataKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
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

// checkDataKey validates a data key: Kubernetes' secret key rule, and no
// leading ".." (reserved for the payload's metadata).
func checkDataKey(k string) error {
	if len(k) > 253 || !dataKeyRE.MatchString(k) || k == "." || strings.HasPrefix(k, "..") {
		return errs.Permanentf("data[%q]: not a valid key: want letters, digits, '-', '_' and '.', not \".\" and not starting with \"..\", at most 253 characters", k)
	}
	return nil
}

// encodePayload renders a secret as the version's data: a JSON object with
// every data key as a member (UTF-8 text as is, anything else base64 and
// listed in metadata), plus metadataKey. Map keys are sorted, so equal
// secrets give equal payloads. Errors name keys and sizes, never values.
func encodePayload(sec ports.Secret) ([]byte, error) {
	doc := make(map[string]any, len(sec.Data)+1)
	var meta metadata
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		if err := checkDataKey(k); err != nil {
			return nil, err
		}
		v := sec.Data[k]
		if utf8.Valid(v) {
			doc[k] = string(v)
			continue
		}
		doc[k] = base64.StdEncoding.EncodeToString(v)
		meta.Base64 = append(meta.Base64, k)
	}
	if len(sec.Labels) > 0 {
		meta.Labels = sec.Labels
	}
	if len(sec.Annotations) > 0 {
		meta.Annotations = sec.Annotations
	}
	doc[metadataKey] = meta
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("payload: encode: %w", err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(out) > MaxPayloadBytes {
		sizes := make([]string, 0, len(sec.Data))
		for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
			sizes = append(sizes, fmt.Sprintf("%s=%d", k, len(sec.Data[k])))
		}
		return nil, errs.Permanentf("payload: %d bytes, over Secret Manager's limit of %d (data sizes: %s)", len(out), MaxPayloadBytes, strings.Join(sizes, ", "))
	}
	return out, nil
}

// decodePayload parses data written by encodePayload. Its errors never
// quote the payload.
func decodePayload(data []byte) (ports.Secret, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return ports.Secret{}, fmt.Errorf("payload: not JSON (syntax error at byte %d of %d)", syn.Offset, len(data))
		}
		return ports.Secret{}, fmt.Errorf("payload: not a JSON object (%d bytes)", len(data))
	}
	var meta metadata
	if raw, ok := doc[metadataKey]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return ports.Secret{}, fmt.Errorf("payload: member %s is malformed", metadataKey)
		}
	}
	b64 := map[string]bool{}
	for _, k := range meta.Base64 {
		b64[k] = true
	}
	sec := ports.Secret{Data: make(map[string][]byte, len(doc)), Labels: meta.Labels, Annotations: meta.Annotations}
	for k, raw := range doc {
		if k == metadataKey {
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return ports.Secret{}, fmt.Errorf("payload: member %q is not a string", k)
		}
		if !b64[k] {
			sec.Data[k] = []byte(v)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return ports.Secret{}, fmt.Errorf("payload: member %q is listed as base64 but is not valid base64", k)
		}
		sec.Data[k] = b
	}
	return sec, nil
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
