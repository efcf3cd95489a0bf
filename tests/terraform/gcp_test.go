package terraform_test

// Checks of infra/terraform/gcp and its example. gcpplan_test.go runs
// `terraform validate` and an offline `plan` with the real hashicorp/google
// provider; this file checks the module with `terraform fmt -check` and by
// evaluating it offline (gcphcl_test.go), where exact values matter and a
// plan is slower to read — resource types, the service accounts and every
// IAM grant with its condition (an exact table per function), the
// Firestore indexes against the store's queries, the TTL policy, the
// dead-letter and retry policies, the schedule, the services' environment,
// the alert policies, the variables' validations and the README. What only
// the cloud decides (whether IAM accepts a condition, propagation delays)
// is listed in infra/terraform/gcp/README.md, "What the tests check, and
// what they do not".

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/gcp/firestore"

	"github.com/zclconf/go-cty/cty"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/validation"
	"github.com/certfn/certfn/internal/awsmode"
)

// gcpModuleDir is infra/terraform/gcp in the repository.
func gcpModuleDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "infra", "terraform", "gcp")
}

// gcpExampleDir is the module's example.
func gcpExampleDir(t *testing.T) string {
	return filepath.Join(gcpModuleDir(t), "examples", "basic")
}

const (
	gcpProject       = "my-project"
	gcpProjectNumber = "123456789012"
	gcpImage         = "us-central1-docker.pkg.dev/my-project/certfn/certfn:v1.0.0"
)

// gcpEval evaluates the module with the test project and image plus vars.
func gcpEval(t *testing.T, vars map[string]cty.Value) *tfEval {
	t.Helper()
	all := map[string]cty.Value{
		"project":        cty.StringVal(gcpProject),
		"project_number": cty.StringVal(gcpProjectNumber),
		"image":          cty.StringVal(gcpImage),
	}
	for k, v := range vars {
		all[k] = v
	}
	return parseTF(t, gcpModuleDir(t)).evaluate(t, all)
}

func ctyList(s ...string) cty.Value {
	if len(s) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(s))
	for i, x := range s {
		vals[i] = cty.StringVal(x)
	}
	return cty.ListVal(vals)
}

// TestGCPFmt runs `terraform fmt -check -recursive` on infra/terraform/gcp
// (the module and its example). fmt reads no provider.
func TestGCPFmt(t *testing.T) {
	bin := terraformBin(t)
	cmd := exec.Command(bin, "fmt", "-check", "-recursive", "-diff", "-no-color", ".")
	cmd.Dir = gcpModuleDir(t)
	cmd.Env = append(environWithout("TF_", "CHECKPOINT_"), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("terraform fmt -check: %v: files need `terraform fmt -recursive infra/terraform/gcp`:\n%s", err, out)
	}
}

// TestGCPResourceTypes: every resource and data source of the module and
// the example is a google (or google-beta) one, and the only providers
// required are those — but for the time_sleep waits (hashicorp/time:
// gcpwait_test.go says which) and the example's certfn objects, declared
// with certfn's own provider (certfn/certfn).
func TestGCPResourceTypes(t *testing.T) {
	for _, dir := range []string{gcpModuleDir(t), gcpExampleDir(t)} {
		c := parseTF(t, dir)
		if len(c.resources) == 0 && dir == gcpModuleDir(t) {
			t.Fatalf("%s: no resources", dir)
		}
		certfnOK := dir == gcpExampleDir(t)
		for _, r := range c.resources {
			if certfnOK && strings.HasPrefix(r.Labels[0], "certfn_") {
				continue
			}
			if !strings.HasPrefix(r.Labels[0], "google_") && r.Labels[0] != "time_sleep" {
				t.Errorf("%s: %s %s.%s is not a google/google-beta type", r.DefRange(), r.Type, r.Labels[0], r.Labels[1])
			}
			if a := r.Body.Attributes["provider"]; a != nil {
				if p := exprSource(t, a.Expr); p != "google" && p != "google-beta" && !strings.HasPrefix(p, "google.") && !strings.HasPrefix(p, "google-beta.") {
					t.Errorf("%s: provider = %s", r.DefRange(), p)
				}
			}
		}
		for _, b := range c.other {
			switch b.Type {
			case "provider":
				if n := b.Labels[0]; n != "google" && n != "google-beta" && (!certfnOK || n != "certfn") {
					t.Errorf("%s: provider %q", b.DefRange(), n)
				}
			case "terraform":
				for _, rp := range b.Body.Blocks {
					if rp.Type != "required_providers" {
						continue
					}
					for name, a := range rp.Body.Attributes {
						src := exprSource(t, a.Expr)
						if certfnOK && name == "certfn" && strings.Contains(src, `"certfn/certfn"`) {
							continue
						}
						if name == "time" && strings.Contains(src, `"hashicorp/time"`) {
							continue
						}
						if (name != "google" || !strings.Contains(src, `"hashicorp/google"`)) && (name != "google-beta" || !strings.Contains(src, `"hashicorp/google-beta"`)) {
							t.Errorf("%s: required provider %s = %s", a.SrcRange, name, src)
						}
					}
				}
			}
		}
	}
}

// TestGCPVariables: every input has a type and a description, every
// validation has a message, the defaults pass the validations, and the
// validations refuse what they should.
func TestGCPVariables(t *testing.T) {
	c := parseTF(t, gcpModuleDir(t))
	for name, b := range c.variables {
		if b.Body.Attributes["type"] == nil {
			t.Errorf("variable %s: no type", name)
		}
		if d := b.Body.Attributes["description"]; d == nil || len(exprSource(t, d.Expr)) < 20 {
			t.Errorf("variable %s: no description", name)
		}
		for _, v := range b.Body.Blocks {
			if v.Type == "validation" && (v.Body.Attributes["condition"] == nil || v.Body.Attributes["error_message"] == nil) {
				t.Errorf("variable %s: validation without condition or error_message", name)
			}
		}
	}
	for _, name := range []string{"project", "image"} {
		if c.variables[name] == nil || c.variables[name].Body.Attributes["default"] != nil {
			t.Errorf("variable %s: must be required (no default)", name)
		}
	}

	// valid reports whether every validation of variable name accepts v
	// (the other variables at the test values).
	valid := func(name string, v cty.Value) bool {
		t.Helper()
		e := gcpEval(t, map[string]cty.Value{name: v})
		ok := true
		for _, vb := range c.variables[name].Body.Blocks {
			if vb.Type != "validation" {
				continue
			}
			r := e.expr(vb.Body.Attributes["condition"].Expr, nil)
			if !r.IsKnown() || r.IsNull() {
				t.Fatalf("variable %s: validation of %#v is unknown", name, v)
			}
			ok = ok && r.True()
		}
		return ok
	}
	obj := func(kv ...any) cty.Value {
		m := map[string]cty.Value{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = cty.NumberIntVal(int64(kv[i+1].(int)))
		}
		return cty.ObjectVal(m)
	}
	cases := []struct {
		name string
		v    cty.Value
		ok   bool
	}{
		{"project", cty.StringVal("my-project"), true},
		{"project", cty.StringVal("My_Project"), false},
		{"project", cty.StringVal("example.com:my-project"), false},
		{"project_number", cty.StringVal("12a"), false},
		{"name_prefix", cty.StringVal("certfn-prod-eu"), true},
		{"name_prefix", cty.StringVal("a-prefix-of-21-chars-"), false},
		{"name_prefix", cty.StringVal("abcdefghijklmnopqrstu"), false}, // 21: certfn SA IDs would exceed 30
		{"name_prefix", cty.StringVal("Certfn"), false},
		{"secret_prefix", cty.StringVal("certfn-prod"), true},
		{"secret_prefix", cty.StringVal("certfn_prod"), false},
		{"image", cty.StringVal("certfn:latest"), false},
		{"image", cty.StringVal("docker.io/certfn/certfn@sha256:" + strings.Repeat("ab", 32)), true},
		{"timeout_seconds", obj("worker", 600), true},
		{"timeout_seconds", obj("worker", 601), false},
		{"timeout_seconds", obj("api", 3600), true},
		{"timeout_seconds", obj("http01", 5), false},
		{"max_delivery_attempts", cty.NumberIntVal(4), false},
		{"max_delivery_attempts", cty.NumberIntVal(100), true},
		{"retry_backoff_seconds", obj("minimum", 700), false},
		{"dns_zones", ctyList("example-com", "example-org"), true},
		{"dns_zones", ctyList("example.com."), false},
		{"dns_zones", ctyList("example-com", "example-com"), false},
		{"api_invoker_members", ctyList("user:alice@example.com", "group:ops@example.com"), true},
		{"api_invoker_members", ctyList("allUsers"), false},
		{"api_admins", ctyList("alice@example.com"), true},
		{"api_admins", ctyList("user:alice@example.com"), false},
		{"schedule", cty.StringVal("*/5 * * * *"), true},
		{"schedule", cty.StringVal("every minute"), false},
		{"secret_kms_key_name", cty.StringVal("projects/p/locations/global/keyRings/r/cryptoKeys/k"), true},
		{"secret_kms_key_name", cty.StringVal("projects/p/locations/europe-west1/keyRings/r/cryptoKeys/k"), false},
		{"firestore_database", cty.StringVal("(default)"), false},
		{"firestore_database", cty.StringVal("certfn-state"), true},
		{"firestore_collection", cty.StringVal("__certfn__"), false},
		{"notification_channels", ctyList("projects/p/notificationChannels/123"), true},
		{"notification_channels", ctyList("123"), false},
		{"log_level", cty.StringVal("trace"), false},
		{"certificate_manager_location", cty.StringVal("europe-west1"), true},
	}
	for _, tc := range cases {
		if got := valid(tc.name, tc.v); got != tc.ok {
			t.Errorf("variable %s = %#v: valid = %v, want %v", tc.name, tc.v, got, tc.ok)
		}
	}
	// Every default passes (gcpEval applied them; check each validation).
	e := gcpEval(t, nil)
	for name, b := range c.variables {
		for _, vb := range b.Body.Blocks {
			if vb.Type == "validation" {
				if r := e.expr(vb.Body.Attributes["condition"].Expr, nil); !r.True() {
					t.Errorf("variable %s: the default (or test value) fails its own validation", name)
				}
			}
		}
	}
}

