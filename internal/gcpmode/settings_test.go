package gcpmode_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/gcpmode"
)

type env map[string]string

func (e env) get(k string) string { return e[k] }

func workerEnv(kv ...string) env {
	e := env{"CERTFN_PROJECT": "certfn-prod-1", "CERTFN_TOPIC": "projects/certfn-prod-1/topics/certfn-worker", "CERTFN_SIGNER_TOPIC": "projects/certfn-prod-1/topics/certfn-signer",
		"CERTFN_TASKS_QUEUE":           "projects/certfn-prod-1/locations/europe-west1/queues/certfn-delays",
		"CERTFN_TASKS_SERVICE_ACCOUNT": "certfn-tasks@certfn-prod-1.iam.gserviceaccount.com"}
	for i := 0; i+1 < len(kv); i += 2 {
		e[kv[i]] = kv[i+1]
	}
	return e
}

func TestParseSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		role  string
		env   env
		want  string // error substring; "" = valid
		check func(gcpmode.Settings) bool
	}{
		{"worker defaults", app.Worker.Name, workerEnv(), "", func(s gcpmode.Settings) bool {
			return s.Database == "(default)" && s.Collection == "certfn" && s.SecretPrefix == "certfn" && s.ClusterResourceNamespace == "cert-manager" &&
				s.FollowUps == 32 && s.HTTP01Enabled && !s.CertificateManager && s.CertificateManagerLoc == "global"
		}},
		{"auto-approve star expands", app.Worker.Name, workerEnv("CERTFN_AUTO_APPROVE", "*"), "", func(s gcpmode.Settings) bool {
			return len(s.AutoApprove) == 2
		}},
		{"wrong function", app.Worker.Name, workerEnv("CERTFN_FUNCTION", "api"), `CERTFN_FUNCTION: "api": this service runs as worker`, nil},
		{"bad project", app.Worker.Name, workerEnv("CERTFN_PROJECT", "Bad_Project"), "CERTFN_PROJECT", nil},
		{"worker without signer topic", app.Worker.Name, workerEnv("CERTFN_SIGNER_TOPIC", ""), "CERTFN_SIGNER_TOPIC: required", nil},
		{"bad tasks queue", app.Worker.Name, workerEnv("CERTFN_TASKS_QUEUE", "certfn-delays"), "CERTFN_TASKS_QUEUE", nil},
		{"worker without the tasks service account", app.Worker.Name, workerEnv("CERTFN_TASKS_SERVICE_ACCOUNT", ""), "CERTFN_TASKS_SERVICE_ACCOUNT: required", nil},
		{"bad follow-ups", app.Worker.Name, workerEnv("CERTFN_FOLLOW_UPS", "-1"), "CERTFN_FOLLOW_UPS", nil},
		{"namespaced ACME Issuers denied by default", app.Worker.Name, workerEnv(), "", func(s gcpmode.Settings) bool {
			return !s.ACMEServerAllow.Allows("https://acme-v02.api.letsencrypt.org/directory") && s.ACMENetwork.Denied(netip.MustParseAddr("169.254.169.254"))
		}},
		{"ACME allowances", app.Worker.Name, workerEnv("CERTFN_ACME_SERVER_ALLOW", "*", "CERTFN_ACME_ALLOW_PRIVATE_NETWORKS", "10.0.0.0/8"), "", func(s gcpmode.Settings) bool {
			return s.ACMEServerAllow.Allows("https://ca.example/dir") && !s.ACMENetwork.Denied(netip.MustParseAddr("10.9.8.7")) &&
				s.ACMENetwork.Denied(netip.MustParseAddr("169.254.169.254"))
		}},
		{"bad private networks", app.Worker.Name, workerEnv("CERTFN_ACME_ALLOW_PRIVATE_NETWORKS", "10.0.0.0/33"), `CERTFN_ACME_ALLOW_PRIVATE_NETWORKS[0]: "10.0.0.0/33" is not a CIDR prefix`, nil},
		{"notifications off by default", app.Worker.Name, workerEnv(), "", func(s gcpmode.Settings) bool {
			return s.NotifyTopic == "" && s.NotifyExpiryDays == 14
		}},
		{"notifications", app.Worker.Name, workerEnv("CERTFN_NOTIFY_TOPIC", "projects/certfn-prod-1/topics/certfn-notifications", "CERTFN_NOTIFY_EXPIRY_DAYS", "0"), "",
			func(s gcpmode.Settings) bool {
				return s.NotifyTopic == "projects/certfn-prod-1/topics/certfn-notifications" && s.NotifyExpiryDays == 0
			}},
		{"bad notification topic", app.Worker.Name, workerEnv("CERTFN_NOTIFY_TOPIC", "certfn-notifications"), `CERTFN_NOTIFY_TOPIC: "certfn-notifications": want projects/<project>/topics/<topic>`, nil},
		{"bad expiry days", app.Worker.Name, workerEnv("CERTFN_NOTIFY_EXPIRY_DAYS", "400"), "CERTFN_NOTIFY_EXPIRY_DAYS", nil},
		{"bad quota", app.Worker.Name, workerEnv("CERTFN_QUOTA_OBJECTS", "lots"), "CERTFN_QUOTA_OBJECTS", nil},
		{"api admins are e-mails", app.API.Name, env{"CERTFN_PROJECT": "certfn-prod-1", "CERTFN_TOPIC": "projects/certfn-prod-1/topics/certfn-worker", "CERTFN_API_AUDIENCE": "https://api",
			"CERTFN_API_ADMINS": "Ops@Example.com, nobody"}, `CERTFN_API_ADMINS[1]`, nil},
		{"api ok", app.API.Name, env{"CERTFN_PROJECT": "certfn-prod-1", "CERTFN_TOPIC": "projects/certfn-prod-1/topics/certfn-worker", "CERTFN_API_AUDIENCE": "https://api",
			"CERTFN_API_ADMINS": "Ops@Example.com"}, "", func(s gcpmode.Settings) bool { return s.APIAdmins["ops@example.com"] && s.APIMaxBody == 1<<20 }},
		{"api without an audience", app.API.Name, env{"CERTFN_PROJECT": "certfn-prod-1", "CERTFN_TOPIC": "projects/certfn-prod-1/topics/certfn-worker"},
			"CERTFN_API_AUDIENCE: required", nil},
		{"api audiences", app.API.Name, env{"CERTFN_PROJECT": "certfn-prod-1", "CERTFN_TOPIC": "projects/certfn-prod-1/topics/certfn-worker",
			"CERTFN_API_AUDIENCE": "https://certfn-api-123.europe-west1.run.app, https://api.example.com"}, "", func(s gcpmode.Settings) bool {
			return len(s.APIAudiences) == 2 && s.APIAudiences[1] == "https://api.example.com"
		}},
		{"http01 needs no topic", app.HTTP01.Name, env{"CERTFN_PROJECT": "certfn-prod-1"}, "", func(gcpmode.Settings) bool { return true }},
		{"every problem at once", app.Signer.Name, env{"CERTFN_PROJECT": "x"}, "CERTFN_TOPIC: required", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := gcpmode.ParseSettings(tc.role, tc.env.get)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tc.want == "" && !tc.check(s):
				t.Fatalf("settings %+v", s)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := gcpmode.ParseSettings("janitor", env{}.get); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Fatalf("unknown role: %v", err)
	}
}
