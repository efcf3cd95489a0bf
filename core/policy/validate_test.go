package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// fakePlugin is a test plugin: it rejects the values key "bad" at compile
// time and, per request, reports every DNS name equal to values["deny"].
type fakePlugin struct{ name string }

func (p fakePlugin) Name() string { return p.name }

func (p fakePlugin) Compile(values map[string]string) (PluginCheck, error) {
	if v, ok := values["bad"]; ok {
		return nil, errors.New("bad: " + v + " is not accepted")
	}
	return fakeCheck(values["deny"]), nil
}

type fakeCheck string

func (c fakeCheck) Check(_ context.Context, r *Request) []string {
	var out []string
	for _, n := range r.DNSNames {
		if n == string(c) {
			out = append(out, "DNS name "+n+" is denied by the fake plugin")
		}
	}
	return out
}

func TestValidateBadInput(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want []string // "path: rule substring", each must appear
	}{
		{"no selector", `
allowed:
  commonName: {value: "*"}
`, []string{"spec.selector: required: one of issuerRef or namespace must be defined, hint: `{}` on either matches everything"}},
		{"empty selector object", `selector: {}`, []string{"spec.selector: required"}},
		{"invalid CEL", `
allowed:
  uris:
    validations:
      - rule: "self.startsWith("
selector: {issuerRef: {}}
`, []string{"spec.allowed.uris.validations[0]: invalid CEL: ERROR: <input>:1:17: Syntax error"}},
		{"CEL typo in cr field", `
allowed:
  dnsNames:
    validations:
      - rule: "self.endsWith(cr.namspace)"
selector: {issuerRef: {}}
`, []string{"spec.allowed.dnsNames.validations[0]: invalid CEL: ERROR: <input>:1:17: undefined field 'namspace'"}},
		{"CEL rule not a bool", `
allowed:
  commonName:
    validations:
      - rule: "self + 'x'"
selector: {issuerRef: {}}
`, []string{"spec.allowed.commonName.validations[0]: rule must evaluate to a bool, not string"}},
		{"empty rule", `
allowed:
  commonName:
    validations:
      - rule: " "
selector: {issuerRef: {}}
`, []string{"spec.allowed.commonName.validations[0]: empty rule"}},
		{"message with a line break", `
allowed:
  commonName:
    validations:
      - rule: "true"
        message: "one\ntwo"
selector: {issuerRef: {}}
`, []string{"spec.allowed.commonName.validations[0].message: must not contain line breaks"}},
		{"multi-line rule needs a message", `
allowed:
  commonName:
    validations:
      - rule: "self ==\n'a'"
selector: {issuerRef: {}}
`, []string{"spec.allowed.commonName.validations[0].message: required when the rule spans several lines"}},
		{"malformed wildcards everywhere", `
allowed:
  dnsNames:
    values: ["ok.example.com", "**.example.com"]
  commonName:
    value: " example.com"
selector:
  issuerRef:
    name: "a**"
    kind: "Issuer\t"
  namespace:
    matchNames: ["team-**"]
`, []string{
			`spec.allowed.dnsNames.values[1]: malformed wildcard "**.example.com"`,
			`spec.allowed.commonName.value: pattern " example.com" has leading or trailing white space`,
			`spec.selector.issuerRef.name: malformed wildcard "a**"`,
			`spec.selector.issuerRef.kind: pattern "Issuer\t" contains a control character`,
			`spec.selector.namespace.matchNames[0]: malformed wildcard "team-**"`,
		}},
		{"required on isCA", `
allowed:
  isCA:
    value: true
    required: true
selector: {issuerRef: {}}
`, []string{"spec.allowed.isCA.required: not allowed: required cannot be used on isCA"}},
		{"required on usages", `
allowed:
  usages:
    values: ["server auth"]
    required: true
selector: {issuerRef: {}}
`, []string{"spec.allowed.usages.required: not allowed: required cannot be used on usages"}},
		{"required without values", `
allowed:
  dnsNames:
    required: true
  subject:
    serialNumber:
      required: true
selector: {issuerRef: {}}
`, []string{"spec.allowed.dnsNames.values: required: at least one of 'values' or 'validations' must be defined if field is 'required'",
			"spec.allowed.subject.serialNumber.value: required: at least one of 'value' or 'validations' must be defined if field is 'required'"}},
		{"unknown usage", `
allowed:
  usages: ["server auth", "server-auth", "*sign*"]
selector: {issuerRef: {}}
`, []string{`spec.allowed.usages[1]: "server-auth" is not a cert-manager key usage`}},
		{"not an IP", `
allowed:
  ipAddresses:
    values: ["10.0.0.1", "10.0.0.256", "example.com"]
selector: {issuerRef: {}}
`, []string{`spec.allowed.ipAddresses.values[1]: "10.0.0.256" is not an IP address`,
			`spec.allowed.ipAddresses.values[2]: "example.com" is not an IP address`}},
		{"inverted durations", `
constraints:
  minDuration: 48h
  maxDuration: 24h
selector: {issuerRef: {}}
`, []string{"spec.constraints.maxDuration: 24h0m0s: maxDuration must be the same value as minDuration (48h0m0s) or larger"}},
		{"negative durations", `
constraints:
  minDuration: -1m
  maxDuration: -2m
selector: {issuerRef: {}}
`, []string{"spec.constraints.maxDuration: -2m0s: maxDuration must be the same value as minDuration (-1m0s) or larger",
			"spec.constraints.maxDuration: -2m0s: maxDuration must be a value greater or equal to 0",
			"spec.constraints.minDuration: -1m0s: minDuration must be a value greater or equal to 0"}},
		{"key constraints", `
constraints:
  privateKey:
    algorithm: DSA
    minSize: 4096
    maxSize: 2048
selector: {issuerRef: {}}
`, []string{`spec.constraints.privateKey.algorithm: Unsupported value: "DSA": supported values: "RSA", "ECDSA", "Ed25519"`,
			"spec.constraints.privateKey.maxSize: 2048: maxSize must be the same value as minSize (4096) or larger"}},
		{"unknown plugin", `
plugins:
  nope: {values: {a: b}}
selector: {issuerRef: {}}
`, []string{`spec.plugins: Unsupported value: "nope": supported values: "fake" (the plugins registered in this certfn build)`}},
		{"plugin rejects its values", `
plugins:
  fake: {values: {bad: "x"}}
selector: {issuerRef: {}}
`, []string{"spec.plugins.fake.values: bad: x is not accepted"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := policyYAML(t, "p", tc.spec)
			errs := Validate(p, fakePlugin{name: "fake"})
			if len(errs) == 0 {
				t.Fatalf("Validate found nothing, want %v", tc.want)
			}
			var lines []string
			for _, e := range errs {
				lines = append(lines, e.Path+": "+e.Rule)
			}
			all := strings.Join(lines, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("errors lack %q; got:\n%s", w, all)
				}
			}
			if len(errs) != len(tc.want) {
				t.Errorf("got %d errors, want %d:\n%s", len(errs), len(tc.want), all)
			}
			// Compile reports the same list, and it names the policy.
			if _, err := Compile(p, fakePlugin{name: "fake"}); err == nil || !strings.Contains(err.Error(), "CertificateRequestPolicy p: ") {
				t.Errorf("Compile error %v does not name the policy", err)
			}
		})
	}
}

