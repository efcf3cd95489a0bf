package api

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// approver-policy's API group (docs/design/approval-policy.md).
const (
	PolicyGroup    = "policy.cert-manager.io"
	PolicyV1alpha1 = "policy.cert-manager.io/v1alpha1"

	KindCertificateRequestPolicy = "CertificateRequestPolicy"

	// CertificateRequestPolicyConditionReady is the policy's only condition:
	// True when the policy compiled (CEL rules, wildcard patterns, plugins)
	// for its current generation. A policy that is not Ready never approves.
	CertificateRequestPolicyConditionReady = "Ready"
)

// CertificateRequestPolicy is approver-policy's policy.cert-manager.io/v1alpha1
// CertificateRequestPolicy (cluster-scoped): a "policy profile" describing
// every request it approves (docs/design/approval-policy.md). Field names are approver-policy's.
type CertificateRequestPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       CertificateRequestPolicySpec   `json:"spec"`
	Status     CertificateRequestPolicyStatus `json:"status,omitempty"`
}

// CertificateRequestPolicySpec is the policy: what a request may carry
// (allowed), what it must satisfy (constraints), which requests it is for
// (selector) and which compiled-in plugins also judge it (plugins).
type CertificateRequestPolicySpec struct {
	// Allowed lists the attributes a request may carry. An omitted field
	// forbids the attribute; list fields allow any subset of the values.
	Allowed *CertificateRequestPolicyAllowed `json:"allowed,omitempty"`
	// Constraints restrict the request's duration and key. An omitted
	// field places no restriction.
	Constraints *CertificateRequestPolicyConstraints `json:"constraints,omitempty"`
	// Plugins maps a plugin name (registered in this certfn build) to its
	// configuration.
	Plugins map[string]CertificateRequestPolicyPluginData `json:"plugins,omitempty"`
	// Selector chooses the requests the policy is for. At least one of
	// issuerRef and namespace must be set (possibly to {}).
	Selector CertificateRequestPolicySelector `json:"selector"`
}

// CertificateRequestPolicyAllowed lists the attributes a request may carry.
type CertificateRequestPolicyAllowed struct {
	CommonName     *CertificateRequestPolicyAllowedString      `json:"commonName,omitempty"`
	DNSNames       *CertificateRequestPolicyAllowedStringSlice `json:"dnsNames,omitempty"`
	IPAddresses    *CertificateRequestPolicyAllowedStringSlice `json:"ipAddresses,omitempty"`
	URIs           *CertificateRequestPolicyAllowedStringSlice `json:"uris,omitempty"`
	EmailAddresses *CertificateRequestPolicyAllowedStringSlice `json:"emailAddresses,omitempty"`
	// IsCA true lets a request set spec.isCA; false or omitted forbids it.
	IsCA *AllowedBool `json:"isCA,omitempty"`
	// Usages lists the key usages a request may ask for (any subset;
	// wildcards accepted). Omitted or [] forbids every usage.
	Usages  *AllowedUsages                              `json:"usages,omitempty"`
	Subject *CertificateRequestPolicyAllowedX509Subject `json:"subject,omitempty"`
	// OtherNames lists the subjectAltName otherName OIDs (GeneralName tag
	// 0, e.g. "1.3.6.1.4.1.311.20.2.3", the Microsoft UPN) a request may
	// carry, each with the values it allows. An otherName whose OID is not
	// listed is denied; directoryName, x400Address, ediPartyName and
	// registeredID SANs are always denied. OIDs are unique in the list.
	OtherNames []CertificateRequestPolicyAllowedOtherName `json:"otherNames,omitempty"`
}

// CertificateRequestPolicyAllowedOtherName allows the otherName SANs of one
// OID: every value of that OID in the request must match one of values
// (wildcards accepted) and pass every validation. Neither values nor
// validations set means the OID must be absent.
type CertificateRequestPolicyAllowedOtherName struct {
	// OID is the dotted, canonical ASN.1 object identifier.
	OID    string    `json:"oid"`
	Values *[]string `json:"values,omitempty"`
	// Required makes at least one otherName of this OID mandatory.
	Required    *bool            `json:"required,omitempty"`
	Validations []ValidationRule `json:"validations,omitempty"`
}

