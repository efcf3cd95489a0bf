package terraform_test

// Checks of localstack/ that need no Docker engine (there is none on the
// project's machines): the compose file parses and its pieces agree with
// each other and with the Terraform example, the Pebble configuration sends
// HTTP-01 validations to LocalStack's edge port, and the scripts are valid
// shell. `make localstack-e2e` itself needs Docker (docs/deploy/aws.md).

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"sigs.k8s.io/yaml"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
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
	// HTTP-01 on port 80, where LocalStack also listens: Pebble validates
	// there, and so does the worker's self-check, which always dials
	// <dnsName>:80 (core/acme/http01.SelfCheck without Addr, as awsmode
	// builds it).
	if pc.Pebble.HTTPPort != 80 {
		t.Errorf("pebble httpPort = %d, want 80 (the worker's self-check dials port 80)", pc.Pebble.HTTPPort)
	}
	if ports := gatewayPorts(t, ls.Environment["GATEWAY_LISTEN"]); !slices.Contains(ports, "4566") || !slices.Contains(ports, strconv.Itoa(pc.Pebble.HTTPPort)) || ports[0] != "4566" {
		t.Errorf("localstack GATEWAY_LISTEN = %q: want 4566 first (the Function URLs' port) and pebble's httpPort %d", ls.Environment["GATEWAY_LISTEN"], pc.Pebble.HTTPPort)
	}
	if ls.Environment["DNS_SERVER"] != "127.0.0.11" {
		t.Errorf("localstack DNS_SERVER = %q, want Docker's embedded DNS 127.0.0.11 (Lambda containers resolve pebble through LocalStack)", ls.Environment["DNS_SERVER"])
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
	for _, want := range []string{"localstack/example.tfvars.json", "infra/terraform/aws/examples/basic", "make lambda", "up -d --wait", "--aws-sigv4",
		"/2015-03-31/functions/", "localstack/api-event.jq"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("e2e.sh does not use %q", want)
		}
	}
}

// gatewayPorts returns the ports of LocalStack's GATEWAY_LISTEN
// ("host:port,host:port"), in order.
func gatewayPorts(t *testing.T, listen string) []string {
	t.Helper()
	var out []string
	for _, a := range strings.Split(listen, ",") {
		_, port, ok := strings.Cut(strings.TrimSpace(a), ":")
		if !ok || port == "" {
			t.Errorf("GATEWAY_LISTEN entry %q has no port", a)
			continue
		}
		out = append(out, port)
	}
	return out
}

func readScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(localstackDir(t), "e2e.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLocalStackImagePinned: the compose file's LocalStack image is an
// exact release (latest needs an auth token since 2026-03-23, and e2e.sh
// was checked against one release's source), and e2e.sh refuses an
// override to latest without LOCALSTACK_AUTH_TOKEN before it runs anything.
func TestLocalStackImagePinned(t *testing.T) {
	image := readCompose(t).Services["localstack"].Image
	m := regexp.MustCompile(`^\$\{LOCALSTACK_IMAGE:-(localstack/localstack):([^}]*)\}$`).FindStringSubmatch(image)
	if m == nil {
		t.Fatalf("localstack image = %q, want ${LOCALSTACK_IMAGE:-localstack/localstack:<version>}", image)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(m[2]) {
		t.Errorf("localstack image tag %q is not an exact release (x.y.z)", m[2])
	}

	// The script runs with a PATH holding only dirname: past the image
	// check it stops at its first tool check ("docker is required"), so
	// nothing is started even where a Docker engine exists.
	bin := t.TempDir()
	dirname, err := exec.LookPath("dirname")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dirname, filepath.Join(bin, "dirname")); err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	const refused = "needs LOCALSTACK_AUTH_TOKEN"
	for _, c := range []struct {
		image, token string
		refused      bool
	}{
		{"localstack/localstack:latest", "", true},
		{"localstack/localstack", "", true},
		{"localstack/localstack-pro", "", true},
		{"localstack/localstack:latest", "ls-token", false},
		{"localstack/localstack:4.4.0", "", false},
		{"localstack/localstack@sha256:" + strings.Repeat("0", 64), "", false},
		{"", "", false},
	} {
		cmd := exec.Command(bash, filepath.Join(localstackDir(t), "e2e.sh"))
		cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "LOCALSTACK_IMAGE=" + c.image, "LOCALSTACK_AUTH_TOKEN=" + c.token}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("image %q token %q: e2e.sh succeeded with no tools on PATH:\n%s", c.image, c.token, out)
			continue
		}
		if got := strings.Contains(string(out), refused); got != c.refused {
			t.Errorf("image %q token %q: refused = %v, want %v:\n%s", c.image, c.token, got, c.refused, out)
		}
		if !c.refused && !strings.Contains(string(out), "docker is required") {
			t.Errorf("image %q token %q: want the tool check next, got:\n%s", c.image, c.token, out)
		}
	}
}

