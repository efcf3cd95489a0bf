// Package lambdarie runs certfn's AWS functions the way Lambda runs them.
// TestLambdaRIE applies infra/terraform/aws/examples/basic on moto_server
// (as tests/terraform's TestExampleApplyMoto does), with the zips `make
// lambda` builds for this machine's architecture. It then starts each
// zip's `bootstrap` under the AWS Lambda runtime interface emulator (RIE,
// cmd/aws-lambda-rie: the Runtime API that the provided.al2023 runtime
// gives a bootstrap), one RIE per function, with the environment that the
// applied Terraform state gave the function. Only the AWS endpoint
// (moto) and the credentials are added. Nothing runs in this process
// except what is labelled as a STAND-IN:
//
//   - the SQS event source mapping (esm_test.go): receive a batch from
//     the mapping's queue, invoke the function with Lambda's SQS event,
//     delete every message but the batchItemFailures;
//   - EventBridge Scheduler (schedule_test.go): invokes the scheduler with
//     the schedule target's input at the schedule's rate;
//   - the Function URLs (furl_test.go): the api is invoked with the
//     Function URL event AWS sends for an AWS_IAM URL (the IAM caller in
//     requestContext.authorizer.iam), and an HTTP front on 127.0.0.1:80
//     turns each request (Pebble's HTTP-01 validation, the worker's
//     self-check) into the http01 function's Function URL event.
//
// moto gaps, each handled explicitly: RedriveAllowPolicy is not applied
// (motoOverride, as in tests/terraform); moto's own event source mappings
// are disabled after apply (disableMotoMappings: moto would take the
// queues' messages for functions it cannot run); moto's DynamoDB
// conditional writes are not atomic under concurrency, which only the
// functions' own concurrency exercises here (the store's contract is
// tested on dynalite).
//
// The flows (flows_test.go): a CA issuance, an ACME HTTP-01 issuance
// against Pebble (in this process, tests/pebbletest) and a renewal.
// `make test` runs a sample (the CA and ACME issuances); `make
// test-cloud` (CERTFN_TEST_CLOUD=1) runs them all, the renewal included,
// which waits in real time for a 10-minute certificate's renewal point.
//
// Tools: terraform and moto_server are preinstalled (missing: a failure);
// the RIE is built from its Go module once into .tools/ at the
// repository root; the zips are built once per run, as `make lambda`
// builds them, into a temporary directory.
package lambdarie

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/tools/lambdazip/zipper"
)

// rieModule is the emulator's Go package and version (built by rieBinary).
const (
	rieModule  = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	rieVersion = "v0.0.0-20261030222936-bef5c4ba774d"
)

// region is the example's default region, and the region of the functions.
const region = "us-east-1"

// functionNames are the functions the module deploys: core/app's.
func functionNames() []string {
	var names []string
	for _, r := range app.Functions {
		names = append(names, r.Name)
	}
	return names
}

// repoRoot returns the repository root (two levels above this package).
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// rieBinary returns the RIE, built with the go command from its module
// into <repo>/.tools/aws-lambda-rie/<version>/ when not there yet (the
// build goes to a temporary name first, so concurrent runs never see a
// partial binary).
func rieBinary(root string) (string, error) {
	dir := filepath.Join(root, ".tools", "aws-lambda-rie", rieVersion)
	bin := filepath.Join(dir, "aws-lambda-rie")
	if st, err := os.Stat(bin); err == nil && st.Mode()&0o111 != 0 {
		return bin, nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(root, ".tools"), ".rie-build-")
	if err != nil {
		if err = os.MkdirAll(filepath.Join(root, ".tools"), 0o755); err == nil {
			tmp, err = os.MkdirTemp(filepath.Join(root, ".tools"), ".rie-build-")
		}
		if err != nil {
			return "", err
		}
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "install", rieModule+"@"+rieVersion)
	cmd.Dir = tmp // outside certfn's module: its go.mod does not list the RIE
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %v\n%s", rieModule, rieVersion, err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "aws-lambda-rie"), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// lambdaArch is Lambda's name of this machine's architecture (the
// module's lambda_architecture) for GOARCH.
func lambdaArch(goarch string) (string, error) {
	switch goarch {
	case "amd64":
		return "x86_64", nil
	case "arm64":
		return "arm64", nil
	}
	return "", fmt.Errorf("GOARCH %s: Lambda runs x86_64 (amd64) and arm64 only", goarch)
}

// buildZips builds every function's main as `make lambda` does (static,
// stripped, -trimpath, lambda.norpc) for linux and this machine's
// architecture, in one go build so that the five link at once, and zips
// each with tools/lambdazip's zipper (what `make lambda` runs) as
// <dir>/<fn>.zip (what lambda_zip_dir expects). It returns dir.
func buildZips(tmp string) (string, error) {
	bins, dir := filepath.Join(tmp, "build"), filepath.Join(tmp, "zips")
	args := []string{"build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", bins + string(filepath.Separator)}
	for _, fn := range functionNames() {
		args = append(args, "github.com/certfn/certfn/functions/aws/"+fn)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	for _, fn := range functionNames() {
		if err := zipper.WriteFile(filepath.Join(dir, fn+".zip"), filepath.Join(bins, fn)); err != nil {
			return "", fmt.Errorf("zip %s: %w", fn, err)
		}
	}
	return dir, nil
}

// unpackBootstrap extracts the zip's bootstrap into dir (Lambda's
// /var/task) and returns its path. Lambda runs the file as it is in the
// zip: one without its executable bits fails there, so it fails here.
func unpackBootstrap(zipPath, dir string) (string, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != "bootstrap" {
			continue
		}
		if f.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s: bootstrap has mode %v: Lambda cannot execute it", zipPath, f.Mode())
		}
		rc, err := f.Open()
		if err != nil {
			return "", err
		}
		defer rc.Close()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		p := filepath.Join(dir, "bootstrap")
		w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, f.Mode().Perm())
		if err != nil {
			return "", err
		}
		if _, err := io.Copy(w, rc); err != nil {
			w.Close()
			return "", err
		}
		return p, w.Close()
	}
	return "", fmt.Errorf("%s has no bootstrap file at its root", zipPath)
}