// CertificateRequestPolicyAllowedX509Subject lists the subject attributes a
// request may carry.
type CertificateRequestPolicyAllowedX509Subject struct {
	Organizations       *CertificateRequestPolicyAllowedStringSlice `json:"organizations,omitempty"`
	Countries           *CertificateRequestPolicyAllowedStringSlice `json:"countries,omitempty"`
	OrganizationalUnits *CertificateRequestPolicyAllowedStringSlice `json:"organizationalUnits,omitempty"`
	Localities          *CertificateRequestPolicyAllowedStringSlice `json:"localities,omitempty"`
	Provinces           *CertificateRequestPolicyAllowedStringSlice `json:"provinces,omitempty"`
	StreetAddresses     *CertificateRequestPolicyAllowedStringSlice `json:"streetAddresses,omitempty"`
	PostalCodes         *CertificateRequestPolicyAllowedStringSlice `json:"postalCodes,omitempty"`
	SerialNumber        *CertificateRequestPolicyAllowedString      `json:"serialNumber,omitempty"`
	// OtherAttributes lists the subject attribute OIDs other than the
	// named fields above (e.g. "1.2.840.113549.1.9.1", emailAddress) a
	// request may carry, each with the values it allows. An attribute whose
	// OID is neither a named field nor listed is denied. OIDs are unique in
	// the list and must not be those of the named fields.
	OtherAttributes []CertificateRequestPolicyAllowedSubjectOtherAttribute `json:"otherAttributes,omitempty"`
}

// CertificateRequestPolicyAllowedSubjectOtherAttribute allows the subject
// attributes of one OID, as CertificateRequestPolicyAllowedOtherName does
// for otherName SANs.
type CertificateRequestPolicyAllowedSubjectOtherAttribute struct {
	// OID is the dotted, canonical ASN.1 object identifier.
	OID    string    `json:"oid"`
	Values *[]string `json:"values,omitempty"`
	// Required makes at least one attribute of this OID mandatory.
	Required    *bool            `json:"required,omitempty"`
	Validations []ValidationRule `json:"validations,omitempty"`
}

// CertificateRequestPolicyAllowedString allows one string attribute.
// Neither value nor validations set means the attribute must be empty.
type CertificateRequestPolicyAllowedString struct {
	// Value is a pattern ("*" is any run of characters).
	Value *string `json:"value,omitempty"`
	// Required makes the attribute mandatory.
	Required *bool `json:"required,omitempty"`
	// Validations are CEL rules every present value must pass.
	Validations []ValidationRule `json:"validations,omitempty"`
}

// CertificateRequestPolicyAllowedStringSlice allows a list attribute: each
// requested value must match one of values and pass every validation.
type CertificateRequestPolicyAllowedStringSlice struct {
	Values *[]string `json:"values,omitempty"`
	// Required makes at least one value mandatory.
	Required    *bool            `json:"required,omitempty"`
	Validations []ValidationRule `json:"validations,omitempty"`
}

// ValidationRule is a CEL expression evaluated per value, with `self` the
// value (string) and `cr` the request (namespace, name, username, uid,
// groups, extra); approver-policy's functions isServiceAccount(string) and
// serviceAccount(string).getNamespace()/getName() are available. Rules are
// unique within a validations list.
type ValidationRule struct {
	Rule string `json:"rule"`
	// Message is shown when the rule fails (default: "failed rule: <rule>").
	Message *string `json:"message,omitempty"`
}

// AllowedBool is allowed.isCA: a plain boolean, as in approver-policy. The
// object form {value, required} is also decoded, only so that validation can
// reject `required` on isCA with a clear message instead of a type error.
type AllowedBool struct {
	Value bool
	// Required is set only by the (invalid) object form.
	Required *bool
}

// MarshalJSON writes the plain boolean unless Required is set.
func (b AllowedBool) MarshalJSON() ([]byte, error) {
	if b.Required == nil {
		return json.Marshal(b.Value)
	}
	return json.Marshal(struct {
		Value    bool  `json:"value"`
		Required *bool `json:"required,omitempty"`
	}{b.Value, b.Required})
}