// gcpFunctions are the functions (core/app's), gcpIdentities every
// service account: the functions' and the token identities'.
var (
	gcpFunctions  = functionNames
	gcpIdentities = append(slices.Clone(functionNames), "push", "cron", "tasks")
)

// saMember is the IAM member of identity id with the default prefix.
func saMember(id string) string {
	return "serviceAccount:" + saEmail(id)
}

func saEmail(id string) string { return "certfn-" + id + "@" + gcpProject + ".iam.gserviceaccount.com" }

// TestGCPServiceAccounts: one service account per function plus the three
// token identities; the e-mails the grants use are the accounts'.
func TestGCPServiceAccounts(t *testing.T) {
	for _, http01 := range []bool{true, false} {
		e := gcpEval(t, map[string]cty.Value{"enable_http01": cty.BoolVal(http01)})
		sas := byKey(e.instances("resource", "google_service_account", "this"))
		want := slices.Clone(gcpIdentities)
		if !http01 {
			want = slices.DeleteFunc(want, func(s string) bool { return s == "http01" })
		}
		got := make([]string, 0, len(sas))
		for k := range sas {
			got = append(got, k)
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("enable_http01=%v: service accounts %v, want %v", http01, got, want)
		}
		emails := ctyStringMap(t, e.local("sa_email"))
		for id, sa := range sas {
			if acct := sa.str(t, "account_id"); acct != "certfn-"+id || len(acct) > 30 || len(acct) < 6 {
				t.Errorf("%s: account_id %q", id, acct)
			}
			if sa.str(t, "project") != gcpProject {
				t.Errorf("%s: project %q", id, sa.str(t, "project"))
			}
			if emails[id] != saEmail(id) {
				t.Errorf("local.sa_email[%s] = %q, want %q", id, emails[id], saEmail(id))
			}
		}
	}
	// The longest prefix still makes valid account IDs.
	e := gcpEval(t, map[string]cty.Value{"name_prefix": cty.StringVal("abcdefghijklmnopqrst")})
	for _, sa := range e.instances("resource", "google_service_account", "this") {
		if id := sa.Body.str(t, "account_id"); !regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`).MatchString(id) {
			t.Errorf("account_id %q is not a valid service account ID", id)
		}
	}
}

// grant is one IAM binding: where, which role, to whom, under which
// condition ("" for none).
type grant struct {
	Scope, Role, Member, Condition string
}

func (g grant) String() string {
	s := g.Member + " " + g.Role + " on " + g.Scope
	if g.Condition != "" {
		s += " if " + g.Condition
	}
	return s
}

// iamScopes maps each IAM member resource type to how its scope is named.
var iamScopes = map[string]func(t *testing.T, b *tfBody) string{
	"google_project_iam_member": func(t *testing.T, b *tfBody) string { return "project:" + b.str(t, "project") },
	"google_pubsub_topic_iam_member": func(t *testing.T, b *tfBody) string {
		return "topic:" + b.str(t, "project") + "/" + b.str(t, "topic")
	},
	"google_pubsub_subscription_iam_member": func(t *testing.T, b *tfBody) string {
		return "subscription:" + b.str(t, "project") + "/" + b.str(t, "subscription")
	},
	"google_cloud_tasks_queue_iam_member": func(t *testing.T, b *tfBody) string {
		return "queue:" + b.str(t, "project") + "/" + b.str(t, "location") + "/" + b.str(t, "name")
	},
	"google_service_account_iam_member": func(t *testing.T, b *tfBody) string {
		return "serviceAccount:" + b.str(t, "service_account_id")
	},
	"google_cloud_run_v2_service_iam_member": func(t *testing.T, b *tfBody) string {
		return "run:" + b.str(t, "project") + "/" + b.str(t, "location") + "/" + b.str(t, "name")
	},
	"google_dns_managed_zone_iam_member": func(t *testing.T, b *tfBody) string {
		return "dnsZone:" + b.str(t, "project") + "/" + b.str(t, "managed_zone")
	},
	"google_kms_crypto_key_iam_member": func(t *testing.T, b *tfBody) string { return "kmsKey:" + b.str(t, "crypto_key_id") },
}

// gcpGrants returns every IAM grant the evaluated module makes. An IAM
// resource type the test does not know (or an authoritative *_iam_binding
// or *_iam_policy) fails it, so that no grant goes unchecked.
func gcpGrants(t *testing.T, e *tfEval) []grant {
	t.Helper()
	var out []grant
	for _, r := range e.c.resources {
		typ := r.Labels[0]
		if r.Type != "resource" || !strings.Contains(typ, "_iam_") || strings.HasSuffix(typ, "_iam_custom_role") {
			continue
		}
		scope := iamScopes[typ]
		if scope == nil {
			t.Errorf("%s: IAM resource type %s is not one the test knows (use *_iam_member)", r.DefRange(), typ)
			continue
		}
		for _, inst := range e.instancesOf(r) {
			g := grant{Scope: scope(t, inst.Body), Role: inst.Body.str(t, "role"), Member: inst.Body.str(t, "member")}
			if c := inst.Body.block(t, "condition"); c != nil {
				g.Condition = c.str(t, "expression")
				if c.str(t, "title") == "" {
					t.Errorf("%s[%s]: condition without title", typ, inst.Key)
				}
			}
			if g.Scope == "" || g.Role == "" || g.Member == "" {
				t.Errorf("%s.%s[%s]: incomplete grant %v", typ, r.Labels[1], inst.Key, g)
			}
			out = append(out, g)
		}
	}
	return out
}

// gcpOpts are the module inputs that change the IAM table.
type gcpOpts struct {
	manageCA   bool
	http01     bool
	zones      []string
	dnsProject string
	certImport bool
	invokers   []string
	kmsKey     string
	// noNotifications: notifications = false (the default is true).
	noNotifications bool
}

func (o gcpOpts) vars() map[string]cty.Value {
	v := map[string]cty.Value{
		"worker_manages_ca_certificates":    cty.BoolVal(o.manageCA),
		"enable_http01":                     cty.BoolVal(o.http01),
		"dns_zones":                         ctyList(o.zones...),
		"enable_certificate_manager_import": cty.BoolVal(o.certImport),
		"api_invoker_members":               ctyList(o.invokers...),
	}
	if o.dnsProject != "" {
		v["dns_project"] = cty.StringVal(o.dnsProject)
	}
	if o.kmsKey != "" {
		v["secret_kms_key_name"] = cty.StringVal(o.kmsKey)
	}
	if o.noNotifications {
		v["notifications"] = cty.False
	}
	return v
}

// secretCond is the Secret Manager condition of classes (default prefix):
// docs/deploy/gcp.md, "IAM rules".
func secretCond(classes ...string) string {
	var parts []string
	for _, c := range classes {
		parts = append(parts, fmt.Sprintf(`resource.name.startsWith("projects/%s/secrets/certfn_%s_")`, gcpProjectNumber, c))
	}
	return strings.Join(parts, " || ")
}

// expectedGCPGrants is the IAM table of docs/design/roles.md on Google
// Cloud: every grant of every identity, with its condition. The functions'
// grants follow from core/app's role data (gcpFunctionGrants); the token
// identities' and the service agents' are listed here.
func expectedGCPGrants(o gcpOpts) []grant {
	run := func(fn string) string { return "run:" + gcpProject + "/us-central1/certfn-" + fn }
	topic := func(q string) string { return "topic:" + gcpProject + "/certfn-" + q }
	saRes := func(id string) string {
		return "serviceAccount:projects/" + gcpProject + "/serviceAccounts/" + saEmail(id)
	}
	pubsubAgent := "serviceAccount:service-" + gcpProjectNumber + "@gcp-sa-pubsub.iam.gserviceaccount.com"

	var g []grant
	for _, r := range gcpDeployedFunctions(o) {
		g = append(g, gcpFunctionGrants(r, o)...)
	}
	g = append(g,
		// token identities
		grant{run("worker"), "roles/run.invoker", saMember("push"), ""},
		grant{run("signer"), "roles/run.invoker", saMember("push"), ""},
		grant{run("scheduler"), "roles/run.invoker", saMember("cron"), ""},
		grant{topic("worker"), "roles/pubsub.publisher", saMember("tasks"), ""},
		grant{topic("signer"), "roles/pubsub.publisher", saMember("tasks"), ""},
		// Pub/Sub's service agent: dead-lettering and push tokens.
		grant{topic("worker-dlq"), "roles/pubsub.publisher", pubsubAgent, ""},
		grant{topic("signer-dlq"), "roles/pubsub.publisher", pubsubAgent, ""},
		grant{"subscription:" + gcpProject + "/certfn-worker-push", "roles/pubsub.subscriber", pubsubAgent, ""},
		grant{"subscription:" + gcpProject + "/certfn-signer-push", "roles/pubsub.subscriber", pubsubAgent, ""},
		grant{saRes("push"), "roles/iam.serviceAccountTokenCreator", pubsubAgent, ""},
	)
	if o.http01 {
		g = append(g, grant{run("http01"), "roles/run.invoker", "allUsers", ""})
	}
	for _, m := range o.invokers {
		g = append(g, grant{run("api"), "roles/run.invoker", m, ""})
	}
	if o.kmsKey != "" {
		g = append(g, grant{"kmsKey:" + o.kmsKey, "roles/cloudkms.cryptoKeyEncrypterDecrypter", "serviceAccount:service-" + gcpProjectNumber + "@gcp-sa-secretmanager.iam.gserviceaccount.com", ""})
	}
	return g
}

var gcpIAMVariants = []struct {
	name string
	o    gcpOpts
}{
	{"defaults", gcpOpts{http01: true}},
	{"worker manages CA certificates", gcpOpts{http01: true, manageCA: true}},
	{"no http01", gcpOpts{}},
	{"DNS zones", gcpOpts{http01: true, zones: []string{"example-com", "example-org"}}},
	{"DNS zones in another project", gcpOpts{http01: true, zones: []string{"example-com"}, dnsProject: "dns-host-project"}},
	{"Certificate Manager import", gcpOpts{http01: true, certImport: true}},
	{"no notifications", gcpOpts{http01: true, noNotifications: true}},
	{"api invokers", gcpOpts{http01: true, invokers: []string{"user:alice@example.com", "group:platform@example.com"}}},
	{"everything", gcpOpts{http01: true, manageCA: true, zones: []string{"example-com"}, certImport: true,
		invokers: []string{"serviceAccount:ci@my-project.iam.gserviceaccount.com"}, kmsKey: "projects/kms-project/locations/global/keyRings/certfn/cryptoKeys/secrets"}},
}

// TestGCPIAMTable compares every grant of the module with the table of
// expectedGCPGrants, for each combination of the inputs that change it.
func TestGCPIAMTable(t *testing.T) {
	for _, v := range gcpIAMVariants {
		t.Run(v.name, func(t *testing.T) {
			got := map[string]int{}
			for _, g := range gcpGrants(t, gcpEval(t, v.o.vars())) {
				got[g.String()]++
			}
			want := map[string]int{}
			for _, g := range expectedGCPGrants(v.o) {
				want[g.String()]++
			}
			for g, n := range got {
				if n > 1 {
					t.Errorf("granted %d times: %s", n, g)
				}
				if want[g] == 0 {
					t.Errorf("unexpected grant: %s", g)
				}
			}
			for g := range want {
				if got[g] == 0 {
					t.Errorf("missing grant: %s", g)
				}
			}
		})
	}
}

// TestGCPIAMInvariants states docs/design/roles.md directly, over every variant:
// only the signer reads CA keys; the api, scheduler and http01 have no
// Secret Manager permission; the worker's DNS role is bound to the listed
// zones and nowhere else; nothing gets a basic role; project-wide grants
// without a condition are the few README.md explains.
func TestGCPIAMInvariants(t *testing.T) {
	unconditionedOK := regexp.MustCompile(`/roles/certfn_(secret_creator|certificate_import|dns01_zone_list)$`)
	for _, v := range gcpIAMVariants {
		t.Run(v.name, func(t *testing.T) {
			e := gcpEval(t, v.o.vars())
			for _, g := range gcpGrants(t, e) {
				fn := ""
				for _, id := range gcpIdentities {
					if g.Member == saMember(id) {
						fn = id
					}
				}
				// What the function's role does (core/app): the zero Role
				// for the token identities.
				role, _ := roleNamed(fn)
				access := role.SecretAccess()
				if strings.Contains(g.Condition, `_ca_")`) && !access.CAKeys {
					t.Errorf("only the signer may read CA keys (class ca): %s", g)
				}
				if strings.Contains(g.Condition, `_ica_")`) && !access.CAKeys && !(access.Issued && v.o.manageCA) {
					t.Errorf("class ica is the signer's (and the worker's with worker_manages_ca_certificates): %s", g)
				}
				secretRole := strings.Contains(g.Role, "secretmanager") || strings.Contains(g.Role, "_secret")
				if secretRole && !role.Needs(app.PortSecrets) {
					t.Errorf("%s has a Secret Manager role: %s", fn, g)
				}
				if secretRole && strings.HasPrefix(g.Role, "roles/") && g.Role != "roles/secretmanager.secretAccessor" {
					t.Errorf("predefined Secret Manager role other than secretAccessor: %s", g)
				}
				if secretRole && g.Condition == "" && !strings.HasSuffix(g.Role, "_secret_creator") {
					t.Errorf("unconditioned Secret Manager grant: %s", g)
				}
				if slices.Contains([]string{"roles/owner", "roles/editor", "roles/viewer"}, g.Role) {
					t.Errorf("basic role: %s", g)
				}
				if strings.HasPrefix(g.Scope, "project:") && g.Condition == "" && !unconditionedOK.MatchString(g.Role) {
					t.Errorf("project-wide grant without condition: %s", g)
				}
				if strings.HasSuffix(g.Role, "_dns01_records") && (!role.Needs(app.PortDNS01) || !strings.HasPrefix(g.Scope, "dnsZone:")) {
					t.Errorf("the DNS records role is the worker's, on zones only: %s", g)
				}
				if strings.HasPrefix(g.Scope, "dnsZone:") && !slices.Contains(v.o.zones, g.Scope[strings.LastIndex(g.Scope, "/")+1:]) {
					t.Errorf("grant on a zone not in dns_zones: %s", g)
				}
				if strings.Contains(g.Role, "dns") && !role.Needs(app.PortDNS01) {
					t.Errorf("%s has a DNS role: %s", fn, g)
				}
				if strings.Contains(g.Role, "certificate") && (!role.Needs(app.PortCertificateImporter) || !v.o.certImport) {
					t.Errorf("Certificate Manager is the worker's, with enable_certificate_manager_import: %s", g)
				}
				if g.Member == "allUsers" && g.Scope != "run:"+gcpProject+"/us-central1/certfn-http01" {
					t.Errorf("public grant: %s", g)
				}
			}
		})
	}

	// The zone grants iterate over var.dns_zones itself.
	c := parseTF(t, gcpModuleDir(t))
	var zoneGrants []string
	for _, r := range c.resources {
		if r.Labels[0] == "google_dns_managed_zone_iam_member" {
			zoneGrants = append(zoneGrants, r.Labels[1])
			fe := r.Body.Attributes["for_each"]
			if fe == nil || exprSource(t, fe.Expr) != "toset(var.dns_zones)" {
				t.Errorf("%s: for_each must be toset(var.dns_zones)", r.DefRange())
			}
		}
	}
	if len(zoneGrants) != 1 {
		t.Errorf("google_dns_managed_zone_iam_member resources: %v, want one", zoneGrants)
	}
}

