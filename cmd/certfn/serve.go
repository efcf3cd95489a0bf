package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/certfn/certfn/internal/envconf"
	"github.com/certfn/certfn/internal/localmode"
)

// newServe is `certfn serve`: its flags make a localmode.Config, which
// localmode.Serve checks, assembles and runs on the data directory of data.
func newServe(data *dataFlags, remote *remoteFlags, std streams) *cobra.Command {
	var cfg localmode.Config
	var autoApprove string
	var serverAllow, privateNetworks []string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the worker and scheduler loops on the local data directory",
		Long: `Run certfn's worker and scheduler loops until interrupted: requests are approved,
signed and stored, and certificates renewed on time. Commands run from another terminal
against the same --data directory are picked up within a second.

With --until-idle, process everything that is due and exit (for cron and CI); with
--quiet as well, nothing is written unless the run fails.
With --deploy-hook, run a shell command after each new certificate (first issuance,
renewal, re-issuance), as certbot's --deploy-hook: it gets CERTFN_NAMESPACE,
CERTFN_CERTIFICATE, CERTFN_SECRET_NAME, CERTFN_SECRET_DIR, CERTFN_REVISION,
CERTFN_NOT_AFTER, CERTFN_DNS_NAMES and certbot's RENEWED_LINEAGE and RENEWED_DOMAINS.
With --notify-webhook-url, POST each Certificate event (issued, renewed, issuance
failed, approaching expiration) to a webhook, signed as Standard Webhooks
(webhook-id, webhook-timestamp, webhook-signature) with the secret in
--notify-webhook-secret-file; a failed delivery is retried with backoff and
survives a restart (at least once; duplicates share their webhook-id).
Local only: on a cloud deployment the worker, signer and scheduler functions do
this work, so --server is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := remote.localOnly("serve", "on a cloud deployment the worker, signer and scheduler functions process the work"); err != nil {
				return err
			}
			if v := os.Getenv("CERTFN_AUTO_APPROVE"); v != "" || cmd.Flags().Changed("auto-approve") {
				if !cmd.Flags().Changed("auto-approve") {
					autoApprove = v
				}
				cfg.AutoApprove = &autoApprove
			}
			if cfg.Notify.WebhookURL == "" {
				// These two have defaults, so Config cannot tell a value
				// given from the default: refused here, not ignored.
				for _, name := range []string{"notify-webhook-timeout", "notify-expiry-days"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--%s: set without --notify-webhook-url (it configures webhook deliveries)", name)
					}
				}
			}
			d, err := data.config()
			if err != nil {
				return err
			}
			d.ACMEServerAllow, d.ACMEAllowPrivateNetworks = serverAllow, privateNetworks
			cfg.Data, cfg.Log, cfg.Version = d, std.err, version
			return localmode.Serve(cmd.Context(), cfg)
		},
	}
	f := c.Flags()
	f.BoolVar(&cfg.UntilIdle, "until-idle", false, "process everything due, then exit")
	f.BoolVar(&cfg.Logging.Quiet, "quiet", false,
		"with --until-idle: write nothing when the run succeeds; when it fails (a Certificate not Ready at its end), write its whole log, then the error (for cron, which mails any output)")
	f.StringVar(&cfg.Logging.Level, "log-level", os.Getenv("CERTFN_LOG_LEVEL"), "log level: debug, info (the default), warn or error (env CERTFN_LOG_LEVEL, as on the clouds)")
	f.StringVar(&cfg.Logging.Format, "log-format", envOr("CERTFN_LOG_FORMAT", "text"), "log format: text (key=value) or json (one object per line, for journald or a log shipper) (env CERTFN_LOG_FORMAT)")
	f.StringVar(&cfg.HTTP01Listen, "http01-listen", os.Getenv("CERTFN_HTTP01_LISTEN"),
		"serve ACME HTTP-01 challenges (GET /.well-known/acme-challenge/{token}) on this address, e.g. ':80' (env CERTFN_HTTP01_LISTEN)")
	f.StringVar(&cfg.ACME.HTTP01SelfCheckAddr, "http01-self-check-addr", os.Getenv("CERTFN_HTTP01_SELF_CHECK_ADDR"),
		"address the HTTP-01 self-check connects to instead of <name>:80 (e.g. when --http01-listen is not reachable on port 80 of the name) (env CERTFN_HTTP01_SELF_CHECK_ADDR)")
	f.StringVar(&cfg.DeployHook.Command, "deploy-hook", os.Getenv("CERTFN_DEPLOY_HOOK"),
		"shell `command` run after each new certificate, e.g. 'systemctl reload nginx' (runs once per revision, at least once; see certfn serve --help) (env CERTFN_DEPLOY_HOOK)")
	f.DurationVar(&cfg.DeployHook.Timeout, "deploy-hook-timeout", 5*time.Minute, "kill a deploy hook that runs longer than this")
	f.StringVar(&cfg.Notify.WebhookURL, "notify-webhook-url", os.Getenv("CERTFN_NOTIFY_WEBHOOK_URL"),
		"POST every Certificate event (issued, renewed, issuance failed, approaching expiration) to this `URL` as a signed Standard Webhook; https, or http to a loopback host; "+
			"a delivery answered other than 2xx is retried with backoff, at least once (env CERTFN_NOTIFY_WEBHOOK_URL)")
	f.StringVar(&cfg.Notify.SecretFile, "notify-webhook-secret-file", os.Getenv("CERTFN_NOTIFY_WEBHOOK_SECRET_FILE"),
		"with --notify-webhook-url: `file` holding the signing secret, whsec_<base64 of 24 to 64 random bytes> (one a line: each signs, for rotation); "+
			"not readable by other users; never logged (env CERTFN_NOTIFY_WEBHOOK_SECRET_FILE)")
	f.DurationVar(&cfg.Notify.Timeout, "notify-webhook-timeout", 15*time.Second, "with --notify-webhook-url: give up one delivery (and retry it later) after this long")
	f.StringVar(&cfg.Notify.Deployment, "notify-deployment", os.Getenv("CERTFN_NOTIFY_DEPLOYMENT"),
		"name of this certfn in every event's data.deployment, to tell several hosts apart at one receiver (default: the host name) (env CERTFN_NOTIFY_DEPLOYMENT)")
	f.IntVar(&cfg.Notify.ExpiryDays, "notify-expiry-days", 14,
		"with --notify-webhook-url: announce a certificate that was not renewed once a day from this many days before it expires; 0: never")
	f.StringVar(&cfg.MetricsListen, "metrics-listen", os.Getenv("CERTFN_METRICS_LISTEN"),
		"serve Prometheus metrics (GET /metrics; also /healthz, /readyz and the status page /status) on this address; certificate gauges use cert-manager's names and list every namespace's Certificates, so "+
			"an address without a host (':9402') binds 127.0.0.1 only, and a non-loopback address (e.g. '0.0.0.0:9402') needs --api-tls-cert, --api-tls-key and --api-client-ca "+
			"and serves only client certificates allowed to list certificates in all namespaces (env CERTFN_METRICS_LISTEN)")
	f.StringVar(&cfg.API.Listen, "api-listen", os.Getenv("CERTFN_API_LISTEN"),
		"serve the HTTP API (docs/reference/api.md) and the status page (GET /status) over TLS on this address, e.g. ':8443'; clients authenticate with certificates (CN = user, O = groups) and are authorized by the bindings (env CERTFN_API_LISTEN)")
	f.StringVar(&cfg.API.CertFile, "api-tls-cert", os.Getenv("CERTFN_API_TLS_CERT"), "with --api-listen, or --metrics-listen on a non-loopback address: the server certificate (PEM)")
	f.StringVar(&cfg.API.KeyFile, "api-tls-key", os.Getenv("CERTFN_API_TLS_KEY"), "with --api-listen, or --metrics-listen on a non-loopback address: the server key (PEM)")
	f.StringVar(&cfg.API.ClientCAFile, "api-client-ca", os.Getenv("CERTFN_API_CLIENT_CA"), "with --api-listen, or --metrics-listen on a non-loopback address: CA certificates (PEM) client certificates must chain to")
	f.StringSliceVar(&serverAllow, "acme-server-allow", envList("CERTFN_ACME_SERVER_ALLOW"),
		"ACME directory URL prefixes (comma-separated, repeatable) namespaced Issuers may use, e.g. 'https://acme-v02.api.letsencrypt.org/directory'; "+
			"an Issuer with another server is not Ready (ACMEServerNotAllowed) and gets no ACME request; '*' allows any server; ClusterIssuers are not restricted; "+
			"default: none — namespaced ACME Issuers are refused until the operator lists their servers (env CERTFN_ACME_SERVER_ALLOW)")
	f.StringSliceVar(&privateNetworks, "acme-allow-private-networks", envList("CERTFN_ACME_ALLOW_PRIVATE_NETWORKS"),
		"CIDR prefixes, IP addresses or host names (comma-separated, repeatable), e.g. '10.0.0.0/8,ca.internal.example', that the connections made for namespaced Issuers "+
			"(their ACME server and every URL it hands out, acmeDNS hosts, rfc2136 nameservers) may reach although they are loopback, link-local, private or reserved; "+
			"checked at dial time on the address dialled; ClusterIssuers are not restricted; default: none (env CERTFN_ACME_ALLOW_PRIVATE_NETWORKS)")
	f.StringVar(&cfg.ACME.PollFirst, "acme-poll-first", os.Getenv("CERTFN_ACME_POLL_FIRST"),
		"wait before the first poll of an ACME authorization after its challenge was accepted, and of an order after it was finalized, "+
			"when the server sends no Retry-After; each next wait doubles up to --acme-poll-max (default 150ms) (env CERTFN_ACME_POLL_FIRST)")
	f.StringVar(&cfg.ACME.PollMax, "acme-poll-max", os.Getenv("CERTFN_ACME_POLL_MAX"),
		"longest wait between two ACME polls without Retry-After (default 2s; a Retry-After is always followed) (env CERTFN_ACME_POLL_MAX)")
	f.StringVar(&cfg.SecretFiles.Mode, "secret-file-mode", os.Getenv("CERTFN_SECRET_FILE_MODE"),
		"mode of the files of Certificates' secrets, e.g. 0640 so that --secret-file-group can read tls.key (default 0600; "+
			"per Certificate: spec.secretTemplate.annotations certfn.io/secret-file-mode) (env CERTFN_SECRET_FILE_MODE)")
	f.StringVar(&cfg.SecretFiles.Owner, "secret-file-owner", os.Getenv("CERTFN_SECRET_FILE_OWNER"),
		"owner (name or uid) of the files of Certificates' secrets; needs root (per Certificate: certfn.io/secret-file-owner) (env CERTFN_SECRET_FILE_OWNER)")
	f.StringVar(&cfg.SecretFiles.Group, "secret-file-group", os.Getenv("CERTFN_SECRET_FILE_GROUP"),
		"group (name or gid) of the files of Certificates' secrets, e.g. www-data; certfn must be root or a member "+
			"(per Certificate: certfn.io/secret-file-group) (env CERTFN_SECRET_FILE_GROUP)")
	// What a tenant's spec.secretTemplate may ask of its secret's files.
	f.StringVar(&cfg.SecretFiles.MaxMode, "secret-file-max-mode", envOr("CERTFN_SECRET_FILE_MAX_MODE", "0640"),
		"the most permissive certfn.io/secret-file-mode a Certificate's spec.secretTemplate may ask for; a Certificate asking for more "+
			"is not Ready (reason SecretFilePermsNotAllowed), never clamped (env CERTFN_SECRET_FILE_MAX_MODE)")
	f.StringSliceVar(&cfg.SecretFiles.AllowOwners, "secret-file-allow-owners", envList("CERTFN_SECRET_FILE_ALLOW_OWNERS"),
		"owners (names or uids, comma-separated) a Certificate's certfn.io/secret-file-owner may name, besides --secret-file-owner; default: none (env CERTFN_SECRET_FILE_ALLOW_OWNERS)")
	f.StringSliceVar(&cfg.SecretFiles.AllowGroups, "secret-file-allow-groups", envList("CERTFN_SECRET_FILE_ALLOW_GROUPS"),
		"groups (names or gids, comma-separated) a Certificate's certfn.io/secret-file-group may name, besides --secret-file-group; default: none (env CERTFN_SECRET_FILE_ALLOW_GROUPS)")
	f.IntVar(&cfg.Workers, "workers", 4, "parallel workers")
	f.DurationVar(&cfg.SweepInterval, "sweep-interval", 10*time.Second, "how often the scheduler looks for due work")
	f.StringVar(&cfg.Approver, "approver", envOr("CERTFN_APPROVER", envconf.ApproverCertManager),
		"who approves requests: 'cert-manager' (cert-manager's built-in approver: every request for a cert-manager issuer is approved, as a plain cert-manager install) "+
			"or 'policy' (CertificateRequestPolicies only, as with approver-policy; the cloud deployments' default). Changing it re-decides pending requests at start (env CERTFN_APPROVER)")
	f.StringVar(&autoApprove, "auto-approve", "",
		"comma-separated signer names approved without a policy, e.g. 'issuers.cert-manager.io/*,clusterissuers.cert-manager.io/ca' "+
			"(cert-manager's approveSignerNames; default with --approver cert-manager: every cert-manager signer, with --approver policy: none) (env CERTFN_AUTO_APPROVE)")
	f.StringVar(&cfg.ControllerUser, "controller-user", "", "requester identity recorded on the requests certfn creates for Certificates (default system:serviceaccount:cert-manager:cert-manager, as cert-manager); policies must be bound to it")
	f.StringSliceVar(&cfg.ControllerGroups, "controller-group", nil, "with --controller-user: its groups (repeatable)")
	f.StringVar(&cfg.DNS01.ChalltestsrvURL, "dns01-challtestsrv", "",
		"FOR TESTING AGAINST PEBBLE ONLY: `URL` of a challtestsrv management API (e.g. http://127.0.0.1:8055, as 'go run ./tests/cmd/pebble -dns-management' serves); "+
			"DNS-01 solvers 'webhook: {solverName: challtestsrv}' set their TXT records there, and internal names are accepted; needs --dns01-nameservers")
	f.StringSliceVar(&cfg.DNS01.Nameservers, "dns01-nameservers", nil,
		"DNS servers (`host:port`, comma-separated) DNS-01 lookups and propagation checks ask instead of the system's; "+
			"for testing against Pebble, its challtestsrv DNS (e.g. 127.0.0.1:8053), whose first address --dns01-challtestsrv checks records on")
	return c
}
