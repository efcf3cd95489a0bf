package tfprovider_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
	"github.com/certfn/certfn/internal/tfprovider"
)

// The suite's environment, built once in TestMain: a `certfn serve
// --api-listen` in this process (localmode: state.db and secret files in
// a temporary directory, the API over TLS with client certificates), the
// PKI of its clients, and the base directory of every Terraform working
// directory the tests use (kept, so that TestNoPrivateKeyInState can read
// every state file they wrote).
var env struct {
	dir      string // everything below is in it
	endpoint string
	rt       *localmode.Runtime
	pki      *pkiFiles
	workDirs string
	// admin is O=system:masters; nobody has no binding.
	adminCrt, adminKey, nobodyCrt, nobodyKey string
}

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tfprovider tests:", err)
		code = 1
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "certfn-tfprovider-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	env.dir = dir
	tf, err := exec.LookPath("terraform")
	if err != nil {
		return 1, fmt.Errorf("terraform is not installed (the acceptance tests need the real CLI): %w", err)
	}
	// The real CLI, never downloaded; no user configuration, no checkpoint.
	cliConfig := filepath.Join(dir, "terraformrc")
	if err := os.WriteFile(cliConfig, nil, 0o600); err != nil {
		return 1, err
	}
	for k, v := range map[string]string{"TF_ACC": "1", "TF_ACC_TERRAFORM_PATH": tf, "TF_CLI_CONFIG_FILE": cliConfig,
		"CHECKPOINT_DISABLE": "1", "TF_IN_AUTOMATION": "1", "TF_ACC_PERSIST_WORKING_DIR": "1"} {
		os.Setenv(k, v)
	}
	env.workDirs = filepath.Join(dir, "work")
	if env.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return 1, err
	}
	if _, _, err := env.pki.issue("server", "127.0.0.1", nil, true); err != nil {
		return 1, err
	}
	if env.adminCrt, env.adminKey, err = env.pki.issue("admin", "terraform-admin", []string{"system:masters"}, false); err != nil {
		return 1, err
	}
	if env.nobodyCrt, env.nobodyKey, err = env.pki.issue("nobody", "nobody", []string{"team-x"}, false); err != nil {
		return 1, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt, err := localmode.Open(localmode.Options{DataDir: filepath.Join(dir, "data"), Logger: log,
		AutoApprove: []string{"issuers.cert-manager.io/default.selfsigned"}})
	if err != nil {
		return 1, err
	}
	env.rt = rt
	addr, stop, err := rt.ListenAPI(localmode.APIOptions{Listen: "127.0.0.1:0", CertFile: env.pki.path("server.crt"),
		KeyFile: env.pki.path("server.key"), ClientCAFile: env.pki.path("ca.crt")})
	if err != nil {
		return 1, err
	}
	defer stop()
	env.endpoint = "https://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := rt.Serve(ctx, localmode.ServeOptions{Workers: 2}); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
		}
	}()
	code := m.Run()
	cancel()
	wg.Wait()
	return code, nil
}

// factories serve the provider in this process (no binary, no registry).
func factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"certfn": providerserver.NewProtocol6WithError(tfprovider.New("test", tfprovider.Options{PollInterval: 200 * time.Millisecond})()),
	}
}

// providerBlock configures the provider as a client-certificate caller.
func providerBlock(crt, key string) string {
	return fmt.Sprintf(`
provider "certfn" {
  endpoint    = %q
  client_cert = %q
  client_key  = %q
  server_ca   = %q
}
`, env.endpoint, crt, key, env.pki.path("ca.crt"))
}

const issuerHCL = `
resource "certfn_manifest" "issuer" {
  manifest = <<-YAML
    apiVersion: cert-manager.io/v1
    kind: Issuer
    metadata:
      name: selfsigned
    spec:
      selfSigned: {}
  YAML
  wait {
    condition = "Ready"
    timeout   = "30s"
  }
}
`

// certificateHCL declares the Certificate web as an HCL object.
func certificateHCL(dnsNames ...string) string {
	return fmt.Sprintf(`
resource "certfn_manifest" "web" {
  object = {
    apiVersion = "cert-manager.io/v1"
    kind       = "Certificate"
    metadata   = { name = "web", namespace = "default" }
    spec = {
      secretName  = "web-tls"
      dnsNames    = %s
      duration    = "2160h"
      renewBefore = "360h"
      issuerRef   = { name = certfn_manifest.issuer.name }
    }
  }
  wait {
    timeout = "60s"
  }
}

data "certfn_certificate" "web" {
  namespace = certfn_manifest.web.namespace
  name      = certfn_manifest.web.name
}

data "certfn_issuer" "selfsigned" {
  name       = certfn_manifest.issuer.name
  depends_on = [certfn_manifest.issuer]
}
`, hclList(dnsNames))
}

