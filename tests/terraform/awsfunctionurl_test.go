package terraform_test

// Checks of the AWS module's Function URL permissions (since October 2025 a
// new Function URL needs both lambda:InvokeFunctionUrl and
// lambda:InvokeFunction; lambda:InvokeFunction must only ever be granted
// through the URL, condition lambda:InvokedViaFunctionUrl) and of its README
// (every input and output listed).

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAWSFunctionURLPermissions plans the module without and with the
// invoker inputs and checks every permission that reaches the api and http01
// functions. Its plans are shared with TestModulePlan and the IAM tests.
func TestAWSFunctionURLPermissions(t *testing.T) {
	const (
		crossAccount = "arn:aws:iam::210987654321:role/ops"
		clientRole   = "certfn-client"
		platformRole = "arn:aws:iam::123456789012:role/platform-admin" // everyInput's invoker
	)
	cases := []struct {
		name        string
		inputs      string
		prefix      string
		roles       []string // api_invoker_role_names
		cliGrants   map[string]urlGrant
		cfnGrants   map[string]urlGrant // CloudFormation logical ID → grant
		resourceURL []string            // principals of api InvokeFunctionUrl grants
	}{
		{
			// No CLI, no provider version: the stack adds the public
			// InvokeFunction-via-URL statement of http01.
			name: "defaults", inputs: ``, prefix: "certfn",
			cfnGrants: map[string]urlGrant{"Http01InvokeViaUrl": {"certfn-http01", "*"}},
		},
		{
			name: "invokers and CLI grants", prefix: "certfn",
			inputs: fmt.Sprintf("api_invoker_role_names = [%q]\n  api_invoker_arns = [%q]\n  function_url_invoke_permissions_via_cli = true",
				clientRole, crossAccount),
			roles: []string{clientRole},
			// key → function, principal of the InvokeFunction statement.
			cliGrants: map[string]urlGrant{
				"http01":                     {"certfn-http01", "*"},
				"api-" + sha16(crossAccount): {"certfn-api", crossAccount},
			},
			resourceURL: []string{crossAccount},
		},
		{
			// An invoker, no http01: the stack holds the invoker's statement only.
			name: "every input", inputs: everyInput, prefix: "pki",
			cfnGrants:   map[string]urlGrant{"ApiInvokeViaUrl" + sha16(platformRole): {"pki-api", platformRole}},
			resourceURL: []string{platformRole},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planModuleVariant(t, c.inputs, nil)
			apiARN := fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s-api", testRegion, testAccount, c.prefix)
			http01ARN := fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s-http01", testRegion, testAccount, c.prefix)

			// Resource policy through aws_lambda_permission: only
			// lambda:InvokeFunctionUrl, the public one for http01 with
			// auth NONE, the others AWS_IAM on the api. hashicorp/aws 5.x
			// cannot condition lambda:InvokeFunction there, so any such
			// permission would be unconditioned.
			var apiURLPrincipals []string
			for k, pp := range p.ofType("aws_lambda_permission") {
				if pp.str("action") != "lambda:InvokeFunctionUrl" {
					t.Errorf("aws_lambda_permission.%s grants %q: only lambda:InvokeFunctionUrl may be granted by aws_lambda_permission (no condition on lambda:InvokeFunction there)", k, pp.str("action"))
				}
				switch pp.str("function_name") {
				case c.prefix + "-http01":
					if pp.str("principal") != "*" || pp.str("function_url_auth_type") != "NONE" {
						t.Errorf("aws_lambda_permission.%s on http01: %v", k, pp.Values)
					}
				case c.prefix + "-api":
					if pp.str("function_url_auth_type") != "AWS_IAM" || pp.str("principal") == "*" {
						t.Errorf("aws_lambda_permission.%s on api: %v", k, pp.Values)
					}
					apiURLPrincipals = append(apiURLPrincipals, pp.str("principal"))
				default:
					t.Errorf("aws_lambda_permission.%s on unexpected function %q", k, pp.str("function_name"))
				}
			}
			if slices.Sort(apiURLPrincipals); !slices.Equal(apiURLPrincipals, c.resourceURL) {
				t.Errorf("api InvokeFunctionUrl principals = %v, want %v", apiURLPrincipals, c.resourceURL)
			}

			// Identity policies of the api's callers: both actions, the
			// second only via the URL, nothing on other functions.
			pols := map[string]planResource{}
			for _, r := range p.ofType("aws_iam_role_policy") {
				if r.Name == "api_invoker" {
					pols[r.str("role")] = r
				}
			}
			if got := keysOf(pols); !slices.Equal(got, c.roles) && !(len(got) == 0 && len(c.roles) == 0) {
				t.Fatalf("api invoker policies on roles %v, want %v", got, c.roles)
			}
			for role, r := range pols {
				pol, err := parsePolicy(r.str("policy"))
				if err != nil {
					t.Fatalf("invoker policy of %s: %v", role, err)
				}
				checks := []struct {
					name, action, resource string
					ctx                    map[string][]string
					want                   bool
				}{
					{"InvokeFunctionUrl on the api URL", "lambda:InvokeFunctionUrl", apiARN, map[string][]string{"lambda:FunctionUrlAuthType": {"AWS_IAM"}}, true},
					{"InvokeFunction via the api URL", "lambda:InvokeFunction", apiARN, map[string][]string{"lambda:InvokedViaFunctionUrl": {"true"}}, true},
					{"direct InvokeFunction of the api", "lambda:InvokeFunction", apiARN, map[string][]string{"lambda:InvokedViaFunctionUrl": {"false"}}, false},
					{"InvokeFunction without the URL key", "lambda:InvokeFunction", apiARN, nil, false},
					{"InvokeFunction of http01 via its URL", "lambda:InvokeFunction", http01ARN, map[string][]string{"lambda:InvokedViaFunctionUrl": {"true"}}, false},
					{"UpdateFunctionCode of the api", "lambda:UpdateFunctionCode", apiARN, nil, false},
				}
				for _, ch := range checks {
					d, sids, err := evaluate([]iamPolicy{pol}, iamRequest{Action: ch.action, Resource: ch.resource, Context: ch.ctx})
					if err != nil {
						t.Fatalf("%s: %s: %v", role, ch.name, err)
					}
					if (d == allowed) != ch.want {
						t.Errorf("%s: %s: %v (by %v), want allowed=%v", role, ch.name, d, sids, ch.want)
					}
				}
				for _, w := range wildcardAllows([]iamPolicy{pol}, nil) {
					t.Errorf("%s: wildcard in the invoker policy: %s", role, w)
				}
			}

			// lambda:InvokeFunction through the URL, one statement per
			// Function URL caller: by the CloudFormation stack, or by the
			// CLI when asked for, never both.
			stacks := p.ofType("aws_cloudformation_stack")
			if len(c.cfnGrants) == 0 {
				if len(stacks) != 0 {
					t.Errorf("CloudFormation stacks %v, want none", keysOf(stacks))
				}
			} else {
				st, ok := stacks["invoke_via_url[0]"]
				if !ok || len(stacks) != 1 {
					t.Fatalf("CloudFormation stacks %v, want invoke_via_url[0]", keysOf(stacks))
				}
				if st.str("name") != c.prefix+"-invoke-via-url" {
					t.Errorf("stack name %q, want %s-invoke-via-url", st.str("name"), c.prefix)
				}
				checkInvokeViaURLTemplate(t, st.str("template_body"), c.cfnGrants)
			}

			grants := p.ofType("terraform_data")
			var gotKeys, wantKeys []string
			for k := range grants {
				gotKeys = append(gotKeys, k)
			}
			for k := range c.cliGrants {
				wantKeys = append(wantKeys, fmt.Sprintf("invoke_via_url[%s]", k))
			}
			slices.Sort(gotKeys)
			slices.Sort(wantKeys)
			if !slices.Equal(gotKeys, wantKeys) {
				t.Fatalf("terraform_data = %v, want %v", gotKeys, wantKeys)
			}
			for k, want := range c.cliGrants {
				r := grants[fmt.Sprintf("invoke_via_url[%s]", k)]
				trig, _ := r.Values["triggers_replace"].([]any)
				var g map[string]any
				if len(trig) > 0 {
					g, _ = trig[0].(map[string]any)
				}
				if g["function"] != want.function || g["principal"] != want.principal || !strings.HasPrefix(fmt.Sprint(g["sid"]), "certfn-") {
					t.Errorf("invoke_via_url[%s] = %v, want function %s principal %s", k, trig, want.function, want.principal)
				}
			}
		})
	}
}

