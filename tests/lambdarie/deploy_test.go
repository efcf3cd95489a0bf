package lambdarie

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// motoOverride is written into the temporary copy of the module (never
// the repository), as tests/terraform's TestExampleApplyMoto writes it:
// moto 5.2 ignores RedriveAllowPolicy and the provider would wait for it
// forever, so the two redrive-allow policies are not applied.
const motoOverride = `# tests/lambdarie only: moto 5.2 ignores RedriveAllowPolicy and the
# provider would wait for it forever.
resource "aws_sqs_queue_redrive_allow_policy" "dlq" {
  for_each = {}
}
`

// acmeOverride is written into the temporary copy of the example: the
// example declares a namespaced ACME Issuer (default/acme) but passes the
// module neither acme_server_allow nor acme_allow_private_networks, and
// the worker refuses a namespaced Issuer's server unless it is allowed
// (ACMEServerNotAllowed), and its connections to a loopback address
// unless that is allowed. Pebble runs on 127.0.0.1 here.
const acmeOverride = `# tests/lambdarie only: let the example's namespaced ACME Issuer use
# Pebble on 127.0.0.1 (the example sets neither input).
module "certfn" {
  acme_server_allow           = [var.acme_server_url]
  acme_allow_private_networks = ["127.0.0.1"]
}
`

// deployment is what the applied Terraform state says about the
// functions and their triggers.
type deployment struct {
	Outputs   map[string]any
	Functions map[string]*function // by module key: worker, signer, ...
	Mappings  []mapping            // the SQS event source mappings
	Queues    map[string]queue     // by ARN
	Schedule  schedule
	URLs      map[string]functionURL // by module key: api, http01
}

// function is one aws_lambda_function of the state.
type function struct {
	Key, Name, ARN   string
	Env              map[string]string
	TimeoutSeconds   int
	MemoryMB         int
	SourceCodeHash   string
	Architectures    []string
	LogGroup, LogFmt string
	Handler, Runtime string
}

type mapping struct {
	UUID                   string
	FunctionARN, SourceARN string
	BatchSize              int
	ResponseTypes          []string
	Enabled                bool
}

type queue struct{ ARN, URL, Name string }

type schedule struct {
	Expression, TargetARN, Input string
}

type functionURL struct {
	URL, AuthType, URLID, FunctionName string
}

// stateJSON is the part of `terraform show -json` read here.
type stateJSON struct {
	Values struct {
		Outputs map[string]struct {
			Value any `json:"value"`
		} `json:"outputs"`
		RootModule stateModule `json:"root_module"`
	} `json:"values"`
}

type stateModule struct {
	Resources    []stateResource `json:"resources"`
	ChildModules []stateModule   `json:"child_modules"`
}

type stateResource struct {
	Address string         `json:"address"`
	Mode    string         `json:"mode"`
	Type    string         `json:"type"`
	Name    string         `json:"name"`
	Index   any            `json:"index"`
	Values  map[string]any `json:"values"`
}

func (r stateResource) str(k string) string { s, _ := r.Values[k].(string); return s }

func (r stateResource) num(k string) int { f, _ := r.Values[k].(float64); return int(f) }

