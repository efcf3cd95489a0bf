// Package denydomains is certfn's shipped CertificateRequestPolicy plugin:
// a guardrail that keeps a policy from approving any name inside protected
// DNS domains, whatever its allowed block says. It checks every place a
// name can hide — the common name, DNS names (including wildcards that
// would cover a protected domain), the domain of e-mail addresses and the
// host of URIs — with label-aware suffix matching, which CEL rules like
// self.endsWith('corp.example.com') get wrong (that also matches
// evilcorp.example.com... and misses CORP.example.com).
//
// Use in a policy:
//
//	spec:
//	  plugins:
//	    deny-domains:
//	      values:
//	        domains: "corp.example.com, payments.example.com"
//	        except: "status.corp.example.com"
//
// Register it explicitly at start-up:
//
//	ev, err := policy.NewEvaluator(policy.Options{Plugins: []policy.Plugin{denydomains.New()}})
package denydomains

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/certfn/certfn/core/policy"
)

// Name is the plugin's key under spec.plugins.
const Name = "deny-domains"

// Value keys.
const (
	// KeyDomains (required) lists the protected domains, separated by
	// commas or white space. Each covers itself and every subdomain.
	KeyDomains = "domains"
	// KeyExcept (optional) lists names or domains inside a protected domain
	// that stay allowed (each covers itself and its subdomains).
	KeyExcept = "except"
)

// Plugin is the deny-domains plugin.
type Plugin struct{}

// New returns the plugin, to pass to policy.NewEvaluator.
func New() Plugin { return Plugin{} }

// Name implements policy.Plugin.
func (Plugin) Name() string { return Name }

// Compile implements policy.Plugin: it parses and checks the domain lists.
// domains must list at least one valid domain; every except entry must lie
// inside one of them; no other keys are accepted.
func (Plugin) Compile(values map[string]string) (policy.PluginCheck, error) {
	for k := range values {
		if k != KeyDomains && k != KeyExcept {
			return nil, fmt.Errorf("%s: unknown key (want %q and optionally %q)", k, KeyDomains, KeyExcept)
		}
	}
	domains, err := parseList(values[KeyDomains])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyDomains, err)
	}
	if len(domains) == 0 {
		return nil, fmt.Errorf("%s: required: list at least one domain", KeyDomains)
	}
	except, err := parseList(values[KeyExcept])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyExcept, err)
	}
	for _, e := range except {
		if deniedBy(e, domains) == "" {
			return nil, fmt.Errorf("%s: %q is not inside any denied domain", KeyExcept, e)
		}
	}
	return &check{domains: domains, except: except}, nil
}

type check struct {
	domains []string
	except  []string
}

// Check implements policy.PluginCheck.
func (c *check) Check(_ context.Context, r *policy.Request) []string {
	var out []string
	judge := func(what, value, name string) {
		if name == "" {
			return
		}
		if d := c.denied(name); d != "" {
			out = append(out, fmt.Sprintf("%s %q is in the protected domain %q", what, value, d))
		}
	}
	for _, cn := range r.CommonNames {
		judge("common name", cn, normalize(cn))
	}
	for _, n := range r.DNSNames {
		judge("DNS name", n, normalize(n))
	}
	for _, e := range r.EmailAddresses {
		if i := strings.LastIndexByte(e, '@'); i >= 0 {
			judge("e-mail address", e, normalize(e[i+1:]))
		}
	}
	for _, u := range r.URIs {
		if p, err := url.Parse(u); err == nil {
			judge("URI", u, normalize(p.Hostname()))
		}
	}
	return out
}

// denied returns the protected domain name falls in, or "" when it is
// allowed (outside every domain, or inside an exception).
func (c *check) denied(name string) string {
	d := deniedBy(name, c.domains)
	if d == "" {
		return ""
	}
	// A wildcard is exempt only when everything it covers is: it must lie
	// under an exception itself.
	for _, e := range c.except {
		if under(name, e) {
			return ""
		}
	}
	return d
}

// deniedBy returns the first domain that name is, lies under, or (as a
// wildcard "*.parent" or "x*.parent") could stand for, or "".
func deniedBy(name string, domains []string) string {
	for _, d := range domains {
		if under(name, d) {
			return d
		}
		if first, parent, ok := strings.Cut(name, "."); ok && strings.Contains(first, "*") {
			// The wildcard label stands for any one label: it covers d
			// when d is exactly one label below parent.
			if label, found := strings.CutSuffix(d, "."+parent); found && !strings.Contains(label, ".") {
				return d
			}
		}
	}
	return ""
}

// under reports whether name equals domain or is a subdomain of it.
func under(name, domain string) bool {
	return name == domain || strings.HasSuffix(name, "."+domain)
}

// normalize lower-cases a name and drops one trailing dot.
func normalize(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}

// parseList splits on commas and white space and checks each entry is a
// domain name: labels of letters, digits, hyphens and underscores, 1-63
// characters, not starting or ending with a hyphen, no wildcards.
func parseList(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		d := normalize(f)
		if err := checkDomain(d); err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func checkDomain(d string) error {
	if strings.Contains(d, "*") {
		return fmt.Errorf("wildcards are not needed: a domain already covers all its subdomains")
	}
	if len(d) > 253 {
		return fmt.Errorf("longer than 253 characters")
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("not a domain name: empty or over-long label")
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("not a domain name: label %q starts or ends with a hyphen", label)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("not a domain name: character %q", c)
			}
		}
	}
	return nil
}
