package acme

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// Issuer Ready reasons set by Accounts.Ready.
const (
	ReasonAccountRegistered = "ACMEAccountRegistered"
	ReasonAccountKey        = "ErrInvalidAccountKey"
	ReasonRegister          = "ErrRegisterACMEAccount"
	ReasonEAB               = "ErrGetEABKey"
)

// ErrAccountNotReady is wrapped by the (transient) error Accounts.Get
// returns while the issuer has no registered account.
var ErrAccountNotReady = errors.New("the ACME account is not registered yet")

// KeyThumbprinter computes the JWK thumbprint of an account key (RFC 7638).
type KeyThumbprinter interface {
	Thumbprint(key crypto.Signer) (string, error)
}

// Accounts registers ACME accounts (issuer readiness) and hands the
// registered account to the Order and Challenge steps. It caches each
// issuer's account in memory, keyed by the issuer's UID, account URI and
// key hash, so steps neither re-read the key nor re-register. Safe for
// concurrent use.
type Accounts struct {
	secrets ports.SecretStore
	dialer  Dialer
	thumb   KeyThumbprinter
	// allow restricts the servers of namespaced Issuers; every ACME
	// request goes through Ready, Get or Client, which check it.
	allow ServerAllowList

	mu    sync.Mutex
	cache map[string]Account
}

// NewAccounts returns an account manager. allow restricts the ACME
// servers of namespaced Issuers (its zero value allows them none).
func NewAccounts(secrets ports.SecretStore, dialer Dialer, allow ServerAllowList) *Accounts {
	return &Accounts{secrets: secrets, dialer: dialer, thumb: dialer, allow: allow, cache: map[string]Account{}}
}

// Client returns a client for the issuer's ACME server (for requests
// that need no account, such as ACME Renewal Information). A namespaced
// Issuer whose server the allow-list refuses gets an error wrapping
// ErrServerNotAllowed and ErrAccountNotReady, and no client.
func (a *Accounts) Client(iss api.GenericIssuer) (Client, error) {
	spec := iss.GetSpec().ACME
	if spec == nil {
		return nil, errs.Permanentf("issuer %s is not an ACME issuer", iss.GetObjectMeta().Name)
	}
	if err := a.checkServer(iss); err != nil {
		return nil, err
	}
	return a.dialer.Client(ServerConfigFor(iss))
}

// checkServer applies the allow-list to iss.
func (a *Accounts) checkServer(iss api.GenericIssuer) error {
	if why := a.allow.check(iss); why != "" {
		m := iss.GetObjectMeta()
		return fmt.Errorf("%w: %w: issuer %s/%s: %s", ErrAccountNotReady, ErrServerNotAllowed, m.Namespace, m.Name, why)
	}
	return nil
}

func cacheKey(iss api.GenericIssuer, uri, hash string) string {
	return api.KeyOf(iss).String() + "|" + iss.GetObjectMeta().UID + "|" + uri + "|" + hash
}

func keyRef(spec *api.ACMEIssuer) (name, key string) {
	name, key = spec.PrivateKeySecretRef.Name, spec.PrivateKeySecretRef.Key
	if key == "" {
		key = "tls.key"
	}
	return name, key
}

// KeyHash is the hex SHA-256 of the DER public key (recorded as
// status.acme.lastPrivateKeyHash; it reveals nothing about the private key).
func KeyHash(key crypto.Signer) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", fmt.Errorf("encode account public key: %w", err)
	}
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:]), nil
}

// loadKey reads the account key; create generates and stores one when it
// is missing. A problem the user must fix is returned as reason/msg.
func (a *Accounts) loadKey(ctx context.Context, spec *api.ACMEIssuer, ns string, create bool) (key crypto.Signer, reason, msg string, err error) {
	name, k := keyRef(spec)
	sec, err := a.secrets.Get(ctx, ns, name)
	if errors.Is(err, ports.ErrNotFound) {
		if !create || spec.DisableAccountKeyGeneration {
			return nil, ReasonAccountKey, fmt.Sprintf("spec.acme.privateKeySecretRef: secret %s/%s does not exist and account key generation is disabled", ns, name), nil
		}
		key, err := pki.GenerateKey(&api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 256})
		if err != nil {
			return nil, "", "", fmt.Errorf("generate ACME account key: %w", err)
		}
		pemKey, err := pki.EncodePKCS8PEM(key)
		if err != nil {
			return nil, "", "", fmt.Errorf("encode ACME account key: %w", err)
		}
		err = a.secrets.Create(ctx, ports.Secret{Namespace: ns, Name: name, Data: map[string][]byte{k: pemKey},
			Labels: map[string]string{"certfn.io/acme-account-key": "true"}})
		if errors.Is(err, ports.ErrAlreadyExists) {
			// Another worker created it, or is creating it: a store whose
			// Create is two calls (Secret Manager) shows it without a key
			// between them, and after a Create whose answer was lost.
			if _, gerr := a.secrets.Get(ctx, ns, name); errors.Is(gerr, ports.ErrNotFound) {
				return nil, "", "", fmt.Errorf("ACME account key secret %s/%s exists and holds no key yet: %w", ns, name, issuers.ErrNotYet)
			}
			return a.loadKey(ctx, spec, ns, false)
		}
		if err != nil {
			return nil, "", "", fmt.Errorf("store ACME account key in secret %s/%s: %w", ns, name, err)
		}
		return key, "", "", nil
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("read ACME account key secret %s/%s: %w", ns, name, err)
	}
	pemKey, ok := sec.Data[k]
	if !ok {
		return nil, ReasonAccountKey, fmt.Sprintf("spec.acme.privateKeySecretRef.key: secret %s/%s has no key %q", ns, name, k), nil
	}
	key, err = pki.DecodePrivateKeyPEM(pemKey)
	if err != nil {
		return nil, ReasonAccountKey, fmt.Sprintf("spec.acme.privateKeySecretRef: secret %s/%s key %q does not hold a usable private key", ns, name, k), nil
	}
	return key, "", "", nil
}