// TestGCPCustomRoles: the custom roles hold exactly the permissions the
// adapters need (docs/deploy/gcp.md, docs/reference/dns01.md).
func TestGCPCustomRoles(t *testing.T) {
	e := gcpEval(t, gcpOpts{http01: true, zones: []string{"example-com"}, certImport: true}.vars())
	want := map[string][]string{
		"worker_secrets": {"secretmanager.secrets.delete", "secretmanager.secrets.get", "secretmanager.secrets.update",
			"secretmanager.versions.access", "secretmanager.versions.add", "secretmanager.versions.destroy", "secretmanager.versions.list"},
		"secret_creator": {"secretmanager.secrets.create"},
		"dns_records": {"dns.changes.create", "dns.changes.get", "dns.managedZones.get", "dns.resourceRecordSets.create",
			"dns.resourceRecordSets.delete", "dns.resourceRecordSets.list", "dns.resourceRecordSets.update"},
		"dns_zone_list":      {"dns.managedZones.list"},
		"certificate_import": {"certificatemanager.certs.create", "certificatemanager.certs.get", "certificatemanager.certs.list", "certificatemanager.certs.update", "certificatemanager.operations.get"},
	}
	names := ctyStringMap(t, e.local("custom_role"))
	for name, perms := range want {
		insts := e.instances("resource", "google_project_iam_custom_role", name)
		if len(insts) != 1 {
			t.Fatalf("%s: %d instances", name, len(insts))
		}
		b := insts[0].Body
		if got := ctyStrings(t, b.Attrs["permissions"]); !slices.Equal(got, perms) {
			t.Errorf("%s: permissions %v, want %v", name, got, perms)
		}
		// The grants name the role by projects/<p>/roles/<role_id>.
		if id := "projects/" + b.str(t, "project") + "/roles/" + b.str(t, "role_id"); names[name] != id {
			t.Errorf("local.custom_role[%s] = %q, the role is %q", name, names[name], id)
		}
	}
	// Off by default: no DNS or Certificate Manager role.
	e = gcpEval(t, nil)
	for _, name := range []string{"dns_records", "dns_zone_list", "certificate_import"} {
		if n := len(e.instances("resource", "google_project_iam_custom_role", name)); n != 0 {
			t.Errorf("%s: %d instances with the defaults, want 0", name, n)
		}
	}
}

