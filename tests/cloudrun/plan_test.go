package cloudrun

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// repoRoot is the repository root (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("runtime.Caller failed")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// googleMirror returns the filesystem mirror holding the real
// hashicorp/google provider: $CERTFN_TF_GOOGLE_MIRROR, else shared/terraform-mirror
// beside the repository or one of its parents. Missing is a failure.
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
	var tried []string
	for dir := filepath.Dir(repoRoot(t)); ; dir = filepath.Dir(dir) {
		d := filepath.Join(dir, "shared", "terraform-mirror")
		if has(d) {
			return d
		}
		tried = append(tried, d)
		if dir == filepath.Dir(dir) {
			break
		}
	}
	t.Fatalf("no filesystem mirror of hashicorp/google in %v; set CERTFN_TF_GOOGLE_MIRROR", tried)
	return ""
}

// terraformBin is $TERRAFORM, else terraform in PATH; missing is a failure.
func terraformBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TERRAFORM"); p != "" {
		return p
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatalf("terraform is not installed (or not in PATH; set TERRAFORM): %v", err)
	}
	return p
}

// planInputs are the module inputs of the test deployment: what an
// operator running the CA and ACME flows would set.
type planInputs struct {
	Project, ProjectNumber, Region string
	// APIUser is the e-mail of the one api invoker and admin.
	APIUser string
}

// rootModule calls infra/terraform/gcp with in; the provider gets a fake
// access token (the plan is offline: -refresh=false, and project_number
// is given, so no data source is read).
func rootModule(module string, in planInputs) string {
	return fmt.Sprintf(`provider "google" {
  project      = %[2]q
  region       = %[4]q
  access_token = "fake-offline-plan"
}

module "certfn" {
  source                         = %[1]q
  project                        = %[2]q
  project_number                 = %[3]q
  region                         = %[4]q
  image                          = "%[4]s-docker.pkg.dev/%[2]s/certfn/certfn:test"
  approver                       = "cert-manager"
  worker_manages_ca_certificates = true
  api_invoker_members            = ["user:%[5]s"]
  api_admins                     = [%[5]q]
}
`, module, in.Project, in.ProjectNumber, in.Region, in.APIUser)
}

// plannedDeployment is what the plan of infra/terraform/gcp says about the
// parts the services meet at run time.
type plannedDeployment struct {
	Project, ProjectNumber, Region string
	// APIUser is the api's invoker and admin (planInputs.APIUser).
	APIUser string
	// Services by function (worker, signer, scheduler, api, http01).
	Services map[string]*plannedService
	// Topics are every topic's short name.
	Topics []string
	// Push are the push subscriptions by the function they push to.
	Push map[string]plannedPush
	// DeadLetter are the dead-letter pull subscriptions by function.
	DeadLetter map[string]plannedPull
	Scheduler  plannedScheduler
	Tasks      plannedTasks
}

type plannedService struct {
	Function, Name, ServiceAccount string
	Env                            map[string]string
	Timeout                        time.Duration
	// Invokers are the members of roles/run.invoker on the service.
	Invokers []string
}

// URL is the service's deterministic Cloud Run URL
// (https://<service>-<project number>.<region>.run.app), the audience of
// the ID tokens its callers send.
func (d *plannedDeployment) URL(fn string) string {
	return fmt.Sprintf("https://%s-%s.%s.run.app", d.Services[fn].Name, d.ProjectNumber, d.Region)
}

type plannedPush struct {
	Name, Topic, DeadLetterTopic string
	AckDeadline                  time.Duration
	MinBackoff, MaxBackoff       time.Duration
	MaxDeliveryAttempts          int
	// OIDCServiceAccount signs the pushes' ID tokens.
	OIDCServiceAccount string
}

type plannedPull struct{ Name, Topic string }

type plannedScheduler struct {
	Method, Schedule   string
	Headers            map[string]string
	Body               []byte
	OIDCServiceAccount string
	Deadline           time.Duration
}

type plannedTasks struct {
	// Queue is projects/P/locations/L/queues/Q.
	Queue                    string
	MaxAttempts, MaxDoubling int
	MinBackoff, MaxBackoff   time.Duration
	// Host is the host every task is sent to (uri_override, enforced).
	Host string
}

