package api

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// ACME resources (acme.cert-manager.io/v1): Order and Challenge, as
// cert-manager's (https://cert-manager.io/docs/concepts/acme-orders-challenges/). They are created by the ACME
// issuer only; users read them to debug. Their specs are immutable: the
// Order and Challenge steps never change a spec after creation (see
// core/acme: OrderSpecChanged, ChallengeSpecChanged).

// Kinds of the ACME resources.
const (
	KindOrder     = "Order"
	KindChallenge = "Challenge"
)

// State is the state of an ACME resource (docs/design/acme-orders.md): the ACME values plus
// "errored" for failures inside certfn. Unknown values must be tolerated.
type State string

// ACME states (docs/design/acme-orders.md).
const (
	// StateUnknown is the zero value: not processed yet.
	StateUnknown State = ""
	// StateValid: the Order is issued / the authorization is valid. Final.
	StateValid State = "valid"
	// StateReady: every authorization is valid; the Order can be finalized.
	StateReady State = "ready"
	// StatePending: validations are still in progress.
	StatePending State = "pending"
	// StateProcessing: the server is processing a validation or finalization.
	StateProcessing State = "processing"
	// StateInvalid: a validation failed or the order was refused. Final.
	StateInvalid State = "invalid"
	// StateExpired: the order or authorization expired. Final.
	StateExpired State = "expired"
	// StateErrored: a failure inside certfn (bad spec, unusable issuer). Final.
	StateErrored State = "errored"
)

// IsFinal reports whether s is valid, invalid, expired or errored (docs/design/acme-orders.md:
// no further ACME call is made for a resource in a final state).
func (s State) IsFinal() bool {
	switch s {
	case StateValid, StateInvalid, StateExpired, StateErrored:
		return true
	}
	return false
}

// Order is acme.cert-manager.io/v1 Order (namespaced), owned by the
// CertificateRequest it was created for.
type Order struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       OrderSpec   `json:"spec"`
	Status     OrderStatus `json:"status,omitempty"`
}

// IsFinal reports whether the Order reached a final state; its owner (the
// CertificateRequest) is woken only then.
func (o *Order) IsFinal() bool { return o.Status.State.IsFinal() }

// OrderSpec is cert-manager's OrderSpec. It is immutable.
type OrderSpec struct {
	// Request is the PEM-encoded CSR used to finalize the order.
	Request []byte `json:"request"`
	// IssuerRef is the ACME Issuer or ClusterIssuer that handles the order.
	IssuerRef IssuerReference `json:"issuerRef"`
	// CommonName, DNSNames and IPAddresses must match the CSR.
	CommonName  string   `json:"commonName,omitempty"`
	DNSNames    []string `json:"dnsNames,omitempty"`
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// Duration is the requested lifetime (sent as notAfter when the issuer
	// sets enableDurationFeature).
	Duration *Duration `json:"duration,omitempty"`
	// Profile is the ACME profile to request (issuer's spec.acme.profile).
	Profile string `json:"profile,omitempty"`
	// Replaces is the ARI certificate identifier (RFC 9773) of the
	// certificate this order renews, when known (certfn extension).
	Replaces string `json:"replaces,omitempty"`
}

// OrderStatus is cert-manager's OrderStatus.
type OrderStatus struct {
	// URL of the ACME order; set once when the order is created.
	URL string `json:"url,omitempty"`
	// FinalizeURL is where the CSR is sent.
	FinalizeURL string `json:"finalizeURL,omitempty"`
	// CertificateURL is where the issued chain is downloaded (certfn extension).
	CertificateURL string `json:"certificateURL,omitempty"`
	// Authorizations copied from the ACME order when it was created.
	Authorizations []ACMEAuthorization `json:"authorizations,omitempty"`
	// Certificate is the PEM chain once the order is valid.
	Certificate []byte `json:"certificate,omitempty"`
	// State of the order.
	State State `json:"state,omitempty"`
	// Reason says why the order is in its state.
	Reason string `json:"reason,omitempty"`
	// FailureTime is when the order failed.
	FailureTime *Time `json:"failureTime,omitempty"`
	// NextPollAt is when the processing order is polled next: after the
	// server's Retry-After, or the poll backoff (acme.Polling); certfn
	// extension.
	NextPollAt *Time `json:"nextPollAt,omitempty"`
	// Polls counts the order polls since it was finalized; the backoff
	// doubles with each (certfn extension).
	Polls int `json:"polls,omitempty"`
	// RenewalInfo is the ACME renewal information (RFC 9773) of the issued
	// certificate, copied to the Certificate while it is the current
	// revision (certfn extension).
	RenewalInfo *RenewalInfo `json:"renewalInfo,omitempty"`
}