// urlGrant is a lambda:InvokeFunction-via-URL statement: on function (its
// name), for principal.
type urlGrant struct{ function, principal string }

// checkInvokeViaURLTemplate checks the template of the invoke-via-URL
// stack: exactly the wanted AWS::Lambda::Permission resources (logical ID →
// function, principal), each lambda:InvokeFunction with
// InvokedViaFunctionUrl true (Lambda's condition lambda:InvokedViaFunctionUrl)
// and no other property, so that none grants a direct Invoke.
func checkInvokeViaURLTemplate(t *testing.T, body string, want map[string]urlGrant) {
	t.Helper()
	var tpl struct {
		Resources map[string]struct {
			Type       string         `json:"Type"`
			Properties map[string]any `json:"Properties"`
		} `json:"Resources"`
	}
	if err := json.Unmarshal([]byte(body), &tpl); err != nil {
		t.Fatalf("stack template_body (known at plan) %q: %v", body, err)
	}
	if got, w := keysOf(tpl.Resources), keysOf(want); !slices.Equal(got, w) {
		t.Errorf("template resources %v, want %v", got, w)
	}
	for id, r := range tpl.Resources {
		w := want[id]
		props := r.Properties
		if r.Type != "AWS::Lambda::Permission" || props["Action"] != "lambda:InvokeFunction" || props["InvokedViaFunctionUrl"] != true ||
			props["FunctionName"] != w.function || props["Principal"] != w.principal || len(props) != 4 {
			t.Errorf("template resource %s = %s %v, want AWS::Lambda::Permission lambda:InvokeFunction on %s for %s with InvokedViaFunctionUrl true and nothing else",
				id, r.Type, props, w.function, w.principal)
		}
	}
}

