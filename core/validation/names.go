package validation

import (
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// dnsName returns why s is not a valid DNS SAN, or "". A leading "*."
// wildcard label is allowed; labels are letters, digits, '-' and '_'
// (1..63 characters, not starting or ending with '-'); at most 253 characters.
func dnsName(s string) string { return dnsNameLabels(s, 63) }

// dnsSAN is dnsName for spec.dnsNames: labels of any length, as
// cert-manager accepts them (the approval step refuses to sign labels
// longer than 63 octets).
func dnsSAN(s string) string { return dnsNameLabels(s, 0) }

// dnsNameLabels is dnsName with labels of at most maxLabel octets (0: no
// limit).
func dnsNameLabels(s string, maxLabel int) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > 253 {
		return "must be no more than 253 characters"
	}
	if strings.HasSuffix(s, ".") {
		return "must not end with a dot"
	}
	for _, label := range strings.Split(strings.TrimPrefix(s, "*."), ".") {
		if msg := dnsLabel(label, maxLabel); msg != "" {
			return msg
		}
	}
	return ""
}

func dnsLabel(l string, maxLabel int) string {
	switch {
	case l == "":
		return "empty label"
	case l == "*":
		return "a wildcard is only allowed as the whole first label (\"*.example.com\")"
	case maxLabel > 0 && len(l) > maxLabel:
		return fmt.Sprintf("label longer than %d characters", maxLabel)
	case l[0] == '-' || l[len(l)-1] == '-':
		return "label starts or ends with '-'"
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "character " + strconv.QuoteRune(rune(c)) + " not allowed; use letters, digits, '-' (and punycode for IDNs)"
		}
	}
	return ""
}

// ipAddress returns why s is not an IPv4 or IPv6 address, or "".
func ipAddress(s string) string {
	if net.ParseIP(s) == nil {
		return "invalid IP address"
	}
	return ""
}

// uriSAN returns why s is not an absolute URI, or "".
func uriSAN(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "invalid URI"
	}
	if !u.IsAbs() {
		return "must be an absolute URI with a scheme (such as spiffe://trust.domain/workload)"
	}
	return ""
}

// emailAddress returns why s is not a bare email address, or "".
func emailAddress(s string) string {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return "invalid email address; want a bare address such as user@example.com"
	}
	return ""
}

// oid returns why s is not a dotted-decimal ASN.1 object identifier, or "".
func oid(s string) string {
	const msg = "must be a dotted-decimal object identifier such as 1.3.6.1.4.1.311.20.2.3"
	arcs := strings.Split(s, ".")
	if len(arcs) < 2 {
		return msg
	}
	for i, a := range arcs {
		if a == "" || (len(a) > 1 && a[0] == '0') {
			return msg
		}
		n, err := strconv.ParseUint(a, 10, 63)
		if err != nil {
			return msg
		}
		if i == 0 && n > 2 {
			return "first arc must be 0, 1 or 2"
		}
		if i == 1 && arcs[0] != "2" && n > 39 {
			return "second arc must be below 40 when the first is 0 or 1"
		}
	}
	return ""
}

// serverURL returns why s is not an http(s) URL with a host, or "".
func serverURL(s string, allowHTTP bool) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "must be an https URL such as https://acme-v02.api.letsencrypt.org/directory"
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowHTTP {
			return "must use https"
		}
	default:
		return "must be an https URL"
	}
	return ""
}

func validUTF8(s string) bool { return utf8.ValidString(s) }
