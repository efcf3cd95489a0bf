package secretmanager

import (
	"maps"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// Keys of the labels and annotations certfn manages on every secret (the
// AWS adapter's certfn.io/* and certfn-role tags). The same key is set as a
// label, with the value sanitised to Secret Manager's label rules (for
// filtering: gcloud secrets list --filter=labels.certfn-certificate=web),
// and as an annotation, with the exact value.
const (
	KeyNamespace   = "certfn-namespace"
	KeyName        = "certfn-name"
	KeyCertificate = "certfn-certificate"
	KeyIssuer      = "certfn-issuer"
	KeyRevision    = "certfn-revision"
	KeyNotAfter    = "certfn-not-after"
	KeyRole        = "certfn-role"
)

var managedKeys = []string{KeyNamespace, KeyName, KeyCertificate, KeyIssuer, KeyRevision, KeyNotAfter, KeyRole}

// managedPrefix is reserved for managed keys: Options.Labels may not use it.
const managedPrefix = "certfn-"

// Secret Manager's label rules (the API's documentation of Secret.labels):
// keys 1 to 63 characters, starting with a lower-case letter, then
// lower-case letters, digits, '_' and '-'; values 0 to 63 of the latter;
// at most 128 bytes each; at most 64 labels.
var (
	labelKeyRE   = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
)

// maxLabels is the number of labels Secret Manager allows on a secret.
const maxLabels = 64

// validLabel reports whether k=v is a label Secret Manager accepts.
func validLabel(k, v string) bool {
	return labelKeyRE.MatchString(k) && len(k) <= 128 && labelValueRE.MatchString(v) && len(v) <= 128
}

// LabelValue sanitises v into a Secret Manager label value: ASCII letters
// lower-cased, digits, '_' and '-' kept, every other character '_', at
// most 63 characters. Examples: "ClusterIssuer/ca" → "clusterissuer_ca",
// "2031-03-04T05:06:07Z" → "2031-03-04t05_06_07z", "www.example.com" →
// "www_example_com". The exact value is in the annotation of the same key.
func LabelValue(v string) string {
	var b strings.Builder
	n := 0
	for _, r := range v {
		if n == 63 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r - 'A' + 'a')
		default:
			b.WriteByte('_')
		}
		n++
	}
	return b.String()
}

// maxManagedValue bounds a managed annotation value, so that the managed
// annotations stay far below Secret Manager's limit of 16 KiB for all
// annotation keys and values. (Annotation keys are 1 to 63 characters,
// alphanumeric at both ends, '-', '_' and '.' inside: no '/', hence the
// same certfn-* keys as the labels.)
const maxManagedValue = 512

// managedValues derives the managed keys of a secret from its names, its
// cert-manager annotations and its certificate: namespace, name, the
// certificate and issuer named by cert-manager's annotations (issuer as
// Kind/name), the certificate revision, the leaf certificate's notAfter
// (RFC 3339) and the role (RoleOf). Every key is present (empty when
// unknown), so that an update replaces stale values.
func managedValues(sec ports.Secret) map[string]string {
	a := sec.Annotations
	issuer := a[api.AnnotationIssuerName]
	if k := a[api.AnnotationIssuerKind]; issuer != "" && k != "" {
		issuer = k + "/" + issuer
	}
	out := map[string]string{
		KeyNamespace:   sec.Namespace,
		KeyName:        sec.Name,
		KeyCertificate: a[api.AnnotationCertificateName],
		KeyIssuer:      issuer,
		KeyRevision:    a[api.AnnotationRevision],
		KeyNotAfter:    notAfter(sec.Data["tls.crt"]),
		KeyRole:        string(RoleOf(sec)),
	}
	for k, v := range out {
		out[k] = truncateUTF8(v, maxManagedValue)
	}
	return out
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// managedLabels are managedValues sanitised with LabelValue.
func managedLabels(values map[string]string) map[string]string {
	out := make(map[string]string, len(values))
	for k, v := range values {
		out[k] = LabelValue(v)
	}
	return out
}

// mergeMeta returns current with every managed key replaced by managed and
// every key of extra set; other keys (set by operators) are kept.
func mergeMeta(current, extra, managed map[string]string) map[string]string {
	out := make(map[string]string, len(current)+len(managed)+len(extra))
	for k, v := range current {
		if !strings.HasPrefix(k, managedPrefix) {
			out[k] = v
		}
	}
	maps.Copy(out, extra)
	maps.Copy(out, managed)
	return out
}
