// Package localmode assembles certfn's local mode: the SQLite state store,
// the file secret store, the in-process queue fed by the cross-process
// inbox, the engine with the selfSigned and CA signers, and the loops that
// drive them (`certfn serve`). Tests use the same Runtime with a fake clock
// and RunUntilIdle.
package localmode

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/dns/clouddns"
	dnsproviders "github.com/certfn/certfn/adapters/dns/providers"
	"github.com/certfn/certfn/adapters/dns/route53"
	"github.com/certfn/certfn/adapters/local"
	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/repo"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/internal/localmode/deployhook"
)

// Options configure a Runtime.
type Options struct {
	// Version is the version the binary was built as (the CLI's
	// main.version), reported by certfn_build_info.
	Version string
	// DataDir holds state.db and secrets/.
	DataDir string
	// MustExist makes Open refuse a data directory without state.db
	// (missing, empty, or holding something else) with a *NoDataError
	// instead of creating it: read-only commands use it so that a typo in
	// --data is reported, not answered from a new, empty store.
	MustExist bool
	// Clock defaults to the wall clock.
	Clock ports.Clock
	// ClusterResourceNamespace holds ClusterIssuer secrets (default cert-manager).
	ClusterResourceNamespace string
	// AutoApprove lists signer names approved without a policy
	// ("issuers.cert-manager.io/<ns>.<name>", "clusterissuers.cert-manager.io/<name>",
	// "issuers.cert-manager.io/*", "clusterissuers.cert-manager.io/*", or "*" for both).
	AutoApprove []string
	// Approver replaces the default approver (auto-approve list, then
	// CertificateRequestPolicies); tests only.
	Approver certificaterequests.Approver
	// CertificateFiles are the owner, group and mode of the files of
	// Certificates' secrets (local.SecretStore.SetCertificateFilePerms;
	// zero: the process's user, 0600). Annotations on a secret override.
	CertificateFiles local.FilePerms
	// CertificateFileBounds bound what a Certificate's
	// spec.secretTemplate.annotations may ask of its secret's files (zero:
	// at most mode 0640, no owner or group other than CertificateFiles'
	// own). CertificateFiles' owner and group are always allowed.
	CertificateFileBounds api.SecretFileBounds
	// QueueToInbox makes the engine's enqueues go to the inbox, for one-shot
	// CLI commands: a running `certfn serve` picks them up.
	QueueToInbox bool
	// Logger for handler errors (default: text to stderr).
	Logger *slog.Logger
	// WaitPoll overrides the engine's WaitPoll.
	WaitPoll time.Duration
	// WrapSigners, when set, may wrap or replace the signers (tests inject failures).
	WrapSigners func(map[string]signers.Signer) map[string]signers.Signer
	// GenerateKey, when set, replaces pki.GenerateKey under the key
	// generation stage (tests order and count the keys generated).
	GenerateKey func(*api.CertificatePrivateKey) (crypto.Signer, error)
	// Queue, when set, replaces the engine's queue (tests deliver duplicates).
	Queue ports.Queue
	// Identity is certfn's own requester identity on the requests its
	// Certificate steps create (default system:serviceaccount:cert-manager:cert-manager).
	Identity rbac.Identity
	// WrapSecrets, when set, wraps the secret store (benchmarks count calls).
	WrapSecrets func(ports.SecretStore) ports.SecretStore
	// WrapStore, when set, wraps the state store the engine writes through
	// (tests inject crashes after writes).
	WrapStore func(ports.Store) ports.Store
	// CertificateImporter imports the key pairs of Certificates annotated
	// certfn.io/acm-import (adapters/aws/acm); nil: such Certificates get
	// an ACMImported=False condition saying it is not configured.
	CertificateImporter ports.CertificateImporter

	// Notifier publishes the Certificates' events (issued, renewed,
	// failed, approaching expiration: core/certificates.NotifyStep); nil:
	// none. NotifyExpiryWindow is how long before its expiry a certificate
	// is announced as expiring (0: never). `certfn serve` builds a
	// webhook (NotifyConfig).
	Notifier           ports.Notifier
	NotifyExpiryWindow time.Duration

	// DeployHook, when its Command is set, runs a command after each new
	// certificate a Certificate's secret receives (certbot's
	// --deploy-hook; see internal/localmode/deployhook). Only Serve runs hooks.
	DeployHook DeployHookOptions

	// ACME holds the ACME issuer's settings.
	ACME ACMEOptions

	// Quotas are the per-namespace quotas (--quota-objects,
	// --quota-issuances-per-hour; zero: unlimited): every one-shot command
	// applies the objects quota in its own Service, serve both.
	Quotas app.Quotas
}

// DeployHookOptions configure `certfn serve --deploy-hook`.
type DeployHookOptions struct {
	Command string
	Timeout time.Duration
}