// planGCP runs `terraform init` and an offline `terraform plan` of a root
// module calling infra/terraform/gcp with in, against the real
// hashicorp/google provider of the mirror, and reads `terraform show
// -json` of the plan.
func planGCP(t *testing.T, in planInputs) *plannedDeployment {
	t.Helper()
	tf := terraformBin(t)
	dir := t.TempDir()
	cli := filepath.Join(dir, "cli.tfrc")
	mirror := googleMirror(t)
	timeDir, err := buildTimeMirror(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cli, []byte(fmt.Sprintf(`provider_installation {
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
`, mirror, timeDir)), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "main.tf"), []byte(rootModule(filepath.Join(repoRoot(t), "infra", "terraform", "gcp"), in)), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(tf, append([]string{"-chdir=" + root}, args...)...)
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cli, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1",
			"TF_DATA_DIR="+filepath.Join(dir, "data"))
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("terraform %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr)
		}
		return out
	}
	run("init", "-backend=false", "-input=false", "-no-color")
	run("plan", "-refresh=false", "-input=false", "-lock=false", "-no-color", "-out="+filepath.Join(dir, "tfplan"))
	js := run("show", "-json", filepath.Join(dir, "tfplan"))
	d, err := readPlan(js, in)
	if err != nil {
		t.Fatalf("the plan of infra/terraform/gcp: %v", err)
	}
	return d
}

// planJSON is the part of `terraform show -json` read here.
type planJSON struct {
	ResourceChanges []struct {
		Address string          `json:"address"`
		Type    string          `json:"type"`
		Index   json.RawMessage `json:"index"`
		Change  struct {
			Actions []string        `json:"actions"`
			After   json.RawMessage `json:"after"`
		} `json:"change"`
	} `json:"resource_changes"`
}

