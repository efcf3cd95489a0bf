package terraform_test

// The notifications of infra/terraform/gcp (notifications.tf): the topic,
// the worker's publisher grant (TestGCPIAMTable holds the whole table,
// gcpFunctionGrants derives it from the notifier port), the worker's
// environment as gcpmode reads it, the outputs and the variables, by
// offline evaluation (gcphcl_test.go); and TestGCPNotificationsPlan plans
// the module with the real hashicorp/google provider (the repository's
// filesystem mirror, see googleMirror).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/gcpmode"
)

func TestGCPNotifications(t *testing.T) {
	const topicID = "projects/" + gcpProject + "/topics/certfn-notifications"
	for _, tc := range []struct {
		name       string
		vars       map[string]cty.Value
		on         bool
		expiryDays string
		retention  string
	}{
		{"defaults", nil, true, "14", "604800s"},
		{"expiry events off, a day of retention", map[string]cty.Value{"certificate_expiry_alert_days": cty.NumberIntVal(0),
			"notification_retention_seconds": cty.NumberIntVal(86400)}, true, "0", "86400s"},
		{"off", map[string]cty.Value{"notifications": cty.False}, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := gcpEval(t, tc.vars)
			topics := e.instances("resource", "google_pubsub_topic", "notifications")
			grants := e.instances("resource", "google_pubsub_topic_iam_member", "notification_publisher")
			if !tc.on {
				if len(topics)+len(grants) != 0 {
					t.Fatalf("notifications off: %d topics, %d grants, want none", len(topics), len(grants))
				}
			} else {
				if len(topics) != 1 || len(grants) != 1 {
					t.Fatalf("%d topics, %d grants, want one each", len(topics), len(grants))
				}
				tb, gb := topics[0].Body, grants[0].Body
				if tb.str(t, "name") != "certfn-notifications" || tb.str(t, "project") != gcpProject || tb.str(t, "message_retention_duration") != tc.retention {
					t.Errorf("topic %s", tb)
				}
				if labels := ctyStringMap(t, tb.Attrs["labels"]); labels["certfn-deployment"] != "certfn" {
					t.Errorf("topic labels %v, want certfn-deployment", labels)
				}
				if gb.str(t, "topic") != "certfn-notifications" || gb.str(t, "role") != "roles/pubsub.publisher" || gb.str(t, "member") != saMember("worker") {
					t.Errorf("grant %s, want roles/pubsub.publisher for the worker only", gb)
				}
			}

			// The environment: the worker's alone, and as gcpmode parses it.
			svcs := byKey(e.instances("resource", "google_cloud_run_v2_service", "fn"))
			for fn, s := range svcs {
				env := serviceEnv(t, s)
				_, topicSet := env[gcpmode.EnvNotifyTopic]
				_, daysSet := env[gcpmode.EnvNotifyExpiryDays]
				if want := tc.on && fn == app.Worker.Name; topicSet != want || daysSet != want {
					t.Errorf("%s: %s set %v, %s set %v, want %v", fn, gcpmode.EnvNotifyTopic, topicSet, gcpmode.EnvNotifyExpiryDays, daysSet, want)
				}
				if fn != app.Worker.Name {
					continue
				}
				st, err := gcpmode.ParseSettings(fn, func(k string) string { return env[k] })
				if err != nil {
					t.Fatalf("gcpmode refuses the worker's environment: %v", err)
				}
				if tc.on && (st.NotifyTopic != topicID || env[gcpmode.EnvNotifyExpiryDays] != tc.expiryDays) {
					t.Errorf("worker: topic %q, expiry days %q; want %s and %s", st.NotifyTopic, env[gcpmode.EnvNotifyExpiryDays], topicID, tc.expiryDays)
				}
				if !tc.on && st.NotifyTopic != "" {
					t.Errorf("worker: notifications off, but topic %q", st.NotifyTopic)
				}
			}

			// The outputs.
			want := map[string]cty.Value{"notification_topic": cty.NullVal(cty.String), "notification_topic_name": cty.NullVal(cty.String)}
			if tc.on {
				want = map[string]cty.Value{"notification_topic": cty.StringVal(topicID), "notification_topic_name": cty.StringVal("certfn-notifications")}
			}
			for name, w := range want {
				o := e.c.outputs[name]
				if o == nil {
					t.Fatalf("no output %s", name)
				}
				if got := e.expr(o.Body.Attributes["value"].Expr, nil); !got.RawEquals(w) {
					t.Errorf("output %s = %#v, want %#v", name, got, w)
				}
			}
		})
	}
}

