package main

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/certfn/certfn/adapters/dns/challtestsrv"
	"github.com/certfn/certfn/adapters/local"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/internal/envconf"
	"github.com/certfn/certfn/internal/localmode"
	"github.com/spf13/cobra"
)

func newServe(g *globals) *cobra.Command {
	var o localmode.ServeOptions
	var approver, autoApprove, ctrlUser, selfCheckAddr string
	var fileMode, fileOwner, fileGroup string
	var fileMaxMode string
	var fileOwners, fileGroups []string
	var ctrlGroups []string
	var dns01CTS string
	var dns01NS []string
	var serverAllow, privateNetworks []string
	var pollFirst, pollMax string
	var hook localmode.DeployHookOptions
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the worker and scheduler loops on the local data directory",
		Long: `Run certfn's worker and scheduler loops until interrupted: requests are approved,
signed and stored, and certificates renewed on time. Commands run from another terminal
against the same --data directory are picked up within a second.

With --until-idle, process everything that is due and exit (for cron and CI).
With --deploy-hook, run a shell command after each new certificate (first issuance,
renewal, re-issuance), as certbot's --deploy-hook: it gets CERTFN_NAMESPACE,
CERTFN_CERTIFICATE, CERTFN_SECRET_NAME, CERTFN_SECRET_DIR, CERTFN_REVISION,
CERTFN_NOT_AFTER, CERTFN_DNS_NAMES and certbot's RENEWED_LINEAGE and RENEWED_DOMAINS.
Local only: on a cloud deployment the worker, signer and scheduler functions do
this work, so --server is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.localOnly("serve", "on a cloud deployment the worker, signer and scheduler functions process the work"); err != nil {
				return err
			}
			var list *string
			if v := os.Getenv("CERTFN_AUTO_APPROVE"); v != "" || cmd.Flags().Changed("auto-approve") {
				if !cmd.Flags().Changed("auto-approve") {
					autoApprove = v
				}
				list = &autoApprove
			}
			var badApprover error
			mode, signers := envconf.AutoApprove(approver, list, envconf.ApproverCertManager, "--approver", func(name, format string, a ...any) {
				badApprover = fmt.Errorf("%s: %s", name, fmt.Sprintf(format, a...))
			})
			if badApprover != nil {
				return badApprover
			}
			quotas, err := g.quotaSettings()
			if err != nil {
				return err
			}
			files, err := certificateFilePerms(fileMode, fileOwner, fileGroup)
			if err != nil {
				return err
			}
			bounds, err := certificateFileBounds(fileMaxMode, fileOwners, fileGroups)
			if err != nil {
				return err
			}
			opts := localmode.Options{DataDir: g.dataDir, ClusterResourceNamespace: g.clusterNS, AutoApprove: signers, Quotas: quotas,
				CertificateFiles: files, CertificateFileBounds: bounds}
			if ctrlUser != "" {
				opts.Identity = rbac.Identity{Username: ctrlUser, Groups: append([]string{"system:authenticated"}, ctrlGroups...)}
			}
			opts.ACME.HTTP01SelfCheckAddr = selfCheckAddr
			opts.ACME.NoHTTP01Listener = o.HTTP01Listen == ""
			opts.Logger = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			opts.ACME.ServerAllow = serverAllow
			opts.ACME.AllowPrivateNetworks = privateNetworks
			if opts.ACME.Polling, err = acme.ParsePolling("--acme-poll-first", pollFirst, "--acme-poll-max", pollMax); err != nil {
				return err
			}
			opts.DeployHook = hook
			if err := dns01TestProviders(&opts.ACME, dns01CTS, dns01NS); err != nil {
				return err
			}
			rt, err := localmode.Open(opts)
			if err != nil {
				return err
			}
			g.rt, g.closer = rt, func() { _ = rt.Close() }
			if !o.UntilIdle {
				fmt.Fprintf(g.stderr, "certfn serving data directory %s (workers %d); Ctrl-C to stop\n", g.dataDir, o.Workers)
			}
			fmt.Fprintln(g.stderr, envconf.DescribeApprover(mode, signers))
			return rt.Serve(cmd.Context(), o)
		},
	}
	c.Flags().BoolVar(&o.UntilIdle, "until-idle", false, "process everything due, then exit")
	c.Flags().StringVar(&o.HTTP01Listen, "http01-listen", os.Getenv("CERTFN_HTTP01_LISTEN"),
		"serve ACME HTTP-01 challenges (GET /.well-known/acme-challenge/{token}) on this address, e.g. ':80' (env CERTFN_HTTP01_LISTEN)")
	c.Flags().StringVar(&selfCheckAddr, "http01-self-check-addr", os.Getenv("CERTFN_HTTP01_SELF_CHECK_ADDR"),
		"address the HTTP-01 self-check connects to instead of <name>:80 (e.g. when --http01-listen is not reachable on port 80 of the name) (env CERTFN_HTTP01_SELF_CHECK_ADDR)")
	c.Flags().StringVar(&hook.Command, "deploy-hook", os.Getenv("CERTFN_DEPLOY_HOOK"),
		"shell `command` run after each new certificate, e.g. 'systemctl reload nginx' (runs once per revision, at least once; see certfn serve --help) (env CERTFN_DEPLOY_HOOK)")
	c.Flags().DurationVar(&hook.Timeout, "deploy-hook-timeout", 5*time.Minute, "kill a deploy hook that runs longer than this")
	c.Flags().StringVar(&o.MetricsListen, "metrics-listen", os.Getenv("CERTFN_METRICS_LISTEN"),
		"serve Prometheus metrics (GET /metrics) on this address; certificate gauges use cert-manager's names and list every namespace's Certificates, so "+
			"an address without a host (':9402') binds 127.0.0.1 only, and a non-loopback address (e.g. '0.0.0.0:9402') needs --api-tls-cert, --api-tls-key and --api-client-ca "+
			"and serves only client certificates allowed to list certificates in all namespaces (env CERTFN_METRICS_LISTEN)")
	c.Flags().StringVar(&o.API.Listen, "api-listen", os.Getenv("CERTFN_API_LISTEN"),
		"serve the HTTP API (docs/api.md) over TLS on this address, e.g. ':8443'; clients authenticate with certificates (CN = user, O = groups) and are authorized by the bindings (env CERTFN_API_LISTEN)")
	c.Flags().StringVar(&o.API.CertFile, "api-tls-cert", os.Getenv("CERTFN_API_TLS_CERT"), "with --api-listen, or --metrics-listen on a non-loopback address: the server certificate (PEM)")
	c.Flags().StringVar(&o.API.KeyFile, "api-tls-key", os.Getenv("CERTFN_API_TLS_KEY"), "with --api-listen, or --metrics-listen on a non-loopback address: the server key (PEM)")
	c.Flags().StringVar(&o.API.ClientCAFile, "api-client-ca", os.Getenv("CERTFN_API_CLIENT_CA"), "with --api-listen, or --metrics-listen on a non-loopback address: CA certificates (PEM) client certificates must chain to")
	c.Flags().StringSliceVar(&serverAllow, "acme-server-allow", envList("CERTFN_ACME_SERVER_ALLOW"),
		"ACME directory URL prefixes (comma-separated, repeatable) namespaced Issuers may use, e.g. 'https://acme-v02.api.letsencrypt.org/directory'; "+
			"an Issuer with another server is not Ready (ACMEServerNotAllowed) and gets no ACME request; '*' allows any server; ClusterIssuers are not restricted; "+
			"default: none — namespaced ACME Issuers are refused until the operator lists their servers (env CERTFN_ACME_SERVER_ALLOW)")
	c.Flags().StringSliceVar(&privateNetworks, "acme-allow-private-networks", envList("CERTFN_ACME_ALLOW_PRIVATE_NETWORKS"),
		"CIDR prefixes, IP addresses or host names (comma-separated, repeatable), e.g. '10.0.0.0/8,ca.internal.example', that the connections made for namespaced Issuers "+
			"(their ACME server and every URL it hands out, acmeDNS hosts, rfc2136 nameservers) may reach although they are loopback, link-local, private or reserved; "+
			"checked at dial time on the address dialled; ClusterIssuers are not restricted; default: none (env CERTFN_ACME_ALLOW_PRIVATE_NETWORKS)")
	c.Flags().StringVar(&pollFirst, "acme-poll-first", os.Getenv("CERTFN_ACME_POLL_FIRST"),
		"wait before the first poll of an ACME authorization after its challenge was accepted, and of an order after it was finalized, "+
			"when the server sends no Retry-After; each next wait doubles up to --acme-poll-max (default 150ms) (env CERTFN_ACME_POLL_FIRST)")
	c.Flags().StringVar(&pollMax, "acme-poll-max", os.Getenv("CERTFN_ACME_POLL_MAX"),
		"longest wait between two ACME polls without Retry-After (default 2s; a Retry-After is always followed) (env CERTFN_ACME_POLL_MAX)")
	c.Flags().StringVar(&fileMode, "secret-file-mode", os.Getenv("CERTFN_SECRET_FILE_MODE"),
		"mode of the files of Certificates' secrets, e.g. 0640 so that --secret-file-group can read tls.key (default 0600; "+
			"per Certificate: spec.secretTemplate.annotations certfn.io/secret-file-mode) (env CERTFN_SECRET_FILE_MODE)")
	c.Flags().StringVar(&fileOwner, "secret-file-owner", os.Getenv("CERTFN_SECRET_FILE_OWNER"),
		"owner (name or uid) of the files of Certificates' secrets; needs root (per Certificate: certfn.io/secret-file-owner) (env CERTFN_SECRET_FILE_OWNER)")
	c.Flags().StringVar(&fileGroup, "secret-file-group", os.Getenv("CERTFN_SECRET_FILE_GROUP"),
		"group (name or gid) of the files of Certificates' secrets, e.g. www-data; certfn must be root or a member "+
			"(per Certificate: certfn.io/secret-file-group) (env CERTFN_SECRET_FILE_GROUP)")
	// What a tenant's spec.secretTemplate may ask of its secret's files.
	c.Flags().StringVar(&fileMaxMode, "secret-file-max-mode", envOr("CERTFN_SECRET_FILE_MAX_MODE", "0640"),
		"the most permissive certfn.io/secret-file-mode a Certificate's spec.secretTemplate may ask for; a Certificate asking for more "+
			"is not Ready (reason SecretFilePermsNotAllowed), never clamped (env CERTFN_SECRET_FILE_MAX_MODE)")
	c.Flags().StringSliceVar(&fileOwners, "secret-file-allow-owners", envList("CERTFN_SECRET_FILE_ALLOW_OWNERS"),
		"owners (names or uids, comma-separated) a Certificate's certfn.io/secret-file-owner may name, besides --secret-file-owner; default: none (env CERTFN_SECRET_FILE_ALLOW_OWNERS)")
	c.Flags().StringSliceVar(&fileGroups, "secret-file-allow-groups", envList("CERTFN_SECRET_FILE_ALLOW_GROUPS"),
		"groups (names or gids, comma-separated) a Certificate's certfn.io/secret-file-group may name, besides --secret-file-group; default: none (env CERTFN_SECRET_FILE_ALLOW_GROUPS)")
	c.Flags().IntVar(&o.Workers, "workers", 4, "parallel workers")
	c.Flags().DurationVar(&o.SweepInterval, "sweep-interval", 10*time.Second, "how often the scheduler looks for due work")
	c.Flags().StringVar(&approver, "approver", envOr("CERTFN_APPROVER", envconf.ApproverCertManager),
		"who approves requests: 'cert-manager' (cert-manager's built-in approver: every request for a cert-manager issuer is approved, as a plain cert-manager install) "+
			"or 'policy' (CertificateRequestPolicies only, as with approver-policy; the cloud deployments' default). Changing it re-decides pending requests at start (env CERTFN_APPROVER)")
	c.Flags().StringVar(&autoApprove, "auto-approve", "",
		"comma-separated signer names approved without a policy, e.g. 'issuers.cert-manager.io/*,clusterissuers.cert-manager.io/ca' "+
			"(cert-manager's approveSignerNames; default with --approver cert-manager: every cert-manager signer, with --approver policy: none) (env CERTFN_AUTO_APPROVE)")
	c.Flags().StringVar(&ctrlUser, "controller-user", "", "requester identity recorded on the requests certfn creates for Certificates (default system:serviceaccount:cert-manager:cert-manager, as cert-manager); policies must be bound to it")
	c.Flags().StringSliceVar(&ctrlGroups, "controller-group", nil, "with --controller-user: its groups (repeatable)")
	c.Flags().StringVar(&dns01CTS, "dns01-challtestsrv", "",
		"FOR TESTING AGAINST PEBBLE ONLY: `URL` of a challtestsrv management API (e.g. http://127.0.0.1:8055, as 'go run ./tests/cmd/pebble -dns-management' serves); "+
			"DNS-01 solvers 'webhook: {solverName: challtestsrv}' set their TXT records there, and internal names are accepted; needs --dns01-nameservers")
	c.Flags().StringSliceVar(&dns01NS, "dns01-nameservers", nil,
		"DNS servers (`host:port`, comma-separated) DNS-01 lookups and propagation checks ask instead of the system's; "+
			"for testing against Pebble, its challtestsrv DNS (e.g. 127.0.0.1:8053), whose first address --dns01-challtestsrv checks records on")
	return c
}

// dns01TestProviders applies --dns01-nameservers and --dns01-challtestsrv
// to a. nameservers ("host" or "host:port") become the DNS-01 resolvers.
// A non-empty challtestsrvURL (an http or https URL of a challtestsrv
// management API; for testing against Pebble only) registers the
// challtestsrv provider under dns01.WebhookKey("challtestsrv"), with the
// first nameserver as its DNS address, and accepts internal names. An
// invalid value is an error naming the flag; a has not been changed then.
func dns01TestProviders(a *localmode.ACMEOptions, challtestsrvURL string, nameservers []string) error {
	var servers []string
	for i, ns := range nameservers {
		ns = strings.TrimSpace(ns)
		hostPort, err := nameserverAddr(ns)
		if err != nil {
			return fmt.Errorf("--dns01-nameservers[%d]: %q %v", i, ns, err)
		}
		servers = append(servers, hostPort)
	}
	if challtestsrvURL == "" {
		if len(servers) > 0 {
			a.DNS01Resolver.Nameservers = servers
		}
		return nil
	}
	u, err := url.Parse(challtestsrvURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("--dns01-challtestsrv: %q is not the http(s) URL of a challtestsrv management API (scheme, host and port only, e.g. http://127.0.0.1:8055)", challtestsrvURL)
	}
	if len(servers) == 0 {
		return fmt.Errorf("--dns01-challtestsrv: needs --dns01-nameservers, the address of challtestsrv's DNS server (e.g. 127.0.0.1:8053)")
	}
	p := &challtestsrv.Provider{ManagementURL: strings.TrimSuffix(u.String(), "/"), DNSAddr: servers[0]}
	providers := map[string]dns01.ProviderFactory{}
	for k, f := range a.DNS01Providers {
		providers[k] = f
	}
	providers[dns01.WebhookKey(challtestsrv.SolverName)] = p.Factory()
	a.DNS01Providers = providers
	a.DNS01Resolver.Nameservers = servers
	a.DNS01AllowInternalNames = true
	return nil
}

// nameserverAddr returns ns as host:port (port 53 when ns has none). The
// host is an IP address or a name; the port a number from 1 to 65535.
func nameserverAddr(ns string) (string, error) {
	if ns == "" {
		return "", fmt.Errorf("is empty")
	}
	host, port, err := net.SplitHostPort(ns)
	if err != nil {
		// No port: a host alone (an IPv6 address may be bare).
		host, port = strings.Trim(ns, "[]"), "53"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("has no valid port (want host:port with a port from 1 to 65535)")
	}
	if host == "" || strings.ContainsAny(host, "/ ") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return "", fmt.Errorf("is not host:port")
	}
	return net.JoinHostPort(host, port), nil
}

// certificateFilePerms parses --secret-file-mode, --secret-file-owner and
// --secret-file-group; an invalid value is an error naming the flag.
func certificateFilePerms(mode, owner, group string) (local.FilePerms, error) {
	var p local.FilePerms
	if mode != "" {
		m, err := api.ParseSecretFileMode(mode)
		if err != nil {
			return p, fmt.Errorf("--secret-file-mode: %w", err)
		}
		p.Mode = fs.FileMode(m)
	}
	for _, f := range []struct {
		flag, v string
		dst     *string
	}{{"--secret-file-owner", owner, &p.Owner}, {"--secret-file-group", group, &p.Group}} {
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

// certificateFileBounds parses --secret-file-max-mode,
// --secret-file-allow-owners and --secret-file-allow-groups; an invalid
// value is an error naming the flag.
func certificateFileBounds(maxMode string, owners, groups []string) (api.SecretFileBounds, error) {
	var b api.SecretFileBounds
	m, err := api.ParseSecretFileMode(maxMode)
	if err != nil {
		return b, fmt.Errorf("--secret-file-max-mode: %w", err)
	}
	b.MaxMode = m
	for _, f := range []struct {
		flag string
		vs   []string
		dst  *[]string
	}{{"--secret-file-allow-owners", owners, &b.Owners}, {"--secret-file-allow-groups", groups, &b.Groups}} {
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
