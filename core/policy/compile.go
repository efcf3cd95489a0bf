package policy

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
)

// ErrorList is every problem found in a policy, each with its field path
// (e.g. `spec.allowed.uris.validations[0].rule: invalid CEL: ...`). It is
// api.FieldErrors, the error type manifests are reported with.
type ErrorList = api.FieldErrors

// Compiled is a policy ready for evaluation: patterns split, CEL programs
// built, plugin configurations checked. It is immutable and safe for
// concurrent use.
type Compiled struct {
	// Name, Generation and ResourceVersion identify the policy version it
	// was compiled from.
	Name            string
	Generation      int64
	ResourceVersion string

	selector selector
	fields   []*stringField // allowed string and list attributes, in spec order
	// Precomputed for the short (approval) path: bit a set when attribute
	// a may carry values / must carry values; the fields with patterns and
	// the fields with CEL rules.
	allowedMask, requiredMask attrMask
	valueFields, ruleFields   []*stringField
	isCA                      bool      // allowed.isCA
	usages                    *patterns // allowed.usages; nil forbids every usage
	constraints               constraints
	plugins                   []compiledPlugin
}

// stringField is one compiled allowed.<attr>: commonName, dnsNames, ...
type stringField struct {
	path     string // "spec.allowed.dnsNames"
	what     string // "DNS name", for messages
	attr     attr   // which request attribute it checks
	set      bool   // the field is present in the policy
	values   *patterns
	need     charClass // union of the values' need: what a value must be to skip classOf
	required bool
	rules    []celRule
}

// attr names a request attribute a stringField reads.
type attr int

// attrMask is a set of attrs.
type attrMask uint16

const (
	attrCommonName attr = iota
	attrDNSNames
	attrIPAddresses
	attrURIs
	attrEmailAddresses
	attrOrganizations
	attrCountries
	attrOrganizationalUnits
	attrLocalities
	attrProvinces
	attrStreetAddresses
	attrPostalCodes
	attrSerialNumber
	numAttrs
)

type constraints struct {
	minDuration, maxDuration *time.Duration
	algorithm                api.PrivateKeyAlgorithm // "" any
	minSize, maxSize         *int
}

type selector struct {
	issuer    *issuerSelector
	namespace *namespaceSelector
}

type issuerSelector struct {
	name, kind, group *pattern // nil matches anything
}

type namespaceSelector struct {
	names  patterns // empty matches every name
	labels [][2]string
}

type compiledPlugin struct {
	name  string
	check PluginCheck
}

// Compile checks p and compiles it. plugins are the plugins registered in
// this build; a policy naming another plugin does not compile. On failure
// the error is an ErrorList naming every problem with its field path (it
// does not stop at the first). Compile is pure; Evaluator caches its
// results per policy version.
func Compile(p *api.CertificateRequestPolicy, plugins ...Plugin) (*Compiled, error) {
	c := &compiler{byName: map[string]Plugin{}}
	for _, pl := range plugins {
		c.byName[pl.Name()] = pl
	}
	out := c.compile(p)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return out, nil
}

// Validate returns every problem in p with its field path, or nil when p
// compiles: no selector, malformed wildcard patterns, invalid CEL, rules
// that do not evaluate to a bool, `required` on a field that allows no
// value, `required` on isCA or usages, unknown usages, non-IP addresses,
// inverted duration or size ranges, unknown key algorithms, plugins not
// registered in plugins or rejecting their values.
func Validate(p *api.CertificateRequestPolicy, plugins ...Plugin) ErrorList {
	_, err := Compile(p, plugins...)
	if err == nil {
		return nil
	}
	return err.(ErrorList)
}

type compiler struct {
	byName map[string]Plugin
	errs   ErrorList
	object string
}

func (c *compiler) fail(path, format string, args ...any) {
	c.errs = append(c.errs, api.FieldError{Object: c.object, Path: path, Rule: fmt.Sprintf(format, args...)})
}

func (c *compiler) compile(p *api.CertificateRequestPolicy) *Compiled {
	if p == nil {
		c.fail("", "no policy")
		return nil
	}
	c.object = api.KindCertificateRequestPolicy + " " + p.Name
	out := &Compiled{Name: p.Name, Generation: p.Generation, ResourceVersion: p.ResourceVersion}
	if p.Name == "" {
		c.fail("metadata.name", "required")
	}
	c.compileSelector(&p.Spec.Selector, &out.selector)
	c.compileAllowed(p.Spec.Allowed, out)
	c.compileConstraints(p.Spec.Constraints, &out.constraints)
	c.compilePlugins(p.Spec.Plugins, out)
	return out
}

func (c *compiler) pattern(path, raw string) *pattern {
	pt, err := compilePattern(raw)
	if err != nil {
		c.fail(path, "%v", err)
		return nil
	}
	return &pt
}

