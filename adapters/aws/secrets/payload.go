package secrets

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

// MaxPayloadBytes is Secrets Manager's limit on a secret value (64 KiB).
const MaxPayloadBytes = 65536

// metadataKey is the payload member holding labels, annotations and the
// list of base64-encoded keys. Data keys never start with "..", so it
// cannot collide with one (the local store's ..metadata.json rule).
const metadataKey = "..metadata"

// metadata is the payload's metadataKey member.
type metadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Base64 lists the data keys whose value is not UTF-8 text and is
	// stored base64-encoded (keystores, DER).
	Base64 []string `json:"base64,omitempty"`
}

// dnsSubdomain is Kubernetes' DNS-1123 subdomain: what a namespace and a
// secret name may be.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// dataKeyRE is Kubernetes' rule for a secret data key.
var dataKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// checkName validates a namespace or secret name.
func checkName(field, v string) error {
	if len(v) > 253 || !dnsSubdomain.MatchString(v) {
		return errs.Permanentf("%s: %q is not a valid name: want a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)", field, v)
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

// encodePayload renders a secret as the JSON secret string: every data key
// as a member (UTF-8 text as is, anything else base64 and listed in
// metadata), plus metadataKey. Map keys are sorted, so equal secrets give
// equal payloads. Errors name keys and sizes, never values.
func encodePayload(sec ports.Secret) (string, error) {
	doc := make(map[string]any, len(sec.Data)+1)
	var meta metadata
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		if err := checkDataKey(k); err != nil {
			return "", err
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
		return "", fmt.Errorf("payload: encode: %w", err)
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	if len(out) > MaxPayloadBytes {
		sizes := make([]string, 0, len(sec.Data))
		for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
			sizes = append(sizes, fmt.Sprintf("%s=%d", k, len(sec.Data[k])))
		}
		return "", errs.Permanentf("payload: %d bytes, over Secrets Manager's limit of %d (data sizes: %s)", len(out), MaxPayloadBytes, strings.Join(sizes, ", "))
	}
	return out, nil
}

// decodePayload parses a secret string written by encodePayload. Its
// errors never quote the payload.
func decodePayload(s string) (ports.Secret, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return ports.Secret{}, fmt.Errorf("payload: not JSON (syntax error at byte %d of %d)", syn.Offset, len(s))
		}
		return ports.Secret{}, fmt.Errorf("payload: not a JSON object (%d bytes)", len(s))
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

// Tag keys set on every secret (see tagsFor).
const (
	TagNamespace   = "certfn.io/namespace"
	TagCertificate = "certfn.io/certificate"
	TagIssuer      = "certfn.io/issuer"
	TagRevision    = "certfn.io/revision"
	TagNotAfter    = "certfn.io/not-after"
	// TagRole is what IAM separates on (docs/deploy-aws.md, "Secrets"):
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