// The store's index configuration, as adapters/gcp/firestore declares it:
// the module must declare exactly these.
var (
	storeAscendingOnly = firestore.AscendingOnlyFields
	storeIndexExempt   = firestore.IndexExemptFields
	storeTTLField      = firestore.TTLField
)

// storeQuery is one query of the store: equality filters, and a range and
// order on one field (Due).
type storeQuery struct {
	name     string
	eq       []string
	rangeKey string
}

var storeQueries = []storeQuery{
	{name: "List(kind)", eq: []string{"kind"}},
	{name: "List(kind, namespace)", eq: []string{"kind", "namespace"}},
	{name: "List(kind, owner)", eq: []string{"kind", "owner"}},
	{name: "List(kind, namespace, owner)", eq: []string{"kind", "namespace", "owner"}},
	{name: "Due", rangeKey: "nextRunAt"},
}

// TestGCPFirestore: a native-mode database; composite indexes for the
// listings; every queried field keeps its ascending single-field index
// and every other is exempt; the TTL policy on expireAt.
func TestGCPFirestore(t *testing.T) {
	e := gcpEval(t, nil)
	dbs := e.instances("resource", "google_firestore_database", "state")
	if len(dbs) != 1 {
		t.Fatalf("%d databases", len(dbs))
	}
	db := dbs[0].Body
	if db.str(t, "type") != "FIRESTORE_NATIVE" || db.str(t, "name") != "certfn-state" || db.str(t, "location_id") != "us-central1" {
		t.Errorf("database: type %q name %q location %q", db.str(t, "type"), db.str(t, "name"), db.str(t, "location_id"))
	}
	if db.str(t, "delete_protection_state") != "DELETE_PROTECTION_ENABLED" || db.str(t, "deletion_policy") != "ABANDON" {
		t.Errorf("database: protected by default, got %q / %q", db.str(t, "delete_protection_state"), db.str(t, "deletion_policy"))
	}

	// Composite indexes, by field list.
	composites := map[string][]string{}
	for _, inst := range e.instances("resource", "google_firestore_index", "composite") {
		b := inst.Body
		if b.str(t, "collection") != "certfn" || b.str(t, "query_scope") != "COLLECTION" {
			t.Errorf("index %s: collection %q scope %q", inst.Key, b.str(t, "collection"), b.str(t, "query_scope"))
		}
		var fields []string
		for _, f := range b.blocks("fields") {
			if f.Body.str(t, "order") != "ASCENDING" {
				t.Errorf("index %s: field %s order %q", inst.Key, f.Body.str(t, "field_path"), f.Body.str(t, "order"))
			}
			fields = append(fields, f.Body.str(t, "field_path"))
		}
		if len(fields) < 2 {
			t.Errorf("index %s: %v (a composite index has at least two fields)", inst.Key, fields)
		}
		composites[inst.Key] = fields
	}

	// Single-field configuration.
	ascending := map[string]bool{}
	exempt := map[string]bool{}
	ttl := ""
	for _, name := range []string{"ascending_only", "index_exempt", "ttl"} {
		for _, inst := range e.instances("resource", "google_firestore_field", name) {
			b := inst.Body
			field := b.str(t, "field")
			if b.str(t, "collection") != "certfn" {
				t.Errorf("field %s: collection %q", field, b.str(t, "collection"))
			}
			if exprSource(t, b.Exprs["database"]) != "google_firestore_database.state.name" {
				t.Errorf("field %s: database = %s", field, exprSource(t, b.Exprs["database"]))
			}
			ic := b.block(t, "index_config")
			if ic == nil {
				t.Errorf("field %s: no index_config (the default indexes both ways)", field)
				continue
			}
			idx := ic.blocks("indexes")
			switch {
			case len(idx) == 0:
				exempt[field] = true
			case len(idx) == 1 && idx[0].Body.str(t, "order") == "ASCENDING" && idx[0].Body.str(t, "array_config") == "":
				ascending[field] = true
			default:
				t.Errorf("field %s: indexes %d, want none or one ascending", field, len(idx))
			}
			if b.block(t, "ttl_config") != nil {
				if ttl != "" {
					t.Errorf("two TTL fields: %s and %s", ttl, field)
				}
				ttl = field
			}
		}
	}
	sortedKeys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if got, want := sortedKeys(ascending), slices.Sorted(slices.Values(storeAscendingOnly)); !slices.Equal(got, want) {
		t.Errorf("ascending-only fields %v, want the store's %v", got, want)
	}
	if got, want := sortedKeys(exempt), slices.Sorted(slices.Values(storeIndexExempt)); !slices.Equal(got, want) {
		t.Errorf("index-exempt fields %v, want the store's %v", got, want)
	}
	if ttl != storeTTLField {
		t.Errorf("TTL field %q, want %q", ttl, storeTTLField)
	}

	// Every query is served: an equality set by a composite index of
	// exactly those fields, by a single field's index, or by merging
	// composites that share its fields; a range and order by the field's
	// ascending index.
	exactly := func(eq []string) string {
		for name, f := range composites {
			if len(f) == len(eq) && slices.Equal(slices.Sorted(slices.Values(f)), slices.Sorted(slices.Values(eq))) {
				return name
			}
		}
		return ""
	}
	for _, q := range storeQueries {
		switch {
		case q.rangeKey != "":
			if !ascending[q.rangeKey] || exempt[q.rangeKey] {
				t.Errorf("%s: no ascending index on %s", q.name, q.rangeKey)
			}
		case len(q.eq) == 1:
			if !ascending[q.eq[0]] {
				t.Errorf("%s: no index on %s", q.name, q.eq[0])
			}
		case exactly(q.eq) != "":
		default:
			covered := map[string]bool{}
			for _, f := range composites {
				if !slices.ContainsFunc(f, func(x string) bool { return !slices.Contains(q.eq, x) }) {
					for _, x := range f {
						covered[x] = true
					}
				}
			}
			for _, x := range q.eq {
				if !covered[x] {
					t.Errorf("%s: %s is in no composite index the query can merge", q.name, x)
				}
			}
		}
	}
	// The listings the store runs most have their own composite index.
	for _, eq := range [][]string{{"kind", "namespace"}, {"kind", "owner"}} {
		if exactly(eq) == "" {
			t.Errorf("no composite index on %v", eq)
		}
	}

	// Unprotected on request.
	e = gcpEval(t, map[string]cty.Value{"firestore_deletion_protection": cty.False, "firestore_database": cty.StringVal("certs")})
	db = e.instances("resource", "google_firestore_database", "state")[0].Body
	if db.str(t, "delete_protection_state") != "DELETE_PROTECTION_DISABLED" || db.str(t, "deletion_policy") != "DELETE" || db.str(t, "name") != "certs" {
		t.Errorf("unprotected database: %q / %q / %q", db.str(t, "delete_protection_state"), db.str(t, "deletion_policy"), db.str(t, "name"))
	}
}

