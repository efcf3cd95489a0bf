package policy

import (
	"testing"
)

// Transcribed from approver-policy (upstreamCommit): the admission checks
// of pkg/internal/approver/allowed/validation_test.go,
// pkg/internal/approver/constraints/validation_test.go and
// pkg/internal/webhook/validator_test.go. certfn makes them in Validate
// (Compile), which `certfn apply` runs (core/app.Service.Apply).

const requiredValuesRule = "at least one of 'values' or 'validations' must be defined if field is 'required'"

// pkg/internal/approver/allowed/validation_test.go: Test_Validate.
func TestUpstreamAllowedValidate(t *testing.T) {
	undeclaredCEL := "ERROR: <input>:1:1: undeclared reference to 'cel' (in container '')"
	canonical := `must be a valid, canonical dotted ASN.1 object identifier (e.g. "1.3.6.1.4.1.311.20.2.3")`
	runUpstreamValidate(t, true, []upstreamValidate{
		{name: "if policy contains no allowed, expect a Allowed=true response", spec: ``},
		{name: "if policy contains 'required' validation errors, expect an Allowed=false response", spec: `
allowed:
  commonName: {required: true}
  dnsNames: {required: true}
  ipAddresses: {required: true}
  uris: {required: true}
  emailAddresses: {required: true}
  subject:
    organizations: {required: true}
    countries: {required: true}
    organizationalUnits: {required: true}
    localities: {required: true}
    provinces: {required: true}
    streetAddresses: {required: true}
    postalCodes: {required: true}
    serialNumber: {required: true}
`, want: []pathRule{
			{"spec.allowed.dnsNames.values", requiredValuesRule},
			{"spec.allowed.ipAddresses.values", requiredValuesRule},
			{"spec.allowed.uris.values", requiredValuesRule},
			{"spec.allowed.emailAddresses.values", requiredValuesRule},
			{"spec.allowed.subject.organizations.values", requiredValuesRule},
			{"spec.allowed.subject.countries.values", requiredValuesRule},
			{"spec.allowed.subject.organizationalUnits.values", requiredValuesRule},
			{"spec.allowed.subject.localities.values", requiredValuesRule},
			{"spec.allowed.subject.provinces.values", requiredValuesRule},
			{"spec.allowed.subject.streetAddresses.values", requiredValuesRule},
			{"spec.allowed.subject.postalCodes.values", requiredValuesRule},
			{"spec.allowed.commonName.value", "at least one of 'value' or 'validations' must be defined if field is 'required'"},
			{"spec.allowed.subject.serialNumber.value", "at least one of 'value' or 'validations' must be defined if field is 'required'"},
		}},
		{name: "if policy contains all non-subject required and they have values, expect a Allowed=true response", spec: `
allowed:
  commonName: {required: true, value: ""}
  dnsNames: {required: true, values: []}
  ipAddresses: {required: true, values: []}
  uris: {required: true, values: []}
  emailAddresses: {required: true, values: []}
  subject:
    organizations: {required: false, values: []}
    countries: {required: false, values: []}
    organizationalUnits: {required: false, values: []}
    localities: {required: false, values: []}
    provinces: {required: false}
    streetAddresses: {required: false, values: []}
    postalCodes: {required: false}
    serialNumber: {required: true, value: ""}
`},
		{name: "if policy contains all required but values are defined, expect a Allowed=true response", spec: `
allowed:
  commonName: {required: true, value: ""}
  dnsNames: {required: true, values: []}
  ipAddresses: {required: true, values: []}
  uris: {required: true, values: []}
  emailAddresses: {required: true, values: []}
  subject:
    organizations: {required: true, values: []}
    countries: {required: true, values: []}
    organizationalUnits: {required: true, values: []}
    localities: {required: true, values: []}
    provinces: {required: true, values: []}
    streetAddresses: {required: true, values: []}
    postalCodes: {required: true, values: []}
    serialNumber: {required: true, value: ""}
`},
		{name: "if policy contains invalid CEL validations, expect an Allowed=false response", spec: `
allowed:
  commonName: {validations: [{rule: "cel"}]}
  dnsNames: {validations: [{rule: "self > 2"}]}
  ipAddresses: {validations: [{rule: "self && false"}]}
  uris: {validations: [{rule: "self.exists(x, p)"}]}
  emailAddresses: {validations: [{rule: "self"}]}
  subject:
    organizations: {validations: [{rule: "self == '"}]}
    countries: {validations: [{rule: "self.length < 24"}]}
    organizationalUnits: {validations: [{rule: ""}]}
    localities: {validations: [{rule: "cr.name[1] > 2"}]}
    provinces: {validations: [{rule: "cel"}]}
    streetAddresses: {validations: [{rule: "cel"}]}
    postalCodes: {validations: [{rule: "cel"}]}
    serialNumber: {validations: [{rule: "cel"}]}
`, want: []pathRule{
			{"spec.allowed.dnsNames.validations[0]", "ERROR: <input>:1:6: found no matching overload for '_>_' applied to '(string, int)'"},
			{"spec.allowed.ipAddresses.validations[0]", "ERROR: <input>:1:1: expected type 'bool' but found 'string'"},
			{"spec.allowed.uris.validations[0]", "expression of type 'string' cannot be range of a comprehension (must be list, map, or dynamic)"},
			// approver-policy: "got string, wanted bool result type"
			{"spec.allowed.emailAddresses.validations[0]", "rule must evaluate to a bool, not string"},
			{"spec.allowed.subject.organizations.validations[0]", "ERROR: <input>:1:9: Syntax error: token recognition error at: '''"},
			{"spec.allowed.subject.countries.validations[0]", "ERROR: <input>:1:5: type 'string' does not support field selection"},
			// approver-policy: CEL's syntax error for the empty expression
			{"spec.allowed.subject.organizationalUnits.validations[0]", "empty rule"},
			{"spec.allowed.subject.localities.validations[0]", "ERROR: <input>:1:8: found no matching overload for '_[_]' applied to '(string, int)'"},
			{"spec.allowed.subject.provinces.validations[0]", undeclaredCEL},
			{"spec.allowed.subject.streetAddresses.validations[0]", undeclaredCEL},
			{"spec.allowed.subject.postalCodes.validations[0]", undeclaredCEL},
			{"spec.allowed.commonName.validations[0]", undeclaredCEL},
			{"spec.allowed.subject.serialNumber.validations[0]", undeclaredCEL},
		}},
		{name: "if policy contains valid CEL validations, expect a Allowed=true response", spec: `
allowed:
  commonName: {validations: [{rule: "self.size() > 2"}]}
  dnsNames: {validations: [{rule: "self.size() > 2"}]}
  ipAddresses: {validations: [{rule: "self.size() > 2"}]}
  uris: {validations: [{rule: "self.size() > 2"}]}
  emailAddresses: {validations: [{rule: "self.size() > 2"}]}
  subject:
    organizations: {validations: [{rule: "self.size() > 2"}]}
    countries: {validations: [{rule: "self.size() > 2"}]}
    organizationalUnits: {validations: [{rule: "self.size() > 2"}]}
    localities: {validations: [{rule: "self.size() > 2"}]}
    provinces: {validations: [{rule: "self.size() > 2"}]}
    streetAddresses: {validations: [{rule: "self.size() > 2"}]}
    postalCodes: {validations: [{rule: "self.size() > 2"}]}
    serialNumber: {validations: [{rule: "self.size() > 2"}]}
`},
		{name: "if policy contains invalid allowed.otherNames entries, expect an Allowed=false response", spec: `
allowed:
  otherNames:
    - {oid: "1.3.6.1.4.1.311.20.2.3", required: true}
    - {oid: "1.2.840.113549.1.9.1", validations: [{rule: "cel"}]}
`, want: []pathRule{
			{"spec.allowed.otherNames[0].values", requiredValuesRule},
			{"spec.allowed.otherNames[1].validations[0]", undeclaredCEL},
		}},
		{name: "if policy contains valid allowed.otherNames entries, expect a Allowed=true response", spec: `
allowed:
  otherNames:
    - {oid: "1.3.6.1.4.1.311.20.2.3", required: true, values: ["*@example.com"], validations: [{rule: "self.size() > 2"}]}
`},
		{name: "if allowed.otherNames has a malformed or non-canonical OID, expect an Allowed=false response", spec: `
allowed:
  otherNames:
    - {oid: "1.3.6.1.4.1.311.20.02.3", values: ["*"]}
    - {oid: "not-an-oid", values: ["*"]}
`, want: []pathRule{
			{"spec.allowed.otherNames[0].oid", canonical},
			{"spec.allowed.otherNames[1].oid", canonical},
		}},
		{name: "if policy contains invalid allowed.subject.otherAttributes entries, expect an Allowed=false response", spec: `
allowed:
  subject:
    otherAttributes:
      - {oid: "1.2.840.113549.1.9.1", required: true}
      - {oid: "0.9.2342.19200300.100.1.25", validations: [{rule: "cel"}]}
`, want: []pathRule{
			{"spec.allowed.subject.otherAttributes[0].values", requiredValuesRule},
			{"spec.allowed.subject.otherAttributes[1].validations[0]", undeclaredCEL},
		}},
		{name: "if policy contains valid allowed.subject.otherAttributes entries, expect a Allowed=true response", spec: `
allowed:
  subject:
    otherAttributes:
      - {oid: "1.2.840.113549.1.9.1", required: true, values: ["*@example.com"], validations: [{rule: "self.size() > 2"}]}
`},
		{name: "if allowed.subject.otherAttributes has a named or malformed OID, expect an Allowed=false response", spec: `
allowed:
  subject:
    otherAttributes:
      - {oid: "2.5.4.3", values: ["*"]}
      - {oid: "1.2.3.04", values: ["*"]}
      - {oid: "not-an-oid", values: ["*"]}
      - {oid: "1.2.3.-4", values: ["*"]}
`, want: []pathRule{
			{"spec.allowed.subject.otherAttributes[0].oid", "this OID is covered by a dedicated allowed.commonName / allowed.subject.* field; configure it there instead of otherAttributes"},
			{"spec.allowed.subject.otherAttributes[1].oid", canonical},
			{"spec.allowed.subject.otherAttributes[2].oid", canonical},
			{"spec.allowed.subject.otherAttributes[3].oid", "OID arcs must be non-negative"},
		}},
	})
}