// The retention's validation: Pub/Sub's topic retention bounds.
func TestGCPNotificationRetention(t *testing.T) {
	c := parseTF(t, gcpModuleDir(t))
	for _, tc := range []struct {
		v  int64
		ok bool
	}{{600, true}, {2678400, true}, {599, false}, {2678401, false}} {
		e := gcpEval(t, map[string]cty.Value{"notification_retention_seconds": cty.NumberIntVal(tc.v)})
		ok := true
		for _, vb := range c.variables["notification_retention_seconds"].Body.Blocks {
			if vb.Type == "validation" {
				ok = ok && e.expr(vb.Body.Attributes["condition"].Expr, nil).True()
			}
		}
		if ok != tc.ok {
			t.Errorf("notification_retention_seconds = %d: valid %v, want %v", tc.v, ok, tc.ok)
		}
	}
}

// googleMirror returns a filesystem mirror holding
// registry.terraform.io/hashicorp/google: $CERTFN_TF_GOOGLE_MIRROR, else
// shared/terraform-mirror next to the repository (or next to the
// directory of worktrees that holds it). Missing fails the test in CI
// (CI=true) and skips it, saying so, elsewhere.
func googleMirror(t *testing.T) string {
	t.Helper()
	has := func(dir string) bool {
		st, err := os.Stat(filepath.Join(dir, "registry.terraform.io", "hashicorp", "google"))
		return err == nil && st.IsDir()
	}
	if d := os.Getenv("CERTFN_TF_GOOGLE_MIRROR"); d != "" {
		if !has(d) {
			t.Fatalf("CERTFN_TF_GOOGLE_MIRROR=%s has no registry.terraform.io/hashicorp/google", d)
		}
		return d
	}
	root := repoRoot(t)
	candidates := []string{filepath.Join(root, "..", "shared", "terraform-mirror"), filepath.Join(root, "..", "..", "shared", "terraform-mirror")}
	for _, d := range candidates {
		if has(d) {
			return d
		}
	}
	msg := fmt.Sprintf("no filesystem mirror of hashicorp/google in %v; set CERTFN_TF_GOOGLE_MIRROR", candidates)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestGCPNotificationsPlan plans infra/terraform/gcp offline (a fake token,
// no state to refresh) with the real provider, notifications on and off:
// the topic and the worker's grant are planned as the provider reads
// them, the worker's environment names the topic, and the output holds
// its name.
func TestGCPNotificationsPlan(t *testing.T) {
	mirror := googleMirror(t)
	dir := filepath.Join(t.TempDir(), "gcp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(gcpModuleDir(t), "*.tf"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(t.TempDir(), "terraform.rc")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/hashicorp/google"]
  }
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/hashicorp/time"]
  }
  direct {
    exclude = ["registry.terraform.io/hashicorp/google", "registry.terraform.io/hashicorp/time"]
  }
}
`, mirror, gcpTimeMirror(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TF_") && !strings.HasPrefix(kv, "GOOGLE_") && !strings.HasPrefix(kv, "CLOUDSDK_") && !strings.HasPrefix(kv, "CHECKPOINT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "TF_CLI_CONFIG_FILE="+cfg, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1", "GOOGLE_OAUTH_ACCESS_TOKEN=offline-test")
	r := &tf{t: t, bin: terraformBin(t), dir: dir, env: env}
	r.initValidate()
	base := map[string]string{"project": gcpProject, "project_number": gcpProjectNumber, "image": gcpImage}
	for _, on := range []bool{true, false} {
		vars := map[string]string{"notifications": fmt.Sprint(on)}
		for k, v := range base {
			vars[k] = v
		}
		p := r.plan(vars)
		topics := p.ofType("google_pubsub_topic")
		grant, granted := p.ofType("google_pubsub_topic_iam_member")["notification_publisher[0]"]
		topic, created := topics["notifications[0]"]
		if created != on || granted != on {
			t.Fatalf("notifications %v: topic planned %v, grant planned %v", on, created, granted)
		}
		if on && (topic.str("name") != "certfn-notifications" || topic.str("message_retention_duration") != "604800s" ||
			grant.str("topic") != "certfn-notifications" || grant.str("member") != saMember("worker") || grant.str("role") != "roles/pubsub.publisher") {
			t.Errorf("topic %v, grant %v", topic.Values, grant.Values)
		}
		worker := p.ofType("google_cloud_run_v2_service")["fn[worker]"]
		got := ""
		for _, tmpl := range worker.blocks("template") {
			for _, c := range tmpl["containers"].([]any) {
				for _, e := range c.(map[string]any)["env"].([]any) {
					if m := e.(map[string]any); m["name"] == gcpmode.EnvNotifyTopic {
						got = m["value"].(string)
					}
				}
			}
		}
		out := p.PlannedValues.Outputs["notification_topic"].Value
		if on && (got != "projects/"+gcpProject+"/topics/certfn-notifications" || out != got) {
			t.Errorf("worker %s = %q, output notification_topic = %v", gcpmode.EnvNotifyTopic, got, out)
		}
		if !on && (got != "" || out != nil) {
			t.Errorf("notifications off: worker %s = %q, output %v", gcpmode.EnvNotifyTopic, got, out)
		}
	}
}