// TestGCPQueues: push subscriptions to the worker and signer services with
// the push account's OIDC token, a retry policy, a dead-letter policy to a
// topic that has a subscription; the delays queue can only reach Pub/Sub.
func TestGCPQueues(t *testing.T) {
	e := gcpEval(t, map[string]cty.Value{"max_delivery_attempts": cty.NumberIntVal(7)})
	subs := byKey(e.instances("resource", "google_pubsub_subscription", "push"))
	dlqSubs := byKey(e.instances("resource", "google_pubsub_subscription", "dead_letter"))
	topics := byKey(e.instances("resource", "google_pubsub_topic", "work"))
	dlqTopics := byKey(e.instances("resource", "google_pubsub_topic", "dead_letter"))
	timeouts := map[string]string{"worker": "120", "signer": "60"}
	for _, q := range []string{"worker", "signer"} {
		s := subs[q]
		if s == nil || topics[q] == nil || dlqTopics[q] == nil || dlqSubs[q] == nil {
			t.Fatalf("%s: missing topic, dead-letter topic or subscriptions", q)
		}
		if topics[q].str(t, "name") != "certfn-"+q || dlqTopics[q].str(t, "name") != "certfn-"+q+"-dlq" || s.str(t, "name") != "certfn-"+q+"-push" {
			t.Errorf("%s: names %q %q %q", q, topics[q].str(t, "name"), dlqTopics[q].str(t, "name"), s.str(t, "name"))
		}
		if src := exprSource(t, s.Exprs["topic"]); src != "google_pubsub_topic.work[each.key].id" {
			t.Errorf("%s: topic = %s", q, src)
		}
		if s.str(t, "ack_deadline_seconds") != timeouts[q] {
			t.Errorf("%s: ack_deadline_seconds %s, want the service timeout %s", q, s.str(t, "ack_deadline_seconds"), timeouts[q])
		}
		pc := s.block(t, "push_config")
		if pc == nil {
			t.Fatalf("%s: no push_config", q)
		}
		if refs := traversalNames(pc.Exprs["push_endpoint"]); !slices.Equal(refs, []string{"each.key", "google_cloud_run_v2_service.fn", "local.push_path"}) {
			t.Errorf("%s: push_endpoint refers to %v, want the service's uri + local.push_path", q, refs)
		}
		oidc := pc.block(t, "oidc_token")
		if oidc == nil || oidc.str(t, "service_account_email") != saEmail("push") {
			t.Errorf("%s: push OIDC token must be the push account's", q)
		} else if refs := traversalNames(oidc.Exprs["audience"]); !slices.Equal(refs, []string{"each.key", "google_cloud_run_v2_service.fn"}) {
			t.Errorf("%s: OIDC audience refers to %v, want the service's uri", q, refs)
		}
		rp := s.block(t, "retry_policy")
		if rp == nil || rp.str(t, "minimum_backoff") != "10s" || rp.str(t, "maximum_backoff") != "600s" {
			t.Errorf("%s: retry_policy %v", q, rp)
		}
		dl := s.block(t, "dead_letter_policy")
		if dl == nil || dl.str(t, "dead_letter_topic") != "projects/"+gcpProject+"/topics/certfn-"+q+"-dlq" || dl.str(t, "max_delivery_attempts") != "7" {
			t.Errorf("%s: dead_letter_policy %v", q, dl)
		}
		for name, b := range map[string]*tfBody{"push": s, "dead-letter": dlqSubs[q]} {
			if ep := b.block(t, "expiration_policy"); ep == nil || ep.str(t, "ttl") != "" {
				t.Errorf("%s %s subscription: must never expire (expiration_policy ttl \"\")", q, name)
			}
		}
		if src := exprSource(t, dlqSubs[q].Exprs["topic"]); src != "google_pubsub_topic.dead_letter[each.key].id" {
			t.Errorf("%s dead-letter subscription: topic = %s", q, src)
		}
		if dlqSubs[q].str(t, "message_retention_duration") != "604800s" || dlqSubs[q].block(t, "push_config") != nil {
			t.Errorf("%s dead-letter subscription: a pull subscription keeping 7 days, got %q", q, dlqSubs[q].str(t, "message_retention_duration"))
		}
	}

	queues := e.instances("resource", "google_cloud_tasks_queue", "delays")
	if len(queues) != 1 {
		t.Fatalf("%d task queues", len(queues))
	}
	ht := queues[0].Body.block(t, "http_target")
	if ht == nil {
		t.Fatal("delays queue: no http_target")
	}
	uo := ht.block(t, "uri_override")
	if uo == nil || uo.str(t, "host") != "pubsub.googleapis.com" || uo.str(t, "scheme") != "HTTPS" || uo.str(t, "uri_override_enforce_mode") != "ALWAYS" {
		t.Errorf("delays queue: tasks must be forced to https://pubsub.googleapis.com, got %v", uo)
	}
	if tok := ht.block(t, "oauth_token"); tok == nil || tok.str(t, "service_account_email") != saEmail("tasks") {
		t.Errorf("delays queue: OAuth token must be the tasks account's")
	}
	if ht.block(t, "oidc_token") != nil {
		t.Errorf("delays queue: no OIDC token (tasks call Pub/Sub, not the services)")
	}
	if got := queues[0].Body.str(t, "name"); got != "certfn-delays" {
		t.Errorf("delays queue name %q", got)
	}
}

