package localmode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/certfn/certfn/adapters/local"
	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/core/validation"
	"github.com/certfn/certfn/internal/envconf"
)

// Data names a data directory and the rules every process on it applies,
// one-shot commands and serve alike. Fields are plain values as the flags
// give them; Validate (of Config or ClientConfig) checks them.
type Data struct {
	// Dir holds state.db and secrets/ (--data; required).
	Dir string
	// ClusterResourceNamespace holds ClusterIssuer secrets
	// (--cluster-resource-namespace; "": cert-manager).
	ClusterResourceNamespace string
	// Quotas are the per-namespace quotas (--quota-objects,
	// --quota-issuances-per-hour; zero: unlimited; negative: invalid).
	Quotas app.Quotas
	// ACMEServerAllow lists the ACME directory URL prefixes namespaced
	// Issuers may use (--acme-server-allow; see ACMEOptions.ServerAllow).
	ACMEServerAllow []string
	// ACMEAllowPrivateNetworks lists what connections made for namespaced
	// Issuers may reach although it is private (--acme-allow-private-networks;
	// see ACMEOptions.AllowPrivateNetworks).
	ACMEAllowPrivateNetworks []string
}

// Config is a local serve (`certfn serve`) as plain data: what its flags
// say, before anything is parsed or opened. Serve runs it; Validate says
// whether it would start, with an error naming the flag and the rule.
type Config struct {
	Data Data

	// Workers is how many reconciles run in parallel (--workers; below 1: 4).
	Workers int
	// SweepInterval is how often the scheduler looks for due work
	// (--sweep-interval; 0: 10 s).
	SweepInterval time.Duration
	// UntilIdle: process everything due, then return (--until-idle).
	UntilIdle bool
	// HTTP01Listen serves ACME HTTP-01 challenges on this address
	// (--http01-listen; "": none).
	HTTP01Listen string
	// MetricsListen serves GET /metrics on this address (--metrics-listen;
	// see ServeOptions.MetricsListen).
	MetricsListen string
	// API serves the HTTP API over TLS (--api-listen, --api-tls-cert,
	// --api-tls-key, --api-client-ca).
	API APIOptions

	// Approver is who approves requests: envconf.ApproverCertManager
	// ("" means it) or envconf.ApproverPolicy (--approver).
	Approver string
	// AutoApprove, when set, is the comma-separated list of signer names
	// approved without a policy (--auto-approve); nil: Approver's default.
	AutoApprove *string
	// ControllerUser and ControllerGroups are the requester identity of
	// the requests certfn creates for Certificates (--controller-user,
	// --controller-group; "": cert-manager's service account).
	ControllerUser   string
	ControllerGroups []string

	// ACME are the ACME issuer's settings.
	ACME ACMEConfig
	// DNS01 are the DNS-01 test settings.
	DNS01 DNS01TestConfig
	// SecretFiles are the owner, group and mode of Certificates' secret
	// files, and what a Certificate may ask of them.
	SecretFiles SecretFileConfig
	// DeployHook runs a command after each new certificate (--deploy-hook,
	// --deploy-hook-timeout).
	DeployHook DeployHookOptions
	// Notify sends the Certificates' events to a webhook
	// (--notify-webhook-url and the other --notify-* flags).
	Notify NotifyConfig

	// Log receives serve's log and its start lines (nil: os.Stderr).
	Log io.Writer
	// Logging is the log's level and format, and --quiet.
	Logging LogConfig
	// Version is the binary's version (certfn_build_info).
	Version string
}

// ACMEConfig are a serve's ACME settings as plain data.
type ACMEConfig struct {
	// PollFirst and PollMax are durations ("150ms"; "": the default) of
	// --acme-poll-first and --acme-poll-max (see acme.ParsePolling).
	PollFirst, PollMax string
	// HTTP01SelfCheckAddr is dialled by the HTTP-01 self-check instead of
	// <name>:80 (--http01-self-check-addr; "": <name>:80).
	HTTP01SelfCheckAddr string
}

// DNS01TestConfig point DNS-01 at test servers.
type DNS01TestConfig struct {
	// ChalltestsrvURL is the http(s) URL (scheme, host and port only) of a
	// challtestsrv management API (--dns01-challtestsrv; for testing
	// against Pebble only): DNS-01 solvers `webhook: {solverName:
	// challtestsrv}` set their TXT records there, and internal names are
	// accepted. It needs Nameservers.
	ChalltestsrvURL string
	// Nameservers ("host" or "host:port") are asked by DNS-01 lookups and
	// propagation checks instead of the system's (--dns01-nameservers);
	// the first is challtestsrv's DNS address.
	Nameservers []string
}

// SecretFileConfig are the files of Certificates' secrets as plain data.
type SecretFileConfig struct {
	// Mode (octal, "0640"), Owner and Group (names or numbers) are the
	// defaults of Certificates' secret files (--secret-file-mode,
	// --secret-file-owner, --secret-file-group; "": 0600 and the process's
	// user and group).
	Mode, Owner, Group string
	// MaxMode is the most permissive mode a Certificate may ask for
	// (--secret-file-max-mode; required, e.g. "0640").
	MaxMode string
	// AllowOwners and AllowGroups are what a Certificate may name besides
	// Owner and Group (--secret-file-allow-owners, --secret-file-allow-groups).
	AllowOwners, AllowGroups []string
}

