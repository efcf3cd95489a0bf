package terraform_test

// The waits of infra/terraform/gcp and its example (time_sleep): what
// waits, after what, for how long. The module's alert policies on
// log-based metrics wait for Cloud Monitoring to know the metrics (the API
// answers 404 "Cannot find metric(s) … it could take up to 10 minutes to
// become available" until then, and the provider does not retry); nothing
// else in the module waits. The example's certfn objects wait for the IAM
// grants of the deployment to take effect (Google documents "typically 2
// minutes, but could potentially take 7 minutes or longer").

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
)

const (
	// gcpLogMetricWait is the least wait of an alert policy on a log-based
	// metric: the bound the Monitoring API names in its 404.
	gcpLogMetricWait = 10 * time.Minute
	// gcpIAMWait is the least wait of the example's first call to the api:
	// the propagation Google documents for IAM grants.
	gcpIAMWait = 7 * time.Minute
)

// inModule returns the planned managed resources of type typ whose address
// starts with prefix ("module.certfn." for the module's) and has no further
// module path, keyed by "name[index]" ("name" when not indexed).
func (p *gcpPlanResult) inModule(prefix, typ string) map[string]planResource {
	out := map[string]planResource{}
	for k, r := range p.ofType(typ) {
		rest, ok := strings.CutPrefix(r.Address, prefix)
		if ok && !strings.HasPrefix(rest, "module.") {
			out[k] = r
		}
	}
	return out
}

// waitOf parses a time_sleep's create_duration.
func waitOf(t *testing.T, what string, v any) time.Duration {
	t.Helper()
	s, _ := v.(string)
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Errorf("%s: create_duration %v: %v", what, v, err)
	}
	return d
}

// checkGCPLogMetricWait checks the module's wait in a plan: mod is the
// module's configuration and prefix its address prefix in the plan.
//   - time_sleep.log_metric comes after every log-based metric, one wait
//     per planned metric (keyed by its name), each at least
//     gcpLogMetricWait;
//   - exactly the alert policies whose condition names a log-based metric
//     (logging.googleapis.com/user/…) depend on it, and nothing else
//     refers to it.
func checkGCPLogMetricWait(t *testing.T, p *gcpPlanResult, mod tfConfigModule, prefix string) {
	t.Helper()
	if len(mod.Resources) == 0 {
		t.Fatalf("%s: no configuration in the plan", prefix)
	}
	const sleep = "time_sleep.log_metric"
	var metrics, waiting []string
	var sleepDeps []string
	found := false
	for _, r := range mod.Resources {
		addr := r.Type + "." + r.Name
		switch {
		case r.Type == "google_logging_metric":
			metrics = append(metrics, addr)
		case addr == sleep:
			found, sleepDeps = true, r.DependsOn
			continue
		}
		if slices.Contains(r.DependsOn, sleep) || strings.Contains(string(r.Expressions), `"`+sleep) {
			waiting = append(waiting, addr)
		}
	}
	if !found {
		t.Fatalf("%s: no %s in the configuration", prefix, sleep)
	}
	if len(metrics) == 0 {
		t.Fatalf("%s: no google_logging_metric in the configuration", prefix)
	}
	for _, m := range metrics {
		if !slices.Contains(sleepDeps, m) {
			t.Errorf("%s%s does not depend on %s (depends_on %v)", prefix, sleep, m, sleepDeps)
		}
	}

	// The policies on log-based metrics, from the planned filters.
	var onLogMetrics, others []string
	for _, pol := range p.inModule(prefix, "google_monitoring_alert_policy") {
		addr := pol.Type + "." + pol.Name
		b, _ := json.Marshal(pol.Values["conditions"])
		if strings.Contains(string(b), "logging.googleapis.com/user/") {
			onLogMetrics = append(onLogMetrics, addr)
		} else {
			others = append(others, addr)
		}
	}
	onLogMetrics, waiting = slices.Compact(sorted(onLogMetrics)), sorted(waiting)
	if len(onLogMetrics) == 0 || len(others) == 0 {
		t.Fatalf("%s: alert policies on log-based metrics %v, on others %v: want both kinds planned", prefix, onLogMetrics, others)
	}
	if !slices.Equal(waiting, onLogMetrics) {
		t.Errorf("%s: resources after %s = %v, want exactly the alert policies on log-based metrics %v", prefix, sleep, waiting, onLogMetrics)
	}

	// One wait per planned metric, long enough.
	var names []string
	for _, m := range p.inModule(prefix, "google_logging_metric") {
		names = append(names, m.str("name"))
	}
	var keys []string
	for _, s := range p.inModule(prefix, "time_sleep") {
		if s.Name != "log_metric" {
			continue
		}
		key, _ := s.Index.(string)
		keys = append(keys, key)
		if d := waitOf(t, s.Address, s.Values["create_duration"]); d < gcpLogMetricWait {
			t.Errorf("%s waits %v, want at least %v (the propagation the Monitoring API names)", s.Address, d, gcpLogMetricWait)
		}
	}
	if names, keys = sorted(names), sorted(keys); len(names) == 0 || !slices.Equal(keys, names) {
		t.Errorf("%s%s instances %v, want one per planned log-based metric %v", prefix, sleep, keys, names)
	}
}

