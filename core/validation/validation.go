// Package validation checks resources the way cert-manager's admission
// webhook does, plus the rules of certfn's seeds (600 s minimum lifetime,
// immutable CertificateRequest specs). Every check returns an ErrorList
// whose entries name the field path, so a user sees
// "spec.dnsNames[1]: invalid DNS name: empty label (got "a..b")".
package validation

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
)

// Error is one broken rule.
type Error struct {
	// Path is the field path, e.g. "spec.privateKey.size".
	Path string
	// Value is the offending value when it helps and is not secret; empty
	// otherwise (never a password, key or CSR).
	Value string
	// Rule says what is wrong.
	Rule string
}

// Error renders "path: rule (got "value")".
func (e Error) Error() string {
	s := e.Rule
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if e.Value != "" {
		s += fmt.Sprintf(" (got %q)", truncate(e.Value, 100))
	}
	return s
}

// ErrorList collects broken rules; it is empty when the object is valid.
type ErrorList []Error

// Error renders one line per error.
func (l ErrorList) Error() string {
	return api.JoinBounded(len(l), func(i int) string { return l[i].Error() })
}

// Err returns l as an error, or nil when l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Has reports whether some error is at path.
func (l ErrorList) Has(path string) bool {
	for _, e := range l {
		if e.Path == path {
			return true
		}
	}
	return false
}

func (l *ErrorList) add(path, rule string) { *l = append(*l, Error{Path: path, Rule: rule}) }

func (l *ErrorList) addValue(path, value, rule string) {
	*l = append(*l, Error{Path: path, Value: value, Rule: rule})
}

// Object validates obj by type. Kinds without their own rules (added
// later, e.g. Orders or policies) get the metadata checks only.
func Object(obj api.Object) ErrorList {
	switch o := obj.(type) {
	case *api.Certificate:
		return Certificate(o)
	case *api.CertificateRequest:
		return CertificateRequest(o)
	case *api.CertificateSigningRequest:
		return CertificateSigningRequest(o)
	case *api.Issuer:
		return Issuer(o)
	case *api.ClusterIssuer:
		return ClusterIssuer(o)
	case *api.Role, *api.RoleBinding:
		return rbacMetadata(obj.GetObjectMeta(), true)
	case *api.ClusterRole, *api.ClusterRoleBinding:
		return rbacMetadata(obj.GetObjectMeta(), false)
	}
	namespaced := true
	if info, ok := api.KindInfoFor(obj.GetTypeMeta().Kind); ok {
		namespaced = info.Namespaced
	}
	return Metadata(obj.GetObjectMeta(), namespaced)
}

// Metadata checks the name (a DNS-1123 subdomain, or a generateName
// prefix) and the namespace (a DNS-1123 label when namespaced, empty when
// cluster-scoped).
func Metadata(m *api.ObjectMeta, namespaced bool) ErrorList {
	var errs ErrorList
	switch {
	case m.Name != "":
		if msg := dns1123Subdomain(m.Name); msg != "" {
			errs.addValue("metadata.name", m.Name, msg)
		}
	case m.GenerateName != "":
		// The generated name appends 5 characters to the prefix.
		prefix := strings.TrimSuffix(m.GenerateName, "-")
		if msg := dns1123Subdomain(prefix); prefix != "" && msg != "" {
			errs.addValue("metadata.generateName", m.GenerateName, msg)
		}
		if len(m.GenerateName) > 253-5 {
			errs.addValue("metadata.generateName", m.GenerateName, "must be no more than 248 characters")
		}
	default:
		errs.add("metadata.name", "required")
	}
	annotations := 0
	for k, v := range m.Annotations {
		annotations += len(k) + len(v)
	}
	if annotations > api.MaxAnnotationsBytes {
		errs.add("metadata.annotations", fmt.Sprintf("too large: %d bytes of keys and values, at most %d (256 KiB) in total", annotations, api.MaxAnnotationsBytes))
	}
	if namespaced {
		if m.Namespace == "" {
			errs.add("metadata.namespace", "required")
		} else if msg := dns1123Label(m.Namespace); msg != "" {
			errs.addValue("metadata.namespace", m.Namespace, msg)
		}
	} else if m.Namespace != "" {
		errs.addValue("metadata.namespace", m.Namespace, "must be empty for a cluster-scoped kind")
	}
	return errs
}

var (
	dns1123LabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123SubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// dns1123Label returns why s is not a DNS-1123 label, or "".
func dns1123Label(s string) string {
	if len(s) > 63 {
		return "must be no more than 63 characters"
	}
	if !dns1123LabelRE.MatchString(s) {
		return "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"
	}
	return ""
}

// dns1123Subdomain returns why s is not a DNS-1123 subdomain, or "".
func dns1123Subdomain(s string) string {
	if len(s) > 253 {
		return "must be no more than 253 characters"
	}
	if !dns1123SubdomainRE.MatchString(s) {
		return "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func idx(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// issuerRef checks an issuer reference: name required, and for cert-manager's
// own group the kind is Issuer or ClusterIssuer.
func issuerRef(path string, ref api.IssuerReference) ErrorList {
	var errs ErrorList
	if ref.Name == "" {
		errs.add(path+".name", "required")
	}
	if ref.Group == "" || ref.Group == api.CertManagerGroup {
		switch ref.Kind {
		case "", api.KindIssuer, api.KindClusterIssuer:
		default:
			errs.addValue(path+".kind", ref.Kind, "must be Issuer or ClusterIssuer for group cert-manager.io")
		}
	}
	return errs
}

// usages checks that every usage is a cert-manager usage name.
func usages(path string, us []api.KeyUsage) ErrorList {
	var errs ErrorList
	for i, u := range us {
		if !knownUsage(u) {
			errs.addValue(idx(path, i), string(u), "unknown usage; want one of cert-manager's usage names such as \"digital signature\", \"server auth\"")
		}
	}
	return errs
}

func knownUsage(u api.KeyUsage) bool {
	for _, k := range api.KnownKeyUsages {
		if u == k {
			return true
		}
	}
	return false
}

// NamespaceName returns why s is not a valid namespace name (a DNS-1123
// label, as Kubernetes namespaces), or "".
func NamespaceName(s string) string {
	if s == "" {
		return "must not be empty"
	}
	return dns1123Label(s)
}
