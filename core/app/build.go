package app

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/acme/http01"
	"github.com/certfn/certfn/core/acme/orders"
	acmesigner "github.com/certfn/certfn/core/acme/signer"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificates/keygen"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/engine"
	issuerstep "github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/policy/plugins/denydomains"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/signers/ca"
	"github.com/certfn/certfn/core/signers/selfsigned"
)

// Ports are the adapters a deployment built from its configuration.
type Ports struct {
	// Store is the state store (required).
	Store ports.Store
	// Secrets is the secret store (required by roles with Secrets; other
	// roles never see it).
	Secrets ports.SecretStore
	// Queue is the work queue the engine wakes keys on (required by roles
	// with an engine).
	Queue ports.Queue
	// MaxQueueDelay is the longest delay Queue supports (SQS: 15 minutes;
	// zero: the engine's default).
	MaxQueueDelay time.Duration
	// SignerQueue receives the requests a role hands off (Role.HandsOff);
	// nil: handing off fails permanently, saying so.
	SignerQueue ports.Queue
	// Clock is the domain clock (default the wall clock).
	Clock ports.Clock
	// Metrics receives counters and observations (default none).
	Metrics ports.Metrics
	// Logger receives what the service leaves undone on purpose (default:
	// discarded).
	Logger *slog.Logger
	// ACME dials ACME servers (required by roles with ACME).
	ACME acme.Dialer
	// DNS01 are the DNS-01 providers by key (dns01.KeyRFC2136, …).
	DNS01 map[string]dns01.ProviderFactory
	// DNS01Resolver says which DNS servers DNS-01 checks ask.
	DNS01Resolver dns01.Resolver
	// CertificateImporter imports key pairs of Certificates annotated
	// certfn.io/acm-import (nil: such Certificates get a condition saying
	// it is not configured).
	CertificateImporter ports.CertificateImporter
	// Notifier publishes events about Certificates — issued, renewed,
	// failed, approaching expiration (core/certificates/notify.go); nil:
	// notifications are off. Only roles with an engine use it.
	Notifier ports.Notifier
	// SecretReference names where the deployment's secret store keeps the
	// secret namespace/name — a Secrets Manager secret name or Parameter
	// Store path, a Secret Manager resource name, a local directory — for
	// Status to report (Report.Secret.Reference), so tools such as the
	// Terraform provider can hand it to a consumer. It reads nothing and
	// must not fail; nil: Status reports no reference.
	SecretReference func(namespace, name string) string
}

// Settings are a deployment's choices, parsed from its configuration.
type Settings struct {
	// ClusterResourceNamespace holds ClusterIssuer secrets (default
	// api.DefaultClusterResourceNamespace).
	ClusterResourceNamespace string
	// AutoApprove lists signer names approved without a policy, as
	// cert-manager's approveSignerNames; "*" stands for every cert-manager
	// signer (issuers.cert-manager.io/* and clusterissuers.cert-manager.io/*).
	AutoApprove []string
	// Identity is certfn's own requester identity (default
	// engine.DefaultIdentity).
	Identity engine.Identity
	// WaitPoll is how long a resource waiting on another one waits before
	// looking again by itself (engine, Orders, Challenges alike; default
	// 10 minutes).
	WaitPoll time.Duration
	// ResyncInterval bounds how long a Ready Certificate goes unchecked
	// (default 24 h).
	ResyncInterval time.Duration
	// ACME configures the ACME issuer.
	ACME ACMESettings
	// Quotas are the per-namespace quotas (default: none).
	Quotas Quotas
	// NotifyExpiryWindow is how long before its expiry a certificate is
	// announced as expiring through Ports.Notifier, once a day (0: never;
	// the deployments default to certificates.NotifyDefaultExpiryWindow, 14 days).
	NotifyExpiryWindow time.Duration
	// SecretFileBounds bound the file permissions (owner, group, mode) a
	// Certificate's spec.secretTemplate may ask of its secret's files (nil:
	// not bounded: the deployment's secret store has no files).
	SecretFileBounds *api.SecretFileBounds

	// Approver replaces the approver of a role that approves (tests).
	Approver certificaterequests.Approver
	// WrapSigners may wrap or replace the signers (tests inject failures).
	WrapSigners func(map[string]signers.Signer) map[string]signers.Signer
	// GenerateKey replaces pki.GenerateKey under the key generation stage
	// (keygen.Stage: expensive keys shared out per namespace); tests count
	// and order the keys generated.
	GenerateKey func(*api.CertificatePrivateKey) (crypto.Signer, error)
}