// checkGCPAPIAccessWait checks the example's wait in its plan: certfn's
// provider takes its endpoint through time_sleep.api_access, whose trigger
// is the module's api_endpoint, unknown in this first plan (so the
// provider asks no api to dry-run the objects: the plan, offline, would
// fail otherwise), and the wait is at least gcpIAMWait.
func checkGCPAPIAccessWait(t *testing.T, p *gcpPlanResult) {
	t.Helper()
	pc, ok := p.Configuration.ProviderConfig["certfn"]
	if !ok {
		t.Fatal("example: no certfn provider configuration")
	}
	if refs := pc.Expressions["endpoint"].References; !slices.Contains(refs, "time_sleep.api_access") {
		t.Errorf("certfn provider endpoint refers to %v, want time_sleep.api_access", refs)
	}
	if refs := pc.Expressions["audience"].References; !slices.Contains(refs, "module.certfn.api_url") {
		t.Errorf("certfn provider audience refers to %v, want module.certfn.api_url (the audience the api accepts)", refs)
	}
	var cfg string
	for _, r := range p.Configuration.RootModule.Resources {
		if r.Type == "time_sleep" && r.Name == "api_access" {
			cfg = string(r.Expressions)
		}
	}
	if !strings.Contains(cfg, "module.certfn.api_endpoint") {
		t.Errorf("time_sleep.api_access expressions %s: the trigger is not module.certfn.api_endpoint", cfg)
	}
	after, unknown, ok := p.change("time_sleep.api_access")
	if !ok {
		t.Fatal("example: time_sleep.api_access not planned")
	}
	if d := waitOf(t, "time_sleep.api_access", after["create_duration"]); d < gcpIAMWait {
		t.Errorf("time_sleep.api_access waits %v, want at least %v (IAM propagation)", d, gcpIAMWait)
	}
	if tr, _ := unknown["triggers"].(map[string]any); tr["endpoint"] != true {
		t.Errorf("time_sleep.api_access: the endpoint trigger is known in the first plan (after_unknown %v): certfn's provider would dry-run against an api that does not exist", unknown)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// TestGCPLogMetricWaitInstances: one wait per log-based metric deployed,
// keyed by the metric's name, so that a metric added or renamed later gets
// a wait of its own; none when neither is; each at least gcpLogMetricWait.
func TestGCPLogMetricWaitInstances(t *testing.T) {
	for _, c := range []struct {
		name string
		vars map[string]cty.Value
		want []string
	}{
		{"defaults", nil, []string{"certfn_certificates_expiring", "certfn_error_logs"}},
		{"renamed", map[string]cty.Value{"name_prefix": cty.StringVal("blue")}, []string{"blue_certificates_expiring", "blue_error_logs"}},
		{"no error alert", map[string]cty.Value{"enable_error_log_alert": cty.False}, []string{"certfn_certificates_expiring"}},
		{"no metrics logged", map[string]cty.Value{"enable_metrics": cty.False}, []string{"certfn_error_logs"}},
		{"no expiry alert", map[string]cty.Value{"certificate_expiry_alert_days": cty.Zero}, []string{"certfn_error_logs"}},
		{"neither", map[string]cty.Value{"certificate_expiry_alert_days": cty.Zero, "enable_error_log_alert": cty.False}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := gcpEval(t, c.vars)
			insts := e.instances("resource", "time_sleep", "log_metric")
			var keys []string
			for _, in := range insts {
				keys = append(keys, in.Key)
				if d := waitOf(t, in.Key, in.Body.str(t, "create_duration")); d < gcpLogMetricWait {
					t.Errorf("%s waits %v, want at least %v", in.Key, d, gcpLogMetricWait)
				}
			}
			var metrics []string
			for _, n := range []string{"certificates_expiring", "error_logs"} {
				for _, m := range e.instances("resource", "google_logging_metric", n) {
					metrics = append(metrics, m.Body.str(t, "name"))
				}
			}
			if keys, metrics = sorted(keys), sorted(metrics); !slices.Equal(keys, c.want) || !slices.Equal(metrics, c.want) {
				t.Errorf("waits %v and metrics %v, want %v each", keys, metrics, c.want)
			}
		})
	}
}
