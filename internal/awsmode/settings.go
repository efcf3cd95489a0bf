package awsmode

import (
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/adapters/aws/secrets"
	"github.com/certfn/certfn/adapters/aws/ssmstore"
	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/internal/envconf"
)

// Role names one deployed function (docs/design/roles.md). Each role gets only the
// ports and signers it may use.
type Role string

// The roles.
const (
	// RoleWorker consumes the worker queue: every reconcile step except
	// signing for CA and selfSigned issuers and checking CA issuers (it
	// never reads a CA key).
	RoleWorker Role = "worker"
	// RoleSigner consumes the signer queue: approved CertificateRequests of
	// CA and selfSigned issuers, and CA issuers' readiness. It never approves.
	RoleSigner Role = "signer"
	// RoleScheduler sweeps the due index into the worker queue.
	RoleScheduler Role = "scheduler"
	// RoleAPI serves the HTTP API (functions/aws/api); no secret store.
	RoleAPI Role = "api"
	// RoleHTTP01 answers ACME HTTP-01 challenges from the state store.
	RoleHTTP01 Role = "http01"
)

// Roles lists every role.
var Roles = []Role{RoleWorker, RoleSigner, RoleScheduler, RoleAPI, RoleHTTP01}

// Environment variables. The CERTFN_* names up to EnvNotifyExpiryDays are
// the ones infra/terraform/aws/lambda.tf sets; the rest are optional tuning
// knobs with defaults. docs/aws.md ("Lambda functions") lists them.
const (
	EnvFunction                 = "CERTFN_FUNCTION"
	EnvTable                    = "CERTFN_TABLE"
	EnvDueShards                = "CERTFN_DUE_SHARDS"
	EnvClusterResourceNamespace = "CERTFN_CLUSTER_RESOURCE_NAMESPACE"
	EnvSecretPrefix             = "CERTFN_SECRET_PREFIX"
	EnvKMSKeyID                 = "CERTFN_KMS_KEY_ID"
	// EnvSecretStore chooses the secret store of the worker and signer:
	// "secretsmanager" (the default) or "ssm" (Parameter Store
	// SecureStrings, adapters/aws/ssmstore). EnvSecretClasses lists, for
	// "ssm", the parameter classes the function reads, in the order a Get
	// tries them (comma-separated; default ssmstore.WorkerClasses(false)
	// for the worker, ssmstore.SignerClasses() for the signer); Terraform
	// sets it from the same list as the function's IAM paths.
	EnvSecretStore    = "CERTFN_SECRET_STORE"
	EnvSecretClasses  = "CERTFN_SECRET_CLASSES"
	EnvQueueURL       = "CERTFN_QUEUE_URL"
	EnvSignerQueueURL = "CERTFN_SIGNER_QUEUE_URL"
	EnvAutoApprove    = "CERTFN_AUTO_APPROVE"
	EnvApprover       = "CERTFN_APPROVER"
	EnvRoute53ZoneIDs = "CERTFN_ROUTE53_ZONE_IDS"
	EnvACMImport      = "CERTFN_ACM_IMPORT"
	EnvHTTP01Enabled  = "CERTFN_HTTP01_ENABLED"
	// EnvNotifyEventBus is the EventBridge bus (name or ARN) the worker
	// publishes notifications on (core/certificates/notify.go,
	// adapters/aws/ebnotify); empty: notifications are off.
	// EnvNotifyExpiryDays is how many days before expiry a certificate is
	// announced as expiring, once a day (default 14, the Terraform
	// module's certificate_expiry_alarm_days default; 0: never).
	EnvNotifyEventBus   = "CERTFN_NOTIFY_EVENT_BUS"
	EnvNotifyExpiryDays = "CERTFN_NOTIFY_EXPIRY_DAYS"

	EnvSweepLimit       = "CERTFN_SWEEP_LIMIT"
	EnvBatchParallelism = "CERTFN_BATCH_PARALLELISM"
	EnvLogLevel         = "CERTFN_LOG_LEVEL"
	// EnvMetrics is "emf" (CloudWatch Embedded Metric Format on stdout:
	// ExportedMetrics) or "none" (the default).
	EnvMetrics   = "CERTFN_METRICS"
	EnvFollowUps = "CERTFN_FOLLOW_UPS"
	// EnvAPIMaxBody is the api function's request body limit in bytes.
	EnvAPIMaxBody = "CERTFN_API_MAX_BODY"
	// EnvAPIAdmins lists IAM user/role ARNs the api function puts in
	// system:masters (allowed everything), e.g. to apply the first bindings.
	EnvAPIAdmins = "CERTFN_API_ADMINS"
	// EnvACMEServerAllow lists the ACME directory URL prefixes namespaced
	// Issuers may use (comma-separated; acme.ServerAllowList); empty: none
	// (deny by default), "*": any server.
	EnvACMEServerAllow = "CERTFN_ACME_SERVER_ALLOW"
	// EnvACMEAllowPrivateNetworks lists the CIDR prefixes, IP addresses
	// and host names (comma-separated; netguard.Policy) the connections
	// made for namespaced Issuers may reach although they are loopback,
	// link-local, private or reserved; empty: none.
	EnvACMEAllowPrivateNetworks = "CERTFN_ACME_ALLOW_PRIVATE_NETWORKS"
	// EnvACMEPollFirst and EnvACMEPollMax say when the worker polls an
	// accepted challenge's authorization and a finalized order when the
	// ACME server gives no Retry-After: the first poll after
	// EnvACMEPollFirst, each wait doubling up to EnvACMEPollMax (Go
	// durations; defaults 150ms and 2s, see acme.Polling).
	EnvACMEPollFirst = "CERTFN_ACME_POLL_FIRST"
	EnvACMEPollMax   = "CERTFN_ACME_POLL_MAX"
	// EnvQuotaObjects is the objects quota (app.Quotas.ObjectsPerNamespace;
	// enforced by the api function), EnvQuotaIssuances the issuance quota
	// (app.Quotas.IssuancesPerHourPerNamespace; enforced where requests
	// are signed or handed off: the worker and the signer). Integers ≥ 0;
	// unset or 0: unlimited.
	EnvQuotaObjects   = "CERTFN_QUOTA_OBJECTS"
	EnvQuotaIssuances = "CERTFN_QUOTA_ISSUANCES_PER_HOUR"
	// EnvInitOnly: when "1" or "true", a function's main returns right
	// after initialisation (cold-start measurement; see InitOnly).
	EnvInitOnly = "CERTFN_INIT_ONLY"
)