// ACMEAuthorization is one authorization of an Order.
type ACMEAuthorization struct {
	URL        string `json:"url"`
	Identifier string `json:"identifier,omitempty"`
	Wildcard   *bool  `json:"wildcard,omitempty"`
	// InitialState is the authorization's state when the order was created
	// (a valid one needs no Challenge).
	InitialState State           `json:"initialState,omitempty"`
	Challenges   []ACMEChallenge `json:"challenges,omitempty"`
}

// ACMEChallenge is a challenge the server offered for an authorization.
type ACMEChallenge struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	// Type is the ACME type: "http-01", "dns-01", "tls-alpn-01".
	Type string `json:"type"`
}

// ACMEChallengeType is a Challenge's type as cert-manager spells it.
type ACMEChallengeType string

// Challenge types certfn solves.
const (
	ACMEChallengeTypeHTTP01 ACMEChallengeType = "HTTP-01"
	ACMEChallengeTypeDNS01  ACMEChallengeType = "DNS-01"
)

// Challenge is acme.cert-manager.io/v1 Challenge (namespaced), owned by its Order.
type Challenge struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       ChallengeSpec   `json:"spec"`
	Status     ChallengeStatus `json:"status,omitempty"`
}

// IsFinal reports whether the Challenge reached a final state; its Order is
// woken only then.
func (c *Challenge) IsFinal() bool { return c.Status.State.IsFinal() }

// ChallengeSpec is cert-manager's ChallengeSpec. It is immutable.
type ChallengeSpec struct {
	// URL of the ACME challenge.
	URL string `json:"url"`
	// AuthorizationURL of the ACME authorization the challenge belongs to.
	AuthorizationURL string `json:"authorizationURL"`
	// DNSName is the identifier (without "*." for a wildcard).
	DNSName string `json:"dnsName"`
	// Wildcard is true for a "*.<dnsName>" identifier.
	Wildcard bool `json:"wildcard,omitempty"`
	// Type is HTTP-01 or DNS-01.
	Type ACMEChallengeType `json:"type"`
	// Token is the challenge token.
	Token string `json:"token"`
	// Key is the key authorization (token + "." + account key thumbprint).
	// For DNS-01 the TXT value is base64url(SHA-256(Key)).
	Key string `json:"key"`
	// Solver is the issuer's solver chosen for this identifier.
	Solver ACMEChallengeSolver `json:"solver"`
	// IssuerRef is the ACME issuer.
	IssuerRef IssuerReference `json:"issuerRef"`
}

// ChallengeStatus is cert-manager's ChallengeStatus plus what certfn needs
// to resume across invocations.
type ChallengeStatus struct {
	// Processing is set by the scheduler when the Challenge may start, and
	// cleared when it is final.
	Processing bool `json:"processing"`
	// Presented is true while the challenge record (HTTP-01 token, DNS-01
	// TXT record) is presented.
	Presented bool `json:"presented"`
	// PresentedAt is when it was presented (certfn extension).
	PresentedAt *Time `json:"presentedAt,omitempty"`
	// Accepted is true once the challenge was accepted (ACME "initiated").
	Accepted bool `json:"accepted,omitempty"`
	// Reason says why the Challenge is in its state.
	Reason string `json:"reason,omitempty"`
	// State of the ACME authorization.
	State State `json:"state,omitempty"`
	// NextPollAt is when the authorization is polled next: after the
	// server's Retry-After, or the poll backoff (acme.Polling).
	NextPollAt *Time `json:"nextPollAt,omitempty"`
	// Polls counts the authorization polls since the challenge was
	// accepted; the backoff doubles with each (certfn extension).
	Polls int `json:"polls,omitempty"`
	// DNS01 records what a DNS-01 solver presented (certfn extension), so
	// clean-up deletes exactly that value.
	DNS01 *ChallengeDNS01Status `json:"dns01,omitempty"`
}

