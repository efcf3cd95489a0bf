package validation

import (
	"regexp"
	"strconv"
	"strings"
)

// Kubernetes' syntax of label keys and values (apimachinery's
// IsQualifiedName and IsValidLabelValue), with its messages, so that a
// selector certfn refuses reads as the API server would have refused it.

const (
	qualifiedNameFmt    = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
	qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	labelValueFmt       = "(" + qualifiedNameFmt + ")?"
	labelValueErrMsg    = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
	dns1123LabelFmt     = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
	dns1123SubdomainFmt = dns1123LabelFmt + "(\\." + dns1123LabelFmt + ")*"
	dns1123SubdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	// maxLabelPart is the longest name part of a key and the longest value.
	maxLabelPart = 63
)

// dns1123SubdomainRE (validation.go) is dns1123SubdomainFmt anchored.
var (
	qualifiedNameRE = regexp.MustCompile("^" + qualifiedNameFmt + "$")
	labelValueRE    = regexp.MustCompile("^" + labelValueFmt + "$")
)

// LabelKey returns every reason k is not a Kubernetes label key (a
// qualified name: an optional DNS-1123 subdomain prefix and '/', then a
// name part of at most 63 alphanumeric characters, '-', '_' or '.',
// starting and ending with an alphanumeric one), or nil. The reasons are
// Kubernetes' own sentences.
func LabelKey(k string) []string {
	var errs []string
	parts := strings.Split(k, "/")
	var name string
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		prefix := parts[0]
		name = parts[1]
		if prefix == "" {
			errs = append(errs, "prefix part must be non-empty")
		} else {
			for _, m := range dns1123SubdomainErrs(prefix) {
				errs = append(errs, "prefix part "+m)
			}
		}
	default:
		return []string{"a qualified name " + regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc") +
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}
	}
	if name == "" {
		errs = append(errs, "name part must be non-empty")
	} else if len(name) > maxLabelPart {
		errs = append(errs, "name part must be no more than "+strconv.Itoa(maxLabelPart)+" characters")
	}
	if !qualifiedNameRE.MatchString(name) {
		errs = append(errs, "name part "+regexError(qualifiedNameErrMsg, qualifiedNameFmt, "MyName", "my.name", "123-abc"))
	}
	return errs
}

// LabelValue returns every reason v is not a Kubernetes label value (empty,
// or at most 63 alphanumeric characters, '-', '_' or '.', starting and
// ending with an alphanumeric one), or nil.
func LabelValue(v string) []string {
	var errs []string
	if len(v) > maxLabelPart {
		errs = append(errs, "must be no more than "+strconv.Itoa(maxLabelPart)+" characters")
	}
	if !labelValueRE.MatchString(v) {
		errs = append(errs, regexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345"))
	}
	return errs
}

// dns1123SubdomainErrs is apimachinery's IsDNS1123Subdomain.
func dns1123SubdomainErrs(s string) []string {
	var errs []string
	if len(s) > 253 {
		errs = append(errs, "must be no more than 253 characters")
	}
	if !dns1123SubdomainRE.MatchString(s) {
		errs = append(errs, regexError(dns1123SubdomainMsg, dns1123SubdomainFmt, "example.com"))
	}
	return errs
}

// regexError renders Kubernetes' "<msg> (e.g. 'a',  or 'b', regex used for
// validation is '<fmt>')" (its spacing included).
func regexError(msg, format string, examples ...string) string {
	var b strings.Builder
	b.WriteString(msg + " (e.g. ")
	for i, e := range examples {
		if i > 0 {
			b.WriteString(" or ")
		}
		b.WriteString("'" + e + "', ")
	}
	b.WriteString("regex used for validation is '" + format + "')")
	return b.String()
}