// checkProfile reads the profiles iss's server offers (when its client
// lists them) and returns ReasonProfileNotSupported, naming them, when
// spec.acme.profile is not one; an error reading them is returned (the
// issuer is looked at again).
func (a *Accounts) checkProfile(ctx context.Context, iss api.GenericIssuer) (string, string, error) {
	client, err := a.dialer.Client(ServerConfigFor(iss))
	if err != nil {
		return ReasonRegister, "Failed to reach the ACME server: " + err.Error(), nil
	}
	lister, ok := client.(ProfileLister)
	if !ok {
		return "", "", nil // the server's answer to the order will say
	}
	profiles, err := lister.Profiles(ctx)
	if err != nil {
		return "", "", fmt.Errorf("read the ACME server's profiles: %w", err)
	}
	if why := ProfileProblem(iss.GetSpec().ACME.Profile, profiles); why != "" {
		return ReasonProfileNotSupported, why, nil
	}
	return "", "", nil
}

// Ready is issuers.Env.ACMEReady: a namespaced Issuer whose server the
// allow-list refuses is not Ready (ReasonServerNotAllowed), checked
// before any key is read or generated and without any ACME request.
// Otherwise it makes sure the account key exists
// (generated unless disableAccountKeyGeneration), registers the account
// once (with the external account binding when set), and records
// status.acme.uri, lastRegisteredEmail and lastPrivateKeyHash. An issuer
// whose recorded account matches its key, email and server is Ready
// without any ACME request. Problems the user must fix, and failures to
// reach the server, make the issuer not Ready with a reason (rechecked
// after the issuer's wait poll); only secret-store failures are errors.
func (a *Accounts) Ready(ctx context.Context, st *issuers.State) (bool, string, string, error) {
	spec := st.Issuer.GetSpec().ACME
	if why := a.allow.check(st.Issuer); why != "" {
		return false, ReasonServerNotAllowed, why, nil
	}
	key, reason, msg, err := a.loadKey(ctx, spec, st.SecretNamespace, true)
	if err != nil || reason != "" {
		return false, reason, msg, err
	}
	hash, err := KeyHash(key)
	if err != nil {
		return false, ReasonAccountKey, err.Error(), nil
	}
	if spec.Profile != "" {
		if reason, msg, err := a.checkProfile(ctx, st.Issuer); err != nil || reason != "" {
			return false, reason, msg, err
		}
	}
	status := st.Issuer.GetStatus()
	if s := status.ACME; s != nil && s.URI != "" && s.LastRegisteredEmail == spec.Email && s.LastPrivateKeyHash == hash && sameServer(s.URI, spec.Server) {
		if _, err := a.remember(st.Issuer, s.URI, hash, key); err != nil {
			return false, ReasonAccountKey, err.Error(), nil
		}
		return true, ReasonAccountRegistered, registeredMsg(s.URI), nil
	}
	req := RegisterRequest{Key: key, Email: spec.Email}
	if eab := spec.ExternalAccountBinding; eab != nil {
		name := eab.Key.Name
		k := eab.Key.Key
		if k == "" {
			k = "secret"
		}
		sec, err := a.secrets.Get(ctx, st.SecretNamespace, name)
		switch {
		case errors.Is(err, ports.ErrNotFound):
			return false, ReasonEAB, fmt.Sprintf("spec.acme.externalAccountBinding.keySecretRef: secret %s/%s does not exist", st.SecretNamespace, name), nil
		case err != nil:
			return false, "", "", fmt.Errorf("read EAB secret %s/%s: %w", st.SecretNamespace, name, err)
		}
		mac := strings.TrimSpace(string(sec.Data[k]))
		if mac == "" {
			return false, ReasonEAB, fmt.Sprintf("spec.acme.externalAccountBinding.keySecretRef.key: secret %s/%s has no key %q", st.SecretNamespace, name, k), nil
		}
		req.EAB = &EAB{KeyID: eab.KeyID, MACKey: mac}
	}
	if c, early := failedRegistration(st); early {
		return false, c.Reason, c.Message, nil
	}
	client, err := a.dialer.Client(ServerConfigFor(st.Issuer))
	if err != nil {
		return false, ReasonRegister, "Failed to register ACME account: " + err.Error(), nil
	}
	acct, err := client.Register(ctx, req)
	if err != nil {
		if errs.Classify(err) == errs.Conflict {
			return false, "", "", err
		}
		return false, ReasonRegister, "Failed to register ACME account: " + err.Error(), nil
	}
	status.ACME = &api.ACMEIssuerStatus{URI: acct.URL, LastRegisteredEmail: spec.Email, LastPrivateKeyHash: hash}
	if _, err := a.remember(st.Issuer, acct.URL, hash, key); err != nil {
		return false, ReasonAccountKey, err.Error(), nil
	}
	return true, ReasonAccountRegistered, registeredMsg(acct.URL), nil
}