// zipHash is Terraform's filebase64sha256 of the file (the function's
// source_code_hash).
func zipHash(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// terraformBin returns the terraform binary: $TERRAFORM, else terraform in
// PATH (as tests/terraform finds it). Missing is a failure, never a skip.
func terraformBin() (string, error) {
	if p := os.Getenv("TERRAFORM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("TERRAFORM=%s: %w", p, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		return "", fmt.Errorf("terraform is not installed (or not in PATH; set TERRAFORM): %w", err)
	}
	return p, nil
}

// providerMirror returns a filesystem mirror holding
// registry.terraform.io/hashicorp/aws: $CERTFN_TF_PLUGIN_MIRROR, else the
// first of the usual places that has it (tests/terraform's search).
func providerMirror() (string, error) {
	has := func(dir string) bool {
		st, err := os.Stat(filepath.Join(dir, "registry.terraform.io", "hashicorp", "aws"))
		return err == nil && st.IsDir()
	}
	if d := os.Getenv("CERTFN_TF_PLUGIN_MIRROR"); d != "" {
		if !has(d) {
			return "", fmt.Errorf("CERTFN_TF_PLUGIN_MIRROR=%s has no registry.terraform.io/hashicorp/aws", d)
		}
		return d, nil
	}
	candidates := []string{"/opt/tf-plugins", "/usr/local/share/terraform/plugins", "/usr/share/terraform/plugins"}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".terraform.d", "plugins"), filepath.Join(home, ".local", "share", "terraform", "plugins"))
	}
	for _, d := range candidates {
		if has(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no filesystem mirror of hashicorp/aws found in %v; set CERTFN_TF_PLUGIN_MIRROR to a directory holding registry.terraform.io/hashicorp/aws/<version>/<os_arch>", candidates)
}

// buildProviderMirror builds certfn's Terraform provider into a filesystem
// mirror under tmp (as `make provider` installs it): the example requires
// it, although with manage_certificates = false it manages nothing.
func buildProviderMirror(root, tmp string) (string, error) {
	dir := filepath.Join(tmp, "certfn-provider-mirror")
	const version = "0.0.1"
	out := filepath.Join(dir, "registry.terraform.io", "certfn", "certfn", version, runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-certfn_v"+version)
	cmd := exec.Command("go", "build", "-o", out, "./cmd/terraform-provider-certfn")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/terraform-provider-certfn: %v\n%s", err, b)
	}
	return dir, nil
}

// tf runs the terraform CLI in dir with an isolated environment: a CLI
// configuration installing providers from the mirrors only, fake AWS
// credentials and no inherited AWS_* or TF_* variables.
type tf struct {
	t   testing.TB
	bin string
	dir string
	env []string
}

func newTF(t testing.TB, dir, awsMirror, certfnMirror string) *tf {
	t.Helper()
	bin, err := terraformBin()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "terraform.rc")
	body := fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/hashicorp/aws"]
  }
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/certfn/certfn"]
  }
  direct {
    exclude = ["registry.terraform.io/hashicorp/aws", "registry.terraform.io/certfn/certfn"]
  }
}
`, awsMirror, certfnMirror)
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
	env = append(env, "TF_CLI_CONFIG_FILE="+cfg, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION="+region, "AWS_EC2_METADATA_DISABLED=true")
	return &tf{t: t, bin: bin, dir: dir, env: env}
}

// run executes terraform with args and returns stdout; a non-zero exit
// fails the test with both streams.
func (r *tf) run(args ...string) []byte {
	r.t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("terraform %s (in %s): %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.dir, err, o.Bytes(), e.Bytes())
	}
	return o.Bytes()
}

// copyModule copies infra/terraform/aws (without .terraform directories,
// state or plans) into dst: init and apply write next to the root module,
// never into the repository.
func copyModule(root, dst string) error {
	src := filepath.Join(root, "infra", "terraform", "aws")
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
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
}

// parallel runs fns at once and returns their errors joined by name.
func parallel(fns map[string]func() error) error {
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	for name, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil {
				mu.Lock()
				errs = append(errs, name+": "+err.Error())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}
