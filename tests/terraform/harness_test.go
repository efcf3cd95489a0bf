// Package terraform_test checks infra/terraform/aws with the real terraform
// CLI: fmt -check, init -backend=false, validate and plan of the module and of
// its example, against a filesystem mirror of the hashicorp/aws provider (no
// registry, no AWS account: fake credentials and the provider's skip_*
// settings). The planned IAM policies are then evaluated (iam_test.go) for
// the least privilege of docs/design/roles.md.
//
// A missing terraform binary or provider mirror fails the tests: they are
// part of `make test` (`make tf-check` runs only them). TERRAFORM names the
// binary and CERTFN_TF_PLUGIN_MIRROR the mirror directory when they are not
// found in PATH and the usual places.
package terraform_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/certfn/certfn/core/app"
)

// testAccount is the account ID passed to every plan (module input
// account_id), so no plan needs sts:GetCallerIdentity.
const testAccount = "123456789012"

// testRegion is the region of every plan.
const testRegion = "us-east-1"

// repoRoot returns the repository root (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// moduleDir is infra/terraform/aws in the repository.
func moduleDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "infra", "terraform", "aws")
}

// terraformBin returns the terraform binary: $TERRAFORM, else terraform in
// PATH. Missing is a test failure, never a skip.
func terraformBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TERRAFORM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("TERRAFORM=%s: %v", p, err)
		}
		return p
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatalf("terraform is not installed (or not in PATH; set TERRAFORM): %v", err)
	}
	return p
}

// providerMirror returns a filesystem mirror directory that holds
// registry.terraform.io/hashicorp/aws: $CERTFN_TF_PLUGIN_MIRROR, else the
// first of the usual places that has it. Missing is a test failure.
func providerMirror(t *testing.T) string {
	t.Helper()
	has := func(dir string) bool {
		st, err := os.Stat(filepath.Join(dir, "registry.terraform.io", "hashicorp", "aws"))
		return err == nil && st.IsDir()
	}
	if d := os.Getenv("CERTFN_TF_PLUGIN_MIRROR"); d != "" {
		if !has(d) {
			t.Fatalf("CERTFN_TF_PLUGIN_MIRROR=%s has no registry.terraform.io/hashicorp/aws", d)
		}
		return d
	}
	candidates := []string{"/opt/tf-plugins", "/usr/local/share/terraform/plugins", "/usr/share/terraform/plugins"}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".terraform.d", "plugins"), filepath.Join(home, ".local", "share", "terraform", "plugins"))
	}
	for _, d := range candidates {
		if has(d) {
			return d
		}
	}
	t.Fatalf("no filesystem mirror of hashicorp/aws found in %v; set CERTFN_TF_PLUGIN_MIRROR to a directory holding registry.terraform.io/hashicorp/aws/<version>/<os_arch>", candidates)
	return ""
}

// usesCertfnProvider reports whether the configuration in dir requires
// certfn's provider (the AWS example does).
func usesCertfnProvider(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "versions.tf"))
	return err == nil && bytes.Contains(b, []byte(`"certfn/certfn"`))
}

var certfnMirror struct {
	once sync.Once
	dir  string
	err  error
}