// checkActivatedSockets checks, before anything starts, that every
// listener given as SocketPrefix + name has its socket from systemd.
// --metrics-listen is bound by address: whether it is loopback decides
// whether it needs TLS, so it takes no passed socket.
func (c Config) checkActivatedSockets() error {
	if strings.HasPrefix(c.MetricsListen, SocketPrefix) {
		return fmt.Errorf("--metrics-listen %s: takes an address, not a socket passed by systemd (whether it is loopback decides whether the metrics need TLS)", c.MetricsListen)
	}
	for _, l := range []struct{ flag, addr string }{{"http01-listen", c.HTTP01Listen}, {"api-listen", c.API.Listen}} {
		if name, ok := strings.CutPrefix(l.addr, SocketPrefix); ok {
			if _, err := activatedListener(l.flag, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// errNoDataDir refuses an empty Data.Dir.
var errNoDataDir = errors.New("localmode: a data directory is required (--data or CERTFN_DATA)")

// Validate reports the first invalid field of c, as an error naming its
// flag and the rule it breaks; nil when Serve would start with c.
func (c Config) Validate() error {
	_, _, err := c.options()
	return err
}

// options parses c into the Runtime's Options and the approver mode
// (for the start line), checking each field in flag order.
func (c Config) options() (Options, string, error) {
	opts, mode, _, err := c.optionsNotify()
	return opts, mode, err
}

// optionsNotify is options and the notifications' start line ("": off).
func (c Config) optionsNotify() (Options, string, string, error) {
	opts, mode, err := c.optionsNoNotify()
	if err != nil {
		return Options{}, "", "", err
	}
	n, window, line, err := c.Notify.notifier()
	if err != nil {
		return Options{}, "", "", err
	}
	opts.Notifier, opts.NotifyExpiryWindow = n, window
	return opts, mode, line, nil
}

func (c Config) optionsNoNotify() (Options, string, error) {
	mode, signers, err := approverOf(c.Approver, c.AutoApprove)
	if err != nil {
		return Options{}, "", err
	}
	level, err := c.Logging.parse()
	if err != nil {
		return Options{}, "", err
	}
	if c.Logging.Quiet && !c.UntilIdle {
		return Options{}, "", errors.New("--quiet: only with --until-idle (a long-running serve logs to its journal; use --log-level warn to log less)")
	}
	if err := c.Data.checkQuotas(); err != nil {
		return Options{}, "", err
	}
	if err := c.checkActivatedSockets(); err != nil {
		return Options{}, "", err
	}
	files, err := c.SecretFiles.perms()
	if err != nil {
		return Options{}, "", err
	}
	bounds, err := c.SecretFiles.bounds()
	if err != nil {
		return Options{}, "", err
	}
	polling, err := acme.ParsePolling("--acme-poll-first", c.ACME.PollFirst, "--acme-poll-max", c.ACME.PollMax)
	if err != nil {
		return Options{}, "", err
	}
	opts := Options{DataDir: c.Data.Dir, ClusterResourceNamespace: c.Data.ClusterResourceNamespace, AutoApprove: signers,
		Quotas: c.Data.Quotas, CertificateFiles: files, CertificateFileBounds: bounds, DeployHook: c.DeployHook,
		Logger: slog.New(c.Logging.handler(c.logWriter(), level)), Version: c.Version}
	if err := dns01TestProviders(&opts.ACME, c.DNS01.ChalltestsrvURL, c.DNS01.Nameservers); err != nil {
		return Options{}, "", err
	}
	if err := c.Data.checkStore(); err != nil {
		return Options{}, "", err
	}
	if c.ControllerUser != "" {
		opts.Identity = rbac.Identity{Username: c.ControllerUser, Groups: append([]string{"system:authenticated"}, c.ControllerGroups...)}
	}
	opts.ACME.HTTP01SelfCheckAddr = c.ACME.HTTP01SelfCheckAddr
	opts.ACME.NoHTTP01Listener = c.HTTP01Listen == ""
	opts.ACME.ServerAllow = c.Data.ACMEServerAllow
	opts.ACME.AllowPrivateNetworks = c.Data.ACMEAllowPrivateNetworks
	opts.ACME.Polling = polling
	return opts, mode, nil
}

func (c Config) logWriter() io.Writer {
	if c.Log == nil {
		return os.Stderr
	}
	return c.Log
}

// Serve runs a local serve: it checks cfg (Validate), opens its data
// directory, assembles the local role with the adapters cfg names (the
// file secret store with cfg.SecretFiles' permissions, the private-network
// guard, challtestsrv with cfg.DNS01), writes the start lines to cfg.Log
// and runs the loops (Runtime.Serve) until ctx ends or, with UntilIdle,
// until idle. The data directory is closed when it returns; the error is
// Runtime.Serve's (a *NotReadyError after an idle run that left
// Certificates not Ready).
func Serve(ctx context.Context, cfg Config) (err error) {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Logging.Quiet {
		// Held until the end: written only when the run fails.
		held := &heldWriter{w: cfg.logWriter()}
		cfg.Log = held
		defer func() {
			if err == nil {
				held.Discard()
				return
			}
			_ = held.Flush()
		}()
	}
	opts, mode, notifyLine, err := cfg.optionsNotify()
	if err != nil {
		return err
	}
	rt, err := Open(opts)
	if err != nil {
		return err
	}
	defer func() { _ = rt.Close() }()
	if !cfg.UntilIdle {
		fmt.Fprintf(cfg.logWriter(), "certfn serving data directory %s (workers %d); Ctrl-C to stop\n", cfg.Data.Dir, cfg.Workers)
	}
	fmt.Fprintln(cfg.logWriter(), envconf.DescribeApprover(mode, opts.AutoApprove))
	if notifyLine != "" {
		fmt.Fprintln(cfg.logWriter(), notifyLine)
	}
	return rt.Serve(ctx, ServeOptions{Workers: cfg.Workers, SweepInterval: cfg.SweepInterval, UntilIdle: cfg.UntilIdle,
		HTTP01Listen: cfg.HTTP01Listen, MetricsListen: cfg.MetricsListen, API: cfg.API})
}

// approverOf returns the approver mode and the signer names approved
// without a policy (envconf.AutoApprove), or an error naming --approver.
func approverOf(approver string, list *string) (string, []string, error) {
	var bad error
	mode, signers := envconf.AutoApprove(approver, list, envconf.ApproverCertManager, "--approver", func(name, format string, a ...any) {
		bad = fmt.Errorf("%s: %s", name, fmt.Sprintf(format, a...))
	})
	return mode, signers, bad
}

// Quota flags, as errors name them.
const (
	flagQuotaObjects   = "quota-objects"
	flagQuotaIssuances = "quota-issuances-per-hour"
)

// checkQuotas refuses a negative quota, naming its flag.
func (d Data) checkQuotas() error {
	for _, f := range []struct {
		name string
		v    int
	}{{flagQuotaObjects, d.Quotas.ObjectsPerNamespace}, {flagQuotaIssuances, d.Quotas.IssuancesPerHourPerNamespace}} {
		if f.v < 0 {
			return fmt.Errorf("--%s: %d is negative: want an integer of 0 (unlimited) or more", f.name, f.v)
		}
	}
	return nil
}

// checkStore checks what Open checks before it opens anything: the data
// directory is named, the cluster resource namespace is a namespace name,
// and the ACME allow lists parse.
func (d Data) checkStore() error {
	if d.Dir == "" {
		return errNoDataDir
	}
	if d.ClusterResourceNamespace != "" {
		if msg := validation.NamespaceName(d.ClusterResourceNamespace); msg != "" {
			return fmt.Errorf("--cluster-resource-namespace %q: %s", d.ClusterResourceNamespace, msg)
		}
	}
	if _, err := acme.ParseServerAllowList(ServerAllowSource, d.ACMEServerAllow); err != nil {
		return err
	}
	if _, err := netguard.Parse(PrivateNetworksSource, d.ACMEAllowPrivateNetworks); err != nil {
		return err
	}
	return nil
}

// perms parses Mode, Owner and Group; an invalid value is an error naming
// the flag.
func (s SecretFileConfig) perms() (local.FilePerms, error) {
	var p local.FilePerms
	if s.Mode != "" {
		m, err := api.ParseSecretFileMode(s.Mode)
		if err != nil {
			return p, fmt.Errorf("--secret-file-mode: %w", err)
		}
		p.Mode = fs.FileMode(m)
	}
	for _, f := range []struct {
		flag, v string
		dst     *string
	}{{"--secret-file-owner", s.Owner, &p.Owner}, {"--secret-file-group", s.Group, &p.Group}} {
		if f.v == "" {
			continue
		}
		if err := api.CheckSecretFileOwner(f.v); err != nil {
			return p, fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.dst = f.v
	}
	return p, nil
}

// bounds parses MaxMode, AllowOwners and AllowGroups (each entry trimmed);
// an invalid value is an error naming the flag and the entry.
func (s SecretFileConfig) bounds() (api.SecretFileBounds, error) {
	var b api.SecretFileBounds
	m, err := api.ParseSecretFileMode(s.MaxMode)
	if err != nil {
		return b, fmt.Errorf("--secret-file-max-mode: %w", err)
	}
	b.MaxMode = m
	for _, f := range []struct {
		flag string
		vs   []string
		dst  *[]string
	}{{"--secret-file-allow-owners", s.AllowOwners, &b.Owners}, {"--secret-file-allow-groups", s.AllowGroups, &b.Groups}} {
		for i, v := range f.vs {
			v = strings.TrimSpace(v)
			if err := api.CheckSecretFileOwner(v); err != nil {
				return b, fmt.Errorf("%s[%d]: %w", f.flag, i, err)
			}
			*f.dst = append(*f.dst, v)
		}
	}
	return b, nil
}
