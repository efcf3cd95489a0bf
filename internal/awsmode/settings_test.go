package awsmode_test

import (
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/aws/ssmstore"
	"github.com/certfn/certfn/adapters/netguard"
	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
)

// vars builds a getenv over a base environment with changes (a value ""
// removes the variable).
func vars(changes ...string) func(string) string {
	m := map[string]string{
		awsmode.EnvTable:          "certfn",
		awsmode.EnvQueueURL:       "https://sqs.eu-west-1.amazonaws.com/123456789012/certfn-worker",
		awsmode.EnvSignerQueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/certfn-signer",
	}
	for i := 0; i+1 < len(changes); i += 2 {
		if changes[i+1] == "" {
			delete(m, changes[i])
		} else {
			m[changes[i]] = changes[i+1]
		}
	}
	return func(k string) string { return m[k] }
}

func TestParseSettingsDefaults(t *testing.T) {
	s, err := awsmode.ParseSettings(app.Worker.Name, vars())
	if err != nil {
		t.Fatal(err)
	}
	want := awsmode.Settings{Role: app.Worker, Table: "certfn", DueShards: 16, ClusterResourceNamespace: "cert-manager",
		QueueURL:       "https://sqs.eu-west-1.amazonaws.com/123456789012/certfn-worker",
		SignerQueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/certfn-signer",
		HTTP01Enabled:  true, SweepLimit: awsmode.DefaultSweepLimit, BatchParallelism: awsmode.DefaultBatchParallelism,
		FollowUps: awsmode.DefaultFollowUps, LogLevel: slog.LevelInfo, Metrics: "none", Approver: "policy",
		SecretStore: awsmode.SecretStoreSecretsManager, NotifyExpiryDays: awsmode.DefaultNotifyExpiryDays}
	// Namespaced ACME Issuers: no server, no private network (deny by default).
	want.ACMEServerAllow, _ = acme.ParseServerAllowList(awsmode.EnvACMEServerAllow, nil)
	want.ACMENetwork, _ = netguard.Parse(awsmode.EnvACMEAllowPrivateNetworks, nil)
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("settings\n got %+v\nwant %+v", s, want)
	}
}

func TestParseSettingsValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		role   string
		env    []string
		check  func(awsmode.Settings) bool
		expect string
	}{
		{"auto-approve list with * expanded", app.Worker.Name,
			[]string{awsmode.EnvAutoApprove, " issuers.cert-manager.io/ns.ca , *,"},
			func(s awsmode.Settings) bool {
				return reflect.DeepEqual(s.AutoApprove, []string{"issuers.cert-manager.io/ns.ca", "issuers.cert-manager.io/*", "clusterissuers.cert-manager.io/*"})
			}, "AutoApprove expanded"},
		{"cert-manager's built-in approver", app.Worker.Name,
			[]string{awsmode.EnvApprover, "cert-manager"},
			func(s awsmode.Settings) bool {
				return s.Approver == "cert-manager" && reflect.DeepEqual(s.AutoApprove, []string{"issuers.cert-manager.io/*", "clusterissuers.cert-manager.io/*"})
			}, "every cert-manager signer approved"},
		{"shards, namespace, prefix, kms", app.Signer.Name,
			[]string{awsmode.EnvDueShards, "32", awsmode.EnvClusterResourceNamespace, "pki", awsmode.EnvSecretPrefix, "team/certs", awsmode.EnvKMSKeyID, "alias/x"},
			func(s awsmode.Settings) bool {
				return s.DueShards == 32 && s.ClusterResourceNamespace == "pki" && s.SecretPrefix == "team/certs" && s.KMSKeyID == "alias/x"
			}, "values read"},
		{"booleans and tuning", app.Worker.Name,
			[]string{awsmode.EnvHTTP01Enabled, "false", awsmode.EnvACMImport, "true", awsmode.EnvSweepLimit, "50", awsmode.EnvBatchParallelism, "1", awsmode.EnvLogLevel, "debug",
				awsmode.EnvRoute53ZoneIDs, "Z1,Z2", awsmode.EnvFollowUps, "0"},
			func(s awsmode.Settings) bool {
				return !s.HTTP01Enabled && s.ACMImport && s.SweepLimit == 50 && s.BatchParallelism == 1 && s.LogLevel == slog.LevelDebug && s.FollowUps == 0 &&
					reflect.DeepEqual(s.Route53ZoneIDs, []string{"Z1", "Z2"})
			}, "values read"},
		{"notifications on the default bus, 30 days", app.Worker.Name,
			[]string{awsmode.EnvNotifyEventBus, " default ", awsmode.EnvNotifyExpiryDays, "30"},
			func(s awsmode.Settings) bool { return s.NotifyEventBus == "default" && s.NotifyExpiryDays == 30 }, "bus and window read"},
		{"notifications on a bus by ARN, no expiry events", app.Worker.Name,
			[]string{awsmode.EnvNotifyEventBus, "arn:aws:events:eu-west-1:123456789012:event-bus/pki-events", awsmode.EnvNotifyExpiryDays, "0"},
			func(s awsmode.Settings) bool {
				return s.NotifyEventBus == "arn:aws:events:eu-west-1:123456789012:event-bus/pki-events" && s.NotifyExpiryDays == 0
			}, "bus ARN read, window off"},
		{"ACME server allow-list", app.Worker.Name,
			[]string{awsmode.EnvACMEServerAllow, " https://acme-v02.api.letsencrypt.org/directory, https://ca.internal.example/acme/ ,"},
			func(s awsmode.Settings) bool {
				l := s.ACMEServerAllow
				return reflect.DeepEqual(l.Prefixes(), []string{"https://acme-v02.api.letsencrypt.org/directory", "https://ca.internal.example/acme/"}) &&
					l.Source == awsmode.EnvACMEServerAllow && l.Allows("https://ca.internal.example/acme/p/directory") && !l.Allows("https://169.254.169.254/")
			}, "allow-list read"},
		{"ACME server allow-list unset: deny namespaced Issuers", app.Worker.Name, nil,
			func(s awsmode.Settings) bool {
				return s.ACMEServerAllow.Restricts() && !s.ACMEServerAllow.Allows("https://acme-v02.api.letsencrypt.org/directory")
			}, "no server allowed"},
		{"ACME server allow-list any", app.Worker.Name, []string{awsmode.EnvACMEServerAllow, "*"},
			func(s awsmode.Settings) bool { return s.ACMEServerAllow.Allows("https://ca.example/dir") }, "any server"},
		{"ACME private networks", app.Worker.Name, []string{awsmode.EnvACMEAllowPrivateNetworks, "10.0.0.0/8, ca.internal.example"},
			func(s awsmode.Settings) bool {
				n := s.ACMENetwork
				return n.Source == awsmode.EnvACMEAllowPrivateNetworks && !n.Denied(netip.MustParseAddr("10.1.2.3")) && n.Denied(netip.MustParseAddr("169.254.169.254")) &&
					n.HostAllowed("ca.internal.example")
			}, "allowance read"},
		{"ACME private networks unset", app.Worker.Name, nil,
			func(s awsmode.Settings) bool { return s.ACMENetwork.Denied(netip.MustParseAddr("169.254.169.254")) }, "no allowance"},
		{"signer queue optional for the signer", app.Signer.Name, []string{awsmode.EnvSignerQueueURL, ""},
			func(s awsmode.Settings) bool { return s.SignerQueueURL == "" }, "no signer queue"},
		{"http01 needs only the table", app.HTTP01.Name, []string{awsmode.EnvQueueURL, "", awsmode.EnvSignerQueueURL, ""},
			func(s awsmode.Settings) bool { return s.Table == "certfn" }, "table only"},
		{"quotas", app.API.Name, []string{awsmode.EnvQuotaObjects, " 500 ", awsmode.EnvQuotaIssuances, "20"},
			func(s awsmode.Settings) bool {
				return s.Quotas == app.Quotas{ObjectsPerNamespace: 500, IssuancesPerHourPerNamespace: 20}
			}, "quotas read"},
		{"quotas of 0 are unlimited", app.Signer.Name, []string{awsmode.EnvQuotaObjects, "0", awsmode.EnvQuotaIssuances, "0"},
			func(s awsmode.Settings) bool { return s.Quotas == app.Quotas{} }, "no quota"},
		{"Parameter Store, the worker's default classes", app.Worker.Name, []string{awsmode.EnvSecretStore, "SSM"},
			func(s awsmode.Settings) bool {
				return s.SecretStore == awsmode.SecretStoreSSM && reflect.DeepEqual(s.SecretClasses, ssmstore.WorkerClasses(false))
			}, "ssm with tls, pk, sc"},
		{"Parameter Store, the signer's default classes", app.Signer.Name, []string{awsmode.EnvSecretStore, "ssm"},
			func(s awsmode.Settings) bool { return reflect.DeepEqual(s.SecretClasses, ssmstore.SignerClasses()) }, "ssm with ca, ica, pk"},
		{"Parameter Store, classes as Terraform sets them", app.Worker.Name,
			[]string{awsmode.EnvSecretStore, "ssm", awsmode.EnvSecretClasses, "tls, pk,sc,ica"},
			func(s awsmode.Settings) bool {
				return reflect.DeepEqual(s.SecretClasses, []ssmstore.Class{ssmstore.ClassTLS, ssmstore.ClassPrivateKey, ssmstore.ClassSolverCredentials, ssmstore.ClassIssuedCA})
			}, "the listed classes in order"},
		{"Parameter Store classes ignored where no secret store runs", app.API.Name,
			[]string{awsmode.EnvSecretStore, "ssm", awsmode.EnvSecretClasses, "tls"},
			func(s awsmode.Settings) bool {
				return s.SecretStore == awsmode.SecretStoreSSM && s.SecretClasses == nil
			}, "no classes"},
		{"matching CERTFN_FUNCTION", app.Scheduler.Name, []string{awsmode.EnvFunction, "scheduler"},
			func(s awsmode.Settings) bool { return s.Role.Name == app.Scheduler.Name }, "accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := awsmode.ParseSettings(tc.role, vars(tc.env...))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(s) {
				t.Fatalf("%s: got %+v", tc.expect, s)
			}
		})
	}
}

func TestParseSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		role string
		env  []string
		want []string // substrings of the error
	}{
		{"unknown role", "cron", nil, []string{`unknown role "cron"`}},
		{"missing table", app.HTTP01.Name, []string{awsmode.EnvTable, ""}, []string{"CERTFN_TABLE: required"}},
		{"private networks not CIDRs", app.Worker.Name, []string{awsmode.EnvACMEAllowPrivateNetworks, "10.0.0.0/33"},
			[]string{`CERTFN_ACME_ALLOW_PRIVATE_NETWORKS[0]: "10.0.0.0/33" is not a CIDR prefix`}},
		{"worker without queues", app.Worker.Name, []string{awsmode.EnvQueueURL, "", awsmode.EnvSignerQueueURL, ""},
			[]string{"CERTFN_QUEUE_URL: required", "CERTFN_SIGNER_QUEUE_URL: required"}},
		{"scheduler without queue", app.Scheduler.Name, []string{awsmode.EnvQueueURL, ""}, []string{"CERTFN_QUEUE_URL: required"}},
		{"zip deployed to the wrong function", app.Worker.Name, []string{awsmode.EnvFunction, "signer"},
			[]string{`CERTFN_FUNCTION: "signer": this binary is the worker function`}},
		{"shards out of range", app.API.Name, []string{awsmode.EnvDueShards, "0"}, []string{`CERTFN_DUE_SHARDS: "0" is not an integer from 1 to 256`}},
		{"shards not a number", app.API.Name, []string{awsmode.EnvDueShards, "many"}, []string{`CERTFN_DUE_SHARDS: "many" is not an integer`}},
		{"namespace not a label", app.Signer.Name, []string{awsmode.EnvClusterResourceNamespace, "Cert_Manager"},
			[]string{`CERTFN_CLUSTER_RESOURCE_NAMESPACE: "Cert_Manager" is not a DNS label`}},
		{"boolean", app.Worker.Name, []string{awsmode.EnvHTTP01Enabled, "yes please"}, []string{`CERTFN_HTTP01_ENABLED: "yes please" is not a boolean`}},
		{"approver", app.Worker.Name, []string{awsmode.EnvApprover, "builtin"}, []string{`CERTFN_APPROVER: "builtin" is not an approver: want cert-manager`}},
		{"parallelism", app.Worker.Name, []string{awsmode.EnvBatchParallelism, "11"}, []string{`CERTFN_BATCH_PARALLELISM: "11" is not an integer from 1 to 10`}},
		{"sweep limit", app.Scheduler.Name, []string{awsmode.EnvSweepLimit, "-1"}, []string{`CERTFN_SWEEP_LIMIT: "-1"`}},
		{"follow-ups", app.Worker.Name, []string{awsmode.EnvFollowUps, "5000"}, []string{`CERTFN_FOLLOW_UPS: "5000" is not an integer from 0 to 1000`}},
		{"log level", app.API.Name, []string{awsmode.EnvLogLevel, "loud"}, []string{`CERTFN_LOG_LEVEL: "loud" is not a log level`}},
		{"ACME server allow-list", app.Worker.Name, []string{awsmode.EnvACMEServerAllow, "https://ok.example/,acme.example/directory"},
			[]string{`CERTFN_ACME_SERVER_ALLOW[1]: "acme.example/directory" is not an absolute http(s) URL`}},
		{"ACME poll not a duration", app.Worker.Name, []string{awsmode.EnvACMEPollFirst, "soon"},
			[]string{`CERTFN_ACME_POLL_FIRST: "soon" is not a duration (e.g. 150ms, 2s)`}},
		{"ACME poll max below first", app.Worker.Name, []string{awsmode.EnvACMEPollFirst, "1s", awsmode.EnvACMEPollMax, "500ms"},
			[]string{`CERTFN_ACME_POLL_MAX: 500ms is below CERTFN_ACME_POLL_FIRST (1s)`}},
		{"objects quota negative", app.API.Name, []string{awsmode.EnvQuotaObjects, "-1"},
			[]string{`CERTFN_QUOTA_OBJECTS: "-1" is not an integer from 0 to 2147483647`}},
		{"issuance quota not a number", app.Worker.Name, []string{awsmode.EnvQuotaIssuances, "10/h"},
			[]string{`CERTFN_QUOTA_ISSUANCES_PER_HOUR: "10/h" is not an integer from 0 to 2147483647`}},
		{"event bus", app.Worker.Name, []string{awsmode.EnvNotifyEventBus, "my bus"},
			[]string{`CERTFN_NOTIFY_EVENT_BUS: "my bus" is not an EventBridge event bus name`}},
		{"event bus ARN of another service", app.Worker.Name, []string{awsmode.EnvNotifyEventBus, "arn:aws:sns:eu-west-1:123456789012:topic"},
			[]string{`CERTFN_NOTIFY_EVENT_BUS: "arn:aws:sns:eu-west-1:123456789012:topic" is not`}},
		{"expiry days", app.Worker.Name, []string{awsmode.EnvNotifyExpiryDays, "400"},
			[]string{`CERTFN_NOTIFY_EXPIRY_DAYS: "400" is not an integer from 0 to 365`}},
		{"expiry days not a number", app.Worker.Name, []string{awsmode.EnvNotifyExpiryDays, "2w"},
			[]string{`CERTFN_NOTIFY_EXPIRY_DAYS: "2w" is not an integer`}},
		{"metrics", app.API.Name, []string{awsmode.EnvMetrics, "prometheus"}, []string{`CERTFN_METRICS: "prometheus" is not emf or none`}},
		{"secret store", app.Worker.Name, []string{awsmode.EnvSecretStore, "s3"}, []string{`CERTFN_SECRET_STORE: "s3" is not secretsmanager or ssm`}},
		{"secret classes without ssm", app.Signer.Name, []string{awsmode.EnvSecretClasses, "ca"},
			[]string{"CERTFN_SECRET_CLASSES: set, but CERTFN_SECRET_STORE is not ssm"}},
		{"unknown secret class", app.Worker.Name, []string{awsmode.EnvSecretStore, "ssm", awsmode.EnvSecretClasses, "tls,keys"},
			[]string{`CERTFN_SECRET_CLASSES: "keys" is not a class`}},
		{"secret class twice", app.Signer.Name, []string{awsmode.EnvSecretStore, "ssm", awsmode.EnvSecretClasses, "ca,ca"},
			[]string{`CERTFN_SECRET_CLASSES: "ca" is listed twice`}},
		{"every problem at once", app.Worker.Name, []string{awsmode.EnvTable, "", awsmode.EnvDueShards, "x"},
			[]string{"CERTFN_TABLE: required", "CERTFN_DUE_SHARDS:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := awsmode.ParseSettings(tc.role, vars(tc.env...))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestInitOnly(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true, "true": true, "TRUE": true, "yes": false} {
		if got := awsmode.InitOnly(vars(awsmode.EnvInitOnly, v)); got != want {
			t.Errorf("InitOnly(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestQueueURLFromARN(t *testing.T) {
	for _, tc := range []struct {
		arn, endpoint, want, err string
	}{
		{"arn:aws:sqs:eu-west-1:123456789012:certfn-signer", "", "https://sqs.eu-west-1.amazonaws.com/123456789012/certfn-signer", ""},
		{"arn:aws-cn:sqs:cn-north-1:123456789012:q", "", "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q", ""},
		{"arn:aws:sqs:us-east-1:000000000000:q", "http://localhost:4566/", "http://localhost:4566/000000000000/q", ""},
		{"arn:aws:sns:us-east-1:1:q", "", "", "not an SQS queue ARN"},
		{"arn:aws:sqs:us-east-1:1", "", "", "not an SQS queue ARN"},
		{"", "", "", "not an SQS queue ARN"},
	} {
		got, err := awsmode.QueueURLFromARN(tc.arn, tc.endpoint)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("QueueURLFromARN(%q) error = %v, want %q", tc.arn, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("QueueURLFromARN(%q, %q) = %q, %v; want %q", tc.arn, tc.endpoint, got, err, tc.want)
		}
	}
}