// ACMEOptions configure the ACME issuer in local mode.
type ACMEOptions struct {
	// WrapTransport wraps the ACME client's HTTP transport (tests count
	// requests, trust a test CA's TLS certificate or inject failures).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Timeout bounds one ACME HTTP request (default 30 s; tests of a
	// server that never answers shorten it).
	Timeout time.Duration
	// HTTP01SelfCheckAddr, when set, is dialled by the HTTP-01 self-check
	// instead of <dnsName>:80 (a responder on another port).
	HTTP01SelfCheckAddr string
	// DisableHTTP01SelfCheck skips the HTTP-01 self-check.
	DisableHTTP01SelfCheck bool
	// NoHTTP01Listener says that this process serves without an HTTP-01
	// responder (`certfn serve` without --http01-listen): a failing
	// HTTP-01 self-check then says so first (NoHTTP01ListenerReason).
	NoHTTP01Listener bool
	// DNS01Providers are added to the DNS-01 providers (rfc2136 and
	// route53 are built in; an entry here replaces a built-in one), keyed
	// as in core/acme/dns01.Deps.Providers.
	DNS01Providers map[string]dns01.ProviderFactory
	// DNS01Resolver says which DNS servers DNS-01 checks ask.
	DNS01Resolver dns01.Resolver
	// DNS01AllowInternalNames accepts internal names (private ACME servers).
	DNS01AllowInternalNames bool
	// MaxChallengesInFlight bounds the Challenges processing at once (default 60).
	MaxChallengesInFlight int
	// Polling says when ACME authorizations and orders the server is
	// working on are polled (`serve --acme-poll-first/--acme-poll-max`;
	// zero fields: the defaults of acme.Polling).
	Polling acme.Polling
	// ServerAllow lists the ACME directory URL prefixes namespaced Issuers
	// may use (`serve --acme-server-allow`, env CERTFN_ACME_SERVER_ALLOW;
	// see acme.ServerAllowList); empty: none (deny by default), "*": any
	// server.
	ServerAllow []string
	// AllowPrivateNetworks lists the CIDR prefixes, IP addresses and host
	// names that connections made for namespaced Issuers (their ACME
	// server and every URL it hands out, acmeDNS hosts, rfc2136
	// nameservers) may reach although they are loopback, link-local,
	// private or reserved (`serve --acme-allow-private-networks`, env
	// CERTFN_ACME_ALLOW_PRIVATE_NETWORKS; see netguard.Policy); empty:
	// none. ClusterIssuers are not restricted.
	AllowPrivateNetworks []string
}

// NoHTTP01ListenerReason starts the reason of a failing HTTP-01 self-check
// in a `certfn serve` without --http01-listen.
const NoHTTP01ListenerReason = "no HTTP-01 listener is running in this certfn serve (start it with --http01-listen :80)"

// SelfCheckAddrHint ends a failed HTTP-01 self-check while serve
// answers HTTP-01 and --http01-self-check-addr is not set.
const SelfCheckAddrHint = "if <name>:80 does not reach this serve's --http01-listen (another port, a proxy or NAT in front), " +
	"set --http01-self-check-addr to an address that does"

// ServerAllowSource names the local ACME server allow-list in errors and
// in the Ready message of a refused Issuer.
const ServerAllowSource = "--acme-server-allow"

// PrivateNetworksSource names the local private-network allowance in
// errors and in refusals.
const PrivateNetworksSource = "--acme-allow-private-networks"

// Runtime is one opened data directory.
type Runtime struct {
	Opts    Options
	Store   *local.Store
	Secrets ports.SecretStore
	// files is the file secret store under Secrets (Close waits for its
	// background removals).
	files   *local.SecretStore
	Queue   *local.MemQueue
	Inbox   *local.Inbox
	Metrics *local.Counters
	// App is the assembled local role (core/app.Local): its Kernel runs
	// the reconciles, its Repo reads the objects, its Service every CLI
	// and API verb, its HTTP01 the HTTP-01 responder (served by `certfn
	// serve --http01-listen`).
	App    *app.App
	Kernel *kernel.Kernel
	Repo   *repo.Repo
	Log    *slog.Logger
	// Hooks runs the deploy hook; nil without one.
	Hooks *deployhook.Runner
	// progress logs issuances, renewals and failures while serving.
	progress *progress
	// http01Warned: issuers warned about having no HTTP-01 listener.
	http01Warned http01Warnings
	// health is what /readyz and the sweep gauge report.
	health health
	// process holds the Go and process collectors of /metrics.
	process processMetrics
}

type inboxQueue struct{ in *local.Inbox }

// Enqueue pushes key to the inbox; delays are carried by nextRunAt.
func (q inboxQueue) Enqueue(ctx context.Context, key api.Key, _ time.Duration) error {
	return q.in.Push(ctx, key)
}