// TestLocalStackScriptBuildsForTheMachine: e2e.sh maps the machine to a
// Go architecture and the Terraform lambda_architecture that agree, builds
// with that GOARCH and applies with that architecture, and checks that
// dist/lambda/<fn>.zip is that build (TestMakeLambdaGOARCH checks the
// Makefile's side).
func TestLocalStackScriptBuildsForTheMachine(t *testing.T) {
	s := readScript(t)
	lambdaArch := map[string]string{"amd64": "x86_64", "arm64": "arm64"} // GOARCH -> Lambda
	cases := regexp.MustCompile(`(?m)^\s*([a-z0-9_ |]+)\)\s*ARCH=(\S+)\s+GOARCH=(\S+)\s*;;`).FindAllStringSubmatch(s, -1)
	if len(cases) != 2 {
		t.Fatalf("e2e.sh: want two `<uname -m>) ARCH=... GOARCH=... ;;` cases, found %d", len(cases))
	}
	for _, c := range cases {
		if want, ok := lambdaArch[c[3]]; !ok || c[2] != want {
			t.Errorf("e2e.sh: %s) ARCH=%s GOARCH=%s: Lambda calls GOARCH %s %q", strings.TrimSpace(c[1]), c[2], c[3], c[3], want)
		}
		if !strings.Contains(c[1], c[3]) && !(c[3] == "amd64" && strings.Contains(c[1], "x86_64")) {
			t.Errorf("e2e.sh: machine pattern %q does not name GOARCH %s", c[1], c[3])
		}
	}
	for _, want := range []string{
		`make lambda GOARCH="$GOARCH"`,
		`-var "lambda_architecture=$ARCH"`,
		`cmp -s "dist/lambda/$fn.zip" "dist/lambda/$fn-$GOARCH.zip"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("e2e.sh does not contain %s", want)
		}
	}
}

// TestLocalStackScriptDrivesTheSweep: LocalStack's EventBridge Scheduler
// stores schedules and never runs them, so e2e.sh invokes the scheduler
// function itself on every round of its wait, with the input of the
// module's schedule.
func TestLocalStackScriptDrivesTheSweep(t *testing.T) {
	s := readScript(t)
	tf, err := os.ReadFile(filepath.Join(moduleDir(t), "scheduler.tf"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`input\s*=\s*jsonencode\(\{\s*source\s*=\s*"([^"]+)"\s*\}\)`).FindSubmatch(tf)
	if m == nil {
		t.Fatal(`scheduler.tf: no target input = jsonencode({ source = "..." })`)
	}
	if want := fmt.Sprintf(`'{"source":%q}'`, m[1]); !strings.Contains(s, want) {
		t.Errorf("e2e.sh does not send the schedule's input %s", want)
	}
	if !strings.Contains(s, `invoke "$PREFIX-scheduler"`) {
		t.Error(`e2e.sh does not invoke "$PREFIX-scheduler" (the module names functions <name_prefix>-<role>)`)
	}
	loop := regexp.MustCompile(`(?s)while :; do\n(.*?)\n\s*done\n`).FindStringSubmatch(s)
	if loop == nil || !regexp.MustCompile(`(?m)^\s*swept=\$\(sweep\)$`).MatchString(loop[1]) {
		t.Error("e2e.sh: the wait loop does not run the sweep on every round (swept=$(sweep))")
	}
}

// TestMakeLambdaGOARCH builds one function with `make lambda GOARCH=amd64`
// and checks that <fn>.zip, the file Terraform uploads, holds an x86-64
// bootstrap (it used to be the arm64 one whatever GOARCH said), and that
// no other architecture was built.
func TestMakeLambdaGOARCH(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make is required: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(mk, "-C", repoRoot(t), "lambda", "GOARCH=amd64", "LAMBDA_FUNCTIONS=http01", "LAMBDA_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make lambda: %v\n%s", err, out)
	}
	for name, want := range map[string]elf.Machine{"http01.zip": elf.EM_X86_64, "http01-amd64.zip": elf.EM_X86_64} {
		f, err := bootstrapELF(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Machine != want || f.Class != elf.ELFCLASS64 || f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
			t.Errorf("%s: bootstrap is %v %v %v, want %v ELF64 for Linux", name, f.Machine, f.Class, f.OSABI, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "http01-arm64.zip")); !os.IsNotExist(err) {
		t.Errorf("make lambda GOARCH=amd64 built http01-arm64.zip too (stat: %v)", err)
	}
}

// bootstrapELF opens the bootstrap entry of a Lambda zip as ELF.
func bootstrapELF(zipPath string) (*elf.File, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, err
	}
	defer zr.Close() //nolint:errcheck
	for _, f := range zr.File {
		if f.Name != "bootstrap" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close() //nolint:errcheck
		if err != nil {
			return nil, err
		}
		return elf.NewFile(bytes.NewReader(b))
	}
	return nil, fmt.Errorf("no bootstrap entry")
}