// certfnProviderMirror builds cmd/terraform-provider-certfn once per test
// binary into a filesystem mirror (as `make provider` installs it) and
// returns the mirror's directory.
func certfnProviderMirror(t *testing.T) string {
	t.Helper()
	certfnMirror.once.Do(func() {
		dir, err := os.MkdirTemp("", "certfn-tf-provider-mirror-")
		if err != nil {
			certfnMirror.err = err
			return
		}
		const version = "0.0.1"
		out := filepath.Join(dir, "registry.terraform.io", "certfn", "certfn", version, runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-certfn_v"+version)
		cmd := exec.Command("go", "build", "-o", out, "./cmd/terraform-provider-certfn")
		cmd.Dir = repoRoot(t)
		if b, err := cmd.CombinedOutput(); err != nil {
			certfnMirror.err = fmt.Errorf("go build ./cmd/terraform-provider-certfn: %v\n%s", err, b)
			return
		}
		certfnMirror.dir = dir
	})
	if certfnMirror.err != nil {
		t.Fatal(certfnMirror.err)
	}
	return certfnMirror.dir
}

// tf runs the terraform CLI in a working directory with an isolated
// environment: a generated CLI configuration that installs hashicorp/aws
// only from the mirror, fake AWS credentials and no inherited AWS_* or TF_*
// variables.
type tf struct {
	t   *testing.T
	bin string
	dir string
	env []string
}

// newTF returns a runner for dir. The CLI configuration is written to a
// temporary directory.
func newTF(t *testing.T, dir string) *tf {
	t.Helper()
	bin, mirror := terraformBin(t), providerMirror(t)
	cfgDir := t.TempDir()
	cfg := filepath.Join(cfgDir, "terraform.rc")
	body := fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/hashicorp/aws"]
  }
  direct {
    exclude = ["registry.terraform.io/hashicorp/aws", "registry.terraform.io/certfn/certfn"]
  }
}
`, mirror)
	if usesCertfnProvider(t, dir) {
		body = strings.Replace(body, "  direct {", fmt.Sprintf(`  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/certfn/certfn"]
  }
  direct {`, certfnProviderMirror(t)), 1)
	}
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "TF_") || strings.HasPrefix(kv, "CHECKPOINT_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"TF_CLI_CONFIG_FILE="+cfg,
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"CHECKPOINT_DISABLE=1",
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_REGION="+testRegion,
		"AWS_EC2_METADATA_DISABLED=true",
	)
	return &tf{t: t, bin: bin, dir: dir, env: env}
}

// run executes terraform with args and returns stdout; a non-zero exit
// fails the test with both streams.
func (r *tf) run(args ...string) []byte {
	r.t.Helper()
	out, errOut, err := r.try(args...)
	if err != nil {
		r.t.Fatalf("terraform %s (in %s): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.dir, err, out, errOut)
	}
	return out
}

// try executes terraform with args and returns stdout, stderr and the error.
func (r *tf) try(args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// initValidate runs init -backend=false and validate.
func (r *tf) initValidate() {
	r.t.Helper()
	r.run("init", "-backend=false", "-input=false", "-no-color")
	out := r.run("validate", "-json", "-no-color")
	var v struct {
		Valid       bool `json:"valid"`
		Diagnostics []struct {
			Severity string `json:"severity"`
			Summary  string `json:"summary"`
			Detail   string `json:"detail"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		r.t.Fatalf("terraform validate -json: %v\n%s", err, out)
	}
	if !v.Valid {
		r.t.Fatalf("terraform validate: invalid: %s", out)
	}
	for _, d := range v.Diagnostics {
		// Deprecations in our own configuration are worth fixing now.
		r.t.Errorf("terraform validate: %s: %s: %s", d.Severity, d.Summary, d.Detail)
	}
}

// plan runs plan with vars (name → value, passed as -var name=value: a
// string variable takes the value as it is, other types parse it as HCL)
// and returns
// the plan as `terraform show -json` prints it.
func (r *tf) plan(vars map[string]string) *planJSON {
	r.t.Helper()
	args := []string{"plan", "-input=false", "-lock=false", "-no-color", "-out=tfplan"}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		args = append(args, "-var", k+"="+vars[k])
	}
	r.run(args...)
	out := r.run("show", "-json", "-no-color", "tfplan")
	var p planJSON
	if err := json.Unmarshal(out, &p); err != nil {
		r.t.Fatalf("terraform show -json: %v", err)
	}
	return &p
}