// ChallengeDNS01Status is the DNS-01 record presented for a Challenge.
type ChallengeDNS01Status struct {
	Zone  string `json:"zone,omitempty"`
	FQDN  string `json:"fqdn,omitempty"`
	Value string `json:"value,omitempty"`
	// Change is the DNS provider's ID of the change that wrote Value
	// (Route53), whose state Check asks once per round; empty for
	// providers that apply changes synchronously.
	Change string `json:"change,omitempty"`
}

// Challenge leases (certfn extension, acme.certfn.io/v1alpha1). docs/design/acme-orders.md
// never lets two Challenges for the same DNS name and type run at once;
// certfn's workers run in parallel without a shared in-memory view, so the
// Challenge scheduler claims a ChallengeLease through the state store's
// conditional Create/Update before a Challenge starts processing (see
// core/acme/challenges/lease.go). Leases are cluster-scoped: the ACME
// server's validations for a name are global, whichever namespace or
// issuer asked for them.
const (
	// CertfnACMEGroup is the API group of certfn's own ACME kinds.
	CertfnACMEGroup = "acme.certfn.io"
	// CertfnACMEV1Alpha1 is its group/version.
	CertfnACMEV1Alpha1 = "acme.certfn.io/v1alpha1"
	// KindChallengeLease is the kind of a Challenge lease.
	KindChallengeLease = "ChallengeLease"
)

// ChallengeLease records which Challenge may process a (type, DNS name).
// It is named by ChallengeLeaseName and written by the Challenge steps only.
// A released lease is kept (Holder nil) rather than deleted: its version
// then only ever grows, so a write conditional on a version read earlier
// can never hit a newer lease of the same name.
type ChallengeLease struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       ChallengeLeaseSpec `json:"spec"`
}

// ChallengeLeaseSpec names the leased (type, DNS name) and its holder.
type ChallengeLeaseSpec struct {
	// Type is the challenge type (HTTP-01, DNS-01).
	Type ACMEChallengeType `json:"type"`
	// DNSName is the Challenge's spec.dnsName, lower case (a wildcard and
	// its base name share a lease).
	DNSName string `json:"dnsName"`
	// Holder is the Challenge holding the lease; nil when released.
	Holder *ChallengeLeaseHolder `json:"holder,omitempty"`
	// AcquiredAt is when the holder acquired it.
	AcquiredAt *Time `json:"acquiredAt,omitempty"`
	// ReleasedAt is when the last holder released it.
	ReleasedAt *Time `json:"releasedAt,omitempty"`
}

// ChallengeLeaseHolder identifies a Challenge (its UID tells a recreated
// Challenge of the same name apart).
type ChallengeLeaseHolder struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// ChallengeLeaseName returns the lease name of a (type, DNS name):
// "<type>.<name>" in lower case, e.g. "dns-01.www.example.com"; a name that
// would not fit a key (longer than 253 characters, or holding '/') becomes
// "<type>.sha256-<first 40 hex digits of SHA-256 of the lower-case name>".
func ChallengeLeaseName(typ ACMEChallengeType, dnsName string) string {
	t := strings.ToLower(string(typ))
	n := strings.ToLower(strings.TrimSuffix(dnsName, "."))
	if name := t + "." + n; len(name) <= 253 && !strings.Contains(name, "/") {
		return name
	}
	sum := sha256.Sum256([]byte(n))
	return t + ".sha256-" + hex.EncodeToString(sum[:])[:40]
}
