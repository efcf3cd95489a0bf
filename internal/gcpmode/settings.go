package gcpmode

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/internal/envconf"
)

// Environment variables (infra/terraform/gcp sets them; its README lists
// them). Names shared with AWS (internal/awsmode/settings.go) mean the same.
const (
	EnvFunction                 = "CERTFN_FUNCTION"
	EnvProject                  = "CERTFN_PROJECT"
	EnvDatabase                 = "CERTFN_FIRESTORE_DATABASE"
	EnvCollection               = "CERTFN_FIRESTORE_COLLECTION"
	EnvTopic                    = "CERTFN_TOPIC"
	EnvSignerTopic              = "CERTFN_SIGNER_TOPIC"
	EnvTasksQueue               = "CERTFN_TASKS_QUEUE"
	EnvTasksServiceAccount      = "CERTFN_TASKS_SERVICE_ACCOUNT"
	EnvSecretPrefix             = "CERTFN_SECRET_PREFIX"
	EnvKMSKeyName               = "CERTFN_KMS_KEY_ID"
	EnvManageCA                 = "CERTFN_MANAGE_CA_CERTIFICATES"
	EnvMetrics                  = "CERTFN_METRICS"
	EnvClusterResourceNamespace = "CERTFN_CLUSTER_RESOURCE_NAMESPACE"
	EnvAutoApprove              = "CERTFN_AUTO_APPROVE"
	EnvApprover                 = "CERTFN_APPROVER"
	EnvCloudDNSZones            = "CERTFN_CLOUDDNS_ZONES"
	EnvCertificateManager       = "CERTFN_CERTIFICATE_MANAGER_IMPORT"
	EnvCertificateManagerLoc    = "CERTFN_CERTIFICATE_MANAGER_LOCATION"
	EnvHTTP01Enabled            = "CERTFN_HTTP01_ENABLED"
	EnvSweepLimit               = "CERTFN_SWEEP_LIMIT"
	EnvFollowUps                = "CERTFN_FOLLOW_UPS"
	EnvLogLevel                 = "CERTFN_LOG_LEVEL"
	EnvAPIMaxBody               = "CERTFN_API_MAX_BODY"
	EnvAPIAdmins                = "CERTFN_API_ADMINS"
	EnvAPIAudience              = "CERTFN_API_AUDIENCE"
	EnvQuotaObjects             = "CERTFN_QUOTA_OBJECTS"
	EnvQuotaIssuances           = "CERTFN_QUOTA_ISSUANCES_PER_HOUR"
	EnvACMEServerAllow          = "CERTFN_ACME_SERVER_ALLOW"
	// EnvACMEAllowPrivateNetworks: the private-network allowance of
	// namespaced Issuers' connections, as on AWS
	// (awsmode.EnvACMEAllowPrivateNetworks).
	EnvACMEAllowPrivateNetworks = "CERTFN_ACME_ALLOW_PRIVATE_NETWORKS"
	// EnvACMEPollFirst and EnvACMEPollMax: the ACME poll backoff, as on
	// AWS (awsmode.EnvACMEPollFirst).
	EnvACMEPollFirst = "CERTFN_ACME_POLL_FIRST"
	EnvACMEPollMax   = "CERTFN_ACME_POLL_MAX"
	// EnvNotifyTopic is the Pub/Sub topic (projects/<p>/topics/<t>) the
	// worker publishes notifications on (core/certificates/notify.go,
	// adapters/gcp/pubsubnotify); empty: notifications are off.
	// EnvNotifyExpiryDays is how many days before expiry a certificate is
	// announced as expiring, as on AWS (awsmode.EnvNotifyExpiryDays).
	EnvNotifyTopic      = "CERTFN_NOTIFY_TOPIC"
	EnvNotifyExpiryDays = "CERTFN_NOTIFY_EXPIRY_DAYS"
)

// DefaultNotifyExpiryDays is EnvNotifyExpiryDays' default
// (certificates.NotifyDefaultExpiryWindow in days).
const DefaultNotifyExpiryDays = 14