// TestGCPScheduler: the sweep runs every minute, as the cron account, on
// the scheduler service's sweep path.
func TestGCPScheduler(t *testing.T) {
	c := parseTF(t, gcpModuleDir(t))
	if d := c.variables["schedule"].Body.Attributes["default"]; d == nil || exprSource(t, d.Expr) != `"* * * * *"` {
		t.Errorf("schedule: the default must be every minute (\"* * * * *\")")
	}
	e := gcpEval(t, nil)
	jobs := e.instances("resource", "google_cloud_scheduler_job", "sweep")
	if len(jobs) != 1 {
		t.Fatalf("%d scheduler jobs", len(jobs))
	}
	j := jobs[0].Body
	if j.str(t, "schedule") != "* * * * *" || j.str(t, "region") != "us-central1" {
		t.Errorf("job: schedule %q region %q", j.str(t, "schedule"), j.str(t, "region"))
	}
	rc := j.block(t, "retry_config")
	if rc == nil || rc.str(t, "retry_count") != "0" {
		t.Errorf("job: a failed sweep is not retried (the next one covers it)")
	}
	ht := j.block(t, "http_target")
	if ht == nil || ht.str(t, "http_method") != "POST" {
		t.Fatalf("job: http_target POST")
	}
	if refs := traversalNames(ht.Exprs["uri"]); !slices.Equal(refs, []string{"google_cloud_run_v2_service.fn", "local.sweep_path"}) {
		t.Errorf("job: uri refers to %v", refs)
	}
	if !strings.Contains(exprSource(t, ht.Exprs["uri"]), `fn["scheduler"]`) {
		t.Errorf("job: uri must be the scheduler service's: %s", exprSource(t, ht.Exprs["uri"]))
	}
	oidc := ht.block(t, "oidc_token")
	if oidc == nil || oidc.str(t, "service_account_email") != saEmail("cron") || !strings.Contains(exprSource(t, oidc.Exprs["audience"]), `fn["scheduler"].uri`) {
		t.Errorf("job: OIDC token of the cron account with the scheduler's URL as audience")
	}
	e = gcpEval(t, map[string]cty.Value{"schedule": cty.StringVal("*/2 * * * *")})
	if got := e.instances("resource", "google_cloud_scheduler_job", "sweep")[0].Body.str(t, "schedule"); got != "*/2 * * * *" {
		t.Errorf("schedule variable: job schedule %q", got)
	}
}

// serviceEnv returns the environment of a Cloud Run service instance.
func serviceEnv(t *testing.T, b *tfBody) map[string]string {
	t.Helper()
	tpl := b.block(t, "template")
	if tpl == nil {
		t.Fatal("service without template")
	}
	ctr := tpl.block(t, "containers")
	if ctr == nil {
		t.Fatal("service without containers")
	}
	env := map[string]string{}
	for _, x := range ctr.blocks("env") {
		n := x.Body.str(t, "name")
		if _, dup := env[n]; dup {
			t.Errorf("env %s set twice", n)
		}
		env[n] = x.Body.str(t, "value")
	}
	return env
}

// gcpEnvShared are the variables whose meaning is the AWS functions' own
// (internal/awsmode/settings.go): same names.
var gcpEnvShared = []string{
	awsmode.EnvFunction, awsmode.EnvClusterResourceNamespace, awsmode.EnvSecretPrefix, awsmode.EnvKMSKeyID,
	awsmode.EnvApprover, awsmode.EnvAutoApprove, awsmode.EnvHTTP01Enabled, awsmode.EnvLogLevel, awsmode.EnvMetrics, awsmode.EnvAPIAdmins,
	awsmode.EnvACMEServerAllow, awsmode.EnvQuotaObjects, awsmode.EnvQuotaIssuances,
}