// copyModule copies infra/terraform/aws (without .terraform directories,
// state or plans) to a temporary directory and returns the copy's path:
// init and plan write next to the root module, never into the repository.
func copyModule(t *testing.T) string {
	t.Helper()
	src := moduleDir(t)
	dst := filepath.Join(t.TempDir(), "aws")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == ".terraform" || name == "dist") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(name, ".tfstate") || strings.HasSuffix(name, ".tfstate.backup") || name == "tfplan" || name == ".terraform.lock.hcl") {
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	return dst
}

// functionNames are the functions the module can deploy: core/app's.
var functionNames = roleNames(app.Functions)

// placeholderZips writes <name>.zip for every function into a temporary
// directory and returns it. Each holds a tiny `bootstrap` text file: plan
// checks the infrastructure and IAM, not the code (the real zips come from
// `make lambda`, which these tests do not need).
func placeholderZips(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, fn := range functionNames {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.Create("bootstrap")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "#!/bin/sh\n# placeholder for the %s function: terraform plan needs a file to hash\nexit 1\n", fn)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn+".zip"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// offlineProvider is a provider block for plans that must not reach AWS:
// static fake credentials and every account or credential lookup skipped.
const offlineProvider = `provider "aws" {
  region                      = "us-east-1"
  access_key                  = "test"
  secret_key                  = "test"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
}
`

// moduleRoot writes a root module that calls the module copy at modPath with
// the given extra inputs (HCL attribute lines), and returns its directory.
func moduleRoot(t *testing.T, modPath string, inputs string) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(modPath), "root")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := rootBody(modPath, inputs)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// planJSON is the part of `terraform show -json` these tests read.
type planJSON struct {
	FormatVersion string `json:"format_version"`
	PlannedValues struct {
		Outputs map[string]struct {
			Value     any  `json:"value"`
			Sensitive bool `json:"sensitive"`
		} `json:"outputs"`
		RootModule planModule `json:"root_module"`
	} `json:"planned_values"`
	ResourceChanges []struct {
		Address string `json:"address"`
		Change  struct {
			Actions      []string       `json:"actions"`
			AfterUnknown map[string]any `json:"after_unknown"`
		} `json:"change"`
	} `json:"resource_changes"`
}

type planModule struct {
	Address      string         `json:"address"`
	Resources    []planResource `json:"resources"`
	ChildModules []planModule   `json:"child_modules"`
}

// planResource is one planned resource; Values lacks attributes that are
// unknown until apply.
type planResource struct {
	Address string         `json:"address"`
	Mode    string         `json:"mode"`
	Type    string         `json:"type"`
	Name    string         `json:"name"`
	Index   any            `json:"index"`
	Values  map[string]any `json:"values"`
}

// resources returns every managed resource of the plan, all modules.
func (p *planJSON) resources() []planResource {
	var out []planResource
	var walk func(m planModule)
	walk = func(m planModule) {
		for _, r := range m.Resources {
			if r.Mode == "managed" {
				out = append(out, r)
			}
		}
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(p.PlannedValues.RootModule)
	return out
}

// ofType returns the planned resources of type typ keyed by "name[index]"
// ("name" when not indexed).
func (p *planJSON) ofType(typ string) map[string]planResource {
	out := map[string]planResource{}
	for _, r := range p.resources() {
		if r.Type != typ {
			continue
		}
		key := r.Name
		if r.Index != nil {
			key = fmt.Sprintf("%s[%v]", r.Name, r.Index)
		}
		out[key] = r
	}
	return out
}

// str returns values[key] as a string ("" when absent or not a string).
func (r planResource) str(key string) string {
	s, _ := r.Values[key].(string)
	return s
}

// blocks returns values[key] as a list of objects (nested blocks).
func (r planResource) blocks(key string) []map[string]any {
	list, _ := r.Values[key].([]any)
	var out []map[string]any
	for _, v := range list {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestMain removes the certfn provider mirror the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if certfnMirror.dir != "" {
		_ = os.RemoveAll(certfnMirror.dir)
	}
	os.Exit(code)
}
