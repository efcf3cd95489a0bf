package terraform_test

// infra/terraform/gcp and its example against the real hashicorp/google
// provider: `terraform init`, `validate` (no error, no warning) and an
// offline `plan` with every option on. The provider comes from a filesystem
// mirror (the project's shared one, see gcpGoogleMirror); hashicorp/time is
// built from its source at a pinned version (gcpTimeMirror); certfn's own
// provider as `make provider` builds it (certfnProviderMirror). The plans
// use a fake access token and no refresh: nothing reaches Google, and a
// plan-time call to the api (certfn's dry run) would fail, so the example's
// plan also shows that its first plan needs no deployed api.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// gcpTimeVersion is the hashicorp/time release the tests build and plan
// with (infra/terraform/gcp/versions.tf allows 0.9 to 1.0).
const gcpTimeVersion = "0.14.2"

// gcpOfflineToken is the fake credential of every plan: the google
// provider's access_token and certfn's provider's token (CERTFN_TOKEN).
const gcpOfflineToken = "offline-plan-token"

// hasProvider reports whether mirror holds registry.terraform.io/<ns>/<name>.
func hasProvider(mirror, ns, name string) bool {
	st, err := os.Stat(filepath.Join(mirror, "registry.terraform.io", ns, name))
	return err == nil && st.IsDir()
}

// gcpGoogleMirrorCandidates are the directories searched for
// hashicorp/google, in order: the project's shared mirror beside the
// repository (and beside the main worktree when this is a linked git
// worktree), then a user's own plugin cache (TF_PLUGIN_CACHE_DIR, the CLI
// configuration's plugin_cache_dir, ~/.terraform.d/plugin-cache) and
// implied mirror (~/.terraform.d/plugins), which have a mirror's layout.
func gcpGoogleMirrorCandidates(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	out := []string{filepath.Join(root, "..", "shared", "terraform-mirror")}
	cmd := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-common-dir")
	cmd.Dir = root
	if b, err := cmd.Output(); err == nil {
		if main := filepath.Dir(strings.TrimSpace(string(b))); main != root {
			out = append(out, filepath.Join(main, "..", "shared", "terraform-mirror"))
		}
	}
	if d := os.Getenv("TF_PLUGIN_CACHE_DIR"); d != "" {
		out = append(out, d)
	}
	home, _ := os.UserHomeDir()
	cfg := os.Getenv("TF_CLI_CONFIG_FILE")
	if cfg == "" && home != "" {
		cfg = filepath.Join(home, ".terraformrc")
	}
	if d := pluginCacheDir(cfg); d != "" {
		out = append(out, d)
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".terraform.d", "plugin-cache"), filepath.Join(home, ".terraform.d", "plugins"))
	}
	return out
}

var pluginCacheDirRE = regexp.MustCompile(`(?m)^\s*plugin_cache_dir\s*=\s*"([^"]+)"`)

// pluginCacheDir returns plugin_cache_dir of the CLI configuration file
// cfg ("" when the file or the setting is missing), with $HOME and ~
// expanded as Terraform does.
func pluginCacheDir(cfg string) string {
	b, err := os.ReadFile(cfg)
	if err != nil {
		return ""
	}
	m := pluginCacheDirRE.FindSubmatch(b)
	if m == nil {
		return ""
	}
	d := os.ExpandEnv(string(m[1]))
	if home, err := os.UserHomeDir(); err == nil && strings.HasPrefix(d, "~/") {
		d = filepath.Join(home, d[2:])
	}
	return d
}