// TestLocalStackAPIEvent renders the event e2e.sh invokes the api with
// (localstack/api-event.jq, with jq as the script runs it) and serves it
// through the api function's own conversion and authenticator: the
// request arrives as sent and the caller is the IAM identity of
// requestContext.authorizer.iam (an administrator here). The event
// LocalStack 4.4's Function URL router builds (event_for_lambda_url in
// localstack/services/lambda_/urlrouter.py: no authorizer, accountId
// "anonymous"; copied here as a labelled fixture) finds no identity, which
// is why the script checks for a 401 through the URL.
func TestLocalStackAPIEvent(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Fatalf("jq is required (localstack/e2e.sh uses it): %v", err)
	}
	const (
		host  = "b3pgyiffa2tcg6u4s5ee4kwmtj4ct1cc.lambda-url.us-east-1.localhost.localstack.cloud:4566"
		root  = "arn:aws:iam::000000000000:root"
		yamlB = "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: selfsigned\n  namespace: default\nspec:\n  selfSigned: {}\n"
	)
	body := filepath.Join(t.TempDir(), "body.yaml")
	if err := os.WriteFile(body, []byte(yamlB), 0o644); err != nil {
		t.Fatal(err)
	}
	render := func(method, target, ctype, bodyFile string) []byte {
		t.Helper()
		cmd := exec.Command(jq, "-n", "-f", filepath.Join(localstackDir(t), "api-event.jq"),
			"--arg", "method", method, "--arg", "target", target, "--arg", "contentType", ctype, "--rawfile", "body", bodyFile,
			"--arg", "host", host, "--arg", "accessKey", "test", "--arg", "accountId", "000000000000",
			"--arg", "userArn", root, "--arg", "userId", "AKIAIOSFODNN7EXAMPLE")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("jq api-event.jq: %v", err)
		}
		return out
	}
	// What LocalStack 4.4 sends for GET through the api Function URL.
	localstackURLEvent := []byte(`{"version": "2.0", "routeKey": "$default", "rawPath": "/v1/namespaces/default/certificates/web",
	  "rawQueryString": "", "headers": {"host": "` + host + `", "user-agent": "curl/8.5.0", "accept": "*/*",
	    "x-amzn-tls-cipher-suite": "ECDHE-RSA-AES128-GCM-SHA256", "x-amzn-tls-version": "TLSv1.2", "x-forwarded-proto": "http",
	    "x-forwarded-for": "10.77.0.1", "x-forwarded-port": "4566"},
	  "queryStringParameters": {},
	  "requestContext": {"accountId": "anonymous", "apiId": "b3pgyiffa2tcg6u4s5ee4kwmtj4ct1cc", "domainName": "` + host + `",
	    "domainPrefix": "b3pgyiffa2tcg6u4s5ee4kwmtj4ct1cc", "http": {"method": "GET", "path": "/v1/namespaces/default/certificates/web",
	    "protocol": "HTTP/1.1", "sourceIp": "10.77.0.1", "userAgent": "curl/8.5.0"}, "requestId": "x", "routeKey": "$default",
	    "stage": "$default", "time": "02/Dec/2026:10:00:00 +0000", "timeEpoch": 1796205600000},
	  "isBase64Encoded": false}`)

	type seen struct {
		method, path, query, ctype, body, host string
		caller                                 app.Caller
		authErr                                error
	}
	for _, c := range []struct {
		name  string
		event []byte
		want  seen
	}{
		{"apply", render("POST", "/v1/apply", "application/yaml", body), seen{method: "POST", path: "/v1/apply", ctype: "application/yaml", body: yamlB, host: host,
			caller: app.Caller{Username: root}}},
		{"get with query", render("GET", "/v1/namespaces/default/certificates?limit=1", "", os.DevNull), seen{method: "GET", path: "/v1/namespaces/default/certificates", query: "limit=1", host: host,
			caller: app.Caller{Username: root}}},
		{"LocalStack's Function URL event", localstackURLEvent, seen{method: "GET", path: "/v1/namespaces/default/certificates/web", host: host,
			authErr: httpapi.ErrUnauthenticated}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ev events.LambdaFunctionURLRequest
			if err := json.Unmarshal(c.event, &ev); err != nil {
				t.Fatalf("event: %v\n%s", err, c.event)
			}
			var got seen
			authn := awsmode.IAMAuthenticator(map[string]bool{root: true})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = seen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, ctype: r.Header.Get("Content-Type"), body: string(b), host: r.Host}
				got.caller, got.authErr = authn(r)
				w.WriteHeader(http.StatusNoContent)
			})
			if _, err := awsmode.ServeFunctionURL(h)(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			if got.method != c.want.method || got.path != c.want.path || got.query != c.want.query || got.ctype != c.want.ctype || got.body != c.want.body || got.host != c.want.host {
				t.Errorf("request = %+v\nwant      %+v", got, c.want)
			}
			if c.want.authErr != nil {
				if !errors.Is(got.authErr, c.want.authErr) {
					t.Errorf("authenticate: %v, want %v", got.authErr, c.want.authErr)
				}
				return
			}
			if got.authErr != nil {
				t.Fatalf("authenticate: %v", got.authErr)
			}
			if got.caller.Username != c.want.caller.Username || !slices.Contains(got.caller.Groups, app.SuperuserGroup) {
				t.Errorf("caller = %+v, want %s in %s", got.caller, c.want.caller.Username, app.SuperuserGroup)
			}
		})
	}
}
