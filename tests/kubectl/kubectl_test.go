// Package kubectl runs the real kubectl (the gcloud SDK's kubectl.1.NN
// binaries) against local mode's API listener: discovery, OpenAPI (v2
// protobuf for kubectl 1.27 and 1.28, v3 for explain), client-side apply,
// get with cert-manager's table columns, -o yaml, describe, delete and a
// tenant's 403, through a kubeconfig from `certfn kubeconfig`'s generator.
// Without the binaries the tests skip, except in CI (CI=true), where that
// is a failure.
package kubectl

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
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
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/adapters/kubeapi"
	"github.com/certfn/certfn/internal/localmode"
)

// versions are the kubectl minor versions run: 1.27 and 1.28 read OpenAPI
// v2 as protobuf, 1.33 is the newest the SDK ships.
var versions = []string{"1.27", "1.28", "1.33"}

// kubectlDir finds the gcloud SDK's bin directory.
func kubectlDir(t *testing.T) string {
	t.Helper()
	missing := func(format string, a ...any) string {
		t.Helper()
		msg := fmt.Sprintf(format, a...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true: a missing tool is a failure)", msg)
		}
		t.Skip(msg)
		return ""
	}
	gcloud, err := exec.LookPath("gcloud")
	if err != nil {
		return missing("gcloud not on PATH: the kubectl binaries come with the gcloud SDK")
	}
	out, err := exec.Command(gcloud, "info", "--format=value(installation.sdk_root)").Output()
	if err != nil {
		return missing("gcloud info: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "bin")
	for _, v := range versions {
		if _, err := os.Stat(filepath.Join(dir, "kubectl."+v)); err != nil {
			return missing("kubectl.%s not in %s (gcloud components install kubectl)", v, dir)
		}
	}
	return dir
}

// pki is a CA with the server's and two clients' certificates, as files.
type pkiFiles struct {
	dir                                    string
	ca, serverCrt, serverKey               string
	adminCrt, adminKey, aliceCrt, aliceKey string
}

func writePKI(t *testing.T) pkiFiles {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leaf := func(name string, serial int64, tmpl *x509.Certificate) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, _ := x509.MarshalPKCS8PrivateKey(key)
		return write(name+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			write(name+".key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
	}
	p := pkiFiles{dir: dir, ca: write("ca.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))}
	p.serverCrt, p.serverKey = leaf("server", 2, &x509.Certificate{Subject: pkix.Name{CommonName: "certfn"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	p.adminCrt, p.adminKey = leaf("admin", 3, &x509.Certificate{Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	p.aliceCrt, p.aliceKey = leaf("alice", 4, &x509.Certificate{Subject: pkix.Name{CommonName: "alice"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return p
}

// server is local mode with its API listener.
type server struct {
	rt         *localmode.Runtime
	kubeconfig string // admin's
	alice      string // alice's (no bindings)
}

func startServer(t *testing.T) *server {
	t.Helper()
	p := writePKI(t)
	var logs io.Writer = io.Discard
	if testing.Verbose() {
		logs = os.Stderr // failed API requests, one line each
	}
	rt, err := localmode.Open(localmode.Options{DataDir: t.TempDir(), AutoApprove: []string{"*"},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	addr, stop, err := rt.ListenAPI(localmode.APIOptions{Listen: "127.0.0.1:0", CertFile: p.serverCrt, KeyFile: p.serverKey, ClientCAFile: p.ca})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	s := &server{rt: rt}
	for _, u := range []struct {
		user, crt, key string
		dst            *string
	}{{"admin", p.adminCrt, p.adminKey, &s.kubeconfig}, {"alice", p.aliceCrt, p.aliceKey, &s.alice}} {
		b, err := kubeapi.Kubeconfig(kubeapi.KubeconfigOptions{Server: "https://" + addr, CAFile: p.ca, CertFile: u.crt, KeyFile: u.key, User: u.user})
		if err != nil {
			t.Fatal(err)
		}
		*u.dst = filepath.Join(p.dir, u.user+".kubeconfig")
		if err := os.WriteFile(*u.dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// kubectl runs one kubectl binary with its own cache directory.
type kubectl struct {
	t          *testing.T
	bin, cache string
}

type result struct {
	stdout, stderr string
	err            error
}

func (k kubectl) run(kubeconfig, stdin string, args ...string) result {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", k.cache}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+k.cache, "KUBECTL_EXPLAIN_OPENAPIV3=true")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return result{out.String(), errb.String(), err}
}

// ok runs kubectl and fails the test unless it succeeds.
func (k kubectl) ok(kubeconfig, stdin string, args ...string) string {
	k.t.Helper()
	r := k.run(kubeconfig, stdin, args...)
	if r.err != nil {
		k.t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

// manifest is cert-manager's documented self-signed CA bootstrap
// (https://cert-manager.io/docs/configuration/selfsigned/), namespaced.
const manifest = `apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: selfsigned-issuer
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: my-selfsigned-ca
spec:
  isCA: true
  commonName: my-selfsigned-ca
  secretName: root-secret
  privateKey:
    algorithm: ECDSA
    size: 256
  issuerRef:
    name: selfsigned-issuer
    kind: Issuer
    group: cert-manager.io
`

// columns returns the header line's column names.
func columns(out string) []string {
	line, _, _ := strings.Cut(out, "\n")
	return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
}

func TestKubectl(t *testing.T) {
	dir := kubectlDir(t)
	s := startServer(t)
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			k := kubectl{t: t, bin: filepath.Join(dir, "kubectl."+v), cache: t.TempDir()}
			ns := "v" + strings.ReplaceAll(v, ".", "")
			cfg := s.kubeconfig

			if out := k.ok(cfg, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n", "apply", "-f", "-"); out != "namespace/"+ns+" created\n" {
				t.Errorf("apply a namespace: %q", out)
			}
			out := k.ok(cfg, manifest, "apply", "-n", ns, "-f", "-")
			if !strings.Contains(out, "issuer.cert-manager.io/selfsigned-issuer created") ||
				!strings.Contains(out, "certificate.cert-manager.io/my-selfsigned-ca created") {
				t.Fatalf("apply: %q", out)
			}
			if _, err := s.rt.RunUntilIdle(context.Background(), 2); err != nil {
				t.Fatal(err)
			}
			if out := k.ok(cfg, manifest, "apply", "-n", ns, "-f", "-"); !strings.Contains(out, "certificate.cert-manager.io/my-selfsigned-ca unchanged") {
				t.Errorf("apply again: %q", out)
			}
			labelled := strings.Replace(manifest, "  name: my-selfsigned-ca\n", "  name: my-selfsigned-ca\n  labels: {team: a}\n", 1)
			if out := k.ok(cfg, labelled, "apply", "-n", ns, "-f", "-"); !strings.Contains(out, "certificate.cert-manager.io/my-selfsigned-ca configured") {
				t.Errorf("apply with a label: %q", out)
			}

			out = k.ok(cfg, "", "get", "certificates", "-n", ns)
			if got, want := strings.Join(columns(out), ","), "NAME,READY,SECRET,AGE"; got != want {
				t.Errorf("get certificates columns %s, want %s:\n%s", got, want, out)
			}
			if !regexp.MustCompile(`(?m)^my-selfsigned-ca\s+True\s+root-secret\s+\d+s`).MatchString(out) {
				t.Errorf("get certificates row:\n%s", out)
			}
			out = k.ok(cfg, "", "get", "cert", "-n", ns, "-o", "wide")
			if got, want := strings.Join(columns(out), ","), "NAME,READY,SECRET,ISSUER,STATUS,AGE"; got != want {
				t.Errorf("get cert -o wide columns %s, want %s:\n%s", got, want, out)
			}
			out = k.ok(cfg, "", "get", "cr", "-n", ns)
			if got, want := strings.Join(columns(out), ","), "NAME,APPROVED,DENIED,READY,ISSUER,REQUESTER,AGE"; got != want {
				t.Errorf("get cr columns %s, want %s:\n%s", got, want, out)
			}
			if v == "1.33" {
				newest(t, k, cfg, ns)
			}
			out = k.ok(cfg, "", "get", "certificate", "my-selfsigned-ca", "-n", ns, "-o", "yaml")
			for _, want := range []string{"kind: Certificate", "apiVersion: cert-manager.io/v1", "secretName: root-secret", "team: a",
				"kubectl.kubernetes.io/last-applied-configuration"} {
				if !strings.Contains(out, want) {
					t.Errorf("get -o yaml lacks %q:\n%s", want, out)
				}
			}
			out = k.ok(cfg, "", "describe", "certificate", "my-selfsigned-ca", "-n", ns)
			if !strings.Contains(out, "Name:") || !strings.Contains(out, "my-selfsigned-ca") || !strings.Contains(out, "Secret Name:  root-secret") {
				t.Errorf("describe:\n%s", out)
			}
			// kubectl describe lists the object's Events by involvedObject
			// (kind, name, namespace and uid): cert-manager's reasons.
			if !regexp.MustCompile(`(?s)Events:.*Normal\s+Issuing\s.*Normal\s+Issued\s`).MatchString(out) {
				t.Errorf("describe shows no Issuing and Issued Events:\n%s", out)
			}
			out = k.ok(cfg, "", "explain", "certificate.spec")
			if !strings.Contains(out, "secretName") || !strings.Contains(out, "CertificateSpec is cert-manager's CertificateSpec") ||
				!strings.Contains(out, "SecretName is the secret the key pair and certificate are written to") {
				t.Errorf("explain certificate.spec:\n%s", out)
			}

			// alice has no bindings: 403, the same for an object that
			// exists and one that does not.
			var forbidden []string
			for _, name := range []string{"my-selfsigned-ca", "no-such-certificate"} {
				r := k.run(s.alice, "", "get", "certificate", name, "-n", ns)
				if r.err == nil || !strings.Contains(r.stderr, "Error from server (Forbidden)") {
					t.Fatalf("alice get %s: %v %s %s", name, r.err, r.stdout, r.stderr)
				}
				forbidden = append(forbidden, strings.ReplaceAll(r.stderr, name, "NAME"))
			}
			if forbidden[0] != forbidden[1] {
				t.Errorf("the 403 tells an existing object from a missing one:\n%s\n%s", forbidden[0], forbidden[1])
			}

			// A Role and RoleBinding applied with kubectl (Kubernetes' own
			// kinds: created, then patched with a strategic merge patch)
			// let alice read certificates in her namespace only.
			rbac := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cert-reader, namespace: %s}
rules:
- {apiGroups: [cert-manager.io], resources: [certificates], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-reads, namespace: %s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cert-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
`, ns, ns)
			if out := k.ok(cfg, rbac, "apply", "-f", "-"); !strings.Contains(out, "role.rbac.authorization.k8s.io/cert-reader created") {
				t.Errorf("apply rbac: %q", out)
			}
			withList := strings.Replace(rbac, "verbs: [get]", "verbs: [get, list]", 1)
			if out := k.ok(cfg, withList, "apply", "-f", "-"); !strings.Contains(out, "role.rbac.authorization.k8s.io/cert-reader configured") {
				t.Errorf("apply rbac again: %q", out)
			}
			if out := k.ok(s.alice, "", "get", "certificates", "-n", ns, "-o", "name"); out != "certificate.cert-manager.io/my-selfsigned-ca\n" {
				t.Errorf("alice lists her namespace: %q", out)
			}
			if r := k.run(s.alice, "", "get", "certificates", "-n", "default"); r.err == nil || !strings.Contains(r.stderr, "Forbidden") {
				t.Errorf("alice lists default: %v %s", r.err, r.stderr)
			}
			// kubectl auth can-i (a SelfSubjectAccessReview) says the same:
			// yes (exit 0) or no (exit 1), with certfn's reason.
			for _, tc := range []struct {
				args []string
				yes  bool
			}{
				{[]string{"list", "certificates.cert-manager.io", "-n", ns}, true},
				{[]string{"get", "certificates.cert-manager.io/my-selfsigned-ca", "-n", ns}, true},
				{[]string{"list", "certificates.cert-manager.io", "-n", "default"}, false},
				{[]string{"delete", "certificates.cert-manager.io", "-n", ns}, false},
			} {
				r := k.run(s.alice, "", append([]string{"auth", "can-i"}, tc.args...)...)
				if got := strings.TrimSpace(r.stdout); (tc.yes && (r.err != nil || got != "yes")) || (!tc.yes && (r.err == nil || !strings.HasPrefix(got, "no - certfn's RBAC does not allow"))) {
					t.Errorf("alice: auth can-i %v: %q %v %s, want yes=%v", tc.args, got, r.err, r.stderr, tc.yes)
				}
			}

			// cmctl renew's request through kubectl: the status
			// subresource with Issuing=True added is a renewal.
			var crt map[string]any
			if err := json.Unmarshal([]byte(k.ok(cfg, "", "get", "certificate", "my-selfsigned-ca", "-n", ns, "-o", "json")), &crt); err != nil {
				t.Fatal(err)
			}
			st, _ := crt["status"].(map[string]any)
			conds, _ := st["conditions"].([]any)
			st["conditions"] = append(conds, map[string]any{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered", "message": "Certificate re-issuance manually triggered"})
			renew, _ := json.Marshal(crt)
			// the answer is the Certificate as the renewal left it (read
			// from the answer: another version's subtest may run the
			// issuance at any moment after)
			if out := k.ok(cfg, string(renew), "replace", "--subresource=status", "-f", "-", "-o", `jsonpath={.status.conditions[?(@.type=="Issuing")].reason}`); out != "ManuallyTriggered" {
				t.Errorf("replace --subresource=status: Issuing reason %q, want ManuallyTriggered", out)
			}

			// kubectl certificate approve and deny: the approval
			// subresource (kubectl 1.32 and later send it as protobuf).
			for _, verb := range []string{"approve", "deny"} {
				name := "csr-" + verb + "-" + ns
				if out := k.ok(cfg, apitest.CSRManifest(t, name, ""), "apply", "-f", "-"); !strings.Contains(out, "certificatesigningrequest.certificates.k8s.io/"+name+" created") {
					t.Fatalf("apply CSR: %q", out)
				}
				want := map[string]string{"approve": "approved", "deny": "denied"}[verb]
				if out := k.ok(cfg, "", "certificate", verb, name); out != "certificatesigningrequest.certificates.k8s.io/"+name+" "+want+"\n" {
					t.Errorf("certificate %s: %q", verb, out)
				}
				cond := map[string]string{"approve": "Approved", "deny": "Denied"}[verb]
				if out := k.ok(cfg, "", "get", "csr", name, "-o", "jsonpath={.status.conditions[0].type}/{.status.conditions[0].reason}"); out != cond+"/Kubectl"+strings.ToUpper(verb[:1])+verb[1:] {
					t.Errorf("get csr %s after %s: %q", name, verb, out)
				}
			}

			out = k.ok(cfg, "", "delete", "certificate", "my-selfsigned-ca", "-n", ns)
			if !strings.Contains(out, `certificate.cert-manager.io "my-selfsigned-ca" deleted`) {
				t.Errorf("delete: %q", out)
			}
			r := k.run(cfg, "", "get", "certificate", "my-selfsigned-ca", "-n", ns)
			if r.err == nil || !strings.Contains(r.stderr, `Error from server (NotFound): certificates.cert-manager.io "my-selfsigned-ca" not found`) {
				t.Errorf("get after delete: %v %s", r.err, r.stderr)
			}
		})
	}
}

// newest runs what only the newest kubectl checks (to keep the package
// short): the cert-manager category across namespaces, create's 409, a
// server-side dry run and strict field validation.
func newest(t *testing.T, k kubectl, cfg, ns string) {
	t.Helper()
	out := k.ok(cfg, "", "get", "cert-manager", "-A")
	for _, want := range []string{"NAMESPACE", "certificate.cert-manager.io/my-selfsigned-ca", "issuer.cert-manager.io/selfsigned-issuer",
		"certificaterequest.cert-manager.io/my-selfsigned-ca-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("get cert-manager -A lacks %q:\n%s", want, out)
		}
	}
	issuer := "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: selfsigned-issuer}\nspec: {selfSigned: {}}\n"
	if r := k.run(cfg, issuer, "create", "-n", ns, "-f", "-"); r.err == nil ||
		!strings.Contains(r.stderr, `Error from server (AlreadyExists): error when creating "STDIN": issuers.cert-manager.io "selfsigned-issuer" already exists`) {
		t.Errorf("create of an existing issuer: %v %s", r.err, r.stderr)
	}
	renamed := strings.Replace(manifest, "secretName: root-secret", "secretName: other-secret", 1)
	if out := k.ok(cfg, renamed, "apply", "-n", ns, "--dry-run=server", "-f", "-"); !strings.Contains(out, "certificate.cert-manager.io/my-selfsigned-ca configured (server dry run)") {
		t.Errorf("apply --dry-run=server: %q", out)
	}
	if out := k.ok(cfg, "", "get", "certificate", "my-selfsigned-ca", "-n", ns, "-o", "jsonpath={.spec.secretName}"); out != "root-secret" {
		t.Errorf("the server dry run wrote: secretName %q", out)
	}
	// Kubernetes' own kinds through kubectl's typed clients (which ask
	// for protobuf first and take JSON): describe a namespace, list secrets.
	if out := k.ok(cfg, "", "describe", "namespace", ns); !strings.Contains(out, "Name:") || !strings.Contains(out, ns) {
		t.Errorf("describe namespace:\n%s", out)
	}
	out = k.ok(cfg, "", "get", "secrets", "-n", ns)
	if got, want := strings.Join(columns(out), ","), "NAME,TYPE,DATA,AGE"; got != want || !regexp.MustCompile(`(?m)^root-secret\s+kubernetes.io/tls\s+3\s`).MatchString(out) {
		t.Errorf("get secrets (columns %s, want %s):\n%s", got, want, out)
	}
	typo := strings.Replace(manifest, "secretName: root-secret", "secretNmae: root-secret", 1)
	if r := k.run(cfg, typo, "apply", "-n", ns, "-f", "-"); r.err == nil || !strings.Contains(r.stderr, `strict decoding error: unknown field "spec.secretNmae"`) {
		t.Errorf("apply with an unknown field: %v %s", r.err, r.stderr)
	}
}
