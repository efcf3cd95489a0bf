// Package acme holds what the ACME issuer's steps share (cert-manager's
// ACME Order and Challenge design, https://cert-manager.io/docs/concepts/acme-orders-challenges/): the ACME client port (one
// method per ACME step, implemented by adapters/acme), the account cache and
// issuer readiness, deterministic Order and Challenge names, solver
// selection and the spec-immutability check.
//
// The steps live in sub-packages: orders (kind Order), challenges (kind
// Challenge), http01 (the HTTP-01 responder), signer (the
// CertificateRequest signer for issuer type "acme").
package acme

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Account is a registered ACME account: its URL (the key id of signed
// requests) and private key. The key never leaves memory and the secret
// store.
type Account struct {
	URL string
	Key crypto.Signer
	// Thumbprint is the JWK thumbprint of the key (RFC 7638), used in key
	// authorizations.
	Thumbprint string
}

// EAB is an external account binding (RFC 8555 §7.3.4).
type EAB struct {
	KeyID string
	// MACKey is the base64url-encoded HMAC key.
	MACKey string
}

// RegisterRequest creates (or finds) the account of Key.
type RegisterRequest struct {
	Key   crypto.Signer
	Email string
	EAB   *EAB
}

// NewOrderRequest is the payload of newOrder.
type NewOrderRequest struct {
	DNSNames    []string
	IPAddresses []string
	// NotAfter is sent when non-zero (issuer enableDurationFeature).
	NotAfter time.Time
	Profile  string
	// Replaces is the ARI certificate id of the predecessor (RFC 9773 §5).
	Replaces string
}

// Order is the server's view of an order.
type Order struct {
	URL            string
	Status         string
	FinalizeURL    string
	CertificateURL string
	Authorizations []string
	// Problem is the order's error, if any.
	Problem string
	// RetryAfter is the server's polling hint (zero when absent).
	RetryAfter time.Duration
}

// Authorization is the server's view of an authorization.
type Authorization struct {
	URL        string
	Status     string
	Identifier string
	Wildcard   bool
	Challenges []Challenge
	RetryAfter time.Duration
}

// Challenge is one challenge of an authorization.
type Challenge struct {
	URL    string
	Type   string // "http-01", "dns-01", ...
	Token  string
	Status string
	// Problem is the validation error, if any.
	Problem string
	// RetryAfter is the server's polling hint on the response to
	// AcceptChallenge (zero when absent).
	RetryAfter time.Duration
}

// Chain is one certificate chain offered by the server (PEM, leaf first).
type Chain struct {
	PEM []byte
	// URL it was downloaded from.
	URL string
	// RenewalInfo is the ARI fetched with the chain, when the server offers
	// ARI (nil otherwise).
	RenewalInfo *RenewalInfo
}

// RenewalInfo is an ARI response (RFC 9773 §4.2).
type RenewalInfo struct {
	CertificateID  string
	WindowStart    time.Time
	WindowEnd      time.Time
	ExplanationURL string
	// RetryAfter is the server's hint for the next check (zero when absent).
	RetryAfter time.Duration
}

// Client makes one ACME request per method (acmez's low-level client does
// the JWS signing and badNonce retries). Implementations map ACME problems
// to errors once: rate limits and unavailability are transient with
// errs.RetryAfter, problems that cannot be fixed by retrying (rejected
// identifier, unauthorized, CAA, malformed, ...) are errs.Permanent with
// the problem detail, network and TLS failures are transient. Signed POSTs
// are never re-sent blindly; idempotent GETs retry a bounded number of
// times.
// ProfileLister is a Client that reads the ACME profiles its server
// advertises (draft-aaron-acme-profiles: the directory's meta.profiles,
// name to description; nil when none).
type ProfileLister interface {
	Profiles(ctx context.Context) (map[string]string, error)
}

// ReasonProfileNotSupported is an ACME issuer's Ready reason when its
// spec.acme.profile is not one its server offers: its configuration must
// change.
const ReasonProfileNotSupported = "ProfileNotSupported"

// ProfileProblem says why profile cannot be asked of a server offering
// profiles (sorted names in the message); "" when it can.
func ProfileProblem(profile string, profiles map[string]string) string {
	if _, ok := profiles[profile]; ok {
		return ""
	}
	if len(profiles) == 0 {
		return fmt.Sprintf("spec.acme.profile %q: the ACME server offers no profiles (remove spec.acme.profile)", profile)
	}
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprintf("spec.acme.profile %q: the ACME server offers only the profiles %s", profile, strings.Join(names, ", "))
}

type Client interface {
	// Register creates the account of req.Key or returns the existing one;
	// the account's contact is updated when it differs from req.Email.
	Register(ctx context.Context, req RegisterRequest) (Account, error)
	// NewOrder creates an order.
	NewOrder(ctx context.Context, acct Account, req NewOrderRequest) (Order, error)
	// GetOrder fetches an order.
	GetOrder(ctx context.Context, acct Account, url string) (Order, error)
	// GetAuthorization fetches an authorization.
	GetAuthorization(ctx context.Context, acct Account, url string) (Authorization, error)
	// AcceptChallenge tells the server the challenge is ready to validate.
	AcceptChallenge(ctx context.Context, acct Account, challengeURL string) (Challenge, error)
	// Finalize sends the CSR (DER) to finalizeURL; it never waits. When
	// the server answers orderNotReady the error wraps ErrOrderNotReady.
	Finalize(ctx context.Context, acct Account, orderURL, finalizeURL string, csrDER []byte) (Order, error)
	// Chains downloads the certificate at certURL and the alternate chains
	// the server links to (for preferredChain), default chain first, each
	// with its renewal information when the server offers ARI.
	Chains(ctx context.Context, acct Account, certURL string) ([]Chain, error)
	// RenewalInfo fetches ARI for leaf; ErrARIUnsupported when the
	// server has no renewalInfo endpoint.
	RenewalInfo(ctx context.Context, leaf *x509.Certificate) (RenewalInfo, error)
	// Revoke asks the server to revoke leaf (RFC 8555 §7.6), signed with
	// the account's key, with an RFC 5280 reason code.
	Revoke(ctx context.Context, acct Account, leaf *x509.Certificate, reason int) error
}

// ErrARIUnsupported is returned by Client.RenewalInfo when the server does
// not offer ARI.
var ErrARIUnsupported = fmt.Errorf("the ACME server does not support renewal information (ARI)")

// ErrOrderNotReady is wrapped by Finalize's (transient) error when the
// server says the order is not ready to be finalized (RFC 8555 §7.4).
var ErrOrderNotReady = fmt.Errorf("the ACME order is not ready to be finalized")

// ErrAlreadyReplaced is wrapped by NewOrder's (permanent) error when the
// certificate named by "replaces" already has a replacement (RFC 9773).
var ErrAlreadyReplaced = fmt.Errorf("the certificate named in replaces was already replaced")

// ErrProblem is matched (errors.Is) by every error that carries an ACME
// problem document: the server answered and refused, as opposed to a
// request that never got an answer.
var ErrProblem = fmt.Errorf("the ACME server answered with a problem document")

// ServerConfig selects a server and how to reach it (the issuer's
// server, caBundle and skipTLSVerify).
type ServerConfig struct {
	Directory     string
	CABundle      []byte
	SkipTLSVerify bool
	// Cluster is true for a ClusterIssuer's server (the operator's):
	// connections to it are not restricted. False — a namespaced Issuer,
	// a tenant's — makes the Dialer refuse loopback, link-local, private
	// and reserved addresses (at dial time, for every URL the server
	// hands out) unless the deployment allows them.
	Cluster bool
}

// Dialer returns a Client for a server; implementations cache clients.
type Dialer interface {
	Client(cfg ServerConfig) (Client, error)
	KeyThumbprinter
}

// ServerConfigFor returns the issuer's server configuration, with its
// scope (ClusterIssuer or namespaced Issuer).
func ServerConfigFor(iss api.GenericIssuer) ServerConfig {
	a := iss.GetSpec().ACME
	_, cluster := iss.(*api.ClusterIssuer)
	return ServerConfig{Directory: a.Server, CABundle: a.CABundle, SkipTLSVerify: a.SkipTLSVerify, Cluster: cluster}
}

// ACME status values (RFC 8555 §7.1.6).
const (
	StatusPending     = "pending"
	StatusReady       = "ready"
	StatusProcessing  = "processing"
	StatusValid       = "valid"
	StatusInvalid     = "invalid"
	StatusExpired     = "expired"
	StatusDeactivated = "deactivated"
	StatusRevoked     = "revoked"
)

// StateOf maps an ACME status to a resource State; unknown values map to
// StateUnknown, deactivated and revoked to invalid.
func StateOf(status string) api.State {
	switch status {
	case StatusPending:
		return api.StatePending
	case StatusReady:
		return api.StateReady
	case StatusProcessing:
		return api.StateProcessing
	case StatusValid:
		return api.StateValid
	case StatusInvalid, StatusDeactivated, StatusRevoked:
		return api.StateInvalid
	case StatusExpired:
		return api.StateExpired
	}
	return api.StateUnknown
}

// shortHash is 8 hex digits of FNV-1a over parts.
func shortHash(parts ...string) string {
	h := fnv.New32a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// truncName keeps name within 253 - len(suffix) - 1 characters.
func truncName(name string, suffixLen int) string {
	max := 253 - suffixLen - 1
	if len(name) > max {
		name = strings.TrimRight(name[:max], "-.")
	}
	return name
}

// OrderName is the deterministic name of the Order for a
// CertificateRequest: "<cr-name>-<8 hex digits of the CR's UID>". A
// request deleted and recreated under the same name gets a new Order.
func OrderName(cr *api.CertificateRequest) string {
	return truncName(cr.Name, 9) + "-" + shortHash(cr.UID)
}

// ChallengeName is the deterministic name of the Challenge for one
// authorization of order: "<order-name>-<8 hex digits of the authz URL>".
func ChallengeName(orderName, authzURL string) string {
	return truncName(orderName, 9) + "-" + shortHash(authzURL)
}

// AnnotationSpecHash records the hash of a spec at creation; a stored
// spec whose hash differs was changed, which docs/design/acme-orders.md forbids.
const AnnotationSpecHash = "acme.certfn.io/spec-hash"

// SpecHash is the hex SHA-256 of the JSON encoding of spec.
func SpecHash(spec any) string {
	b, _ := json.Marshal(spec)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16])
}

