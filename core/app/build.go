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
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/certificates/keygen"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/clock"
	issuerctl "github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/policy/plugins/denydomains"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/repo"
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
	// Queue is the work queue the kernel wakes keys on (required by roles
	// with an engine).
	Queue ports.Queue
	// MaxQueueDelay is the longest delay Queue supports (SQS: 15 minutes;
	// zero: the kernel's default).
	MaxQueueDelay time.Duration
	// SignerQueue receives the requests a role hands off (Role.HandsOff);
	// nil: handing off fails permanently, saying so.
	SignerQueue ports.Queue
	// Clock is the domain clock (default the wall clock).
	Clock ports.Clock
	// Metrics receives counters and observations (default none).
	Metrics ports.Metrics
	// EventsExpire: Store expires Events by itself (ExpiresAt's TTL on
	// DynamoDB and Firestore), so the Events of records the steps delete
	// are left to it (kernel.Config.EventsExpire); a user's delete still
	// deletes the object's Events.
	EventsExpire bool
	// Logger receives what the service leaves undone on purpose and every
	// Event the kernel writes (default: discarded).
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
	// rbac.Controller(): system:serviceaccount:cert-manager:cert-manager,
	// as cert-manager's controller, so policies written for cert-manager
	// apply).
	Identity rbac.Identity
	// WaitPoll is how long a resource waiting on another one waits before
	// looking again by itself (every controller alike; default 10 minutes).
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
	// HTTP01SelfCheckHint, when set, ends each HTTP-01 self-check failure
	// while HTTP01SelfCheckAddr is not set and a responder runs: how to
	// point the check at the responder (http01.SelfCheck.AddrHint).
	HTTP01SelfCheckHint string
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
	// Kernel runs reconciles and sweeps (nil for roles without an engine).
	Kernel *kernel.Kernel
	// Repo reads the stored objects (nil for roles without an engine).
	Repo *repo.Repo
	// Service is the application service every front end calls (nil
	// without an engine).
	Service *Service
	// Accounts is the ACME issuer's account manager (roles with ACME).
	Accounts *acme.Accounts
	// HTTP01 answers /.well-known/acme-challenge/{token} (roles with HTTP01).
	HTTP01 http.Handler

	wiring Wiring
}

// Wiring is what Build assembled around the kernel of a role, for tests
// and diagnostics to inspect (App.Wiring).
type Wiring struct {
	// Signers are the signers by issuer type: the ones the role signs
	// with, and the hand-off of the ones it hands to the signer queue.
	Signers map[string]signers.Signer
	// Secrets is the secret store the controllers use (one that refuses
	// every call in a role without Secrets).
	Secrets ports.SecretStore
	// ACME are the ACME issuer's controllers by kind (Order, Challenge);
	// empty in a role without the ACME issuer.
	ACME map[string]kernel.Controller
	// Importer, Notifier and NotifyExpiryWindow are the Certificate
	// controller's.
	Importer           ports.CertificateImporter
	Notifier           ports.Notifier
	NotifyExpiryWindow time.Duration
	// ClusterResourceNamespace holds ClusterIssuer secrets.
	ClusterResourceNamespace string
	// MaxQueueDelay is the kernel's.
	MaxQueueDelay time.Duration
	// IssuancesPerHourPerNamespace is the issuance quota.
	IssuancesPerHourPerNamespace int
	// Evaluator is the one policy evaluator, with its plugins.
	Evaluator *policy.Evaluator
	// Approver decides requests: Settings.Approver, certfn's policy
	// approver when none is set, or a refusing one in a role that does
	// not approve.
	Approver certificaterequests.Approver
	// Identity is certfn's requester identity on the requests
	// Certificates create.
	Identity rbac.Identity
	// Table is the kernel's controller table.
	Table []kernel.Row
}

// Wiring returns what Build assembled around the kernel (the zero
// Wiring for a role without an engine).
func (a *App) Wiring() Wiring { return a.wiring }