// pkg/internal/approver/constraints/validation_test.go: Test_Validate.
func TestUpstreamConstraintsValidate(t *testing.T) {
	runUpstreamValidate(t, true, []upstreamValidate{
		{name: "if policy contains no constraints, expect a Allowed=true response", spec: ``},
		{name: "if policy contains validation errors, expect a Allowed=false response", spec: `
constraints:
  privateKey: {algorithm: bad-alg, minSize: 9999, maxSize: -1}
  minDuration: -1m
  maxDuration: -2m
`, want: []pathRule{
			{"spec.constraints.privateKey.algorithm", `Unsupported value: "bad-alg": supported values: "RSA", "ECDSA", "Ed25519"`},
			{"spec.constraints.privateKey.maxSize", "-1: must be between 0 and 8192 inclusive"},
			{"spec.constraints.privateKey.minSize", "9999: must be between 0 and 8192 inclusive"},
			{"spec.constraints.privateKey.maxSize", "-1: maxSize must be the same value as minSize"},
			{"spec.constraints.maxDuration", "-2m0s: maxDuration must be the same value as minDuration"},
			{"spec.constraints.maxDuration", "-2m0s: maxDuration must be a value greater or equal to 0"},
			{"spec.constraints.minDuration", "-1m0s: minDuration must be a value greater or equal to 0"},
		}},
		{name: "if policy is using Ed25519 constraints but defined min and max key sizes, expect a Allowed=false response", spec: `
constraints:
  privateKey: {algorithm: Ed25519, minSize: 100, maxSize: 500}
`, want: []pathRule{
			{"spec.constraints.privateKey.maxSize", "500: maxSize cannot be defined with algorithm constraint Ed25519"},
			{"spec.constraints.privateKey.minSize", "100: minSize cannot be defined with algorithm constraint Ed25519"},
		}},
		{name: "if policy contains no validation errors, expect a Allowed=true response", spec: `
constraints:
  privateKey: {algorithm: RSA, minSize: 100, maxSize: 500}
  minDuration: 0s
  maxDuration: 2m
`},
	})
}