func (c *compiler) compileSelector(s *api.CertificateRequestPolicySelector, out *selector) {
	const path = "spec.selector"
	if s.IssuerRef == nil && s.Namespace == nil {
		c.fail(path, "required: set issuerRef or namespace (use issuerRef: {} to select every request)")
		return
	}
	if ir := s.IssuerRef; ir != nil {
		out.issuer = &issuerSelector{}
		if ir.Name != nil {
			out.issuer.name = c.pattern(path+".issuerRef.name", *ir.Name)
		}
		if ir.Kind != nil {
			out.issuer.kind = c.pattern(path+".issuerRef.kind", *ir.Kind)
		}
		if ir.Group != nil {
			out.issuer.group = c.pattern(path+".issuerRef.group", *ir.Group)
		}
	}
	if ns := s.Namespace; ns != nil {
		out.namespace = &namespaceSelector{}
		for i, n := range ns.MatchNames {
			if pt := c.pattern(fmt.Sprintf("%s.namespace.matchNames[%d]", path, i), n); pt != nil {
				out.namespace.names = append(out.namespace.names, *pt)
			}
		}
		for _, k := range sortedKeys(ns.MatchLabels) {
			if k == "" {
				c.fail(path+".namespace.matchLabels", "empty label key")
			}
			out.namespace.labels = append(out.namespace.labels, [2]string{k, ns.MatchLabels[k]})
		}
	}
}

func (c *compiler) compileAllowed(a *api.CertificateRequestPolicyAllowed, out *Compiled) {
	const path = "spec.allowed"
	if a == nil {
		a = &api.CertificateRequestPolicyAllowed{}
	}
	sub := a.Subject
	if sub == nil {
		sub = &api.CertificateRequestPolicyAllowedX509Subject{}
	}
	out.fields = []*stringField{
		c.allowedString(path+".commonName", "common name", attrCommonName, a.CommonName),
		c.allowedSlice(path+".dnsNames", "DNS name", attrDNSNames, a.DNSNames),
		c.allowedSlice(path+".ipAddresses", "IP address", attrIPAddresses, a.IPAddresses),
		c.allowedSlice(path+".uris", "URI", attrURIs, a.URIs),
		c.allowedSlice(path+".emailAddresses", "e-mail address", attrEmailAddresses, a.EmailAddresses),
		c.allowedSlice(path+".subject.organizations", "organization", attrOrganizations, sub.Organizations),
		c.allowedSlice(path+".subject.countries", "country", attrCountries, sub.Countries),
		c.allowedSlice(path+".subject.organizationalUnits", "organizational unit", attrOrganizationalUnits, sub.OrganizationalUnits),
		c.allowedSlice(path+".subject.localities", "locality", attrLocalities, sub.Localities),
		c.allowedSlice(path+".subject.provinces", "province", attrProvinces, sub.Provinces),
		c.allowedSlice(path+".subject.streetAddresses", "street address", attrStreetAddresses, sub.StreetAddresses),
		c.allowedSlice(path+".subject.postalCodes", "postal code", attrPostalCodes, sub.PostalCodes),
		c.allowedString(path+".subject.serialNumber", "subject serial number", attrSerialNumber, sub.SerialNumber),
	}
	for _, f := range out.fields {
		if f.set && (f.values != nil || len(f.rules) > 0) {
			out.allowedMask |= 1 << f.attr
		}
		if f.required {
			out.requiredMask |= 1 << f.attr
		}
		if f.values != nil {
			out.valueFields = append(out.valueFields, f)
		}
		if len(f.rules) > 0 {
			out.ruleFields = append(out.ruleFields, f)
		}
	}
	if a.IsCA != nil {
		out.isCA = a.IsCA.Value
		if a.IsCA.Required != nil {
			c.fail(path+".isCA.required", "not allowed: required cannot be used on isCA (write isCA: true or false)")
		}
	}
	if u := a.Usages; u != nil {
		if u.Required != nil {
			c.fail(path+".usages.required", "not allowed: required cannot be used on usages (write usages as a list)")
		}
		ps := patterns{}
		for i, usage := range u.Values {
			p := fmt.Sprintf("%s.usages[%d]", path, i)
			if !strings.Contains(string(usage), "*") && !knownUsage(usage) {
				c.fail(p, "%q is not a cert-manager key usage", usage)
				continue
			}
			if pt := c.pattern(p, string(usage)); pt != nil {
				ps = append(ps, *pt)
			}
		}
		out.usages = &ps
	}
}

func knownUsage(u api.KeyUsage) bool {
	for _, k := range api.KnownKeyUsages {
		if k == u {
			return true
		}
	}
	return false
}

func (c *compiler) allowedString(path, what string, at attr, s *api.CertificateRequestPolicyAllowedString) *stringField {
	f := &stringField{path: path, what: what, attr: at}
	if s == nil {
		return f
	}
	var values []string
	if s.Value != nil {
		values = []string{*s.Value}
	}
	c.fillField(f, path+".value", s.Value != nil, values, s.Required, s.Validations, false)
	return f
}