// readPlan extracts the deployment from the plan's resource changes.
func readPlan(js []byte, in planInputs) (*plannedDeployment, error) {
	var p planJSON
	if err := json.Unmarshal(js, &p); err != nil {
		return nil, err
	}
	d := &plannedDeployment{Project: in.Project, ProjectNumber: in.ProjectNumber, Region: in.Region, APIUser: in.APIUser,
		Services: map[string]*plannedService{}, Push: map[string]plannedPush{}, DeadLetter: map[string]plannedPull{}}
	topicOf := map[string]string{} // function → work topic (google_pubsub_topic.work)
	dlqOf := map[string]string{}
	invokers := map[string][]string{} // service name → members
	var problems []string
	for _, rc := range p.ResourceChanges {
		if !slices.Equal(rc.Change.Actions, []string{"create"}) {
			continue
		}
		var key string
		_ = json.Unmarshal(rc.Index, &key)
		dec := func(v any) {
			if err := json.Unmarshal(rc.Change.After, v); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", rc.Address, err))
			}
		}
		switch rc.Type {
		case "google_cloud_run_v2_service":
			var s struct {
				Name     string `json:"name"`
				Template []struct {
					ServiceAccount string `json:"service_account"`
					Timeout        string `json:"timeout"`
					Containers     []struct {
						Env []struct {
							Name  string  `json:"name"`
							Value *string `json:"value"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"template"`
			}
			dec(&s)
			if len(s.Template) != 1 || len(s.Template[0].Containers) != 1 {
				problems = append(problems, rc.Address+": want one template with one container")
				continue
			}
			ps := &plannedService{Function: key, Name: s.Name, ServiceAccount: s.Template[0].ServiceAccount, Env: map[string]string{}}
			for _, e := range s.Template[0].Containers[0].Env {
				if e.Value == nil {
					problems = append(problems, fmt.Sprintf("%s: env %s has no value known at plan time", rc.Address, e.Name))
					continue
				}
				ps.Env[e.Name] = *e.Value
			}
			var err error
			if ps.Timeout, err = time.ParseDuration(s.Template[0].Timeout); err != nil {
				problems = append(problems, fmt.Sprintf("%s: timeout: %v", rc.Address, err))
			}
			d.Services[key] = ps
		case "google_cloud_run_v2_service_iam_member":
			var m struct{ Name, Role, Member string }
			dec(&m)
			if m.Role == "roles/run.invoker" {
				invokers[m.Name] = append(invokers[m.Name], m.Member)
			}
		case "google_pubsub_topic":
			var tp struct{ Name string }
			dec(&tp)
			d.Topics = append(d.Topics, tp.Name)
			switch {
			case strings.HasSuffix(rc.Address, ".work[\""+key+"\"]"):
				topicOf[key] = tp.Name
			case strings.HasSuffix(rc.Address, ".dead_letter[\""+key+"\"]"):
				dlqOf[key] = tp.Name
			}
		case "google_pubsub_subscription":
			var s struct {
				Name        string `json:"name"`
				AckDeadline int    `json:"ack_deadline_seconds"`
				PushConfig  []struct {
					OIDC []struct {
						ServiceAccount string `json:"service_account_email"`
					} `json:"oidc_token"`
				} `json:"push_config"`
				Retry []struct {
					Min string `json:"minimum_backoff"`
					Max string `json:"maximum_backoff"`
				} `json:"retry_policy"`
				DeadLetter []struct {
					Topic       string `json:"dead_letter_topic"`
					MaxAttempts int    `json:"max_delivery_attempts"`
				} `json:"dead_letter_policy"`
			}
			dec(&s)
			if len(s.PushConfig) == 0 {
				d.DeadLetter[key] = plannedPull{Name: s.Name}
				continue
			}
			if len(s.PushConfig[0].OIDC) != 1 || len(s.Retry) != 1 || len(s.DeadLetter) != 1 {
				problems = append(problems, rc.Address+": want an OIDC token, a retry policy and a dead-letter policy")
				continue
			}
			min, err1 := time.ParseDuration(s.Retry[0].Min)
			max, err2 := time.ParseDuration(s.Retry[0].Max)
			if err1 != nil || err2 != nil {
				problems = append(problems, fmt.Sprintf("%s: retry policy %v %v", rc.Address, err1, err2))
			}
			d.Push[key] = plannedPush{Name: s.Name, AckDeadline: time.Duration(s.AckDeadline) * time.Second, MinBackoff: min, MaxBackoff: max,
				DeadLetterTopic: s.DeadLetter[0].Topic, MaxDeliveryAttempts: s.DeadLetter[0].MaxAttempts,
				OIDCServiceAccount: s.PushConfig[0].OIDC[0].ServiceAccount}
		case "google_cloud_scheduler_job":
			var j struct {
				Schedule        string `json:"schedule"`
				AttemptDeadline string `json:"attempt_deadline"`
				HTTPTarget      []struct {
					Method  string            `json:"http_method"`
					Headers map[string]string `json:"headers"`
					Body    string            `json:"body"`
					OIDC    []struct {
						ServiceAccount string `json:"service_account_email"`
					} `json:"oidc_token"`
				} `json:"http_target"`
			}
			dec(&j)
			if len(j.HTTPTarget) != 1 || len(j.HTTPTarget[0].OIDC) != 1 {
				problems = append(problems, rc.Address+": want an HTTP target with an OIDC token")
				continue
			}
			h := j.HTTPTarget[0]
			body, err := base64.StdEncoding.DecodeString(h.Body)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: body: %v", rc.Address, err))
			}
			deadline, err := time.ParseDuration(j.AttemptDeadline)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: attempt_deadline: %v", rc.Address, err))
			}
			d.Scheduler = plannedScheduler{Method: h.Method, Schedule: j.Schedule, Headers: h.Headers, Body: body,
				OIDCServiceAccount: h.OIDC[0].ServiceAccount, Deadline: deadline}
		case "google_cloud_tasks_queue":
			var q struct {
				Name     string `json:"name"`
				Location string `json:"location"`
				Project  string `json:"project"`
				Retry    []struct {
					MaxAttempts  int    `json:"max_attempts"`
					MinBackoff   string `json:"min_backoff"`
					MaxBackoff   string `json:"max_backoff"`
					MaxDoublings int    `json:"max_doublings"`
				} `json:"retry_config"`
				HTTPTarget []struct {
					URIOverride []struct {
						Host string `json:"host"`
						Mode string `json:"uri_override_enforce_mode"`
					} `json:"uri_override"`
				} `json:"http_target"`
			}
			dec(&q)
			if len(q.Retry) != 1 || len(q.HTTPTarget) != 1 || len(q.HTTPTarget[0].URIOverride) != 1 {
				problems = append(problems, rc.Address+": want a retry config and an HTTP target with a URI override")
				continue
			}
			min, err1 := time.ParseDuration(q.Retry[0].MinBackoff)
			max, err2 := time.ParseDuration(q.Retry[0].MaxBackoff)
			if err1 != nil || err2 != nil {
				problems = append(problems, fmt.Sprintf("%s: retry config %v %v", rc.Address, err1, err2))
			}
			d.Tasks = plannedTasks{Queue: "projects/" + q.Project + "/locations/" + q.Location + "/queues/" + q.Name,
				MaxAttempts: q.Retry[0].MaxAttempts, MaxDoubling: q.Retry[0].MaxDoublings, MinBackoff: min, MaxBackoff: max,
				Host: q.HTTPTarget[0].URIOverride[0].Host}
		}
	}
	for fn, s := range d.Services {
		s.Invokers = invokers[s.Name]
		if len(s.Invokers) == 0 {
			problems = append(problems, "service "+fn+": no roles/run.invoker member")
		}
	}
	for fn, p := range d.Push {
		p.Topic = "projects/" + in.Project + "/topics/" + topicOf[fn]
		if topicOf[fn] == "" || dlqOf[fn] == "" {
			problems = append(problems, "push subscription "+fn+": no work or dead-letter topic")
		}
		d.Push[fn] = p
		if dl, ok := d.DeadLetter[fn]; ok {
			dl.Topic = "projects/" + in.Project + "/topics/" + dlqOf[fn]
			d.DeadLetter[fn] = dl
		}
	}
	for _, fn := range []string{"worker", "signer", "scheduler", "api", "http01"} {
		if d.Services[fn] == nil {
			problems = append(problems, "no Cloud Run service "+fn)
		}
	}
	for _, fn := range []string{"worker", "signer"} {
		if _, ok := d.Push[fn]; !ok {
			problems = append(problems, "no push subscription to "+fn)
		}
		if _, ok := d.DeadLetter[fn]; !ok {
			problems = append(problems, "no dead-letter subscription of "+fn)
		}
	}
	if d.Scheduler.Method == "" {
		problems = append(problems, "no Cloud Scheduler job")
	}
	if d.Tasks.Queue == "" {
		problems = append(problems, "no Cloud Tasks queue")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return d, nil
}

// timeVersion is the hashicorp/time build the module's first-apply waits
// are planned with (as tests/terraform plans them).
const timeVersion = "0.14.2"

// buildTimeMirror builds hashicorp/time timeVersion with `go install` of
// the provider's module at that version (Go's module proxy) into
// .tools/terraform-mirror of the repository root (ignored by git), as
// tests/terraform does, and returns that mirror; a binary already there
// is reused when `go version -m` shows it is that module at that version.
func buildTimeMirror(root string) (string, error) {
	dir := filepath.Join(root, ".tools", "terraform-mirror")
	binDir := filepath.Join(dir, "registry.terraform.io", "hashicorp", "time", timeVersion, runtime.GOOS+"_"+runtime.GOARCH)
	bin := filepath.Join(binDir, "terraform-provider-time_v"+timeVersion)
	if out, err := exec.Command("go", "version", "-m", bin).Output(); err == nil &&
		strings.Contains(string(out), "github.com/hashicorp/terraform-provider-time\tv"+timeVersion) {
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
	pkg := "github.com/hashicorp/terraform-provider-time@v" + timeVersion
	cmd := exec.Command("go", "install", pkg)
	cmd.Dir = gobin
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOWORK=off", "GOFLAGS=-trimpath", "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s: %v\n%s", pkg, err, b)
	}
	return dir, os.Rename(filepath.Join(gobin, "terraform-provider-time"), bin)
}