// TestAWSInvokeViaURLCommand: the CLI that adds lambda:InvokeFunction does so
// only with --invoked-via-function-url (the lambda:InvokedViaFunctionUrl
// condition), never as a plain grant.
func TestAWSInvokeViaURLCommand(t *testing.T) {
	cmd := invokeViaURLCommand(t)
	for _, want := range []string{"--action lambda:InvokeFunction ", "--invoked-via-function-url", `--statement-id "$SID"`, `--principal "$PRINCIPAL"`} {
		if !strings.Contains(cmd, want) {
			t.Errorf("the add-permission command lacks %q:\n%s", want, cmd)
		}
	}
}

// invokeViaURLCommand returns the shell command of the module's one
// add-permission provisioner (terraform_data), as written in the HCL.
func invokeViaURLCommand(t *testing.T) string {
	t.Helper()
	c := parseTF(t, moduleDir(t))
	var cmds []string
	for _, b := range c.resources {
		if len(b.Labels) != 2 || b.Labels[0] != "terraform_data" {
			continue
		}
		for _, pb := range b.Body.Blocks {
			if pb.Type != "provisioner" {
				continue
			}
			attr := pb.Body.Attributes["command"]
			if attr == nil {
				t.Fatalf("terraform_data.%s: provisioner without command", b.Labels[1])
			}
			src, err := os.ReadFile(attr.SrcRange.Filename)
			if err != nil {
				t.Fatal(err)
			}
			if cmd := string(src[attr.SrcRange.Start.Byte:attr.SrcRange.End.Byte]); strings.Contains(cmd, "add-permission") {
				// The attribute as written ("command = <<-EOT\n...EOT"): the
				// heredoc's lines (sh ignores their indentation).
				_, body, ok := strings.Cut(cmd, "<<-EOT\n")
				if !ok {
					t.Fatalf("terraform_data.%s: command is not a <<-EOT heredoc:\n%s", b.Labels[1], cmd)
				}
				cmd = strings.TrimSuffix(strings.TrimSpace(body), "EOT")
				cmds = append(cmds, cmd)
			}
		}
	}
	if len(cmds) != 1 {
		t.Fatalf("%d add-permission commands in the module, want 1", len(cmds))
	}
	return cmds[0]
}

// TestAWSREADMEListsInputsAndOutputs: the module README lists every input
// and output, every output (module and example) has a description.
func TestAWSREADMEListsInputsAndOutputs(t *testing.T) {
	c := parseTF(t, moduleDir(t))
	readme, err := os.ReadFile(filepath.Join(moduleDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
			rows[name] = true
		}
	}
	if len(c.variables) == 0 || len(c.outputs) == 0 {
		t.Fatalf("module has %d variables, %d outputs", len(c.variables), len(c.outputs))
	}
	for name := range c.variables {
		if !rows[name] {
			t.Errorf("input %s has no row (| `%s` | ...) in infra/terraform/aws/README.md", name, name)
		}
	}
	for name := range c.outputs {
		if !rows[name] {
			t.Errorf("output %s has no row (| `%s` | ...) in infra/terraform/aws/README.md", name, name)
		}
	}
	for name := range rows {
		if c.variables[name] == nil && c.outputs[name] == nil {
			t.Errorf("README.md lists %s, which is neither an input nor an output", name)
		}
	}
	for _, dir := range []string{moduleDir(t), filepath.Join(moduleDir(t), "examples", "basic")} {
		for name, b := range parseTF(t, dir).outputs {
			if b.Body.Attributes["description"] == nil {
				t.Errorf("%s: output %s has no description", dir, name)
			}
		}
	}
}

// sha16 is Terraform's substr(sha256(s), 0, 16): the module's statement and
// key suffix for a principal.
func sha16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}