// workDir is the base of a test's Terraform working directories.
func workDir(t *testing.T) string {
	d := filepath.Join(env.workDirs, t.Name())
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func hclList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// The lifecycle: create (the Issuer from YAML, the Certificate from an
// HCL object, each waited for until Ready) → the data sources read it
// → a plan shows no diff → dnsNames change, the Certificate is issued
// again (revision 2) → import by kind/namespace/name → destroy.
func TestManifestLifecycle(t *testing.T) {
	adm := providerBlock(env.adminCrt, env.adminKey)
	secretRef := filepath.Join(env.dir, "data", "secrets", "default", "web-tls")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{
			{
				Config: adm + issuerHCL + certificateHCL("web.example.com"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("certfn_manifest.web", "id", "Certificate/default/web"),
					resource.TestCheckResourceAttr("certfn_manifest.issuer", "id", "Issuer/default/selfsigned"),
					resource.TestCheckResourceAttr("certfn_manifest.issuer", "namespace", "default"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "ready", "true"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "reason", "Ready"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "revision", "1"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "dns_names.#", "1"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "dns_names.0", "web.example.com"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "secret_name", "web-tls"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "secret_reference", secretRef),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "acm_certificate_arn", ""),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "imported_certificate", ""),
					resource.TestMatchResourceAttr("data.certfn_certificate.web", "not_after", regexp.MustCompile(`^\d{4}-\d\d-\d\dT`)),
					resource.TestMatchResourceAttr("data.certfn_certificate.web", "renewal_time", regexp.MustCompile(`^\d{4}-\d\d-\d\dT`)),
					resource.TestMatchResourceAttr("data.certfn_certificate.web", "summary", regexp.MustCompile(`^Ready`)),
					resource.TestCheckResourceAttr("data.certfn_issuer.selfsigned", "ready", "true"),
					resource.TestCheckResourceAttr("data.certfn_issuer.selfsigned", "type", "selfSigned"),
					checkStored("web", func(c *api.Certificate) error {
						if c.Spec.Duration == nil || c.Spec.Duration.Duration != 2160*time.Hour {
							return fmt.Errorf("stored duration %v", c.Spec.Duration)
						}
						return nil
					}),
				),
			},
			{
				// certfn spells the duration 2160h0m0s: still no diff.
				Config:             adm + issuerHCL + certificateHCL("web.example.com"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: false,
			},
			{
				Config: adm + issuerHCL + certificateHCL("web.example.com", "www.example.com"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("certfn_manifest.web", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("certfn_manifest.issuer", plancheck.ResourceActionNoop),
					plancheck.ExpectKnownValue("certfn_manifest.web", tfjsonpath.New("fields"), knownvalue.StringRegexp(
						regexp.MustCompile(`"dnsNames": \[\s*"web.example.com",\s*"www.example.com"\s*\]`))),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "ready", "true"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "revision", "2"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "dns_names.#", "2"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "dns_names.1", "www.example.com"),
				),
			},
			{
				// Changed outside Terraform: the plan puts it back.
				PreConfig: func() { setDNSNames(t, "web", "drift.example.com") },
				Config:    adm + issuerHCL + certificateHCL("web.example.com", "www.example.com"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("certfn_manifest.web", plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "dns_names.0", "web.example.com"),
					resource.TestCheckResourceAttr("data.certfn_certificate.web", "revision", "4"),
				),
			},
			{
				ResourceName:            "certfn_manifest.web",
				ImportState:             true,
				ImportStateId:           "Certificate/default/web",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"manifest", "object", "fields", "wait"},
			},
		},
		CheckDestroy: func(*terraform.State) error {
			for _, k := range []api.Key{{Kind: api.KindCertificate, Namespace: "default", Name: "web"}, {Kind: api.KindIssuer, Namespace: "default", Name: "selfsigned"}} {
				if _, err := env.rt.Repo.Get(context.Background(), k); err == nil {
					return fmt.Errorf("%s still exists after destroy", k)
				}
			}
			return nil
		},
	})
}

// setDNSNames changes a Certificate's dnsNames behind Terraform's back.
func setDNSNames(t *testing.T, name string, dnsNames ...string) {
	ctx := context.Background()
	o, err := env.rt.Repo.Get(ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	c := o.(*api.Certificate)
	c.Spec.DNSNames = dnsNames
	c.Status = api.CertificateStatus{}
	if _, err := env.rt.App.Service.Apply(ctx, app.Caller{Username: "someone", Groups: []string{app.SuperuserGroup}}, []api.Object{c}); err != nil {
		t.Fatal(err)
	}
	// Wait until certfn has issued for the drifted names (revision 3).
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		o, err := env.rt.Repo.Get(ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: name})
		if err == nil {
			if c := o.(*api.Certificate); c.Status.Revision != nil && *c.Status.Revision == 3 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the drifted Certificate was not issued")
}

// checkStored checks the Certificate default/name as certfn stores it.
func checkStored(name string, f func(*api.Certificate) error) resource.TestCheckFunc {
	return checkStoredIn("default", name, f)
}

// checkStoredIn checks the Certificate namespace/name as certfn stores it.
func checkStoredIn(namespace, name string, f func(*api.Certificate) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		o, err := env.rt.Repo.Get(context.Background(), api.Key{Kind: api.KindCertificate, Namespace: namespace, Name: name})
		if err != nil {
			return err
		}
		return f(o.(*api.Certificate))
	}
}