// NoDataError is Open's error, with Options.MustExist, for a data
// directory that holds no certfn data (no state.db).
type NoDataError struct {
	// Dir is the data directory as given.
	Dir string
	// Missing is true when Dir does not exist at all.
	Missing bool
}

func (e *NoDataError) Error() string {
	what := "holds no certfn data (no state.db)"
	if e.Missing {
		what = "does not exist"
	}
	return fmt.Sprintf("data directory %s %s: run 'certfn apply' or 'certfn serve' to create it, or point --data (or CERTFN_DATA) at an existing one", e.Dir, what)
}

// CheckDataDir returns a *NoDataError unless dir holds certfn data
// (a state.db file); it creates nothing.
func CheckDataDir(dir string) error {
	if dir == "" {
		return errNoDataDir
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return &NoDataError{Dir: dir, Missing: true}
	} else if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "state.db"))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return &NoDataError{Dir: dir}
	}
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	return nil
}

// Open opens (creating if needed, unless Options.MustExist) the data
// directory and assembles the local role on it (core/app.Build). A data
// directory, secrets/ directory or state.db that other users may write to
// is refused (checkDataPermissions).
func Open(opts Options) (*Runtime, error) {
	if opts.DataDir == "" {
		return nil, errNoDataDir
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	allow, err := acme.ParseServerAllowList(ServerAllowSource, opts.ACME.ServerAllow)
	if err != nil {
		return nil, err
	}
	network, err := netguard.Parse(PrivateNetworksSource, opts.ACME.AllowPrivateNetworks)
	if err != nil {
		return nil, err
	}
	if opts.MustExist {
		if err := CheckDataDir(opts.DataDir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", opts.DataDir, err)
	}
	if err := checkDataPermissions(opts.DataDir); err != nil {
		return nil, err
	}
	store, err := local.OpenStore(filepath.Join(opts.DataDir, "state.db"))
	if err != nil {
		return nil, err
	}
	fileSecrets := local.NewSecretStore(filepath.Join(opts.DataDir, "secrets"))
	fileSecrets.SetCertificateFilePerms(opts.CertificateFiles)
	bounds := opts.CertificateFileBounds
	bounds.Owners, bounds.Groups = withValue(bounds.Owners, opts.CertificateFiles.Owner), withValue(bounds.Groups, opts.CertificateFiles.Group)
	fileSecrets.SetCertificateFileBounds(bounds)
	var secrets ports.SecretStore = fileSecrets
	if opts.WrapSecrets != nil {
		secrets = opts.WrapSecrets(secrets)
	}
	rt := &Runtime{files: fileSecrets, Opts: opts, Store: store, Secrets: secrets, Inbox: store.Inbox(opts.Clock),
		Queue: local.NewMemQueue(opts.Clock, 5*time.Minute), Metrics: local.NewCounters(), Log: opts.Logger,
		progress: newProgress(opts.Logger)}
	var q ports.Queue = rt.Queue
	switch {
	case opts.Queue != nil:
		q = opts.Queue
	case opts.QueueToInbox:
		q = inboxQueue{rt.Inbox}
	}
	var engStore ports.Store = store
	if opts.WrapStore != nil {
		engStore = opts.WrapStore(store)
	}
	providers := dnsproviders.Standard(network)
	providers[dns01.KeyRoute53] = route53.NewFactory(route53.Options{}).Build
	providers[dns01.KeyCloudDNS] = clouddns.NewFactory(clouddns.Options{}).Build
	for k, f := range opts.ACME.DNS01Providers {
		providers[k] = f
	}
	noResponder := ""
	if opts.ACME.NoHTTP01Listener {
		noResponder = NoHTTP01ListenerReason
	}
	rt.App, err = app.Build(app.Ports{
		Store: engStore, Secrets: secrets, Queue: q, Clock: opts.Clock, Metrics: rt.Metrics, Logger: opts.Logger,
		ACME:  acmeadapter.NewDialer(acmeadapter.Options{Wrap: opts.ACME.WrapTransport, Timeout: opts.ACME.Timeout, Network: network}),
		DNS01: providers, DNS01Resolver: opts.ACME.DNS01Resolver, CertificateImporter: opts.CertificateImporter,
		Notifier: opts.Notifier, SecretReference: secretDir(opts.DataDir),
	}, app.Settings{
		ClusterResourceNamespace: opts.ClusterResourceNamespace, AutoApprove: opts.AutoApprove, Identity: opts.Identity,
		WaitPoll: opts.WaitPoll, ResyncInterval: time.Hour, Approver: opts.Approver, WrapSigners: opts.WrapSigners, Quotas: opts.Quotas,
		GenerateKey:        opts.GenerateKey,
		SecretFileBounds:   &bounds,
		NotifyExpiryWindow: opts.NotifyExpiryWindow,
		ACME: app.ACMESettings{Polling: opts.ACME.Polling, MaxChallengesInFlight: opts.ACME.MaxChallengesInFlight,
			DNS01AllowInternalNames: opts.ACME.DNS01AllowInternalNames, HTTP01SelfCheck: !opts.ACME.DisableHTTP01SelfCheck,
			HTTP01SelfCheckAddr: opts.ACME.HTTP01SelfCheckAddr, HTTP01NoResponder: noResponder, NamespacedServers: allow,
			HTTP01SelfCheckHint: SelfCheckAddrHint},
	}, app.Local)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	rt.Kernel, rt.Repo = rt.App.Kernel, rt.App.Repo
	if opts.DeployHook.Command != "" {
		rt.Hooks, err = deployhook.New(deployhook.Config{Command: opts.DeployHook.Command, Timeout: opts.DeployHook.Timeout,
			StateFile: filepath.Join(opts.DataDir, "deploy-hooks.json"), SecretDir: fileSecrets.SecretDir,
			Log: opts.Logger, Metrics: rt.Metrics})
		if err != nil {
			_ = store.Close()
			return nil, err
		}
	}
	return rt, nil
}

// Close releases the store.
func (r *Runtime) Close() error {
	if r.files != nil {
		r.files.Wait() // deleted secrets still being removed
	}
	return r.Store.Close()
}

// handle runs one delivery and acknowledges or re-queues it.
func (r *Runtime) handle(ctx context.Context, d local.Delivery) {
	disp := r.Kernel.Handle(ctx, kernel.Message{Key: d.Key, Attempt: d.Attempt})
	if disp.Err != nil {
		r.Log.Warn("reconcile", "key", d.Key.String(), "attempt", d.Attempt, "retry", !disp.Ack, "err", disp.Err)
	} else if disp.Why != "" {
		r.Log.Debug("reconcile: nothing to do", "key", d.Key.String(), "why", disp.Why)
	}
	if d.Key.Kind == api.KindIssuer || d.Key.Kind == api.KindClusterIssuer {
		r.observeIssuer(ctx, d.Key)
	}
	if d.Key.Kind == api.KindCertificate {
		if o, err := r.Repo.Get(ctx, d.Key); err == nil {
			r.progress.observe(o.(*api.Certificate))
			if r.Hooks != nil {
				r.Hooks.Observe(o.(*api.Certificate))
			}
		}
	}
	var err error
	if disp.Ack {
		err = r.Queue.Ack(ctx, d)
	} else {
		err = r.Queue.Nack(ctx, d, disp.RetryAfter)
	}
	// After a lease loss another delivery owns the key; after ctx ends
	// (serve shutting down) the in-memory queue is dropped anyway.
	if err != nil && !errors.Is(err, local.ErrLeaseLost) && ctx.Err() == nil {
		r.Log.Warn("queue", "key", d.Key.String(), "err", err)
	}
}

// ProcessVisible handles every message visible now, with up to workers in
// parallel, until none is visible. It returns how many it handled.
func (r *Runtime) ProcessVisible(ctx context.Context, workers int) (int, error) {
	if workers < 1 {
		workers = 1
	}
	total := 0
	for {
		ds, err := r.Queue.Receive(ctx, 256)
		if err != nil {
			return total, err
		}
		if len(ds) == 0 {
			return total, nil
		}
		total += len(ds)
		var wg sync.WaitGroup
		ch := make(chan local.Delivery)
		for i := 0; i < workers && i < len(ds); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for d := range ch {
					r.handle(ctx, d)
				}
			}()
		}
		for _, d := range ds {
			ch <- d
		}
		close(ch)
		wg.Wait()
	}
}

// RunUntilIdle forwards the inbox, sweeps the due index and processes
// every visible message until nothing is visible. It never advances or
// waits for the clock: delayed work stays queued (tests advance a fake
// clock and call it again).
func (r *Runtime) RunUntilIdle(ctx context.Context, workers int) (int, error) {
	if _, err := r.Inbox.Forward(ctx, r.Queue); err != nil {
		return 0, err
	}
	if _, err := r.Kernel.Sweep(ctx, 10000); err != nil {
		return 0, err
	}
	return r.ProcessVisible(ctx, workers)
}

// secretDir returns the directory of a secret under dataDir/secrets (the
// reference Status reports), absolute when dataDir can be made so.
func secretDir(dataDir string) func(namespace, name string) string {
	root := filepath.Join(dataDir, "secrets")
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return func(namespace, name string) string { return filepath.Join(root, namespace, name) }
}

// withValue is list with v appended when v is set and not in it yet.
func withValue(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(slices.Clone(list), v)
}