// Defaults of the optional settings.
const (
	DefaultSweepLimit       = 1000
	DefaultBatchParallelism = 4
	DefaultFollowUps        = 32
	maxFollowUps            = 1000
	maxSweepLimit           = 100000
	maxBatchParallelism     = 10 // SQS batches hold at most 10 messages
)

// Settings is a function's configuration as read from its environment.
type Settings struct {
	Role Role
	// Table is the DynamoDB state table (all roles).
	Table string
	// DueShards is the due index's shard count (fixed for a table's life).
	DueShards int
	// ClusterResourceNamespace holds ClusterIssuer secrets (default cert-manager).
	ClusterResourceNamespace string
	// QueueURL is the worker queue: the worker consumes it, every other
	// role except http01 sends to it.
	QueueURL string
	// SignerQueueURL is the signer queue: the worker sends approved
	// CA/selfSigned requests and CA issuers there; the signer consumes it
	// (optional for the signer: otherwise derived from the event's queue ARN).
	SignerQueueURL string
	// SecretPrefix and KMSKeyID configure the secret store (worker and
	// signer): the Secrets Manager name prefix or the Parameter Store
	// path prefix, and the KMS key new secrets are encrypted with.
	SecretPrefix string
	KMSKeyID     string
	// SecretStore is SecretStoreSecretsManager (default) or
	// SecretStoreSSM; SecretClasses are the Parameter Store classes the
	// function reads (SecretStoreSSM only).
	SecretStore   string
	SecretClasses []ssmstore.Class
	// AutoApprove lists signer names approved without a policy (worker).
	AutoApprove []string
	// Approver is CERTFN_APPROVER (envconf.ApproverPolicy by default).
	Approver string
	// Route53ZoneIDs are the hosted zones the worker's route53 DNS-01
	// provider may change (empty: any its credentials allow); ACMImport
	// enables the worker's ACM importer (certfn.io/acm-import).
	Route53ZoneIDs []string
	ACMImport      bool
	// HTTP01Enabled says whether the http01 function is deployed; the
	// worker runs the HTTP-01 self-check only when it is (default true).
	HTTP01Enabled bool
	// APIMaxBody is the api function's request body limit (default
	// httpapi.DefaultMaxBody; at most a Function URL's 6 MiB payload).
	APIMaxBody int64
	// APIAdmins are usernames (as rbac.FromAWSARN maps them) the api
	// function puts in system:masters.
	APIAdmins map[string]bool
	// SweepLimit bounds the keys one scheduler run enqueues.
	SweepLimit int
	// BatchParallelism is how many messages of one SQS batch are handled at
	// once (worker and signer).
	BatchParallelism int
	// FollowUps is how many keys woken while handling a message the worker
	// handles in the same invocation (0: none; see followups.go).
	FollowUps int
	// LogLevel of the JSON log (debug, info, warn, error).
	LogLevel slog.Level
	// Metrics is "emf" or "none" (EnvMetrics).
	Metrics string
	// ACMEServerAllow restricts the ACME servers of namespaced Issuers
	// (EnvACMEServerAllow; the worker runs the ACME issuer).
	ACMEServerAllow acme.ServerAllowList
	// ACMENetwork is the private-network allowance of namespaced Issuers'
	// connections (EnvACMEAllowPrivateNetworks).
	ACMENetwork netguard.Policy
	// ACMEPolling is the ACME poll backoff (EnvACMEPollFirst, EnvACMEPollMax).
	ACMEPolling acme.Polling
	// Quotas are the per-namespace quotas (EnvQuotaObjects,
	// EnvQuotaIssuances; zero: unlimited).
	Quotas app.Quotas
	// NotifyEventBus is the event bus of the worker's notifications
	// (EnvNotifyEventBus; empty: off); NotifyExpiryDays the expiry
	// window in days (EnvNotifyExpiryDays; 0: no expiry events).
	NotifyEventBus   string
	NotifyExpiryDays int
}