// Settings are one service's configuration.
type Settings struct {
	// Role is the service's role (core/app.Functions, by name): what it
	// needs from the environment follows from its ports.
	Role                app.Role
	Project             string
	Database            string
	Collection          string
	Topic               string
	SignerTopic         string
	TasksQueue          string
	TasksServiceAccount string
	SecretPrefix        string
	KMSKeyName          string
	// ManageCA: the worker's secret classes include issued CA key pairs.
	ManageCA bool
	// Metrics is "log" (one JSON line per observation of an exported
	// metric, which the expiry alert counts) or "none".
	Metrics                  string
	ClusterResourceNamespace string
	AutoApprove              []string
	// Approver is CERTFN_APPROVER (envconf.ApproverPolicy by default).
	Approver              string
	CloudDNSZones         []string
	CertificateManager    bool
	CertificateManagerLoc string
	HTTP01Enabled         bool
	SweepLimit            int
	FollowUps             int
	LogLevel              slog.Level
	APIMaxBody            int64
	APIAdmins             map[string]bool
	// APIAudiences are the audiences the api accepts in Google ID
	// tokens (EnvAPIAudience; required by the api role).
	APIAudiences    []string
	Quotas          app.Quotas
	ACMEServerAllow acme.ServerAllowList
	ACMENetwork     netguard.Policy
	// ACMEPolling is the ACME poll backoff (EnvACMEPollFirst, EnvACMEPollMax).
	ACMEPolling acme.Polling
	// NotifyTopic is the topic of the worker's notifications
	// (EnvNotifyTopic; empty: off); NotifyExpiryDays the expiry window in
	// days (EnvNotifyExpiryDays; 0: no expiry events).
	NotifyTopic      string
	NotifyExpiryDays int
}

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	projectID  = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	tasksQueue = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/queues/[^/]+$`)
	topicName  = regexp.MustCompile(`^projects/[^/]+/topics/[A-Za-z][-A-Za-z0-9._~%+]{2,254}$`)
)

// ParseSettings reads the configuration of the service called name
// (core/app.FunctionNamed): a variable is required when the role needs
// the port it configures. Every problem is reported at once, each naming
// its variable and the rule.
func ParseSettings(name string, getenv func(string) string) (Settings, error) {
	role, err := app.FunctionNamed(name)
	if err != nil {
		return Settings{}, fmt.Errorf("gcpmode: %w", err)
	}
	var problems []string
	bad := func(name, format string, a ...any) { problems = append(problems, name+": "+fmt.Sprintf(format, a...)) }
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	s := Settings{Role: role, Project: get(EnvProject), Database: get(EnvDatabase), Collection: get(EnvCollection),
		Topic: get(EnvTopic), SignerTopic: get(EnvSignerTopic), TasksQueue: get(EnvTasksQueue),
		TasksServiceAccount: get(EnvTasksServiceAccount), SecretPrefix: get(EnvSecretPrefix), KMSKeyName: get(EnvKMSKeyName),
		CertificateManagerLoc: get(EnvCertificateManagerLoc)}
	if fn := get(EnvFunction); fn != "" && fn != role.Name {
		bad(EnvFunction, "%q: this service runs as %s", fn, role.Name)
	}
	if !projectID.MatchString(s.Project) {
		bad(EnvProject, "%q is not a Google Cloud project ID (6 to 30 lower-case letters, digits and '-')", s.Project)
	}
	if s.Database == "" {
		s.Database = "(default)"
	}
	if s.Collection == "" {
		s.Collection = "certfn"
	}
	if s.SecretPrefix == "" {
		s.SecretPrefix = "certfn"
	}
	if s.CertificateManagerLoc == "" {
		s.CertificateManagerLoc = "global"
	}
	s.ClusterResourceNamespace = get(EnvClusterResourceNamespace)
	if s.ClusterResourceNamespace == "" {
		s.ClusterResourceNamespace = api.DefaultClusterResourceNamespace
	} else if len(s.ClusterResourceNamespace) > 63 || !dnsLabel.MatchString(s.ClusterResourceNamespace) {
		bad(EnvClusterResourceNamespace, "%q is not a DNS label", s.ClusterResourceNamespace)
	}
	needs := func(name, v, why string) {
		if v == "" {
			bad(name, "required: %s", why)
		}
	}
	if role.Needs(app.PortQueue) {
		needs(EnvTopic, s.Topic, "the worker topic the "+role.Name+" sends reconcile keys to")
	}
	if role.Needs(app.PortSignerQueue) {
		needs(EnvSignerTopic, s.SignerTopic, "the signer topic the "+role.Name+" hands approved "+strings.Join(role.HandsOff, " and ")+" requests to")
	}
	if role.DelaysWork() {
		needs(EnvTasksQueue, s.TasksQueue, "the Cloud Tasks queue of short delays")
		needs(EnvTasksServiceAccount, s.TasksServiceAccount, "the service account whose token delayed tasks publish with")
	}
	s.NotifyTopic = get(EnvNotifyTopic)
	s.NotifyExpiryDays = envconf.IntVar(get(EnvNotifyExpiryDays), DefaultNotifyExpiryDays, 0, 365, EnvNotifyExpiryDays, bad)
	for _, t := range []struct{ name, v string }{{EnvTopic, s.Topic}, {EnvSignerTopic, s.SignerTopic}, {EnvNotifyTopic, s.NotifyTopic}} {
		if t.v != "" && !topicName.MatchString(t.v) {
			bad(t.name, "%q: want projects/<project>/topics/<topic>", t.v)
		}
	}
	if s.TasksQueue != "" && !tasksQueue.MatchString(s.TasksQueue) {
		bad(EnvTasksQueue, "%q: want projects/<project>/locations/<location>/queues/<queue>", s.TasksQueue)
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
	s.CloudDNSZones = envconf.SplitList(get(EnvCloudDNSZones))
	if allow, err := acme.ParseServerAllowList(EnvACMEServerAllow, envconf.SplitList(get(EnvACMEServerAllow))); err != nil {
		bad(EnvACMEServerAllow, "%v", err)
	} else {
		s.ACMEServerAllow = allow
	}
	if n, err := netguard.Parse(EnvACMEAllowPrivateNetworks, envconf.SplitList(get(EnvACMEAllowPrivateNetworks))); err != nil {
		bad(EnvACMEAllowPrivateNetworks, "%v", err)
	} else {
		s.ACMENetwork = n
	}
	if p, err := acme.ParsePolling(EnvACMEPollFirst, get(EnvACMEPollFirst), EnvACMEPollMax, get(EnvACMEPollMax)); err != nil {
		problems = append(problems, err.Error())
	} else {
		s.ACMEPolling = p
	}
	s.ManageCA = envconf.BoolVar(get(EnvManageCA), false, EnvManageCA, bad)
	switch s.Metrics = get(EnvMetrics); s.Metrics {
	case "":
		s.Metrics = "none"
	case "none", "log":
	default:
		bad(EnvMetrics, "%q is not log or none", s.Metrics)
	}
	s.CertificateManager = envconf.BoolVar(get(EnvCertificateManager), false, EnvCertificateManager, bad)
	s.HTTP01Enabled = envconf.BoolVar(get(EnvHTTP01Enabled), true, EnvHTTP01Enabled, bad)
	s.SweepLimit = envconf.IntVar(get(EnvSweepLimit), 1000, 1, 100000, EnvSweepLimit, bad)
	s.FollowUps = envconf.IntVar(get(EnvFollowUps), 32, 0, 1000, EnvFollowUps, bad)
	s.Quotas.ObjectsPerNamespace = envconf.IntVar(get(EnvQuotaObjects), 0, 0, 1<<31-1, EnvQuotaObjects, bad)
	s.Quotas.IssuancesPerHourPerNamespace = envconf.IntVar(get(EnvQuotaIssuances), 0, 0, 1<<31-1, EnvQuotaIssuances, bad)
	if v := get(EnvLogLevel); v != "" {
		if err := s.LogLevel.UnmarshalText([]byte(v)); err != nil {
			bad(EnvLogLevel, "%q is not a log level (debug, info, warn, error)", v)
		}
	}
	if role.ServesAPI {
		// The audience is fixed here, never taken from a request's Host
		// (a token minted for another service would pass with its Host).
		s.APIAudiences = envconf.SplitList(get(EnvAPIAudience))
		if len(s.APIAudiences) == 0 {
			bad(EnvAPIAudience, "required: the audience of the api's Google ID tokens, the service's URL "+
				"(https://<service>-<project-number>.<region>.run.app, as infra/terraform/gcp sets it) and any custom audience, comma-separated")
		}
		for i, a := range s.APIAudiences {
			if strings.ContainsAny(a, " \t") {
				bad(fmt.Sprintf("%s[%d]", EnvAPIAudience, i), "%q contains white space", a)
			}
		}
		s.APIMaxBody = httpapi.DefaultMaxBody
		if v := get(EnvAPIMaxBody); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || n > 32<<20 {
				bad(EnvAPIMaxBody, "%q: want a number of bytes from 1 to 33554432 (Cloud Run's request limit)", v)
			} else {
				s.APIMaxBody = n
			}
		}
		for i, a := range envconf.SplitList(get(EnvAPIAdmins)) {
			id, err := rbac.FromGoogleEmail(a)
			if err != nil {
				bad(fmt.Sprintf("%s[%d]", EnvAPIAdmins, i), "%v", err)
				continue
			}
			if s.APIAdmins == nil {
				s.APIAdmins = map[string]bool{}
			}
			s.APIAdmins[id.Username] = true
		}
	}
	if len(problems) > 0 {
		return Settings{}, fmt.Errorf("gcpmode: %s service environment: %s", role.Name, strings.Join(problems, "; "))
	}
	return s, nil
}
