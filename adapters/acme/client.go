// Package acme implements core/acme's Client port with the low-level
// client of github.com/mholt/acmez/v3/acme: one call per ACME step, JWS
// signing and badNonce retries by acmez. Idempotent GETs and HEADs (the
// directory, nonces, ARI) go through go-retryablehttp with bounded retries;
// signed POSTs are never re-sent by certfn. ACME problems become errors in
// one place (mapError). The issuer's caBundle / skipTLSVerify configure
// TLS.
package acme

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mholt/acmez/v3/acme"

	"github.com/certfn/certfn/adapters/netguard"
	core "github.com/certfn/certfn/core/acme"
)

// Options configure a Dialer.
type Options struct {
	// Wrap, when set, wraps the base transport of every client (tests
	// count requests and inject failures; wrapped below the retry layer,
	// so every attempt is seen).
	Wrap func(http.RoundTripper) http.RoundTripper
	// UserAgent is sent with every request (default "certfn").
	UserAgent string
	// Retries is the number of extra attempts of an idempotent GET
	// (default 2).
	Retries int
	// Timeout bounds one HTTP request (default 30 s).
	Timeout time.Duration
	// Network is the operator's allowance for the connections of
	// namespaced Issuers' clients (ServerConfig.Cluster false): they may
	// not reach loopback, link-local, private or reserved addresses
	// except those it allows. The zero Policy allows none.
	Network netguard.Policy
}

// Dialer hands out one Client per server configuration (directory,
// caBundle, skipTLSVerify, scope), cached for the life of the process. It
// implements core/acme.Dialer.
type Dialer struct {
	opts Options

	mu      sync.Mutex
	clients map[string]*Client
}