func (r stateResource) strs(k string) []string {
	var out []string
	l, _ := r.Values[k].([]any)
	for _, v := range l {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// block returns the first nested block k (Terraform's single blocks are
// lists of one object).
func (r stateResource) block(k string) map[string]any {
	l, _ := r.Values[k].([]any)
	if len(l) == 0 {
		return nil
	}
	m, _ := l[0].(map[string]any)
	return m
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// parseState reads the deployment out of `terraform show -json`.
func parseState(b []byte) (*deployment, error) {
	var s stateJSON
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("terraform show -json: %w", err)
	}
	d := &deployment{Outputs: map[string]any{}, Functions: map[string]*function{}, Queues: map[string]queue{}, URLs: map[string]functionURL{}}
	for k, o := range s.Values.Outputs {
		d.Outputs[k] = o.Value
	}
	var walk func(m stateModule)
	var rs []stateResource
	walk = func(m stateModule) {
		rs = append(rs, m.Resources...)
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(s.Values.RootModule)
	for _, r := range rs {
		if r.Mode != "managed" {
			continue
		}
		key, _ := r.Index.(string)
		switch r.Type {
		case "aws_lambda_function":
			f := &function{Key: key, Name: r.str("function_name"), ARN: r.str("arn"), Env: map[string]string{},
				TimeoutSeconds: r.num("timeout"), MemoryMB: r.num("memory_size"), SourceCodeHash: r.str("source_code_hash"),
				Architectures: r.strs("architectures"), Handler: r.str("handler"), Runtime: r.str("runtime")}
			if e := r.block("environment"); e != nil {
				vars, _ := e["variables"].(map[string]any)
				for k, v := range vars {
					f.Env[k], _ = v.(string)
				}
			}
			if l := r.block("logging_config"); l != nil {
				f.LogGroup, f.LogFmt = str(l, "log_group"), str(l, "log_format")
			}
			d.Functions[key] = f
		case "aws_lambda_event_source_mapping":
			en, _ := r.Values["enabled"].(bool)
			d.Mappings = append(d.Mappings, mapping{UUID: r.str("uuid"), FunctionARN: r.str("function_name"), SourceARN: r.str("event_source_arn"),
				BatchSize: r.num("batch_size"), ResponseTypes: r.strs("function_response_types"), Enabled: en})
		case "aws_sqs_queue":
			d.Queues[r.str("arn")] = queue{ARN: r.str("arn"), URL: r.str("url"), Name: r.str("name")}
		case "aws_scheduler_schedule":
			t := r.block("target")
			d.Schedule = schedule{Expression: r.str("schedule_expression"), TargetARN: str(t, "arn"), Input: str(t, "input")}
		case "aws_lambda_function_url":
			d.URLs[r.Name] = functionURL{URL: r.str("function_url"), AuthType: r.str("authorization_type"),
				URLID: r.str("url_id"), FunctionName: r.str("function_name")}
		}
	}
	if len(d.Functions) == 0 || len(d.Mappings) == 0 || d.Schedule.TargetARN == "" {
		return nil, fmt.Errorf("state: %d functions, %d event source mappings, schedule target %q: not the example's deployment",
			len(d.Functions), len(d.Mappings), d.Schedule.TargetARN)
	}
	return d, nil
}

// output returns the string output name.
func (d *deployment) output(t testing.TB, name string) string {
	t.Helper()
	s, ok := d.Outputs[name].(string)
	if !ok || s == "" {
		t.Fatalf("terraform output %s = %v, want a string", name, d.Outputs[name])
	}
	return s
}

// byARN returns the function whose ARN (or name) is arn.
func (d *deployment) byARN(arn string) *function {
	for _, f := range d.Functions {
		if f.ARN == arn || f.Name == arn {
			return f
		}
	}
	return nil
}

// applyExample copies the module with the moto and ACME overrides, applies
// the example on moto with vars and returns the state. Nothing is
// destroyed: moto's state ends with its process.
func applyExample(t *testing.T, root, tmp, awsMirror, certfnMirror string, vars map[string]string) *deployment {
	t.Helper()
	mod := filepath.Join(tmp, "aws")
	if err := copyModule(root, mod); err != nil {
		t.Fatalf("copy the module: %v", err)
	}
	ex := filepath.Join(mod, "examples", "basic")
	for path, body := range map[string]string{
		filepath.Join(mod, "moto_override.tf"): motoOverride,
		filepath.Join(ex, "rie_override.tf"):   acmeOverride,
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newTF(t, ex, awsMirror, certfnMirror)
	var args []string
	for k, v := range vars {
		args = append(args, "-var", k+"="+v)
	}
	r.run("init", "-input=false", "-no-color")
	out := r.run(append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, args...)...)
	if os.Getenv("CERTFN_TEST_LOG") == "1" {
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "complete after") {
				t.Log(l)
			}
		}
	}
	d, err := parseState(r.run("show", "-json", "-no-color"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// hclList is a list of strings as a -var value.
func hclList(items ...string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}