// ACMESettings configure the ACME issuer.
type ACMESettings struct {
	// Polling says when an accepted challenge's authorization and a
	// finalized order are polled when the server gives no Retry-After
	// (zero fields: acme.DefaultPollFirst, doubling up to acme.DefaultPollMax).
	Polling acme.Polling
	// MaxChallengesInFlight bounds the Challenges processing at once (default 60).
	MaxChallengesInFlight int
	// DNS01AllowInternalNames accepts internal names (private ACME servers).
	DNS01AllowInternalNames bool
	// HTTP01SelfCheck checks that a presented HTTP-01 token is served
	// before the ACME server is asked to validate it.
	HTTP01SelfCheck bool
	// HTTP01SelfCheckAddr, when set, is dialled by the self-check instead
	// of <dnsName>:80.
	HTTP01SelfCheckAddr string
	// HTTP01NoResponder, when set, says that no HTTP-01 responder answers
	// for this process's Challenges (local mode serving without
	// --http01-listen) and how to start one: every HTTP-01 self-check
	// failure starts with it. Empty where a responder runs (the cloud
	// http01 functions, local mode with --http01-listen) or may run in
	// another process.
	HTTP01NoResponder string
	// NamespacedServers restricts the ACME servers of namespaced Issuers
	// (acme.ParseServerAllowList; ClusterIssuers are the platform team's
	// and unrestricted). An Issuer with another server is not Ready
	// (acme.ReasonServerNotAllowed) and no ACME request is made for it.
	// The zero value allows namespaced Issuers no server (deny by default;
	// acme.AllowAnyServer allows every one).
	NamespacedServers acme.ServerAllowList
}

// Quotas limit what one namespace may hold and have signed, for a
// deployment shared by many teams. Zero means unlimited (the default).
type Quotas struct {
	// ObjectsPerNamespace is the most Certificates, CertificateRequests,
	// Issuers, Roles and RoleBindings (together) one namespace may hold:
	// Service.Apply refuses a batch whose creates would take a namespace
	// over it (ErrForbidden, "exceeded quota"). Every object of those
	// kinds counts, the CertificateRequests certfn creates for
	// Certificates included (as Kubernetes' ResourceQuota counts every
	// object of a kind); certfn's own writes are never refused, and
	// updates of existing objects never are. Orders, Challenges and Events
	// (certfn's bookkeeping) do not count. CertificateSigningRequests,
	// cluster-scoped, count by requester (spec.username) against the same
	// limit. Env CERTFN_QUOTA_OBJECTS, flag --quota-objects.
	ObjectsPerNamespace int
	// IssuancesPerHourPerNamespace is the most CertificateRequests of one
	// namespace signed in any rolling hour: the signing step leaves a
	// request of a namespace at the limit Pending until the oldest
	// issuance of the hour is an hour old. ACME requests count alike (no
	// Order is created while the namespace is at its limit).
	// CertificateSigningRequests count by requester (spec.username) against
	// the same limit: an approved CSR of a requester at the limit waits
	// (IssuanceQuotaReached). Env CERTFN_QUOTA_ISSUANCES_PER_HOUR, flag
	// --quota-issuances-per-hour.
	IssuancesPerHourPerNamespace int
}

// Validate checks that no quota is negative; the error names the field.
func (q Quotas) Validate() error {
	switch {
	case q.ObjectsPerNamespace < 0:
		return fmt.Errorf("quotas: ObjectsPerNamespace is %d: want 0 (unlimited) or more", q.ObjectsPerNamespace)
	case q.IssuancesPerHourPerNamespace < 0:
		return fmt.Errorf("quotas: IssuancesPerHourPerNamespace is %d: want 0 (unlimited) or more", q.IssuancesPerHourPerNamespace)
	}
	return nil
}

// App is one role assembled: what a runtime drives.
type App struct {
	Role Role
	// Engine runs reconciles and sweeps (nil for roles without one).
	Engine *engine.Engine
	// Service is the application service every front end calls (nil
	// without an engine).
	Service *Service
	// Accounts is the ACME issuer's account manager (roles with ACME).
	Accounts *acme.Accounts
	// HTTP01 answers /.well-known/acme-challenge/{token} (roles with HTTP01).
	HTTP01 http.Handler
}