// Invalid manifests fail the plan, naming the field: the provider's own
// checks (kind, metadata.name) and the server's validation (dry run).
func TestManifestInvalidAtPlan(t *testing.T) {
	adm := providerBlock(env.adminCrt, env.adminKey)
	step := func(manifest, want string) resource.TestStep {
		return resource.TestStep{
			Config:      adm + fmt.Sprintf("resource \"certfn_manifest\" \"bad\" {\n  manifest = <<-YAML\n%s  YAML\n}\n", indent(manifest)),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(want),
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{
			step("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: bad}\nspec:\n  secretName: bad-tls\n  dnsNames: [bad.example.com]\n  issuerRef: {name: selfsigned}\n  duration: 10x\n",
				`(?s)invalid.*spec\.duration`),
			step("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: bad}\nspec:\n  secretName: bad-tls\n  issuerRef: {name: selfsigned}\n",
				`(?s)certfn refused Certificate/default/bad as invalid \(422 Invalid\).*field spec`),
			step("apiVersion: cert-manager.io/v1\nkind: Widget\nmetadata: {name: bad}\n", `kind: "Widget" is not a certfn kind`),
			step("apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {namespace: default}\nspec: {selfSigned: {}}\n", `metadata\.name: required`),
			step("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {tls.key: eA==}\n", `(?s)Secret manifests are not managed by certfn_manifest`),
		},
	})
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// A caller without a binding gets certfn's 403 at plan time, naming the
// caller and the verb.
func TestManifestForbidden(t *testing.T) {
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{{
			Config:      providerBlock(env.nobodyCrt, env.nobodyKey) + issuerHCL,
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)certfn refused Issuer/default/selfsigned: 403 Forbidden.*nobody may not create`),
		}},
	})
}

// pkiFiles writes a CA, the server's certificate and client certificates
// (CN = user, O = groups) as PEM files.
type pkiFiles struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

func newPKI(dir string) (*pkiFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test client CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	p := &pkiFiles{dir: dir, caKey: key, serial: 1}
	p.ca, _ = x509.ParseCertificate(der)
	return p, p.write("ca.crt", "CERTIFICATE", der)
}

func (p *pkiFiles) path(name string) string { return filepath.Join(p.dir, name) }

func (p *pkiFiles) write(name, typ string, der []byte) error {
	return os.WriteFile(p.path(name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// issue writes <name>.crt and <name>.key and returns their paths.
func (p *pkiFiles) issue(name, cn string, orgs []string, server bool) (string, string, error) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", err
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	if err := p.write(name+".crt", "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	return p.path(name + ".crt"), p.path(name + ".key"), p.write(name+".key", "PRIVATE KEY", kder)
}

// csrPEM returns a PEM CSR for dnsName (its key is thrown away).
func csrPEM(t *testing.T, dnsName string) string {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{dnsName}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}

// A CertificateRequest's spec is immutable: changing it replaces the
// request (delete, then create), while a label change updates it in place.
func TestCertificateRequestReplaced(t *testing.T) {
	adm := providerBlock(env.adminCrt, env.adminKey)
	cr := func(csr, team string) string {
		return adm + fmt.Sprintf(`
resource "certfn_manifest" "req" {
  object = {
    apiVersion = "cert-manager.io/v1"
    kind       = "CertificateRequest"
    metadata   = { name = "req", namespace = "team-cr", labels = { team = %q } }
    spec = {
      request   = %q
      issuerRef = { name = "nowhere" }
    }
  }
}
`, team, base64.StdEncoding.EncodeToString([]byte(csr)))
	}
	first, second := csrPEM(t, "a.example.com"), csrPEM(t, "b.example.com")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{
			{Config: cr(first, "a")},
			{
				Config: cr(first, "b"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("certfn_manifest.req", plancheck.ResourceActionUpdate),
				}},
			},
			{
				Config: cr(second, "b"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("certfn_manifest.req", plancheck.ResourceActionDestroyBeforeCreate),
				}},
			},
		},
	})
}

// wait reports what blocks a Certificate instead of a bare timeout.
func TestWaitReportsBlocker(t *testing.T) {
	adm := providerBlock(env.adminCrt, env.adminKey)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{{
			Config: adm + `
resource "certfn_manifest" "orphan" {
  manifest = yamlencode({
    apiVersion = "cert-manager.io/v1"
    kind       = "Certificate"
    metadata   = { name = "orphan", namespace = "team-w" }
    spec       = { secretName = "orphan-tls", dnsNames = ["orphan.example.com"], issuerRef = { name = "missing" } }
  })
  wait {
    timeout = "3s"
  }
}
`,
			ExpectError: regexp.MustCompile(`(?s)Certificate/team-w/orphan is not Ready.*timed out after 3s waiting for Ready=True; what blocks it: Not ready: .*missing`),
		}},
	})
}

// policyHCL declares an Issuer "strict" whose requests only a
// CertificateRequestPolicy approves, for names under allowed.test, and
// lets certfn's controller identity use the policy.
const policyHCL = `
resource "certfn_manifest" "strict" {
  object = {
    apiVersion = "cert-manager.io/v1"
    kind       = "Issuer"
    metadata   = { name = "strict", namespace = "team-p" }
    spec       = { selfSigned = {} }
  }
}

resource "certfn_manifest" "policy" {
  object = {
    apiVersion = "policy.cert-manager.io/v1alpha1"
    kind       = "CertificateRequestPolicy"
    metadata   = { name = "allowed-test" }
    spec = {
      allowed  = { dnsNames = { values = ["*.allowed.test"] } }
      selector = { issuerRef = { name = "strict" } }
    }
  }
}

resource "certfn_manifest" "use_policy" {
  manifest = <<-YAML
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata: {name: use-allowed-test}
    rules:
      - apiGroups: [policy.cert-manager.io]
        resources: [certificaterequestpolicies]
        verbs: [use]
        resourceNames: [allowed-test]
  YAML
}

resource "certfn_manifest" "bind_policy" {
  manifest = <<-YAML
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata: {name: certfn-uses-allowed-test}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: use-allowed-test}
    subjects:
      - {kind: ServiceAccount, name: cert-manager, namespace: cert-manager}
  YAML
}
`

// strictCertificateHCL requests dnsName from the Issuer strict.
func strictCertificateHCL(dnsName string) string {
	return fmt.Sprintf(`
resource "certfn_manifest" "strict_cert" {
  object = {
    apiVersion = "cert-manager.io/v1"
    kind       = "Certificate"
    metadata   = { name = "strict-cert", namespace = "team-p" }
    spec       = { secretName = "strict-tls", dnsNames = [%q], issuerRef = { name = "strict" } }
  }
  wait {
    timeout = "30s"
  }
}
`, dnsName)
}

// A policy refusal surfaces at plan time: the server's dry run previews
// the CertificateRequestPolicies' decision on the Certificate's request.
// A name the policy allows is issued.
func TestPolicyDenialAtPlan(t *testing.T) {
	adm := providerBlock(env.adminCrt, env.adminKey)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{
			{Config: adm + policyHCL},
			{
				Config:      adm + policyHCL + strictCertificateHCL("evil.example.com"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)certfn's policies would deny Certificate/team-p/strict-cert's request.*evil\.example\.com`),
			},
			{
				Config: adm + policyHCL + strictCertificateHCL("www.allowed.test"),
				Check: checkStoredIn("team-p", "strict-cert", func(c *api.Certificate) error {
					if !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) {
						return fmt.Errorf("not Ready: %+v", c.Status.Conditions)
					}
					return nil
				}),
			},
		},
	})
}

// A policy created in the same apply as a Certificate it denies: the
// plan's dry run can only warn (no policy applies yet), but Terraform plans
// the Certificate again at apply, after the policy exists, and the dry run
// refuses it then, before anything is written.
func TestPolicyDenialAtApply(t *testing.T) {
	adm := providerBlock(env.adminCrt, env.adminKey)
	cert := strings.Replace(strictCertificateHCL("evil.example.com"), "  wait {",
		"  depends_on = [certfn_manifest.strict, certfn_manifest.policy, certfn_manifest.use_policy, certfn_manifest.bind_policy]\n  wait {", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{
			{
				Config:      adm + policyHCL + cert,
				ExpectError: regexp.MustCompile(`(?s)certfn's policies would deny Certificate/team-p/strict-cert's request.*"evil\.example\.com" is not\s+allowed`),
			},
			{
				PreConfig: func() {
					_, err := env.rt.Repo.Get(context.Background(), api.Key{Kind: api.KindCertificate, Namespace: "team-p", Name: "strict-cert"})
					if !errors.Is(err, ports.ErrNotFound) {
						t.Errorf("the denied Certificate was written: %v", err)
					}
				},
				Config: adm + policyHCL,
			},
		},
	})
}
