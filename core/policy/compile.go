package policy

import (
	"encoding/asn1"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/validation"
)

// ErrorList is every problem found in a policy, each with its field path
// (e.g. `spec.allowed.uris.validations[0]: invalid CEL: ...`). It is
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
	// otherNames and otherAttrs are allowed.otherNames and
	// allowed.subject.otherAttributes, in spec order; otherRequired is
	// set when one of them is required (else a request carrying neither
	// passes them at once).
	otherNames, otherAttrs []*stringField
	otherRequired          bool
	constraints            constraints
	plugins                []compiledPlugin
	// filters are necessary conditions of the quick review on the values
	// of the named attributes (filter.go), for the index of a policy list.
	filters []valueFilter
}

// stringField is one compiled allowed.<attr>: commonName, dnsNames, ...,
// or one entry of allowed.otherNames or allowed.subject.otherAttributes
// (attr attrOtherName or attrOtherAttribute, with its oid).
type stringField struct {
	path string // "spec.allowed.dnsNames", "spec.allowed.otherNames[1.2.3]"
	// valuesPath is path.values (path.value for a single field), for
	// messages.
	valuesPath string
	what       string // "DNS name", for messages
	attr       attr   // which request attribute it checks
	oid        string // the OID of an otherNames / otherAttributes entry
	single     bool   // a `value` field (commonName, serialNumber), not `values`
	set        bool   // the field is present in the policy
	values     *patterns
	need       charClass // union of the values' need: what a value must be to skip classOf
	required   bool
	rules      []celRule
}

// allows reports whether the field allows some value (by values or
// validations); a field that does not forbids its attribute.
func (f *stringField) allows() bool {
	return f.set && (f.values != nil || len(f.rules) > 0)
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

	// The attributes of allowed.otherNames and
	// allowed.subject.otherAttributes entries: values grouped by OID,
	// outside Request.attrs and the masks.
	attrOtherName attr = iota
	attrOtherAttribute
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
	out.filters = out.fieldFilters()
	return out, nil
}

// Validate returns every problem in p with its field path, or nil when p
// compiles. It makes approver-policy's admission checks, with its field
// paths: plugins not registered (spec.plugins), no selector, namespace
// matchLabels that are not Kubernetes labels, `required` without values or
// validations (spec.allowed.<field>.values / .value), invalid CEL or rules
// that do not evaluate to a bool (.validations[i]), otherNames and
// otherAttributes OIDs that are not canonical (or, for otherAttributes,
// belong to a named subject field), key size bounds outside 0..8192 or
// inverted, sizes with algorithm Ed25519, unknown key algorithms, negative or
// inverted durations; plus what its API server's schema enforces (unique
// OIDs, unique rules) and certfn's own checks: malformed wildcard patterns,
// IP values that are not IP addresses, unknown usages, `required` on isCA
// or usages, messages with line breaks, plugins rejecting their values.
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

// compile checks and compiles p. Problems are reported in the order
// approver-policy's webhook reports them: plugins, selector, allowed,
// constraints (then certfn's plugin value checks).
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
	c.checkPluginNames(p.Spec.Plugins)
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
		c.fail(path, "required: one of issuerRef or namespace must be defined, hint: `{}` on either matches everything")
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
			v := ns.MatchLabels[k]
			// As Kubernetes' LabelSelectorAsSelector reports them.
			if errs := validation.LabelKey(k); len(errs) > 0 {
				c.fail(path+".namespace.matchLabels", "key: Invalid value: %q: %s", k, strings.Join(errs, "; "))
			} else if errs := validation.LabelValue(v); len(errs) > 0 {
				c.fail(path+".namespace.matchLabels", "values[0][%s]: Invalid value: %q: %s", k, v, strings.Join(errs, "; "))
			}
			out.namespace.labels = append(out.namespace.labels, [2]string{k, v})
		}
	}
}

