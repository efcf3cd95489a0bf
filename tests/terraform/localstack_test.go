package terraform_test

// Checks of localstack/ that need no Docker engine (there is none on the
// project's machines): the compose file parses and its pieces agree with
// each other and with the Terraform example, the Pebble configuration sends
// HTTP-01 validations to LocalStack's edge port, and the scripts are valid
// shell. `make localstack-e2e` itself needs Docker (docs/deploy/aws.md).

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// composeFile is the part of docker-compose.yml the checks read.
type composeFile struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
	Networks map[string]struct {
		Name string `json:"name"`
		IPAM struct {
			Config []struct {
				Subnet string `json:"subnet"`
			} `json:"config"`
		} `json:"ipam"`
	} `json:"networks"`
}

type composeService struct {
	Image       string            `json:"image"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	Ports       []string          `json:"ports"`
	Volumes     []string          `json:"volumes"`
	DependsOn   []string          `json:"depends_on"`
	Healthcheck *struct {
		Test        []string `json:"test"`
		Interval    string   `json:"interval"`
		Timeout     string   `json:"timeout"`
		Retries     int      `json:"retries"`
		StartPeriod string   `json:"start_period"`
	} `json:"healthcheck"`
	Networks map[string]struct {
		IPv4Address string `json:"ipv4_address"`
	} `json:"networks"`
}

func localstackDir(t *testing.T) string { return filepath.Join(repoRoot(t), "localstack") }

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(localstackDir(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// Strict: a key this struct does not know is a typo until proven
	// otherwise (add it here when the compose file grows).
	var c composeFile
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// exampleEndpointServices returns the services named in the endpoints block
// of the example's provider, as LocalStack's SERVICES names them.
func exampleEndpointServices(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleDir(t), "examples", "basic", "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)endpoints\s*\{(.*?)\n\s*\}`).FindSubmatch(b)
	if block == nil {
		t.Fatal("examples/basic/main.tf: no endpoints block")
	}
	alias := map[string]string{"cloudwatchlogs": "logs"}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s*([a-z0-9]+)\s*=\s*var\.aws_endpoint_url\s*$`).FindAllSubmatch(block[1], -1) {
		name := string(m[1])
		if a, ok := alias[name]; ok {
			name = a
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// flagValue returns the argument after flag in args ("" and false when absent).
func flagValue(args []string, flag string) (string, bool) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1], true
		}
	}
	return "", false
}

func TestLocalStackCompose(t *testing.T) {
	c := readCompose(t)
	for _, s := range []string{"localstack", "pebble", "challtestsrv"} {
		if _, ok := c.Services[s]; !ok {
			t.Fatalf("docker-compose.yml: no service %q (has %v)", s, keysOf(c.Services))
		}
	}
	ls, pebble, dns := c.Services["localstack"], c.Services["pebble"], c.Services["challtestsrv"]
	for name, s := range c.Services {
		if s.Image == "" || !strings.Contains(s.Image, ":") {
			t.Errorf("service %s: image %q has no tag", name, s.Image)
		}
	}

	// LocalStack runs every service the Terraform example talks to.
	got := strings.Split(ls.Environment["SERVICES"], ",")
	sort.Strings(got)
	if want := exampleEndpointServices(t); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("localstack SERVICES = %v, the example's provider endpoints = %v", got, want)
	}

	// Lambda containers: the docker socket, on the compose network.
	if !slices.ContainsFunc(ls.Volumes, func(v string) bool { return strings.HasPrefix(v, "/var/run/docker.sock:") }) {
		t.Errorf("localstack does not mount the docker socket (volumes %v): Lambda needs it", ls.Volumes)
	}
	net, ok := c.Networks["certfn"]
	if !ok || net.Name == "" || ls.Environment["LAMBDA_DOCKER_NETWORK"] != net.Name {
		t.Errorf("LAMBDA_DOCKER_NETWORK = %q, network certfn is named %q", ls.Environment["LAMBDA_DOCKER_NETWORK"], net.Name)
	}
	if !slices.ContainsFunc(ls.Volumes, func(v string) bool { return strings.HasPrefix(v, "./init/ready.d:/etc/localstack/init/ready.d") }) {
		t.Errorf("localstack does not mount init/ready.d: %v", ls.Volumes)
	}
	if ls.Healthcheck == nil || len(ls.Healthcheck.Test) == 0 {
		t.Error("localstack has no healthcheck (e2e.sh waits with up --wait)")
	}

	// The endpoint the example is applied with is LocalStack's published port.
	vars := localstackVars(t)
	ep, _ := vars["aws_endpoint_url"].(string)
	u, err := url.Parse(ep)
	if err != nil || u.Port() == "" {
		t.Fatalf("aws_endpoint_url %q: %v", ep, err)
	}
	if !slices.ContainsFunc(ls.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+u.Port()+":4566") || p == u.Port()+":4566" }) {
		t.Errorf("aws_endpoint_url %s, but localstack publishes %v", ep, ls.Ports)
	}

	// Pebble resolves names with challtestsrv, which answers LocalStack's
	// address: HTTP-01 validation of a Function URL host reaches LocalStack.
	ip := func(s composeService) string { return s.Networks["certfn"].IPv4Address }
	if ip(ls) == "" || ip(pebble) == "" || ip(dns) == "" {
		t.Fatalf("fixed addresses missing: localstack %q pebble %q challtestsrv %q", ip(ls), ip(pebble), ip(dns))
	}
	if v, _ := flagValue(dns.Command, "-defaultIPv4"); v != ip(ls) {
		t.Errorf("challtestsrv -defaultIPv4 = %q, want localstack's %s", v, ip(ls))
	}
	if v, ok := flagValue(dns.Command, "-defaultIPv6"); !ok || v != "" {
		t.Errorf("challtestsrv -defaultIPv6 = %q, want empty (Pebble tries AAAA first)", v)
	}
	dnsAddr, _ := flagValue(dns.Command, "-dns01")
	_, dnsPort, _ := strings.Cut(dnsAddr, ":")
	if v, _ := flagValue(pebble.Command, "-dnsserver"); v != ip(dns)+":"+dnsPort {
		t.Errorf("pebble -dnsserver = %q, want challtestsrv's %s:%s", v, ip(dns), dnsPort)
	}
	if !slices.Contains(pebble.DependsOn, "challtestsrv") {
		t.Error("pebble does not depend on challtestsrv")
	}

	// Pebble's configuration, mounted where -config points.
	cfgPath, _ := flagValue(pebble.Command, "-config")
	if !slices.Contains(pebble.Volumes, "./pebble-config.json:"+cfgPath+":ro") {
		t.Errorf("pebble -config %s is not the mounted ./pebble-config.json (volumes %v)", cfgPath, pebble.Volumes)
	}
	var pc struct {
		Pebble struct {
			ListenAddress string `json:"listenAddress"`
			HTTPPort      int    `json:"httpPort"`
		} `json:"pebble"`
	}
	b, err := os.ReadFile(filepath.Join(localstackDir(t), "pebble-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pc); err != nil {
		t.Fatalf("pebble-config.json: %v", err)
	}
	if pc.Pebble.HTTPPort != 4566 {
		t.Errorf("pebble httpPort = %d, want 4566 (LocalStack's port, which routes Function URL hosts)", pc.Pebble.HTTPPort)
	}
	acme, _ := vars["acme_server_url"].(string)
	au, err := url.Parse(acme)
	if err != nil || au.Hostname() != "pebble" {
		t.Errorf("acme_server_url %q does not name the pebble service", acme)
	} else if _, port, _ := strings.Cut(pc.Pebble.ListenAddress, ":"); port != au.Port() {
		t.Errorf("acme_server_url port %s, pebble listens on %s", au.Port(), pc.Pebble.ListenAddress)
	}
	if skip, _ := vars["acme_skip_tls_verify"].(bool); !skip {
		t.Error("acme_skip_tls_verify must be true: Pebble's certificate is its own test CA's")
	}

	// docker compose config, where the Compose plugin exists (it needs no
	// engine). Without it the file was checked by the parse above only.
	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err == nil {
		cmd := exec.Command("docker", "compose", "-f", filepath.Join(localstackDir(t), "docker-compose.yml"), "config", "--quiet")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("docker compose config: %v\n%s", err, out)
		}
	} else {
		t.Logf("docker compose is not installed here (%v: %s): compose file checked by the YAML parse only", err, strings.TrimSpace(string(out)))
	}
}

// TestLocalStackScripts checks that the scripts are executable and valid
// bash (and clean under shellcheck where it is installed).
func TestLocalStackScripts(t *testing.T) {
	scripts := []string{
		filepath.Join(localstackDir(t), "e2e.sh"),
		filepath.Join(localstackDir(t), "init", "ready.d", "10-certfn.sh"),
	}
	shellcheck, _ := exec.LookPath("shellcheck")
	for _, s := range scripts {
		st, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", s)
		}
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
		if shellcheck != "" {
			if out, err := exec.Command(shellcheck, s).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", s, err, out)
			}
		}
	}
	if shellcheck == "" {
		t.Log("shellcheck not installed: scripts checked with bash -n only")
	}
	// The e2e script applies what TestExamplePlan plans.
	b, err := os.ReadFile(scripts[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"localstack/example.tfvars.json", "infra/terraform/aws/examples/basic", "make lambda", "up -d --wait", "--aws-sigv4"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("e2e.sh does not use %q", want)
		}
	}
}
