package acme

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/certfn/certfn/core/api"
)

// ReasonServerNotAllowed is the Ready reason of a namespaced Issuer whose
// spec.acme.server is not on the deployment's ServerAllowList.
const ReasonServerNotAllowed = "ACMEServerNotAllowed"

// ErrServerNotAllowed is wrapped by the errors of Accounts.Get and
// Accounts.Client for a namespaced Issuer whose server the
// ServerAllowList does not allow (together with ErrAccountNotReady:
// its steps wait, and no ACME request is made).
var ErrServerNotAllowed = errors.New("the ACME server is not allowed for namespaced Issuers")

// ServerAllowList restricts the ACME servers namespaced Issuers may use
// (a team's Issuer would otherwise make the worker connect to any
// address, and a server the team runs chooses HTTP-01 tokens):
// spec.acme.server must start with one of its prefixes. ClusterIssuers,
// the platform team's, are not restricted. It denies by default: the zero
// value, and a list parsed from no entries, allow no server to namespaced
// Issuers; the operator lists the servers, or AnyServer ("*") to allow
// every server explicitly.
//
// A prefix is an absolute http(s) URL: scheme and host (with its port;
// the default port may be left out) must be equal, case aside, and the
// server's path must be the prefix's path or lie below it at a "/"
// (https://ca.example/acme allows https://ca.example/acme/directory, not
// https://ca.example/acme-evil/ nor https://ca.example.evil/). A server
// with user information, a fragment or "." or ".." path segments is never
// allowed.
type ServerAllowList struct {
	// Source names the setting in messages (a flag or variable name).
	Source   string
	any      bool
	prefixes []serverURL
	raw      []string
}

// AnyServer is the entry that allows every ACME server to namespaced
// Issuers (the operator's explicit choice; it cannot be combined with
// prefixes).
const AnyServer = "*"

type serverURL struct{ scheme, host, path string }

// parseServerURL splits an absolute http(s) URL; why says what is wrong.
func parseServerURL(s string) (serverURL, string) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return serverURL{}, "is not a URL"
	case u.Scheme != "https" && u.Scheme != "http":
		return serverURL{}, "is not an absolute http(s) URL"
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return serverURL{}, "has no host"
	case u.User != nil:
		return serverURL{}, "has user information"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return serverURL{}, "has a fragment"
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return serverURL{}, `has "." or ".." path segments`
		}
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	if port := u.Port(); (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return serverURL{scheme: scheme, host: host, path: u.Path}, ""
}

// ParseServerAllowList checks entries (ACME directory URL prefixes, or
// the single entry AnyServer) and returns the list; source names the
// setting in its errors and in the messages of refused issuers. No
// entries: a list that allows no server to namespaced Issuers.
func ParseServerAllowList(source string, entries []string) (ServerAllowList, error) {
	l := ServerAllowList{Source: source}
	var problems []string
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == AnyServer {
			if len(entries) > 1 {
				problems = append(problems, fmt.Sprintf("%s[%d]: %q allows every server and cannot be combined with other entries", source, i, e))
				continue
			}
			l.any = true
			l.raw = append(l.raw, e)
			continue
		}
		p, why := parseServerURL(e)
		if why == "" && strings.Contains(e, "?") {
			why = "has a query (a prefix is scheme, host and path)"
		}
		if why != "" {
			problems = append(problems, fmt.Sprintf("%s[%d]: %q %s: want the http(s) URL of an ACME directory or a prefix of one, e.g. https://acme-v02.api.letsencrypt.org/directory, or %q for any server", source, i, e, why, AnyServer))
			continue
		}
		l.prefixes = append(l.prefixes, p)
		l.raw = append(l.raw, e)
	}
	if len(problems) > 0 {
		return ServerAllowList{}, errors.New(strings.Join(problems, "; "))
	}
	return l, nil
}

// AllowAnyServer returns the list that allows every server (AnyServer),
// with source naming the setting.
func AllowAnyServer(source string) ServerAllowList {
	return ServerAllowList{Source: source, any: true, raw: []string{AnyServer}}
}

// Restricts reports whether the list restricts anything (it does unless
// it is AnyServer).
func (l ServerAllowList) Restricts() bool { return !l.any }

// Prefixes returns the entries as given.
func (l ServerAllowList) Prefixes() []string { return append([]string(nil), l.raw...) }

// Allows reports whether server (a directory URL) starts with one of the
// prefixes; AnyServer allows every server, an empty list none.
func (l ServerAllowList) Allows(server string) bool {
	if l.any {
		return true
	}
	s, why := parseServerURL(strings.TrimSpace(server))
	if why != "" {
		return false
	}
	for _, p := range l.prefixes {
		if s.scheme != p.scheme || s.host != p.host {
			continue
		}
		if p.path == "" || p.path == "/" || s.path == p.path ||
			(strings.HasPrefix(s.path, p.path) && (strings.HasSuffix(p.path, "/") || s.path[len(p.path)] == '/')) {
			return true
		}
	}
	return false
}

// check returns why iss may not use its ACME server ("" when it may):
// only namespaced Issuers are restricted.
func (l ServerAllowList) check(iss api.GenericIssuer) string {
	spec := iss.GetSpec().ACME
	if _, cluster := iss.(*api.ClusterIssuer); cluster || spec == nil || l.Allows(spec.Server) {
		return ""
	}
	source := l.Source
	if source == "" {
		source = "the ACME server allow-list"
	}
	if len(l.prefixes) == 0 {
		return fmt.Sprintf("spec.acme.server %q is not allowed for namespaced Issuers: the deployment allows namespaced Issuers no ACME server by default; "+
			"the operator lists the allowed directory URLs (or %q for any server) in %s; or use a ClusterIssuer of the platform team", spec.Server, AnyServer, source)
	}
	return fmt.Sprintf("spec.acme.server %q is not allowed for namespaced Issuers: the deployment allows only servers starting with %s (%s); "+
		"use one of those, or a ClusterIssuer of the platform team", spec.Server, strings.Join(l.raw, ", "), source)
}