func TestValidateAcceptsValidPolicies(t *testing.T) {
	for name, spec := range map[string]string{
		"seed all allowed": seedAllAllowed,
		"usage wildcards and empty lists": `
allowed:
  usages: ["*"]
  dnsNames:
    values: []
    required: true
  commonName:
    value: ""
  ipAddresses:
    values: ["::1", "2001:db8::*"]
selector:
  namespace: {}
`,
		"CEL on identity": `
allowed:
  dnsNames:
    validations:
      - rule: "'team-a' in cr.groups && cr.username != '' && cr.uid == '' && size(cr.extra) >= 0 && cr.name != ''"
selector:
  issuerRef: {}
`,
	} {
		t.Run(name, func(t *testing.T) {
			if errs := Validate(policyYAML(t, "p", spec)); errs != nil {
				t.Fatalf("Validate: %v", errs)
			}
		})
	}
}

func TestValidateNil(t *testing.T) {
	if errs := Validate(nil); len(errs) != 1 {
		t.Fatalf("Validate(nil) = %v", errs)
	}
	p := policyYAML(t, "x", "selector: {issuerRef: {}}")
	p.Name = ""
	if errs := Validate(p); len(errs) != 1 || errs[0].Path != "metadata.name" {
		t.Fatalf("Validate(no name) = %v", errs)
	}
}

func TestIPValuesAreCanonicalised(t *testing.T) {
	p := policyYAML(t, "ip", `
allowed:
  ipAddresses:
    values: ["0:0:0:0:0:0:0:1", "2001:DB8::1"]
selector: {issuerRef: {}}
`)
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "::1 written long", cr: newCR(t, csr(ips("::1"))), want: Approved},
		{name: "upper-case hex", cr: newCR(t, csr(ips("2001:db8::1"))), want: Approved},
		{name: "another address", cr: newCR(t, csr(ips("2001:db8::2"))), want: Denied},
	})
}