// failedRegistration returns the issuer's Ready condition when it records
// a failed registration of the current generation and the issuer is not
// due yet (st.Now before st.NextRunAt): the step was woken early, e.g. by
// its own status write. The registration is then not attempted again
// before the issuer's wait poll: a server whose error differs on every
// attempt (an error page with a request id) would otherwise change the
// condition, whose write wakes the issuer for another attempt at once —
// a tight loop against a failing server. A changed spec (new generation)
// is checked at once.
func failedRegistration(st *issuers.State) (api.Condition, bool) {
	c := api.FindCondition(st.Issuer.GetStatus().Conditions, api.IssuerConditionReady)
	if c == nil || c.Status != api.ConditionFalse || c.Reason != ReasonRegister ||
		c.ObservedGeneration != st.Issuer.GetObjectMeta().Generation || !st.Now.Before(st.NextRunAt) {
		return api.Condition{}, false
	}
	return *c, true
}

func registeredMsg(uri string) string {
	return "The ACME account was registered with the ACME server: " + uri
}

func (a *Accounts) remember(iss api.GenericIssuer, uri, hash string, key crypto.Signer) (Account, error) {
	tp, err := a.thumb.Thumbprint(key)
	if err != nil {
		return Account{}, fmt.Errorf("account key thumbprint: %w", err)
	}
	acct := Account{URL: uri, Key: key, Thumbprint: tp}
	a.mu.Lock()
	a.cache[cacheKey(iss, uri, hash)] = acct
	a.mu.Unlock()
	return acct, nil
}

// Get returns the issuer's registered account and a client for its
// server. The issuer must carry status.acme.uri (set by Ready); otherwise
// the error wraps ErrAccountNotReady (transient: the issuer's own steps
// register it). A key that no longer matches the recorded hash is also
// ErrAccountNotReady, and so is a namespaced Issuer whose server the
// allow-list refuses (the error also wraps ErrServerNotAllowed; e.g. an
// issuer that was Ready before the list was set): it gets no client.
func (a *Accounts) Get(ctx context.Context, iss api.GenericIssuer, secretNS string) (Account, Client, error) {
	spec := iss.GetSpec().ACME
	client, err := a.Client(iss)
	if err != nil {
		return Account{}, nil, err
	}
	s := iss.GetStatus().ACME
	if s == nil || s.URI == "" || !api.IsTrue(iss.GetStatus().Conditions, api.IssuerConditionReady) {
		return Account{}, nil, fmt.Errorf("%w: issuer %s", ErrAccountNotReady, iss.GetObjectMeta().Name)
	}
	a.mu.Lock()
	acct, ok := a.cache[cacheKey(iss, s.URI, s.LastPrivateKeyHash)]
	a.mu.Unlock()
	if ok {
		return acct, client, nil
	}
	key, reason, msg, err := a.loadKey(ctx, spec, secretNS, false)
	if err != nil {
		return Account{}, nil, err
	}
	if reason != "" {
		return Account{}, nil, fmt.Errorf("%w: %s", ErrAccountNotReady, msg)
	}
	hash, err := KeyHash(key)
	if err != nil {
		return Account{}, nil, err
	}
	if hash != s.LastPrivateKeyHash {
		return Account{}, nil, fmt.Errorf("%w: the account key in %s/%s changed since the account was registered", ErrAccountNotReady, secretNS, spec.PrivateKeySecretRef.Name)
	}
	acct, err = a.remember(iss, s.URI, hash, key)
	return acct, client, err
}

// sameServer reports whether the account URI is on the directory's host
// (cert-manager re-registers when the server changed).
func sameServer(accountURI, directory string) bool {
	a, err1 := url.Parse(accountURI)
	d, err2 := url.Parse(directory)
	return err1 == nil && err2 == nil && strings.EqualFold(a.Host, d.Host)
}