// Build is the one composition of certfn: the policy evaluator with its
// plugins, the ACME issuer (accounts, DNS-01 solver, Order and Challenge
// handlers, signer), the signers of the role (sign here, hand off to the
// signer queue, or refuse), the engine and the application service. A
// deployment builds its adapters and calls it once per process.
func Build(p Ports, s Settings, role Role) (*App, error) {
	if p.Store == nil {
		return nil, errors.New("app: Ports.Store is required")
	}
	if p.Clock == nil {
		p.Clock = clock.Real{}
	}
	if err := s.Quotas.Validate(); err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	a := &App{Role: role}
	var tokens *http01.StoreTokens
	if role.HTTP01 {
		// A wall clock: the token cache's age is request-rate bookkeeping.
		tokens = &http01.StoreTokens{Store: p.Store, Clock: clock.Real{}}
		a.HTTP01 = http01.Handler{Tokens: tokens}
	}
	if !role.Engine {
		return a, nil
	}
	secrets := p.Secrets
	if !role.Secrets || secrets == nil {
		secrets = refuseSecrets{role: role.Name}
	}
	issuers := api.IssuerScope{ClusterResourceNamespace: s.ClusterResourceNamespace}
	// Policy plugins compiled into certfn are registered here, explicitly.
	ev, err := policy.NewEvaluator(policy.Options{Plugins: []policy.Plugin{denydomains.New()}, Metrics: p.Metrics})
	if err != nil {
		return nil, fmt.Errorf("app: policy evaluator: %w", err)
	}
	cfg := engine.Config{
		Store: p.Store, Secrets: secrets, Queue: p.Queue, Clock: p.Clock, Metrics: p.Metrics,
		Evaluator: ev, AutoApprove: ExpandAutoApprove(s.AutoApprove), Approver: s.Approver,
		ClusterResourceNamespace: issuers.ClusterNamespace(), Identity: s.Identity,
		WaitPoll: s.WaitPoll, ResyncInterval: s.ResyncInterval, MaxQueueDelay: p.MaxQueueDelay,
		DeferWakes: role.DeferWakes, CertificateImporter: p.CertificateImporter,
		Notifier: p.Notifier, NotifyExpiryWindow: s.NotifyExpiryWindow,
		Signers:                      map[string]signers.Signer{},
		IssuancesPerHourPerNamespace: s.Quotas.IssuancesPerHourPerNamespace,
		Keys:                         keygen.New(s.GenerateKey, 0),
		SecretFileBounds:             s.SecretFileBounds,
	}
	if !role.Approves {
		cfg.Approver = refuseApprover{role: role.Name}
	}
	if role.ACME {
		if p.ACME == nil {
			return nil, fmt.Errorf("app: the %s role runs the ACME issuer: Ports.ACME is required", role.Name)
		}
		a.Accounts = acme.NewAccounts(secrets, p.ACME, s.ACME.NamespacedServers)
		solver := dns01.NewSolver(dns01.Deps{Secrets: secrets, Clock: p.Clock, Issuers: issuers,
			Providers: p.DNS01, Resolver: p.DNS01Resolver, AllowInternalNames: s.ACME.DNS01AllowInternalNames})
		chCfg := challenges.Config{Accounts: a.Accounts, Issuers: issuers, DNS01: challenges.FromDNS01(solver),
			MaxInFlight: s.ACME.MaxChallengesInFlight, Polling: s.ACME.Polling, WaitPoll: s.WaitPoll}
		if s.ACME.HTTP01SelfCheck {
			chCfg.HTTP01 = &http01.SelfCheck{Addr: s.ACME.HTTP01SelfCheckAddr, NoResponder: s.ACME.HTTP01NoResponder}
		}
		if tokens != nil {
			// The responder is in this process: a presented token is served at once.
			chCfg.AfterPresent = func(*api.Challenge) { tokens.Invalidate() }
		}
		cfg.Handlers = map[string]engine.Handler{
			api.KindOrder:     orders.New(orders.Config{Accounts: a.Accounts, Issuers: issuers, Polling: s.ACME.Polling, WaitPoll: s.WaitPoll}),
			api.KindChallenge: challenges.New(chCfg),
		}
		providers := p.DNS01
		cfg.ACMEReady = func(ctx context.Context, st *issuerstep.State) (bool, string, string, error) {
			// A solver this deployment cannot act on keeps the issuer not
			// Ready, naming it, before any account work.
			if why := dns01.Unavailable(providers, st.Issuer.GetSpec().ACME); why != "" {
				return false, dns01.ReasonSolverNotAvailable, why, nil
			}
			return a.Accounts.Ready(ctx, st)
		}
	}
	for typ, sig := range map[string]signers.Signer{
		"selfSigned": selfsigned.New(secrets, p.Clock),
		"ca":         ca.New(secrets, p.Clock, p.Metrics),
		"acme":       acmesigner.New(p.Metrics),
	} {
		switch {
		case role.signs(typ):
			cfg.Signers[typ] = sig
		case role.handsOff(typ):
			cfg.Signers[typ] = handoff{q: p.SignerQueue}
		}
	}
	if s.WrapSigners != nil {
		cfg.Signers = s.WrapSigners(cfg.Signers)
	}
	if a.Engine, err = engine.New(cfg); err != nil {
		return nil, fmt.Errorf("app: engine: %w", err)
	}
	a.Service = &Service{engine: a.Engine, secrets: secrets, readSecrets: role.Secrets && role.ServiceReadsSecrets && p.Secrets != nil,
		deletesSecrets: role.Secrets && p.Secrets != nil, writesSecrets: role.Secrets && role.ServiceWritesSecrets && p.Secrets != nil, accounts: a.Accounts, log: p.Logger, quotas: s.Quotas,
		secretRef: p.SecretReference}
	return a, nil
}

// ExpandAutoApprove replaces "*" with every cert-manager signer
// (idempotent).
func ExpandAutoApprove(list []string) []string {
	var out []string
	for _, a := range list {
		if a == "*" {
			out = append(out, "issuers.cert-manager.io/*", "clusterissuers.cert-manager.io/*")
			continue
		}
		out = append(out, a)
	}
	return out
}
