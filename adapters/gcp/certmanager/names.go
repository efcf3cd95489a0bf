package certmanager

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// Labels certfn puts on the certificates it creates. Certificate Manager
// labels follow Google's label rules (keys: a lower-case letter, then up to
// 62 lower-case letters, digits, '_' or '-'; values: up to 63 of those), so
// the readable ones are sanitised (LabelValue) and may lose characters;
// LabelOwner is exact.
const (
	// LabelDeployment holds Options.Deployment, sanitised.
	LabelDeployment = "certfn-deployment"
	// LabelNamespace holds the Certificate's namespace, sanitised.
	LabelNamespace = "certfn-namespace"
	// LabelCertificate holds the Certificate's name, sanitised.
	LabelCertificate = "certfn-certificate"
	// LabelOwner holds OwnerHash of the deployment and the Certificate: the
	// label an earlier import is recognised by.
	LabelOwner = "certfn-owner"
)

// DefaultNamePrefix starts the IDs of the certificates certfn creates.
const DefaultNamePrefix = "certfn"

// maxIDLen is the longest certificate ID certfn makes. Certificate Manager
// allows 64 characters matching [a-zA-Z][a-zA-Z0-9_-]*; one is kept spare.
const maxIDLen = 63

var (
	labelKeyRe   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValueRe = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
	prefixRe     = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,18}[a-z0-9])?$`)
	locationRe   = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
	// projectRe: a project ID (optionally domain-scoped) or number.
	projectRe = regexp.MustCompile(`^(([a-z0-9][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]|[0-9]{1,20})$`)
	// nameRe: a certificate's resource name.
	nameRe = regexp.MustCompile(`^projects/([^/]+)/locations/([^/]+)/certificates/([a-zA-Z][a-zA-Z0-9_-]{0,63})$`)
)

// LabelValue sanitises s into a label value: lower case, characters other
// than letters, digits, '_' and '-' replaced by '-', at most 63 bytes.
// Distinct inputs may give the same value ("a.b", "a-b"): labels written
// with it are for people and filters, not identity (LabelOwner is).
func LabelValue(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 63 {
			break
		}
	}
	return b.String()
}

// OwnerHash identifies a Certificate of a deployment: 32 hex digits of the
// SHA-256 of the deployment, the namespace and the name. It is the value
// of LabelOwner and the suffix of the certificate ID.
func OwnerHash(deployment string, owner api.Key) string {
	sum := sha256.Sum256([]byte("certfn\x00" + deployment + "\x00" + owner.Namespace + "\x00" + owner.Name))
	return hex.EncodeToString(sum[:16])
}

// CertificateID is the ID of the certificate certfn creates for owner:
// "<prefix>-<namespace>-<name>-<12 hex digits of OwnerHash>", the middle
// part sanitised to lower-case letters, digits and single hyphens and
// shortened so that the ID has at most 63 characters. It depends only on
// the prefix, the deployment and the Certificate, so an import whose
// resource name was never recorded is found again with one
// GetCertificate.
func CertificateID(prefix, deployment string, owner api.Key) string {
	hash := OwnerHash(deployment, owner)[:12]
	slug := slugify(owner.Namespace + "-" + owner.Name)
	room := maxIDLen - len(prefix) - len(hash) - 2
	if len(slug) > room {
		slug = strings.TrimRight(slug[:room], "-")
	}
	if slug == "" {
		return prefix + "-" + hash
	}
	return prefix + "-" + slug + "-" + hash
}

// slugify keeps lower-case letters and digits and turns every other run of
// characters into one hyphen, trimmed at both ends.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// checkLabels validates labels against Google's label rules.
func checkLabels(labels map[string]string) error {
	if len(labels) > 60 {
		return fmt.Errorf("%d labels: Certificate Manager takes 64 at most, and certfn adds 4", len(labels))
	}
	for k, v := range labels {
		switch {
		case strings.HasPrefix(k, "certfn-"):
			return fmt.Errorf("label %q: keys starting with certfn- are certfn's own", k)
		case !labelKeyRe.MatchString(k):
			return fmt.Errorf("label key %q: want a lower-case letter, then up to 62 lower-case letters, digits, '_' or '-'", k)
		case !labelValueRe.MatchString(v):
			return fmt.Errorf("label %s value %q: want up to 63 lower-case letters, digits, '_' or '-'", k, v)
		}
	}
	return nil
}

// parseName splits a certificate's resource name; ok is false when s is
// not one.
func parseName(s string) (project, location, id string, ok bool) {
	m := nameRe.FindStringSubmatch(s)
	if m == nil {
		return "", "", "", false
	}
	return m[1], m[2], m[3], true
}