// DefaultNotifyExpiryDays is EnvNotifyExpiryDays' default
// (certificates.NotifyDefaultExpiryWindow in days).
const DefaultNotifyExpiryDays = 14

// maxNotifyExpiryDays bounds EnvNotifyExpiryDays (as the module bounds
// certificate_expiry_alarm_days).
const maxNotifyExpiryDays = 365

// eventBus is what EventBridge accepts as an event bus: a name or an ARN
// (PutEventsRequestEntry.EventBusName), at most 1600 characters.
var eventBus = regexp.MustCompile(`^(arn:aws[\w-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/)?[.\-_A-Za-z0-9]+$`)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ParseSettings reads role's settings through getenv and checks them. An
// error names every variable that is missing or invalid and the rule it
// breaks.
func ParseSettings(role Role, getenv func(string) string) (Settings, error) {
	var problems []string
	bad := func(name, format string, a ...any) {
		problems = append(problems, name+": "+fmt.Sprintf(format, a...))
	}
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	known := false
	for _, r := range Roles {
		known = known || r == role
	}
	if !known {
		return Settings{}, fmt.Errorf("awsmode: unknown role %q (want one of worker, signer, scheduler, api, http01)", role)
	}
	s := Settings{Role: role, SecretPrefix: get(EnvSecretPrefix), KMSKeyID: get(EnvKMSKeyID),
		QueueURL: get(EnvQueueURL), SignerQueueURL: get(EnvSignerQueueURL), Table: get(EnvTable)}
	if fn := get(EnvFunction); fn != "" && Role(fn) != role {
		bad(EnvFunction, "%q: this binary is the %s function (a zip deployed to the wrong function?)", fn, role)
	}
	if s.Table == "" {
		bad(EnvTable, "required: the DynamoDB state table")
	}
	s.DueShards = envconf.IntVar(get(EnvDueShards), dynamo.DefaultShards, 1, dynamo.MaxShards, EnvDueShards, bad)
	s.ClusterResourceNamespace = get(EnvClusterResourceNamespace)
	if s.ClusterResourceNamespace == "" {
		s.ClusterResourceNamespace = api.DefaultClusterResourceNamespace
	} else if len(s.ClusterResourceNamespace) > 63 || !dnsLabel.MatchString(s.ClusterResourceNamespace) {
		bad(EnvClusterResourceNamespace, "%q is not a DNS label (lower-case letters, digits and '-', at most 63 characters)", s.ClusterResourceNamespace)
	}
	switch role {
	case RoleWorker:
		if s.QueueURL == "" {
			bad(EnvQueueURL, "required: the worker queue the worker consumes and sends follow-ups to")
		}
		if s.SignerQueueURL == "" {
			bad(EnvSignerQueueURL, "required: the signer queue the worker hands approved CA and selfSigned requests to")
		}
	case RoleSigner:
		if s.QueueURL == "" {
			bad(EnvQueueURL, "required: the worker queue the signer wakes certificates on")
		}
	case RoleScheduler, RoleAPI:
		if s.QueueURL == "" {
			bad(EnvQueueURL, "required: the worker queue")
		}
	}
	var autoApprove *string
	if v := get(EnvAutoApprove); v != "" {
		autoApprove = &v
	}
	// The cloud deployments approve by CertificateRequestPolicies only
	// unless CERTFN_APPROVER=cert-manager (infra/terraform: var.approver).
	var signers []string
	s.Approver, signers = envconf.AutoApprove(get(EnvApprover), autoApprove, envconf.ApproverPolicy, EnvApprover, bad)
	s.AutoApprove = app.ExpandAutoApprove(signers)
	s.Route53ZoneIDs = envconf.SplitList(get(EnvRoute53ZoneIDs))
	if allow, err := acme.ParseServerAllowList(EnvACMEServerAllow, envconf.SplitList(get(EnvACMEServerAllow))); err != nil {
		problems = append(problems, err.Error())
	} else {
		s.ACMEServerAllow = allow
	}
	if n, err := netguard.Parse(EnvACMEAllowPrivateNetworks, envconf.SplitList(get(EnvACMEAllowPrivateNetworks))); err != nil {
		problems = append(problems, err.Error())
	} else {
		s.ACMENetwork = n
	}
	if p, err := acme.ParsePolling(EnvACMEPollFirst, get(EnvACMEPollFirst), EnvACMEPollMax, get(EnvACMEPollMax)); err != nil {
		problems = append(problems, err.Error())
	} else {
		s.ACMEPolling = p
	}
	if role == RoleAPI {
		s.parseAPI(get, bad)
	}
	s.parseSecretStore(role, get, bad)
	s.ACMImport = envconf.BoolVar(get(EnvACMImport), false, EnvACMImport, bad)
	s.HTTP01Enabled = envconf.BoolVar(get(EnvHTTP01Enabled), true, EnvHTTP01Enabled, bad)
	if s.NotifyEventBus = get(EnvNotifyEventBus); s.NotifyEventBus != "" && (len(s.NotifyEventBus) > 1600 || !eventBus.MatchString(s.NotifyEventBus)) {
		bad(EnvNotifyEventBus, "%q is not an EventBridge event bus name (letters, digits, '.', '-', '_') or ARN (arn:aws:events:<region>:<account>:event-bus/<name>)", s.NotifyEventBus)
	}
	s.NotifyExpiryDays = envconf.IntVar(get(EnvNotifyExpiryDays), DefaultNotifyExpiryDays, 0, maxNotifyExpiryDays, EnvNotifyExpiryDays, bad)
	s.SweepLimit = envconf.IntVar(get(EnvSweepLimit), DefaultSweepLimit, 1, maxSweepLimit, EnvSweepLimit, bad)
	s.BatchParallelism = envconf.IntVar(get(EnvBatchParallelism), DefaultBatchParallelism, 1, maxBatchParallelism, EnvBatchParallelism, bad)
	s.FollowUps = envconf.IntVar(get(EnvFollowUps), DefaultFollowUps, 0, maxFollowUps, EnvFollowUps, bad)
	s.Quotas.ObjectsPerNamespace = envconf.IntVar(get(EnvQuotaObjects), 0, 0, math.MaxInt32, EnvQuotaObjects, bad)
	s.Quotas.IssuancesPerHourPerNamespace = envconf.IntVar(get(EnvQuotaIssuances), 0, 0, math.MaxInt32, EnvQuotaIssuances, bad)
	if v := get(EnvLogLevel); v != "" {
		if err := s.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad(EnvLogLevel, "%q is not a log level (debug, info, warn, error)", v)
		}
	}
	switch s.Metrics = strings.TrimSpace(get(EnvMetrics)); s.Metrics {
	case "":
		s.Metrics = "none"
	case "none", "emf":
	default:
		bad(EnvMetrics, "%q is not emf or none", s.Metrics)
	}
	if len(problems) > 0 {
		return Settings{}, fmt.Errorf("awsmode: %s function environment: %s", role, strings.Join(problems, "; "))
	}
	return s, nil
}