// NewDialer returns a Dialer.
func NewDialer(o Options) *Dialer {
	if o.UserAgent == "" {
		o.UserAgent = "certfn"
	}
	if o.Retries <= 0 {
		o.Retries = 2
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return &Dialer{opts: o, clients: map[string]*Client{}}
}

var _ core.Dialer = (*Dialer)(nil)

// Client returns the cached client for cfg, building it on first use.
func (d *Dialer) Client(cfg core.ServerConfig) (core.Client, error) {
	sum := sha256.Sum256(cfg.CABundle)
	key := fmt.Sprintf("%s|%x|%t|%t", cfg.Directory, sum[:8], cfg.SkipTLSVerify, cfg.Cluster)
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.clients[key]; ok {
		return c, nil
	}
	base, err := baseTransport(cfg.CABundle, cfg.SkipTLSVerify, d.opts.Network, !cfg.Cluster)
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = base
	if d.opts.Wrap != nil {
		rt = d.opts.Wrap(rt)
	}
	rt = errorBodies{next: rt}
	rt = captureTransport{next: methodSplit{idempotent: retrying(rt, d.opts.Retries), direct: rt}}
	ari := &ariDirectory{next: nonceMark{next: rt}, dir: cfg.Directory}
	hc := &http.Client{Transport: ari, Timeout: d.opts.Timeout}
	c := &Client{
		dir: cfg.Directory,
		hc:  hc,
		ari: ari,
		ac: &acme.Client{
			// acmez caches directories by this string for the whole
			// process: the fragment (never sent) keeps the cache entry
			// of this filtered directory (see ariDirectory) to certfn.
			Directory:  trimFragment(cfg.Directory) + "#certfn",
			HTTPClient: hc,
			UserAgent:  d.opts.UserAgent,
			// Finalize must not wait: a tiny poll timeout makes acmez
			// return right after the finalize POST.
			PollTimeout:  time.Nanosecond,
			PollInterval: time.Nanosecond,
		},
	}
	d.clients[key] = c
	return c, nil
}

// Thumbprint is the key's JWK thumbprint (RFC 7638).
func (d *Dialer) Thumbprint(key crypto.Signer) (string, error) {
	a := acme.Account{PrivateKey: key}
	return a.Thumbprint()
}

// Client is one ACME server's client. Safe for concurrent use.
type Client struct {
	dir string
	hc  *http.Client
	ari *ariDirectory
	ac  *acme.Client
}

var _ core.Client = (*Client)(nil)

func account(a core.Account) acme.Account {
	return acme.Account{Location: a.URL, PrivateKey: a.Key}
}

// Register implements core/acme.Client.
func (c *Client) Register(ctx context.Context, req core.RegisterRequest) (core.Account, error) {
	ctx, m := withMeta(ctx)
	a := acme.Account{TermsOfServiceAgreed: true, PrivateKey: req.Key}
	if req.Email != "" {
		a.Contact = []string{"mailto:" + req.Email}
	}
	if req.EAB != nil {
		if err := a.SetExternalAccountBinding(ctx, c.ac, acme.EAB{KeyID: req.EAB.KeyID, MACKey: req.EAB.MACKey}); err != nil {
			return core.Account{}, c.mapError("external account binding", err, m)
		}
	}
	got, err := signedCall(func() (acme.Account, error) { return c.ac.NewAccount(ctx, a) })
	if err != nil {
		return core.Account{}, c.mapError("register account", err, m)
	}
	if got.Status != "" && got.Status != acme.StatusValid {
		return core.Account{}, permanentf("register account: the ACME account %s is %s", got.Location, got.Status)
	}
	// An existing account keeps its contact: update it when the email changed.
	if !sameContacts(got.Contact, a.Contact) {
		got.Contact = a.Contact
		got.PrivateKey = req.Key
		if _, err := signedCall(func() (acme.Account, error) { return c.ac.UpdateAccount(ctx, got) }); err != nil {
			return core.Account{}, c.mapError("update account contact", err, m)
		}
	}
	tp, err := (&acme.Account{PrivateKey: req.Key}).Thumbprint()
	if err != nil {
		return core.Account{}, fmt.Errorf("account key thumbprint: %w", err)
	}
	return core.Account{URL: got.Location, Key: req.Key, Thumbprint: tp}, nil
}

func sameContacts(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

func orderOf(o acme.Order, ra time.Duration) core.Order {
	out := core.Order{URL: o.Location, Status: o.Status, FinalizeURL: o.Finalize, CertificateURL: o.Certificate,
		Authorizations: o.Authorizations, RetryAfter: ra}
	if o.Error != nil {
		out.Problem = problemText(*o.Error)
	}
	return out
}

// NewOrder implements core/acme.Client.
func (c *Client) NewOrder(ctx context.Context, acct core.Account, req core.NewOrderRequest) (core.Order, error) {
	if req.Profile != "" {
		// acmez refuses a profile the directory does not list, with a
		// plain error (retried as transient): say it once, permanently.
		profiles, err := c.Profiles(ctx)
		if err != nil {
			return core.Order{}, err
		}
		if why := core.ProfileProblem(req.Profile, profiles); why != "" {
			return core.Order{}, permanentf("create order: %s", why)
		}
	}
	ctx, m := withMeta(ctx)
	o := acme.Order{Profile: req.Profile, Replaces: req.Replaces}
	for _, d := range req.DNSNames {
		o.Identifiers = append(o.Identifiers, acme.Identifier{Type: "dns", Value: d})
	}
	for _, ip := range req.IPAddresses {
		o.Identifiers = append(o.Identifiers, acme.Identifier{Type: "ip", Value: ip})
	}
	if !req.NotAfter.IsZero() {
		na := req.NotAfter.UTC()
		o.NotAfter = &na
	}
	got, err := signedCall(func() (acme.Order, error) { return c.ac.NewOrder(ctx, account(acct), o) })
	if err != nil {
		return core.Order{}, c.mapError("create order", err, m)
	}
	return orderOf(got, m.RetryAfter()), nil
}

// Profiles implements core/acme.ProfileLister: the profiles the server's
// directory advertises (meta.profiles), by name, with their description;
// nil when it advertises none.
func (c *Client) Profiles(ctx context.Context) (map[string]string, error) {
	ctx, m := withMeta(ctx)
	dir, err := c.ac.GetDirectory(ctx)
	if err != nil {
		return nil, c.mapError("read directory", err, m)
	}
	return dir.Meta.Profiles, nil
}

// GetOrder implements core/acme.Client.
func (c *Client) GetOrder(ctx context.Context, acct core.Account, url string) (core.Order, error) {
	ctx, m := withMeta(ctx)
	got, err := signedCall(func() (acme.Order, error) { return c.ac.GetOrder(ctx, account(acct), acme.Order{Location: url}) })
	if err != nil {
		return core.Order{}, c.mapError("get order", err, m)
	}
	got.Location = url
	return orderOf(got, m.RetryAfter()), nil
}

// GetAuthorization implements core/acme.Client.
func (c *Client) GetAuthorization(ctx context.Context, acct core.Account, url string) (core.Authorization, error) {
	ctx, m := withMeta(ctx)
	got, err := signedCall(func() (acme.Authorization, error) { return c.ac.GetAuthorization(ctx, account(acct), url) })
	if err != nil {
		return core.Authorization{}, c.mapError("get authorization", err, m)
	}
	out := core.Authorization{URL: url, Status: got.Status, Identifier: got.Identifier.Value, Wildcard: got.Wildcard,
		RetryAfter: m.RetryAfter()}
	for _, ch := range got.Challenges {
		cc := core.Challenge{URL: ch.URL, Type: ch.Type, Token: ch.Token, Status: ch.Status}
		if ch.Error != nil {
			cc.Problem = problemText(*ch.Error)
		}
		out.Challenges = append(out.Challenges, cc)
	}
	return out, nil
}

// AcceptChallenge implements core/acme.Client.
func (c *Client) AcceptChallenge(ctx context.Context, acct core.Account, challengeURL string) (core.Challenge, error) {
	ctx, m := withMeta(ctx)
	got, err := signedCall(func() (acme.Challenge, error) {
		return c.ac.InitiateChallenge(ctx, account(acct), acme.Challenge{URL: challengeURL})
	})
	if err != nil {
		return core.Challenge{}, c.mapError("accept challenge", err, m)
	}
	out := core.Challenge{URL: challengeURL, Type: got.Type, Token: got.Token, Status: got.Status, RetryAfter: m.RetryAfter()}
	if got.Error != nil {
		out.Problem = problemText(*got.Error)
	}
	return out, nil
}

// Finalize implements core/acme.Client. acmez's FinalizeOrder is called
// with a poll timeout of 1 ns, so it returns right after the finalize POST.
func (c *Client) Finalize(ctx context.Context, acct core.Account, orderURL, finalizeURL string, csrDER []byte) (core.Order, error) {
	ctx, m := withMeta(ctx)
	got, err := signedCall(func() (acme.Order, error) {
		return c.ac.FinalizeOrder(ctx, account(acct), acme.Order{Location: orderURL, Finalize: finalizeURL}, csrDER)
	})
	var p acme.Problem
	switch {
	case errors.As(err, &p) && p.Type == acme.ProblemTypeOrderNotReady:
		return core.Order{}, fmt.Errorf("finalize order: %w: %s", core.ErrOrderNotReady, p.Detail)
	case errors.As(err, &p):
		return core.Order{}, c.mapError("finalize order", err, m)
	case got.Status == "" && err != nil && strings.Contains(err.Error(), "unrecognized order status"):
		// acmez swallows an orderNotReady problem and then fails on the
		// empty status of the order we passed in: the server did not
		// finalize (already processing or valid, or not ready yet).
		return core.Order{}, fmt.Errorf("finalize order: %w", core.ErrOrderNotReady)
	case got.Status == "":
		if err == nil {
			err = errors.New("empty response")
		}
		return core.Order{}, c.mapError("finalize order", err, m)
	}
	// Any other error is acmez's own verdict on the returned status
	// ("order took too long", "final order is invalid"): the status
	// itself is what the Order step acts on.
	got.Location = orderURL
	return orderOf(got, m.RetryAfter()), nil
}

// Chains implements core/acme.Client: the chain and its alternates, with
// no renewal information (the directory acmez sees has none, see
// ariDirectory); the Order step fetches it with RenewalInfo when it needs
// it.
func (c *Client) Chains(ctx context.Context, acct core.Account, certURL string) ([]core.Chain, error) {
	ctx, m := withMeta(ctx)
	got, err := signedCall(func() ([]acme.Certificate, error) { return c.ac.GetCertificateChain(ctx, account(acct), certURL) })
	if err != nil {
		return nil, c.mapError("download certificate", err, m)
	}
	out := make([]core.Chain, 0, len(got))
	for _, ch := range got {
		cc := core.Chain{PEM: ch.ChainPEM, URL: ch.URL}
		if ri := ch.RenewalInfo; ri != nil && ri.HasWindow() {
			cc.RenewalInfo = &core.RenewalInfo{CertificateID: ri.UniqueIdentifier, WindowStart: ri.SuggestedWindow.Start,
				WindowEnd: ri.SuggestedWindow.End, ExplanationURL: ri.ExplanationURL}
			if ri.RetryAfter != nil {
				if d := time.Until(*ri.RetryAfter); d > 0 {
					cc.RenewalInfo.RetryAfter = d
				}
			}
		}
		out = append(out, cc)
	}
	return out, nil
}

// Revoke implements core/acme.Client (signed with the account key). A
// certificate the server reports as already revoked is success: a retried
// revocation is idempotent.
func (c *Client) Revoke(ctx context.Context, acct core.Account, leaf *x509.Certificate, reason int) error {
	ctx, m := withMeta(ctx)
	if _, err := signedCall(func() (struct{}, error) {
		return struct{}{}, c.ac.RevokeCertificate(ctx, account(acct), leaf, nil, reason)
	}); err != nil {
		var p acme.Problem
		if errors.As(err, &p) && p.Type == acme.ProblemTypeAlreadyRevoked {
			return nil
		}
		return c.mapError("revoke certificate", err, m)
	}
	return nil
}

// RenewalInfo implements core/acme.Client: one GET of the renewalInfo
// resource (RFC 9773 §4.2) through the retrying transport (and of the
// directory first when this process has not read it).
func (c *Client) RenewalInfo(ctx context.Context, leaf *x509.Certificate) (core.RenewalInfo, error) {
	ctx, m := withMeta(ctx)
	ariURL, known := c.ari.renewalInfoURL()
	if !known {
		if err := c.readDirectory(ctx); err != nil {
			return core.RenewalInfo{}, c.mapError("read directory", err, m)
		}
		ariURL, _ = c.ari.renewalInfoURL()
	}
	if ariURL == "" {
		return core.RenewalInfo{}, core.ErrARIUnsupported
	}
	id, err := acme.ARIUniqueIdentifier(leaf)
	if err != nil {
		return core.RenewalInfo{}, permanentf("renewal info: certificate identifier: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(ariURL, "/")+"/"+id, nil)
	if err != nil {
		return core.RenewalInfo{}, permanentf("renewal info: %v", err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return core.RenewalInfo{}, c.mapError("get renewal info", err, m)
	}
	defer resp.Body.Close() //nolint:errcheck
	var body struct {
		SuggestedWindow struct {
			Start time.Time `json:"start"`
			End   time.Time `json:"end"`
		} `json:"suggestedWindow"`
		ExplanationURL string `json:"explanationURL"`
	}
	if resp.StatusCode != http.StatusOK {
		var p acme.Problem
		_ = json.NewDecoder(resp.Body).Decode(&p)
		if p.Status == 0 {
			p.Status = resp.StatusCode
		}
		return core.RenewalInfo{}, c.mapError("get renewal info", p, m)
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return core.RenewalInfo{}, transientf("get renewal info: the server's answer is not renewal information JSON: %v", err)
	}
	w := body.SuggestedWindow
	if w.Start.IsZero() || !w.End.After(w.Start) {
		return core.RenewalInfo{}, transientf("get renewal info: the server's suggested window %s .. %s is not usable", w.Start, w.End)
	}
	return core.RenewalInfo{CertificateID: id, WindowStart: w.Start, WindowEnd: w.End, ExplanationURL: body.ExplanationURL,
		RetryAfter: ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}, nil
}

// readDirectory GETs the directory through the filtering transport, which
// records its renewalInfo URL (acmez may hold the directory from its
// process-wide cache without this client having read it).
func (c *Client) readDirectory(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, trimFragment(c.dir), nil)
	if err != nil {
		return permanentf("read directory: %v", err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read directory: HTTP %d", resp.StatusCode)
	}
	if _, known := c.ari.renewalInfoURL(); !known {
		return transientf("read directory: the server's answer is not an ACME directory")
	}
	return nil
}