// gcpGoogleMirror returns a directory holding
// registry.terraform.io/hashicorp/google: $CERTFN_TF_GOOGLE_MIRROR, else the
// first of gcpGoogleMirrorCandidates that has it. None is a failure in CI
// (CI=true) and a skip, naming where to put one, elsewhere.
func gcpGoogleMirror(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("CERTFN_TF_GOOGLE_MIRROR"); d != "" {
		if !hasProvider(d, "hashicorp", "google") {
			t.Fatalf("CERTFN_TF_GOOGLE_MIRROR=%s has no registry.terraform.io/hashicorp/google", d)
		}
		return d
	}
	candidates := gcpGoogleMirrorCandidates(t)
	for _, d := range candidates {
		if hasProvider(d, "hashicorp", "google") {
			return d
		}
	}
	msg := fmt.Sprintf("no hashicorp/google provider found in %v: the project's mirror is shared/terraform-mirror in the directory that holds the repository (its README says how); or set CERTFN_TF_GOOGLE_MIRROR to a directory holding registry.terraform.io/hashicorp/google/<version>/<os_arch>", candidates)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

var (
	timeMirrorOnce sync.Once
	timeMirrorDir  string
	timeMirrorErr  error
)

// gcpTimeMirror returns a filesystem mirror holding hashicorp/time
// gcpTimeVersion (buildTimeMirror), made once per test binary.
func gcpTimeMirror(t *testing.T) string {
	t.Helper()
	timeMirrorOnce.Do(func() { timeMirrorDir, timeMirrorErr = buildTimeMirror(repoRoot(t)) })
	if timeMirrorErr != nil {
		t.Fatal(timeMirrorErr)
	}
	return timeMirrorDir
}

// buildTimeMirror builds hashicorp/time gcpTimeVersion with `go install` of
// the provider's module at that version (Go's module proxy) into
// .tools/terraform-mirror of the repository root (ignored by git) and
// returns that mirror. A binary already there is reused when `go version
// -m` shows it is that module at that version.
func buildTimeMirror(root string) (string, error) {
	dir := filepath.Join(root, ".tools", "terraform-mirror")
	binDir := filepath.Join(dir, "registry.terraform.io", "hashicorp", "time", gcpTimeVersion, runtime.GOOS+"_"+runtime.GOARCH)
	bin := filepath.Join(binDir, "terraform-provider-time_v"+gcpTimeVersion)
	if builtFrom(bin, "github.com/hashicorp/terraform-provider-time", "v"+gcpTimeVersion) {
		return dir, nil
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	gobin, err := os.MkdirTemp(binDir, ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gobin)
	pkg := "github.com/hashicorp/terraform-provider-time@v" + gcpTimeVersion
	cmd := exec.Command("go", "install", pkg)
	// Outside any module and workspace: the provider's own go.mod decides
	// its dependencies.
	cmd.Dir = gobin
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOWORK=off", "GOFLAGS=-trimpath", "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s: %v\n%s", pkg, err, b)
	}
	// A rename within the directory: a concurrent reader sees the whole
	// binary or none.
	return dir, os.Rename(filepath.Join(gobin, "terraform-provider-time"), bin)
}

// builtFrom reports whether the Go binary bin was built from module mod at
// version ver (its build information, `go version -m`).
func builtFrom(bin, mod, ver string) bool {
	if _, err := os.Stat(bin); err != nil {
		return false
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "mod" && f[1] == mod && f[2] == ver {
			return true
		}
	}
	return false
}

// newGCPTF returns a terraform runner for dir whose CLI configuration
// installs hashicorp/google, hashicorp/time and (when dir requires it)
// certfn/certfn from their mirrors and nothing from a registry, with no
// inherited TF_*, GOOGLE_*, CLOUDSDK_* or CERTFN_* variables and fake
// tokens for the google provider (GOOGLE_OAUTH_ACCESS_TOKEN) and certfn's
// (CERTFN_TOKEN).
func newGCPTF(t *testing.T, dir string) *tf {
	t.Helper()
	bin := terraformBin(t)
	type mirror struct{ path, source string }
	mirrors := []mirror{
		{gcpGoogleMirror(t), "registry.terraform.io/hashicorp/google"},
		{gcpTimeMirror(t), "registry.terraform.io/hashicorp/time"},
	}
	if usesCertfnProvider(t, dir) {
		mirrors = append(mirrors, mirror{certfnProviderMirror(t), "registry.terraform.io/certfn/certfn"})
	}
	var body strings.Builder
	var sources []string
	body.WriteString("provider_installation {\n")
	for _, m := range mirrors {
		fmt.Fprintf(&body, "  filesystem_mirror {\n    path    = %q\n    include = [%q]\n  }\n", m.path, m.source)
		sources = append(sources, fmt.Sprintf("%q", m.source))
	}
	fmt.Fprintf(&body, "  direct {\n    exclude = [%s]\n  }\n}\n", strings.Join(sources, ", "))
	cfg := filepath.Join(t.TempDir(), "terraform.rc")
	if err := os.WriteFile(cfg, []byte(body.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(environWithout("TF_", "CHECKPOINT_", "GOOGLE_", "CLOUDSDK_", "CERTFN_"),
		"TF_CLI_CONFIG_FILE="+cfg,
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"CHECKPOINT_DISABLE=1",
		"GOOGLE_OAUTH_ACCESS_TOKEN="+gcpOfflineToken,
		"CERTFN_TOKEN="+gcpOfflineToken,
	)
	return &tf{t: t, bin: bin, dir: dir, env: env}
}

// environWithout returns the process environment less the variables whose
// names start with one of prefixes.
func environWithout(prefixes ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			out = append(out, kv)
		}
	}
	return out
}

// gcpOfflineProvider configures the google provider for an offline plan:
// a fake token and no call before apply.
const gcpOfflineProvider = `provider "google" {
  project      = "` + gcpProject + `"
  region       = "us-central1"
  access_token = "` + gcpOfflineToken + `"
}
`

// gcpCopy copies infra/terraform/gcp (module and example) into a
// temporary directory, without .terraform directories, state, plans or
// lock files, and returns the copy's path.
func gcpCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "gcp")
	if err := os.CopyFS(dst, os.DirFS(gcpModuleDir(t))); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		switch {
		case d.IsDir() && name == ".terraform":
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			return filepath.SkipDir
		case !d.IsDir() && (strings.HasSuffix(name, ".tfstate") || strings.HasSuffix(name, ".tfstate.backup") || name == "tfplan" || name == ".terraform.lock.hcl"):
			return os.Remove(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// gcpPlanResult is a plan as `terraform show -json` prints it: the parts
// planJSON reads, plus the configuration and the planned changes' values.
type gcpPlanResult struct {
	*planJSON
	Configuration struct {
		ProviderConfig map[string]struct {
			Expressions map[string]tfExpression `json:"expressions"`
		} `json:"provider_config"`
		RootModule tfConfigModule `json:"root_module"`
	} `json:"configuration"`
	ResourceChanges []struct {
		Address string `json:"address"`
		Change  struct {
			Actions      []string       `json:"actions"`
			After        map[string]any `json:"after"`
			AfterUnknown map[string]any `json:"after_unknown"`
		} `json:"change"`
	} `json:"resource_changes"`
	// Stdout is what `terraform plan` printed.
	Stdout string `json:"-"`
}

// tfExpression is one expression of the configuration: a constant or the
// references it makes.
type tfExpression struct {
	ConstantValue any      `json:"constant_value"`
	References    []string `json:"references"`
}

// tfConfigModule is a module of the configuration: its resources and the
// modules it calls.
type tfConfigModule struct {
	Resources []struct {
		Address     string          `json:"address"`
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Expressions json.RawMessage `json:"expressions"`
		DependsOn   []string        `json:"depends_on"`
	} `json:"resources"`
	ModuleCalls map[string]struct {
		Module tfConfigModule `json:"module"`
	} `json:"module_calls"`
}

// gcpPlan runs init, validate (when validate is set) and plan (no refresh)
// with vars in r.dir and returns the plan. A warning from validate or plan
// fails the test.
func (r *tf) gcpPlan(validate bool, vars map[string]string) *gcpPlanResult {
	r.t.Helper()
	if validate {
		r.initValidate()
	} else {
		r.run("init", "-backend=false", "-input=false", "-no-color")
	}
	args := []string{"plan", "-input=false", "-lock=false", "-refresh=false", "-no-color", "-out=tfplan"}
	for _, k := range keysOf(vars) {
		args = append(args, "-var", k+"="+vars[k])
	}
	out := r.run(args...)
	if bytes.Contains(out, []byte("Warning:")) {
		r.t.Errorf("terraform plan warned:\n%s", out)
	}
	show := r.run("show", "-json", "-no-color", "tfplan")
	p := &gcpPlanResult{planJSON: &planJSON{}, Stdout: string(out)}
	if err := json.Unmarshal(show, p.planJSON); err != nil {
		r.t.Fatalf("terraform show -json: %v", err)
	}
	if err := json.Unmarshal(show, p); err != nil {
		r.t.Fatalf("terraform show -json: %v", err)
	}
	return p
}

// change returns the planned change of address (nil when none).
func (p *gcpPlanResult) change(address string) (after, afterUnknown map[string]any, ok bool) {
	for _, rc := range p.ResourceChanges {
		if rc.Address == address {
			return rc.Change.After, rc.Change.AfterUnknown, true
		}
	}
	return nil, nil, false
}

// countByType counts the planned managed resources by type.
func (p *gcpPlanResult) countByType() map[string]int {
	n := map[string]int{}
	for _, r := range p.resources() {
		n[r.Type]++
	}
	return n
}

// gcpFullInputs are module inputs (HCL attribute lines) that turn every
// option on.
const gcpFullInputs = `
  project                           = "` + gcpProject + `"
  project_number                    = "` + gcpProjectNumber + `"
  image                             = "` + gcpImage + `"
  labels                            = { team = "platform" }
  private_ingress                   = true
  deletion_protection               = false
  firestore_point_in_time_recovery  = true
  secret_kms_key_name               = "projects/kms-project/locations/global/keyRings/certfn/cryptoKeys/secrets"
  worker_manages_ca_certificates    = true
  enable_http01                     = true
  approver                          = "cert-manager"
  auto_approve_signers              = ["clusterissuers.cert-manager.io/selfsigned"]
  acme_server_allow                 = ["https://acme-staging-v02.api.letsencrypt.org/directory"]
  acme_allow_private_networks       = ["10.0.0.0/8"]
  acme_poll_first                   = "200ms"
  acme_poll_max                     = "3s"
  quota_objects_per_namespace       = 100
  quota_issuances_per_hour_per_namespace = 10
  dns_zones                         = ["example-com", "example-org"]
  dns_project                       = "dns-project-1"
  enable_certificate_manager_import = true
  certificate_manager_location      = "europe-west1"
  api_invoker_members               = ["serviceAccount:ci@my-project.iam.gserviceaccount.com", "group:platform@example.com"]
  api_admins                        = ["ci@my-project.iam.gserviceaccount.com"]
  api_audiences                     = ["https://certfn.example.com"]
  notification_channels             = ["projects/my-project/notificationChannels/42"]
`

// TestGCPPlan validates and plans, with the real google provider and every
// option on, the module (called from a root module) and the example, in
// parallel, and checks what was planned: every resource type the module
// declares, the waits (gcpwait_test.go), and for the example its certfn
// objects on an api that does not exist yet.
func TestGCPPlan(t *testing.T) {
	t.Run("module", func(t *testing.T) {
		t.Parallel()
		cp := gcpCopy(t)
		newGCPTF(t, cp).initValidate()

		root := filepath.Join(filepath.Dir(cp), "root")
		body := gcpOfflineProvider + "\nmodule \"certfn\" {\n  source = \"../gcp\"\n" + gcpFullInputs + "}\n"
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "main.tf"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// The root only calls the module, validated above.
		p := newGCPTF(t, root).gcpPlan(false, nil)

		// Every resource type of the module is planned (all options on).
		declared := map[string]bool{}
		for _, r := range parseTF(t, gcpModuleDir(t)).resources {
			if r.Type == "resource" {
				declared[r.Labels[0]] = true
			}
		}
		got := p.countByType()
		for typ := range declared {
			if got[typ] == 0 {
				t.Errorf("full-option plan: no %s planned", typ)
			}
		}
		for typ, n := range map[string]int{
			"google_cloud_run_v2_service":    5,
			"google_service_account":         8,
			"google_logging_metric":          2,
			"google_monitoring_alert_policy": 4,
			"time_sleep":                     2,
		} {
			if got[typ] != n {
				t.Errorf("full-option plan: %d %s, want %d", got[typ], typ, n)
			}
		}
		checkGCPLogMetricWait(t, p, p.Configuration.RootModule.ModuleCalls["certfn"].Module, "module.certfn.")
	})

	t.Run("example", func(t *testing.T) {
		t.Parallel()
		ex := filepath.Join(gcpCopy(t), "examples", "basic")
		override := strings.Replace(gcpOfflineProvider, "provider \"google\" {\n", "provider \"google\" {\n  # test override: no Google account needed for plan\n", 1)
		if err := os.WriteFile(filepath.Join(ex, "provider_override.tf"), []byte(override), 0o644); err != nil {
			t.Fatal(err)
		}
		p := newGCPTF(t, ex).gcpPlan(true, map[string]string{
			"project":               gcpProject,
			"project_number":        gcpProjectNumber,
			"image":                 gcpImage,
			"dns_zones":             `["example-com"]`,
			"acme_server_url":       "https://acme-staging-v02.api.letsencrypt.org/directory",
			"acme_dns_names":        `["www.example.com"]`,
			"api_invoker_members":   `["serviceAccount:ci@my-project.iam.gserviceaccount.com"]`,
			"api_admins":            `["ci@my-project.iam.gserviceaccount.com"]`,
			"notification_channels": `["projects/my-project/notificationChannels/42"]`,
		})
		manifests := p.ofType("certfn_manifest")
		if got, want := keysOf(manifests), []string{
			`certificate[Certificate/acme-web]`, `certificate[Certificate/web]`,
			`config[CertificateRequestPolicy/example]`, `config[ClusterIssuer/acme]`, `config[ClusterRole/use-example-policy]`,
			`config[ClusterRoleBinding/certfn-controller-uses-example-policy]`, `config[Issuer/selfsigned]`,
		}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("certfn_manifest planned: %v, want %v", got, want)
		}
		if n := p.countByType()["google_cloud_run_v2_service"]; n != 5 {
			t.Errorf("example: %d Cloud Run services planned, want 5", n)
		}
		checkGCPLogMetricWait(t, p, p.Configuration.RootModule.ModuleCalls["certfn"].Module, "module.certfn.")
		checkGCPAPIAccessWait(t, p)
	})
}

// TestGCPGoogleMirrorCandidates: where hashicorp/google is looked for when
// CERTFN_TF_GOOGLE_MIRROR is not set — the shared mirror first, then a
// user's plugin cache from TF_PLUGIN_CACHE_DIR or the CLI configuration's
// plugin_cache_dir ($HOME expanded), then the per-user directories.
func TestGCPGoogleMirrorCandidates(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cache := filepath.Join(t.TempDir(), "cache")
	cfg := filepath.Join(t.TempDir(), "terraform.rc")
	if err := os.WriteFile(cfg, []byte("disable_checkpoint = true\nplugin_cache_dir   = \"$HOME/.cache/terraform\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TF_CLI_CONFIG_FILE", cfg)
	t.Setenv("TF_PLUGIN_CACHE_DIR", cache)
	got := gcpGoogleMirrorCandidates(t)
	shared := filepath.Join(repoRoot(t), "..", "shared", "terraform-mirror")
	if len(got) < 5 || got[0] != shared {
		t.Fatalf("candidates %v: want %s first", got, shared)
	}
	tail := got[len(got)-4:]
	want := []string{cache, filepath.Join(home, ".cache", "terraform"), filepath.Join(home, ".terraform.d", "plugin-cache"), filepath.Join(home, ".terraform.d", "plugins")}
	if strings.Join(tail, "\n") != strings.Join(want, "\n") {
		t.Errorf("candidates after the shared mirror(s) = %v, want %v", tail, want)
	}
	// A plugin cache has a mirror's layout: one holding the provider counts.
	if hasProvider(cache, "hashicorp", "google") {
		t.Fatal("empty cache holds hashicorp/google")
	}
	if err := os.MkdirAll(filepath.Join(cache, "registry.terraform.io", "hashicorp", "google", "7.45.0", runtime.GOOS+"_"+runtime.GOARCH), 0o755); err != nil {
		t.Fatal(err)
	}
	if !hasProvider(cache, "hashicorp", "google") {
		t.Error("a plugin cache holding hashicorp/google is not recognised")
	}
	if d := pluginCacheDir(filepath.Join(t.TempDir(), "missing.rc")); d != "" {
		t.Errorf("plugin_cache_dir of a missing file = %q", d)
	}
}