// The secret stores CERTFN_SECRET_STORE names.
const (
	SecretStoreSecretsManager = "secretsmanager"
	SecretStoreSSM            = "ssm"
)

// secretReference names a certificate's secret in the deployment's secret
// store (app.Ports.SecretReference): its Secrets Manager name, or its
// Parameter Store path.
func (s Settings) secretReference(namespace, name string) string {
	if s.SecretStore == SecretStoreSSM {
		return ssmstore.TLSPath(s.SecretPrefix, namespace, name)
	}
	return secrets.Name(s.SecretPrefix, namespace, name)
}

// parseSecretStore reads EnvSecretStore and, for Parameter Store,
// EnvSecretClasses (worker and signer: the roles with a secret store).
func (s *Settings) parseSecretStore(role Role, get func(string) string, bad func(string, string, ...any)) {
	switch s.SecretStore = strings.ToLower(get(EnvSecretStore)); s.SecretStore {
	case "":
		s.SecretStore = SecretStoreSecretsManager
	case SecretStoreSecretsManager, SecretStoreSSM:
	default:
		bad(EnvSecretStore, "%q is not secretsmanager or ssm", s.SecretStore)
		return
	}
	v := get(EnvSecretClasses)
	if s.SecretStore != SecretStoreSSM || (role != RoleWorker && role != RoleSigner) {
		if v != "" && s.SecretStore != SecretStoreSSM {
			bad(EnvSecretClasses, "set, but %s is not ssm (classes are Parameter Store paths)", EnvSecretStore)
		}
		return
	}
	if v == "" {
		if role == RoleWorker {
			s.SecretClasses = ssmstore.WorkerClasses(false)
		} else {
			s.SecretClasses = ssmstore.SignerClasses()
		}
		return
	}
	for _, c := range envconf.SplitList(v) {
		cl := ssmstore.Class(c)
		switch {
		case !slices.Contains(ssmstore.AllClasses(), cl):
			bad(EnvSecretClasses, "%q is not a class (want some of %v)", c, ssmstore.AllClasses())
		case slices.Contains(s.SecretClasses, cl):
			bad(EnvSecretClasses, "%q is listed twice", c)
		default:
			s.SecretClasses = append(s.SecretClasses, cl)
		}
	}
}