// TestGCPServices: one service per function from the one image, each as
// its own account, with CERTFN_FUNCTION and the environment README.md
// documents; ingress and invokers per docs/design/roles.md.
func TestGCPServices(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(gcpModuleDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(CERTFN_[A-Z0-9_]+)`").FindAllStringSubmatch(string(readme), -1) {
		documented[m[1]] = true
	}
	used := map[string]bool{}
	e := gcpEval(t, gcpOpts{http01: true, zones: []string{"example-com"}, certImport: true, kmsKey: "projects/p/locations/global/keyRings/r/cryptoKeys/k"}.vars())
	svcs := byKey(e.instances("resource", "google_cloud_run_v2_service", "fn"))
	if len(svcs) != len(gcpFunctions) {
		t.Fatalf("services %v, want %v", len(svcs), gcpFunctions)
	}
	wantIngress := map[string]string{"worker": "INGRESS_TRAFFIC_INTERNAL_ONLY", "signer": "INGRESS_TRAFFIC_INTERNAL_ONLY",
		"scheduler": "INGRESS_TRAFFIC_INTERNAL_ONLY", "api": "INGRESS_TRAFFIC_ALL", "http01": "INGRESS_TRAFFIC_ALL"}
	for _, fn := range gcpFunctions {
		s := svcs[fn]
		if s == nil {
			t.Fatalf("no %s service", fn)
		}
		if s.str(t, "name") != "certfn-"+fn || s.str(t, "ingress") != wantIngress[fn] {
			t.Errorf("%s: name %q ingress %q", fn, s.str(t, "name"), s.str(t, "ingress"))
		}
		if s.str(t, "deletion_protection") != "false" {
			t.Errorf("%s: deletion_protection %q", fn, s.str(t, "deletion_protection"))
		}
		tpl := s.block(t, "template")
		if tpl.str(t, "service_account") != saEmail(fn) {
			t.Errorf("%s: runs as %q, want its own account", fn, tpl.str(t, "service_account"))
		}
		if ctr := tpl.block(t, "containers"); ctr.str(t, "image") != gcpImage {
			t.Errorf("%s: image %q", fn, ctr.str(t, "image"))
		}
		env := serviceEnv(t, s)
		if env["CERTFN_FUNCTION"] != fn {
			t.Errorf("%s: CERTFN_FUNCTION = %q", fn, env["CERTFN_FUNCTION"])
		}
		for n := range env {
			used[n] = true
			if !strings.HasPrefix(n, "CERTFN_") {
				t.Errorf("%s: env %s is not CERTFN_*", fn, n)
			}
			if !documented[n] {
				t.Errorf("%s: env %s is not documented in infra/terraform/gcp/README.md", fn, n)
			}
		}
		for _, n := range []string{"CERTFN_PROJECT", "CERTFN_FIRESTORE_DATABASE", "CERTFN_FIRESTORE_COLLECTION", "CERTFN_CLUSTER_RESOURCE_NAMESPACE", "CERTFN_LOG_LEVEL", "CERTFN_METRICS"} {
			if env[n] == "" {
				t.Errorf("%s: %s not set", fn, n)
			}
		}
		// The worker and the signer use secrets; the api only names them
		// (the status route's secret.reference), with no secret permission.
		_, hasSecrets := env["CERTFN_SECRET_PREFIX"]
		if hasSecrets != (fn == "worker" || fn == "signer" || fn == "api") {
			t.Errorf("%s: CERTFN_SECRET_PREFIX set = %v (only the worker and the signer use secrets, and the api names them)", fn, hasSecrets)
		}
		_, hasTopic := env["CERTFN_TOPIC"]
		if hasTopic != (fn != "http01") {
			t.Errorf("%s: CERTFN_TOPIC set = %v", fn, hasTopic)
		}
		if hasTopic && env["CERTFN_TOPIC"] != "projects/"+gcpProject+"/topics/certfn-worker" {
			t.Errorf("%s: CERTFN_TOPIC = %q", fn, env["CERTFN_TOPIC"])
		}
	}
	w := serviceEnv(t, svcs["worker"])
	for n, v := range map[string]string{
		"CERTFN_SIGNER_TOPIC":                 "projects/" + gcpProject + "/topics/certfn-signer",
		"CERTFN_TASKS_QUEUE":                  "projects/" + gcpProject + "/locations/us-central1/queues/certfn-delays",
		"CERTFN_TASKS_SERVICE_ACCOUNT":        saEmail("tasks"),
		"CERTFN_CLOUDDNS_ZONES":               gcpProject + "/example-com",
		"CERTFN_CERTIFICATE_MANAGER_IMPORT":   "true",
		"CERTFN_CERTIFICATE_MANAGER_LOCATION": "global",
		"CERTFN_MANAGE_CA_CERTIFICATES":       "false",
		"CERTFN_SECRET_PREFIX":                "certfn",
		"CERTFN_KMS_KEY_ID":                   "projects/p/locations/global/keyRings/r/cryptoKeys/k",
		"CERTFN_METRICS":                      "log",
	} {
		if w[n] != v {
			t.Errorf("worker: %s = %q, want %q", n, w[n], v)
		}
	}
	// The api's token audience is fixed: its deterministic URL, the
	// api_url output, unless api_audiences lists others.
	apiURL := "https://certfn-api-" + gcpProjectNumber + ".us-central1.run.app"
	if v := serviceEnv(t, svcs["api"])["CERTFN_API_AUDIENCE"]; v != apiURL {
		t.Errorf("api: CERTFN_API_AUDIENCE = %q, want %q", v, apiURL)
	}
	if v := e.expr(parseTF(t, gcpModuleDir(t)).outputs["api_url"].Body.Attributes["value"].Expr, nil); !v.IsKnown() || v.AsString() != apiURL {
		t.Errorf("api_url = %#v, want %q", v, apiURL)
	}
	custom := gcpEval(t, map[string]cty.Value{"api_audiences": cty.ListVal([]cty.Value{cty.StringVal("https://api.example.com"), cty.StringVal(apiURL)})})
	if v := serviceEnv(t, byKey(custom.instances("resource", "google_cloud_run_v2_service", "fn"))["api"])["CERTFN_API_AUDIENCE"]; v != "https://api.example.com,"+apiURL {
		t.Errorf("api_audiences: CERTFN_API_AUDIENCE = %q", v)
	}
	if _, ok := serviceEnv(t, svcs["signer"])["CERTFN_SIGNER_TOPIC"]; ok {
		t.Errorf("signer: CERTFN_SIGNER_TOPIC (it never sends to its own topic)")
	}
	for _, n := range gcpEnvShared {
		if !used[n] {
			t.Errorf("%s (the AWS functions' name) is not set on any service", n)
		}
	}
	// Without http01 there is no http01 service, and the worker knows it.
	e = gcpEval(t, map[string]cty.Value{"enable_http01": cty.False, "private_ingress": cty.False})
	svcs = byKey(e.instances("resource", "google_cloud_run_v2_service", "fn"))
	if svcs["http01"] != nil || len(svcs) != 4 {
		t.Errorf("enable_http01=false: services %d", len(svcs))
	}
	if v := serviceEnv(t, svcs["worker"])["CERTFN_HTTP01_ENABLED"]; v != "false" {
		t.Errorf("enable_http01=false: worker CERTFN_HTTP01_ENABLED = %q", v)
	}
	if svcs["worker"].str(t, "ingress") != "INGRESS_TRAFFIC_ALL" {
		t.Errorf("private_ingress=false: worker ingress %q", svcs["worker"].str(t, "ingress"))
	}
}

// TestGCPAlerts: the dead-letter alerts, the certificate expiry alert on
// its log-based metric, the error-log alert.
func TestGCPAlerts(t *testing.T) {
	e := gcpEval(t, map[string]cty.Value{"notification_channels": ctyList("projects/my-project/notificationChannels/42")})
	dl := byKey(e.instances("resource", "google_monitoring_alert_policy", "dead_letter"))
	for _, q := range []string{"worker", "signer"} {
		p := dl[q]
		if p == nil {
			t.Fatalf("no dead-letter alert for %s", q)
		}
		ct := p.blocks("conditions")[0].Body.block(t, "condition_threshold")
		f := ct.str(t, "filter")
		if !strings.Contains(f, `resource.labels.subscription_id="certfn-`+q+`-dlq"`) || !strings.Contains(f, "pubsub.googleapis.com/subscription/num_undelivered_messages") {
			t.Errorf("%s dead-letter alert filter: %s", q, f)
		}
		if ct.str(t, "comparison") != "COMPARISON_GT" || ct.str(t, "threshold_value") != "0" {
			t.Errorf("%s dead-letter alert: %s %s", q, ct.str(t, "comparison"), ct.str(t, "threshold_value"))
		}
		if ch := ctyStrings(t, p.Attrs["notification_channels"]); !slices.Equal(ch, []string{"projects/my-project/notificationChannels/42"}) {
			t.Errorf("%s dead-letter alert: channels %v", q, ch)
		}
	}
	metrics := e.instances("resource", "google_logging_metric", "certificates_expiring")
	alerts := e.instances("resource", "google_monitoring_alert_policy", "certificate_expiry")
	if len(metrics) != 1 || len(alerts) != 1 {
		t.Fatalf("expiry: %d metrics, %d alerts", len(metrics), len(alerts))
	}
	m := metrics[0].Body
	if m.str(t, "name") != "certfn_certificates_expiring" {
		t.Errorf("expiry metric name %q", m.str(t, "name"))
	}
	for _, part := range []string{`resource.labels.service_name="certfn-worker"`, `jsonPayload.metric="certfn_certificate_expiry_seconds"`, "jsonPayload.value<1209600"} {
		if !strings.Contains(m.str(t, "filter"), part) {
			t.Errorf("expiry metric filter %q lacks %s", m.str(t, "filter"), part)
		}
	}
	ct := alerts[0].Body.blocks("conditions")[0].Body.block(t, "condition_threshold")
	if !strings.Contains(ct.str(t, "filter"), `metric.type="logging.googleapis.com/user/certfn_certificates_expiring"`) {
		t.Errorf("expiry alert filter %q", ct.str(t, "filter"))
	}
	if ag := ct.block(t, "aggregations"); ag == nil || ag.str(t, "alignment_period") != "86400s" {
		t.Errorf("expiry alert: a one-day window (each Certificate reports daily)")
	}
	if errs := e.instances("resource", "google_logging_metric", "error_logs"); len(errs) != 1 || !strings.Contains(errs[0].Body.str(t, "filter"), "severity>=ERROR") {
		t.Errorf("error-log metric missing or without severity>=ERROR")
	}
	if n := len(e.instances("resource", "google_monitoring_alert_policy", "error_logs")); n != 1 {
		t.Errorf("%d error-log alerts", n)
	}
	// Off switches.
	e = gcpEval(t, map[string]cty.Value{"certificate_expiry_alert_days": cty.Zero, "enable_error_log_alert": cty.False})
	for _, r := range [][2]string{{"google_logging_metric", "certificates_expiring"}, {"google_monitoring_alert_policy", "certificate_expiry"}, {"google_logging_metric", "error_logs"}, {"google_monitoring_alert_policy", "error_logs"}} {
		if n := len(e.instances("resource", r[0], r[1])); n != 0 {
			t.Errorf("%s.%s: %d instances when off", r[0], r[1], n)
		}
	}
	if e = gcpEval(t, map[string]cty.Value{"enable_metrics": cty.False}); len(e.instances("resource", "google_monitoring_alert_policy", "certificate_expiry")) != 0 {
		t.Errorf("certificate expiry alert without metrics")
	}
}

// TestGCPOutputsAndREADME: the outputs a user needs exist and are
// described; every input is documented in the README.
func TestGCPOutputsAndREADME(t *testing.T) {
	c := parseTF(t, gcpModuleDir(t))
	for _, name := range []string{"service_urls", "api_url", "http01_url", "service_account_emails", "topics", "topic_names", "dead_letter_topics", "tasks_queue", "firestore_database", "secret_prefix"} {
		if c.outputs[name] == nil {
			t.Errorf("no output %s", name)
		}
	}
	for name, b := range c.outputs {
		if b.Body.Attributes["description"] == nil {
			t.Errorf("output %s: no description", name)
		}
	}
	readme, err := os.ReadFile(filepath.Join(gcpModuleDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range c.variables {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("variable %s is not documented in README.md", name)
		}
	}
	for name := range c.outputs {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("output %s is not documented in README.md", name)
		}
	}
}

// TestGCPExample: the example calls the module with inputs it declares,
// including every required one, and evaluates.
func TestGCPExample(t *testing.T) {
	mod := parseTF(t, gcpModuleDir(t))
	ex := parseTF(t, gcpExampleDir(t))
	m := ex.modules["certfn"]
	if m == nil {
		t.Fatal("example: no module \"certfn\"")
	}
	if src := exprSource(t, m.Body.Attributes["source"].Expr); src != `"../.."` {
		t.Errorf("example: module source %s", src)
	}
	for name := range m.Body.Attributes {
		if name == "source" || name == "providers" || name == "depends_on" {
			continue
		}
		if mod.variables[name] == nil {
			t.Errorf("example: module input %s is not a variable of the module", name)
		}
	}
	for name, v := range mod.variables {
		if v.Body.Attributes["default"] == nil && m.Body.Attributes[name] == nil {
			t.Errorf("example: required module input %s not given", name)
		}
	}
	e := ex.evaluate(t, map[string]cty.Value{"project": cty.StringVal(gcpProject), "image": cty.StringVal(gcpImage)})
	for name, b := range ex.outputs {
		e.expr(b.Body.Attributes["value"].Expr, nil)
		if b.Body.Attributes["description"] == nil {
			t.Errorf("example output %s: no description", name)
		}
	}
	for _, a := range m.Body.Attributes {
		e.expr(a.Expr, nil)
	}
}

// TestGCPExampleManifests renders the example's manifests with the real
// terraform CLI (`terraform console` on a root module holding only the
// example's variables and locals: no provider needed) and decodes and
// validates them as certfn does.
func TestGCPExampleManifests(t *testing.T) {
	bin := terraformBin(t)
	ex := parseTF(t, gcpExampleDir(t))
	dir := t.TempDir()
	vars, err := os.ReadFile(filepath.Join(gcpExampleDir(t), "variables.tf"))
	if err != nil {
		t.Fatal(err)
	}
	var locals []string
	src, err := os.ReadFile(filepath.Join(gcpExampleDir(t), "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range ex.files["main.tf"].Blocks {
		if b.Type == "locals" {
			locals = append(locals, string(b.Range().SliceBytes(src)))
		}
	}
	if len(locals) == 0 {
		t.Fatal("example main.tf: no locals")
	}
	for name, body := range map[string]string{"variables.tf": string(vars), "locals.tf": strings.Join(locals, "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(dir, "manifests"), os.DirFS(filepath.Join(gcpExampleDir(t), "manifests"))); err != nil {
		t.Fatal(err)
	}
	var lastKeys [2][]string
	render := func(args ...string) []api.Object {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"console", "-var", "project=" + gcpProject, "-var", "image=" + gcpImage}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(environWithout("TF_", "CHECKPOINT_"), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		cmd.Stdin = strings.NewReader("jsonencode([local.manifests, keys(local.config_documents), keys(local.certificate_documents)])\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("terraform console: %v\n%s", err, out)
		}
		var doc string
		if err := json.Unmarshal(bytes.TrimSpace(out), &doc); err != nil {
			t.Fatalf("terraform console output: %v\n%s", err, out)
		}
		// The manifests, then the certfn_manifest instances: one per
		// document, the Certificates apart.
		var parts []json.RawMessage
		if err := json.Unmarshal([]byte(doc), &parts); err != nil || len(parts) != 3 {
			t.Fatalf("terraform console output: %v\n%s", err, doc)
		}
		var yaml string
		if err := json.Unmarshal(parts[0], &yaml); err != nil {
			t.Fatalf("manifests: %v\n%s", err, doc)
		}
		for i := range lastKeys {
			if err := json.Unmarshal(parts[i+1], &lastKeys[i]); err != nil {
				t.Fatalf("document keys: %v\n%s", err, doc)
			}
		}
		objs, err := api.Decode([]byte(yaml))
		if err != nil {
			t.Fatalf("decode manifests: %v\n%s", err, yaml)
		}
		for _, obj := range objs {
			if errs := validation.Object(obj); len(errs) > 0 {
				t.Errorf("manifest %T invalid: %v", obj, errs.Err())
			}
		}
		return objs
	}
	if got, want := kindsOf(render()), []string{"Certificate", "CertificateRequestPolicy", "ClusterRole", "ClusterRoleBinding", "Issuer"}; !slices.Equal(got, want) {
		t.Errorf("manifests: %v, want %v", got, want)
	}
	if want := [2][]string{{"CertificateRequestPolicy/example", "ClusterRole/use-example-policy", "ClusterRoleBinding/certfn-controller-uses-example-policy", "Issuer/selfsigned"},
		{"Certificate/web"}}; !reflect.DeepEqual(lastKeys, want) {
		t.Errorf("certfn_manifest instances: %v, want %v", lastKeys, want)
	}
	got := kindsOf(render("-var", `dns_zones=["example-com"]`, "-var", `acme_dns_names=["www.example.com"]`, "-var", "acme_server_url=https://acme-staging-v02.api.letsencrypt.org/directory"))
	if want := []string{"Certificate", "Certificate", "CertificateRequestPolicy", "ClusterIssuer", "ClusterRole", "ClusterRoleBinding", "Issuer"}; !slices.Equal(got, want) {
		t.Errorf("manifests with ACME: %v, want %v", got, want)
	}
	if want := []string{"Certificate/acme-web", "Certificate/web"}; !slices.Equal(lastKeys[1], want) {
		t.Errorf("certfn_manifest certificates with ACME: %v, want %v", lastKeys[1], want)
	}
}