// SpecChanged reports whether obj's spec no longer matches the hash
// recorded at creation (objects without a hash are accepted).
func SpecChanged(m *api.ObjectMeta, spec any) bool {
	h, ok := m.Annotations[AnnotationSpecHash]
	return ok && h != SpecHash(spec)
}

// StampSpec records spec's hash on m.
func StampSpec(m *api.ObjectMeta, spec any) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[AnnotationSpecHash] = SpecHash(spec)
}

// ControllerRef returns an owner reference marking owner as controller.
func ControllerRef(owner api.Object) api.OwnerReference {
	t := true
	return api.OwnerReference{APIVersion: owner.GetTypeMeta().APIVersion, Kind: owner.GetTypeMeta().Kind,
		Name: owner.GetObjectMeta().Name, UID: owner.GetObjectMeta().UID, Controller: &t, BlockOwnerDeletion: &t}
}

// KeyAuthorization is token "." thumbprint (RFC 8555 §8.1).
func KeyAuthorization(token, thumbprint string) string { return token + "." + thumbprint }

// ChallengeTypeFor maps an ACME challenge type to the resource's type.
func ChallengeTypeFor(acmeType string) (api.ACMEChallengeType, bool) {
	switch acmeType {
	case "http-01":
		return api.ACMEChallengeTypeHTTP01, true
	case "dns-01":
		return api.ACMEChallengeTypeDNS01, true
	}
	return "", false
}