// pkg/internal/webhook/validator_test.go: Test_validate. Upstream's fake
// webhooks map to plugins (a registered plugin is certfn's only other
// admission check); its cases with warnings, or a refusal without detail,
// have no certfn equivalent (see upstream_test.go).
func TestUpstreamWebhookValidate(t *testing.T) {
	const noSelector = "required: one of issuerRef or namespace must be defined, hint: `{}` on either matches everything"
	t.Run("registered foo and baz", func(t *testing.T) {
		runUpstreamValidate(t, false, []upstreamValidate{
			{name: "if the CertificateRequestPolicy refers to a plugin that is not registered return an error",
				spec: `plugins: {foo: {}, bar: {}}`,
				want: []pathRule{{"spec.plugins", `Unsupported value: "bar": supported values: "baz", "foo"`}, {"spec.selector", noSelector}}},
		}, fakePlugin{name: "foo"}, fakePlugin{name: "baz"})
	})
	runUpstreamValidate(t, false, []upstreamValidate{
		{name: "if neither issuer ref nor namespace are defined, return error",
			spec: `plugins: {foo: {}, bar: {}}`,
			want: []pathRule{{"spec.selector", noSelector}}},
		{name: "if an invalid namespace label selector is defined, return error",
			spec: `
plugins: {foo: {}, bar: {}}
selector: {namespace: {matchLabels: {"$%234": "8dsdk"}}}
`, want: []pathRule{{"spec.selector.namespace.matchLabels", `key: Invalid value: "$%234": name part must consist of alphanumeric characters, '-', '_' or '.', ` +
				`and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}}},
		// Mapped: upstream's webhook that does not allow the policy, and
		// its webhook that errors, are a plugin rejecting its values.
		{name: "if a registered webhook does not allow CertificateRequestPolicy, return an error",
			spec: `
plugins: {foo: {}, bar: {values: {bad: "some error occurred"}}}
selector: {namespace: {matchLabels: {foo: bar}}}
`, want: []pathRule{{"spec.plugins.bar.values", "bad: some error occurred is not accepted"}}},
		{name: "if a registered webhook errors when validating CertificateRequestPolicy, return an error",
			spec: `
plugins: {foo: {values: {bad: "some error"}}, bar: {}}
selector: {namespace: {matchLabels: {foo: bar}}}
`, want: []pathRule{{"spec.plugins.foo.values", "bad: some error is not accepted"}}},
		{name: "if a  CertificateRequestPolicy with a defined issuer ref passes validation, allow it",
			spec: `
plugins: {foo: {}, bar: {}}
selector: {issuerRef: {}}
`},
		{name: "if a  CertificateRequestPolicy with a defined namespace selector passes validation, allow it",
			spec: `
plugins: {foo: {}, bar: {}}
selector: {namespace: {}}
`},
	}, fakePlugin{name: "foo"}, fakePlugin{name: "bar"})
}

// What approver-policy's API server schema refuses before its webhook
// runs (the CRD's list-map keys: oid, rule; rule required), which certfn
// checks in the same Validate.
func TestValidateSchemaRules(t *testing.T) {
	runUpstreamValidate(t, true, []upstreamValidate{
		{name: "otherNames OIDs are unique", spec: `
allowed:
  otherNames:
    - {oid: "1.3.6.1.4.1.311.20.2.3", values: ["a"]}
    - {oid: "1.3.6.1.4.1.311.20.2.3", values: ["b"]}
`, want: []pathRule{{"spec.allowed.otherNames[1]", `Duplicate value: oid "1.3.6.1.4.1.311.20.2.3"`}}},
		{name: "otherAttributes OIDs are unique", spec: `
allowed:
  subject:
    otherAttributes:
      - {oid: "1.2.840.113549.1.9.1", values: ["a"]}
      - {oid: "1.2.840.113549.1.9.1", values: ["b"]}
`, want: []pathRule{{"spec.allowed.subject.otherAttributes[1]", `Duplicate value: oid "1.2.840.113549.1.9.1"`}}},
		{name: "rules are unique in a validations list", spec: `
allowed:
  dnsNames:
    validations: [{rule: "self != ''"}, {rule: "self != ''", message: "again"}]
`, want: []pathRule{{"spec.allowed.dnsNames.validations[1]", `Duplicate value: rule "self != ''"`}}},
		{name: "a rule is required", spec: `
allowed:
  otherNames: [{oid: "1.2.3.4", validations: [{message: "no rule"}]}]
`, want: []pathRule{{"spec.allowed.otherNames[0].validations[0]", "empty rule"}}},
	})
	runUpstreamValidate(t, false, []upstreamValidate{
		{name: "matchLabels values are label values", spec: `
selector: {namespace: {matchLabels: {team: "a b"}}}
`, want: []pathRule{{"spec.selector.namespace.matchLabels", `values[0][team]: Invalid value: "a b": a valid label must be an empty string or consist of`}}},
	})
}