// UnmarshalJSON accepts true/false or {"value": bool, "required": bool}.
func (b *AllowedBool) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		var o struct {
			Value    bool  `json:"value"`
			Required *bool `json:"required"`
		}
		if err := strictUnmarshal(data, &o); err != nil {
			return err
		}
		*b = AllowedBool{Value: o.Value, Required: o.Required}
		return nil
	}
	var v bool
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("want true or false")
	}
	*b = AllowedBool{Value: v}
	return nil
}

// AllowedUsages is allowed.usages: a list of key usages, as in
// approver-policy. The object form {values, required} is also decoded, only
// so that validation can reject `required` on usages with a clear message.
type AllowedUsages struct {
	Values []KeyUsage
	// Required is set only by the (invalid) object form.
	Required *bool
}

// MarshalJSON writes the plain list unless Required is set.
func (u AllowedUsages) MarshalJSON() ([]byte, error) {
	vals := u.Values
	if vals == nil {
		vals = []KeyUsage{}
	}
	if u.Required == nil {
		return json.Marshal(vals)
	}
	return json.Marshal(struct {
		Values   []KeyUsage `json:"values"`
		Required *bool      `json:"required,omitempty"`
	}{vals, u.Required})
}

// UnmarshalJSON accepts a list of usages or {"values": [...], "required": bool}.
func (u *AllowedUsages) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		var o struct {
			Values   []KeyUsage `json:"values"`
			Required *bool      `json:"required"`
		}
		if err := strictUnmarshal(data, &o); err != nil {
			return err
		}
		*u = AllowedUsages{Values: o.Values, Required: o.Required}
		return nil
	}
	var v []KeyUsage
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("want a list of key usages")
	}
	*u = AllowedUsages{Values: v}
	return nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("want a value of the documented shape: %v", err)
	}
	return nil
}

// CertificateRequestPolicyConstraints restrict duration and key.
type CertificateRequestPolicyConstraints struct {
	// MinDuration and MaxDuration are inclusive; when either is set the
	// request must carry a duration (spec.duration or expirationSeconds).
	MinDuration *Duration                                      `json:"minDuration,omitempty"`
	MaxDuration *Duration                                      `json:"maxDuration,omitempty"`
	PrivateKey  *CertificateRequestPolicyConstraintsPrivateKey `json:"privateKey,omitempty"`
}

// CertificateRequestPolicyConstraintsPrivateKey restricts the CSR's public
// key: algorithm (RSA, ECDSA, Ed25519) and size in bits (inclusive).
type CertificateRequestPolicyConstraintsPrivateKey struct {
	Algorithm *PrivateKeyAlgorithm `json:"algorithm,omitempty"`
	MinSize   *int                 `json:"minSize,omitempty"`
	MaxSize   *int                 `json:"maxSize,omitempty"`
}

// CertificateRequestPolicyPluginData configures one plugin.
type CertificateRequestPolicyPluginData struct {
	Values map[string]string `json:"values,omitempty"`
}

// CertificateRequestPolicySelector chooses requests; every selector that is
// set must match.
type CertificateRequestPolicySelector struct {
	// IssuerRef matches spec.issuerRef; {} matches every issuer.
	IssuerRef *CertificateRequestPolicySelectorIssuerRef `json:"issuerRef,omitempty"`
	// Namespace matches the request's namespace; {} matches every namespace.
	Namespace *CertificateRequestPolicySelectorNamespace `json:"namespace,omitempty"`
}

// CertificateRequestPolicySelectorIssuerRef matches an issuer reference with
// wildcard patterns; an omitted field matches anything. The request's kind
// defaults to Issuer and its group to cert-manager.io before matching.
type CertificateRequestPolicySelectorIssuerRef struct {
	Name  *string `json:"name,omitempty"`
	Kind  *string `json:"kind,omitempty"`
	Group *string `json:"group,omitempty"`
}

// CertificateRequestPolicySelectorNamespace matches the request's namespace
// by name (wildcard patterns, any one) and by the Namespace's labels (all).
type CertificateRequestPolicySelectorNamespace struct {
	MatchNames  []string          `json:"matchNames,omitempty"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// CertificateRequestPolicyStatus holds the Ready condition.
type CertificateRequestPolicyStatus struct {
	Conditions []Condition `json:"conditions,omitempty"`
}