// InitOnly reports whether EnvInitOnly asks main to return right after
// initialisation (used to measure cold initialisation time).
func InitOnly(getenv func(string) string) bool {
	v, err := strconv.ParseBool(strings.TrimSpace(getenv(EnvInitOnly)))
	return err == nil && v
}

// parseAPI reads the api function's own variables.
func (s *Settings) parseAPI(get func(string) string, bad func(string, string, ...any)) {
	s.APIMaxBody = httpapi.DefaultMaxBody
	if v := get(EnvAPIMaxBody); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 6<<20 {
			bad(EnvAPIMaxBody, "%q: want a number of bytes from 1 to 6291456 (a Function URL's payload limit)", v)
		} else {
			s.APIMaxBody = n
		}
	}
	for i, a := range envconf.SplitList(get(EnvAPIAdmins)) {
		id, err := rbac.FromAWSARN(a)
		switch {
		case err != nil:
			bad(fmt.Sprintf("%s[%d]", EnvAPIAdmins, i), "%v", err)
		case id.Username != a:
			bad(fmt.Sprintf("%s[%d]", EnvAPIAdmins, i), "%q is a session: name its role, %s", a, id.Username)
		default:
			if s.APIAdmins == nil {
				s.APIAdmins = map[string]bool{}
			}
			s.APIAdmins[a] = true
		}
	}
}