func (c *compiler) allowedSlice(path, what string, at attr, s *api.CertificateRequestPolicyAllowedStringSlice) *stringField {
	f := &stringField{path: path, what: what, attr: at}
	if s == nil {
		return f
	}
	var values []string
	if s.Values != nil {
		values = *s.Values
	}
	c.fillField(f, path+".values", s.Values != nil, values, s.Required, s.Validations, true)
	return f
}

func (c *compiler) fillField(f *stringField, valuesPath string, hasValues bool, values []string, required *bool,
	rules []api.ValidationRule, list bool) {
	f.set = true
	if hasValues {
		ps := patterns{}
		for i, v := range values {
			p := valuesPath
			if list {
				p = fmt.Sprintf("%s[%d]", valuesPath, i)
			}
			if f.attr == attrIPAddresses && !strings.Contains(v, "*") {
				ip := net.ParseIP(v)
				if ip == nil {
					c.fail(p, "%q is not an IP address (use \"*\" for a wildcard, e.g. \"10.0.1.*\")", v)
					continue
				}
				v = ip.String() // compare in the form requests are rendered in
			}
			if pt := c.pattern(p, v); pt != nil {
				pt.need = wildcardNeed(f.attr, pt)
				f.need |= pt.need
				ps = append(ps, *pt)
			}
		}
		f.values = &ps
	}
	if required != nil && *required {
		f.required = true
		if !hasValues && len(rules) == 0 {
			c.fail(f.path+".required", "required is only allowed when the field also allows values: set %s or validations",
				valuesPath[strings.LastIndex(valuesPath, ".")+1:])
		}
	}
	for i, r := range rules {
		p := fmt.Sprintf("%s.validations[%d]", f.path, i)
		prg, err := compileRule(r.Rule)
		if err != nil {
			c.fail(p+".rule", "%v", err)
			continue
		}
		msg := "failed rule: " + r.Rule
		if r.Message != nil {
			msg = *r.Message
			if strings.ContainsAny(msg, "\r\n") {
				c.fail(p+".message", "must not contain line breaks")
			}
		} else if strings.ContainsAny(r.Rule, "\r\n") {
			c.fail(p+".message", "required when the rule spans several lines")
		}
		f.rules = append(f.rules, celRule{rule: r.Rule, message: msg, prg: prg})
	}
}

func (c *compiler) compileConstraints(k *api.CertificateRequestPolicyConstraints, out *constraints) {
	if k == nil {
		return
	}
	const path = "spec.constraints"
	if k.MinDuration != nil {
		d := k.MinDuration.Duration
		if d < 0 {
			c.fail(path+".minDuration", "%s is negative", d)
		}
		out.minDuration = &d
	}
	if k.MaxDuration != nil {
		d := k.MaxDuration.Duration
		if d <= 0 {
			c.fail(path+".maxDuration", "%s: must be positive", d)
		}
		out.maxDuration = &d
	}
	if out.minDuration != nil && out.maxDuration != nil && *out.minDuration > *out.maxDuration {
		c.fail(path+".minDuration", "%s is longer than maxDuration %s", *out.minDuration, *out.maxDuration)
	}
	pk := k.PrivateKey
	if pk == nil {
		return
	}
	if pk.Algorithm != nil {
		switch *pk.Algorithm {
		case api.RSAKeyAlgorithm, api.ECDSAKeyAlgorithm, api.Ed25519KeyAlgorithm:
			out.algorithm = *pk.Algorithm
		default:
			c.fail(path+".privateKey.algorithm", "%q: want RSA, ECDSA or Ed25519", *pk.Algorithm)
		}
	}
	if pk.MinSize != nil {
		if *pk.MinSize < 0 {
			c.fail(path+".privateKey.minSize", "%d is negative", *pk.MinSize)
		}
		out.minSize = pk.MinSize
	}
	if pk.MaxSize != nil {
		if *pk.MaxSize <= 0 {
			c.fail(path+".privateKey.maxSize", "%d: must be positive", *pk.MaxSize)
		}
		out.maxSize = pk.MaxSize
	}
	if pk.MinSize != nil && pk.MaxSize != nil && *pk.MinSize > *pk.MaxSize {
		c.fail(path+".privateKey.minSize", "%d is larger than maxSize %d", *pk.MinSize, *pk.MaxSize)
	}
}

func (c *compiler) compilePlugins(m map[string]api.CertificateRequestPolicyPluginData, out *Compiled) {
	for _, name := range sortedKeys(m) {
		path := "spec.plugins." + name
		pl, ok := c.byName[name]
		if !ok {
			c.fail(path, "plugin %q is not registered in this certfn build (registered: %s)", name, c.registered())
			continue
		}
		check, err := pl.Compile(m[name].Values)
		if err != nil {
			c.fail(path+".values", "%v", err)
			continue
		}
		out.plugins = append(out.plugins, compiledPlugin{name: name, check: check})
	}
}

func (c *compiler) registered() string {
	if len(c.byName) == 0 {
		return "none"
	}
	return strings.Join(sortedKeys(c.byName), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