// Build is the one composition of certfn: the policy evaluator with its
// plugins, the approver, the ACME issuer (accounts, DNS-01 solver, Order
// and Challenge controllers, signer), the signers of the role (sign here,
// hand off to the signer queue, or refuse), the controller of every kind
// in one table, the kernel that runs them, the repository and the
// application service. A deployment builds its adapters and calls it once
// per process.
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
	rp := repo.New(p.Store, issuers)
	a.Repo = rp
	identity := s.Identity
	if identity.Username == "" {
		identity = rbac.Controller()
	}
	approver := s.Approver
	if !role.Approves {
		approver = refuseApprover{role: role.Name}
	}
	var keys certificates.KeyPolicy
	if approver == nil {
		// Requests are decided by the auto-approve list, then
		// CertificateRequestPolicies (docs/design/approval-policy.md).
		ap, err := policy.NewApprover(ev, ExpandAutoApprove(s.AutoApprove))
		if err != nil {
			return nil, fmt.Errorf("app: auto-approve list: %w", err)
		}
		approver = &policyApprover{objs: rp, ap: ap}
		// A Certificate's spec.privateKey that no policy could allow is
		// refused before its key is generated.
		keys = keyPolicy{objs: rp, ap: ap, identity: identity}
	}
	w := Wiring{Signers: map[string]signers.Signer{}, Secrets: secrets, ACME: map[string]kernel.Controller{},
		Importer: p.CertificateImporter, Notifier: p.Notifier, NotifyExpiryWindow: s.NotifyExpiryWindow, ClusterResourceNamespace: issuers.ClusterNamespace(),
		IssuancesPerHourPerNamespace: s.Quotas.IssuancesPerHourPerNamespace, Evaluator: ev, Approver: approver, Identity: identity}
	var acmeReady func(context.Context, *issuerctl.State) (bool, string, string, error)
	var orderCtl, challengeCtl kernel.Controller // nil in a role without the ACME issuer
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
			chCfg.HTTP01 = &http01.SelfCheck{Addr: s.ACME.HTTP01SelfCheckAddr, NoResponder: s.ACME.HTTP01NoResponder,
				AddrHint: s.ACME.HTTP01SelfCheckHint}
		}
		if tokens != nil {
			// The responder is in this process: a presented token is served at once.
			chCfg.AfterPresent = func(*api.Challenge) { tokens.Invalidate() }
		}
		orderCtl = orders.New(orders.Config{Accounts: a.Accounts, Issuers: issuers, Polling: s.ACME.Polling, WaitPoll: s.WaitPoll})
		challengeCtl = challenges.New(chCfg)
		w.ACME[api.KindOrder], w.ACME[api.KindChallenge] = orderCtl, challengeCtl
		providers := p.DNS01
		acmeReady = func(ctx context.Context, st *issuerctl.State) (bool, string, string, error) {
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
			w.Signers[typ] = sig
		case role.handsOff(typ):
			w.Signers[typ] = handoff{q: p.SignerQueue}
		}
	}
	if s.WrapSigners != nil {
		w.Signers = s.WrapSigners(w.Signers)
	}

	certCtl, err := certificates.NewController(certificates.Config{Secrets: secrets, Reads: rp, Identity: identity,
		WaitPoll: s.WaitPoll, ResyncInterval: s.ResyncInterval, Importer: p.CertificateImporter,
		Notifier: p.Notifier, NotifyExpiryWindow: s.NotifyExpiryWindow, Keys: keygen.New(s.GenerateKey, 0),
		KeyPolicy: keys, FileBounds: s.SecretFileBounds})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	reqCtl, err := certificaterequests.NewController(certificaterequests.Config{Approver: approver, Signers: w.Signers, Reads: rp, WaitPoll: s.WaitPoll,
		IssuancesPerHourPerNamespace: s.Quotas.IssuancesPerHourPerNamespace})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	csrCtl, err := certificatesigningrequests.NewController(certificatesigningrequests.Config{Approver: approver, Signers: w.Signers, Reads: rp,
		ClusterResourceNamespace: issuers.ClusterNamespace(), WaitPoll: s.WaitPoll, IssuancesPerHour: s.Quotas.IssuancesPerHourPerNamespace})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	issuerCtl, err := issuerctl.NewController(issuerctl.Config{Secrets: secrets, Issuers: issuers, Waiting: rp,
		WaitPoll: s.WaitPoll, ACMEReady: acmeReady})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	policyCtl, err := policy.NewController(ev, rp)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}

	// The controller table: one row per kind. Its order is the order in
	// which a restart wakes unfinished work (kernel.WakeUnfinished):
	// Certificates before their requests (a Certificate looks at its
	// requests, not the other way round), then what the requests own.
	w.Table = []kernel.Row{
		{Kinds: []string{api.KindCertificate}, Controller: certCtl, Owns: []string{api.KindCertificateRequest},
			Unfinished: certCtl.Unfinished},
		{Kinds: []string{api.KindCertificateRequest}, Controller: reqCtl, Owns: []string{api.KindOrder},
			Unfinished: certificaterequests.Unfinished},
		{Kinds: []string{api.KindOrder}, Controller: orderCtl, Owns: []string{api.KindChallenge},
			Unfinished: orders.Unfinished},
		{Kinds: []string{api.KindChallenge}, Controller: challengeCtl,
			Unfinished: challenges.Unfinished},
		// The ACME Order of a CertificateSigningRequest, in the issuer's namespace.
		{Kinds: []string{api.KindCertificateSigningRequest}, Controller: csrCtl, Owns: []string{api.KindOrder},
			Unfinished: certificatesigningrequests.Unfinished},
		{Kinds: []string{api.KindIssuer, api.KindClusterIssuer}, Controller: issuerCtl,
			Unfinished: issuerctl.Unfinished},
		{Kinds: []string{api.KindCertificateRequestPolicy}, Controller: policyCtl},
		{Kinds: policy.InputKinds, Controller: policy.NewInputController(rp)},
	}
	if a.Kernel, err = kernel.New(kernel.Config{Store: p.Store, Queue: p.Queue, Clock: p.Clock, Metrics: p.Metrics,
		MaxQueueDelay: p.MaxQueueDelay, DeferWakes: role.DeferWakes, Controllers: w.Table, Logger: p.Logger, EventsExpire: p.EventsExpire}); err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	w.MaxQueueDelay = a.Kernel.Config().MaxQueueDelay
	a.wiring = w
	a.Service = &Service{repo: rp, objects: a.Kernel.Direct(), clock: p.Clock, evaluator: ev, identity: identity,
		secrets: secrets, readSecrets: role.Secrets && role.ServiceReadsSecrets && p.Secrets != nil,
		deletesSecrets: role.Secrets && p.Secrets != nil, writesSecrets: role.Secrets && role.ServiceWritesSecrets && p.Secrets != nil,
		accounts: a.Accounts, log: p.Logger, quotas: s.Quotas, secretRef: p.SecretReference}
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
