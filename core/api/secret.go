package api

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// KindSecret is Kubernetes' core v1 Secret. certfn decodes Secret
// manifests (cert-manager's documentation pairs every DNS-01 issuer with
// its credentials Secret) and applies them into the secret store, never
// into the state store; nobody reads a secret's values back through
// certfn's API.
const KindSecret = "Secret"

// Secret types with rules of their own (Kubernetes'
// core/v1 SecretType); any other non-empty type is accepted as given.
const (
	SecretTypeOpaque = "Opaque"
	SecretTypeTLS    = "kubernetes.io/tls"
)

// MaxSecretDataBytes bounds the summed size of a Secret manifest's values:
// 64 KiB, the most AWS Secrets Manager and Google Secret Manager store in
// one secret (Kubernetes allows 1 MiB; certfn's limit is the same in every
// mode).
const MaxSecretDataBytes = 64 << 10

// Secret is a core/v1 Secret manifest. Data values are base64 in JSON, as
// in Kubernetes; StringData values are plain strings merged over Data when
// applied. Immutable is accepted and refused when true (certfn's secret
// store keeps versions; an immutable secret has no meaning there).
type Secret struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Type       string            `json:"type,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
	Immutable  *bool             `json:"immutable,omitempty"`
	// Summary is set by certfn when it lists or gets a secret: what the
	// secret holds without its values (which are never read back). A
	// manifest must leave it out.
	Summary *SecretSummary `json:"summary,omitempty"`
}

// SecretSummary describes a stored secret without its values.
type SecretSummary struct {
	// Keys are the data keys, sorted.
	Keys []string `json:"keys"`
	// NotAfter is the expiry of the certificate in tls.crt, when there is one.
	NotAfter *Time `json:"notAfter,omitempty"`
}

// MergedData returns Data with StringData merged over it, as the
// Kubernetes API server stores a Secret.
func (s *Secret) MergedData() map[string][]byte {
	out := make(map[string][]byte, len(s.Data)+len(s.StringData))
	maps.Copy(out, s.Data)
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

// secretKeyRE is Kubernetes' rule for secret data keys
// (IsConfigMapKey: [-._a-zA-Z0-9]+, at most 253 characters, not "." or "..").
var secretKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// SecretKeyProblem returns why k is not a valid Secret data key, or "".
// Errors name the key (never a value).
func SecretKeyProblem(k string) string {
	switch {
	case k == "":
		return "a key must not be empty"
	case len(k) > 253:
		return fmt.Sprintf("key of %d characters: at most 253", len(k))
	case k == "." || k == "..":
		return fmt.Sprintf("key %q is not allowed", k)
	case !secretKeyRE.MatchString(k):
		return fmt.Sprintf("key %q: a valid key consists of alphanumeric characters, '-', '_' or '.'", Truncate(k, 80))
	}
	return ""
}

// SortedSecretKeys returns the keys of m, sorted.
func SortedSecretKeys(m map[string][]byte) []string {
	return slices.Sorted(maps.Keys(m))
}