// compileAllowed compiles spec.allowed. Problems come in the order
// approver-policy's webhook reports them: the list fields, the
// commonName and serialNumber, otherNames, subject.otherAttributes; then
// isCA and usages. out.fields is in the order the evaluator reports
// violations: commonName, the SANs, then the subject.
func (c *compiler) compileAllowed(a *api.CertificateRequestPolicyAllowed, out *Compiled) {
	const path = "spec.allowed"
	if a == nil {
		a = &api.CertificateRequestPolicyAllowed{}
	}
	sub := a.Subject
	if sub == nil {
		sub = &api.CertificateRequestPolicyAllowedX509Subject{}
	}
	dns := c.allowedSlice(path+".dnsNames", "DNS name", attrDNSNames, a.DNSNames)
	ips := c.allowedSlice(path+".ipAddresses", "IP address", attrIPAddresses, a.IPAddresses)
	uris := c.allowedSlice(path+".uris", "URI", attrURIs, a.URIs)
	emails := c.allowedSlice(path+".emailAddresses", "e-mail address", attrEmailAddresses, a.EmailAddresses)
	orgs := c.allowedSlice(path+".subject.organizations", "organization", attrOrganizations, sub.Organizations)
	countries := c.allowedSlice(path+".subject.countries", "country", attrCountries, sub.Countries)
	ous := c.allowedSlice(path+".subject.organizationalUnits", "organizational unit", attrOrganizationalUnits, sub.OrganizationalUnits)
	localities := c.allowedSlice(path+".subject.localities", "locality", attrLocalities, sub.Localities)
	provinces := c.allowedSlice(path+".subject.provinces", "province", attrProvinces, sub.Provinces)
	streets := c.allowedSlice(path+".subject.streetAddresses", "street address", attrStreetAddresses, sub.StreetAddresses)
	postal := c.allowedSlice(path+".subject.postalCodes", "postal code", attrPostalCodes, sub.PostalCodes)
	cn := c.allowedString(path+".commonName", "common name", attrCommonName, a.CommonName)
	serial := c.allowedString(path+".subject.serialNumber", "subject serial number", attrSerialNumber, sub.SerialNumber)
	out.fields = []*stringField{cn, dns, ips, uris, emails, orgs, countries, ous, localities, provinces, streets, postal, serial}
	for _, f := range out.fields {
		if f.allows() {
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
	out.otherNames = c.oidFields(path+".otherNames", "otherName", attrOtherName, otherNameEntries(a.OtherNames))
	out.otherAttrs = c.oidFields(path+".subject.otherAttributes", "subject attribute", attrOtherAttribute, otherAttributeEntries(sub.OtherAttributes))
	for _, f := range append(slices.Clone(out.otherNames), out.otherAttrs...) {
		out.otherRequired = out.otherRequired || f.required
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
	return slices.Contains(api.KnownKeyUsages, u)
}

func (c *compiler) allowedString(path, what string, at attr, s *api.CertificateRequestPolicyAllowedString) *stringField {
	f := &stringField{path: path, what: what, attr: at, single: true}
	if s == nil {
		return f
	}
	var values []string
	if s.Value != nil {
		values = []string{*s.Value}
	}
	c.fillField(f, s.Value != nil, values, s.Required, s.Validations)
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
	c.fillField(f, s.Values != nil, values, s.Required, s.Validations)
	return f
}

// oidEntry is one entry of allowed.otherNames or
// allowed.subject.otherAttributes (the two have the same fields).
type oidEntry struct {
	oid         string
	values      *[]string
	required    *bool
	validations []api.ValidationRule
}

func otherNameEntries(l []api.CertificateRequestPolicyAllowedOtherName) []oidEntry {
	out := make([]oidEntry, len(l))
	for i, e := range l {
		out[i] = oidEntry{e.OID, e.Values, e.Required, e.Validations}
	}
	return out
}

func otherAttributeEntries(l []api.CertificateRequestPolicyAllowedSubjectOtherAttribute) []oidEntry {
	out := make([]oidEntry, len(l))
	for i, e := range l {
		out[i] = oidEntry{e.OID, e.Values, e.Required, e.Validations}
	}
	return out
}

// oidFields compiles the entries of allowed.otherNames (at attrOtherName)
// or allowed.subject.otherAttributes: each OID canonical and unique (the
// list is keyed by oid), an otherAttributes OID not one of a named subject
// field; values, required and validations as for the list fields. Problems
// are reported at list[i]; the compiled field's path is list[<oid>], as
// approver-policy names it when evaluating.
func (c *compiler) oidFields(list, what string, at attr, entries []oidEntry) []*stringField {
	var out []*stringField
	seen := map[string]bool{}
	for i, e := range entries {
		p := fmt.Sprintf("%s[%d]", list, i)
		f := &stringField{path: list + "[" + e.oid + "]", what: what, attr: at, oid: e.oid}
		oid, err := parseOID(e.oid)
		switch {
		case err != nil:
			c.fail(p+".oid", "%q: %v", e.oid, err)
		case at == attrOtherAttribute && namedSubjectOID(oid):
			c.fail(p+".oid", "%q: this OID is covered by a dedicated allowed.commonName / allowed.subject.* field; configure it there instead of otherAttributes", e.oid)
		case seen[e.oid]:
			c.fail(p, "Duplicate value: oid %q is listed more than once", e.oid)
		}
		seen[e.oid] = true
		var values []string
		if e.values != nil {
			values = *e.values
		}
		c.fillFieldAt(f, p, e.values != nil, values, e.required, e.validations)
		out = append(out, f)
	}
	return out
}

// fillField compiles a field's values, required and validations; problems
// are reported under the field's path.
func (c *compiler) fillField(f *stringField, hasValues bool, values []string, required *bool, rules []api.ValidationRule) {
	c.fillFieldAt(f, f.path, hasValues, values, required, rules)
}

// fillFieldAt is fillField reporting problems under path: `required`
// without values or validations at path.values (path.value for a single
// field), patterns at path.values[i], rules at path.validations[i].
func (c *compiler) fillFieldAt(f *stringField, path string, hasValues bool, values []string, required *bool, rules []api.ValidationRule) {
	f.set = true
	f.valuesPath = f.path + valuesSuffix(f.single)
	valuesPath := path + valuesSuffix(f.single)
	if hasValues {
		ps := patterns{}
		for i, v := range values {
			p := valuesPath
			if !f.single {
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
			c.fail(valuesPath, "required: at least one of '%s' or 'validations' must be defined if field is 'required'",
				valuesPath[strings.LastIndex(valuesPath, ".")+1:])
		}
	}
	seen := map[string]bool{}
	for i, r := range rules {
		p := fmt.Sprintf("%s.validations[%d]", path, i)
		if seen[r.Rule] {
			c.fail(p, "Duplicate value: rule %q is listed more than once", r.Rule)
		}
		seen[r.Rule] = true
		rule, err := compileCELRule(r.Rule)
		if err != nil {
			c.fail(p, "%v", err)
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
		rule.message = msg
		f.rules = append(f.rules, rule)
	}
}

// maxKeySize is the largest privateKey.minSize and maxSize
// approver-policy accepts.
const maxKeySize = 8192

// compileConstraints compiles spec.constraints, with approver-policy's
// checks in its order: algorithm, sizes (with Ed25519, in 0..8192,
// ordered), durations (ordered, not negative).
func (c *compiler) compileConstraints(k *api.CertificateRequestPolicyConstraints, out *constraints) {
	if k == nil {
		return
	}
	const path = "spec.constraints"
	if pk := k.PrivateKey; pk != nil {
		if pk.Algorithm != nil {
			switch *pk.Algorithm {
			case api.RSAKeyAlgorithm, api.ECDSAKeyAlgorithm, api.Ed25519KeyAlgorithm:
				out.algorithm = *pk.Algorithm
			default:
				c.fail(path+".privateKey.algorithm", "Unsupported value: %q: supported values: \"RSA\", \"ECDSA\", \"Ed25519\"", *pk.Algorithm)
			}
			if *pk.Algorithm == api.Ed25519KeyAlgorithm {
				if pk.MaxSize != nil {
					c.fail(path+".privateKey.maxSize", "%d: maxSize cannot be defined with algorithm constraint Ed25519", *pk.MaxSize)
				}
				if pk.MinSize != nil {
					c.fail(path+".privateKey.minSize", "%d: minSize cannot be defined with algorithm constraint Ed25519", *pk.MinSize)
				}
			}
		}
		if pk.MaxSize != nil && (*pk.MaxSize < 0 || *pk.MaxSize > maxKeySize) {
			c.fail(path+".privateKey.maxSize", "%d: must be between 0 and %d inclusive", *pk.MaxSize, maxKeySize)
		}
		if pk.MinSize != nil && (*pk.MinSize < 0 || *pk.MinSize > maxKeySize) {
			c.fail(path+".privateKey.minSize", "%d: must be between 0 and %d inclusive", *pk.MinSize, maxKeySize)
		}
		if pk.MinSize != nil && pk.MaxSize != nil && *pk.MaxSize < *pk.MinSize {
			c.fail(path+".privateKey.maxSize", "%d: maxSize must be the same value as minSize (%d) or larger", *pk.MaxSize, *pk.MinSize)
		}
		out.minSize, out.maxSize = pk.MinSize, pk.MaxSize
	}
	if k.MinDuration != nil {
		d := k.MinDuration.Duration
		out.minDuration = &d
	}
	if k.MaxDuration != nil {
		d := k.MaxDuration.Duration
		out.maxDuration = &d
	}
	if out.minDuration != nil && out.maxDuration != nil && *out.maxDuration < *out.minDuration {
		c.fail(path+".maxDuration", "%s: maxDuration must be the same value as minDuration (%s) or larger", *out.maxDuration, *out.minDuration)
	}
	if out.maxDuration != nil && *out.maxDuration < 0 {
		c.fail(path+".maxDuration", "%s: maxDuration must be a value greater or equal to 0", *out.maxDuration)
	}
	if out.minDuration != nil && *out.minDuration < 0 {
		c.fail(path+".minDuration", "%s: minDuration must be a value greater or equal to 0", *out.minDuration)
	}
}

// checkPluginNames reports each plugin p names that this build does not
// register, in name order, as approver-policy's webhook does.
func (c *compiler) checkPluginNames(m map[string]api.CertificateRequestPolicyPluginData) {
	for _, name := range sortedKeys(m) {
		if _, ok := c.byName[name]; !ok {
			c.fail("spec.plugins", "Unsupported value: %q: supported values: %s (the plugins registered in this certfn build)", name, c.registered())
		}
	}
}

// compilePlugins compiles the configuration of every registered plugin p
// names (unregistered ones were reported by checkPluginNames).
func (c *compiler) compilePlugins(m map[string]api.CertificateRequestPolicyPluginData, out *Compiled) {
	for _, name := range sortedKeys(m) {
		pl, ok := c.byName[name]
		if !ok {
			continue
		}
		check, err := pl.Compile(m[name].Values)
		if err != nil {
			c.fail("spec.plugins."+name+".values", "%v", err)
			continue
		}
		out.plugins = append(out.plugins, compiledPlugin{name: name, check: check})
	}
}

// registered lists the registered plugin names, quoted, or "none".
func (c *compiler) registered() string {
	if len(c.byName) == 0 {
		return "none"
	}
	names := sortedKeys(c.byName)
	for i, n := range names {
		names[i] = strconv.Quote(n)
	}
	return strings.Join(names, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parseOID parses a dotted object identifier as approver-policy does
// (cert-manager's ParseObjectIdentifier): at least two arcs, each a
// decimal integer; it must be canonical (the form it prints in: no
// leading zeros or signs) and its arcs non-negative, since requests' OIDs
// are compared by that form.
func parseOID(s string) (asn1.ObjectIdentifier, error) {
	const want = "must be a valid, canonical dotted ASN.1 object identifier (e.g. \"1.3.6.1.4.1.311.20.2.3\")"
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return nil, errors.New(want)
	}
	oid := make(asn1.ObjectIdentifier, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, errors.New(want)
		}
		oid[i] = n
	}
	if oid.String() != s {
		return nil, errors.New(want)
	}
	for _, arc := range oid {
		if arc < 0 {
			return nil, errors.New("OID arcs must be non-negative")
		}
	}
	return oid, nil
}
