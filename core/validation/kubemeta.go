package validation

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// Kubernetes' rules for label and annotation keys and label values
// (apimachinery's IsQualifiedName and IsValidLabelValue) and the
// annotations' size, which cert-manager's webhook applies to
// spec.secretTemplate (and ValidateUpdateCertificateRequest's
// annotation rule).

var (
	k8sQualifiedNameRE = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	k8sLabelValueRE    = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
)

// k8sQualifiedName returns why k is not a Kubernetes qualified name
// ("[prefix/]name": a DNS-1123 subdomain prefix, a name of at most 63
// alphanumerics, '-', '_' and '.' that starts and ends alphanumeric), or "".
func k8sQualifiedName(k string) string {
	name := k
	if prefix, n, ok := strings.Cut(k, "/"); ok {
		if prefix == "" {
			return "prefix part must not be empty"
		}
		if msg := dns1123Subdomain(prefix); msg != "" {
			return "prefix part " + msg
		}
		name = n
	}
	switch {
	case name == "":
		return "name part must not be empty"
	case len(name) > 63:
		return "name part must be no more than 63 characters"
	case !k8sQualifiedNameRE.MatchString(name):
		return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	}
	return ""
}

// k8sLabels checks Kubernetes labels at path: qualified-name keys, values of
// at most 63 characters (alphanumerics, '-', '_', '.', starting and
// ending alphanumeric, or empty). Errors are at path, as Kubernetes reports them.
func k8sLabels(path string, m map[string]string) ErrorList {
	var errs ErrorList
	for _, k := range sortedStringKeys(m) {
		if msg := k8sQualifiedName(k); msg != "" {
			errs.addValue(path, k, "invalid label key: "+msg)
		}
		v := m[k]
		switch {
		case len(v) > 63:
			errs.addValue(path, v, "invalid label value: must be no more than 63 characters")
		case !k8sLabelValueRE.MatchString(v):
			errs.addValue(path, v, "invalid label value: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character")
		}
	}
	return errs
}

// k8sAnnotations checks Kubernetes annotations at path: qualified-name keys
// (any case) and at most api.MaxAnnotationsBytes (256 KiB) of keys and
// values in total.
func k8sAnnotations(path string, m map[string]string) ErrorList {
	var errs ErrorList
	total := 0
	for _, k := range sortedStringKeys(m) {
		total += len(k) + len(m[k])
		if msg := k8sQualifiedName(strings.ToLower(k)); msg != "" {
			errs.addValue(path, k, "invalid annotation key: "+msg)
		}
	}
	if total > api.MaxAnnotationsBytes {
		errs.add(path, fmt.Sprintf("too long: %d bytes of keys and values, at most %d (256 KiB) in total", total, api.MaxAnnotationsBytes))
	}
	return errs
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
