package policy

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/rbac"
)

// Keys are generated once per test binary.
var (
	keysOnce          sync.Once
	ecKey, ecKey384   *ecdsa.PrivateKey
	rsaKey2048, rsa1k *rsa.PrivateKey
	errKeys           error
)

func keys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		if ecKey, errKeys = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); errKeys != nil {
			return
		}
		if ecKey384, errKeys = ecdsa.GenerateKey(elliptic.P384(), rand.Reader); errKeys != nil {
			return
		}
		if rsaKey2048, errKeys = rsa.GenerateKey(rand.Reader, 2048); errKeys != nil {
			return
		}
		rsa1k, errKeys = rsa.GenerateKey(rand.Reader, 1024)
	})
	if errKeys != nil {
		t.Fatal(errKeys)
	}
}

// csrSpec describes a CSR to build with crypto/x509.
type csrSpec struct {
	key     crypto.Signer
	subject pkix.Name
	dns     []string
	ips     []string
	uris    []string
	emails  []string
	extra   []pkix.Extension
	// extraNames are raw subject attributes appended to the subject.
	extraNames []pkix.AttributeTypeAndValue
	// rawSubject, when set, is the subject's DER as it is (crypto/x509
	// then ignores subject and extraNames).
	rawSubject []byte
}

type csrOpt func(*csrSpec)

func cn(v string) csrOpt             { return func(s *csrSpec) { s.subject.CommonName = v } }
func dns(v ...string) csrOpt         { return func(s *csrSpec) { s.dns = append(s.dns, v...) } }
func ips(v ...string) csrOpt         { return func(s *csrSpec) { s.ips = append(s.ips, v...) } }
func uris(v ...string) csrOpt        { return func(s *csrSpec) { s.uris = append(s.uris, v...) } }
func emails(v ...string) csrOpt      { return func(s *csrSpec) { s.emails = append(s.emails, v...) } }
func withKey(k crypto.Signer) csrOpt { return func(s *csrSpec) { s.key = k } }
func orgs(v ...string) csrOpt {
	return func(s *csrSpec) { s.subject.Organization = append(s.subject.Organization, v...) }
}
func subj(f func(*pkix.Name)) csrOpt { return func(s *csrSpec) { f(&s.subject) } }
func extraSubject(oid asn1.ObjectIdentifier, v any) csrOpt {
	return func(s *csrSpec) { s.extraNames = append(s.extraNames, pkix.AttributeTypeAndValue{Type: oid, Value: v}) }
}
func extension(e pkix.Extension) csrOpt { return func(s *csrSpec) { s.extra = append(s.extra, e) } }

// buildCSR returns a parsed CSR and its PEM.
func buildCSR(t testing.TB, opts ...csrOpt) (*x509.CertificateRequest, []byte) {
	t.Helper()
	keys(t)
	s := &csrSpec{key: ecKey}
	for _, o := range opts {
		o(s)
	}
	tmpl := &x509.CertificateRequest{Subject: s.subject, DNSNames: s.dns, EmailAddresses: s.emails, ExtraExtensions: s.extra}
	tmpl.Subject.ExtraNames = s.extraNames
	tmpl.RawSubject = s.rawSubject
	for _, ip := range s.ips {
		p := net.ParseIP(ip)
		if p == nil {
			t.Fatalf("bad test IP %q", ip)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, p)
	}
	for _, u := range s.uris {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, p)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, s.key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return csr, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// crSpec describes a CertificateRequest.
type crOpt func(*api.CertificateRequest)

func inNamespace(ns string) crOpt { return func(cr *api.CertificateRequest) { cr.Namespace = ns } }
func byUser(u string, groups ...string) crOpt {
	return func(cr *api.CertificateRequest) { cr.Spec.Username, cr.Spec.Groups = u, groups }
}
func issuer(name, kind, group string) crOpt {
	return func(cr *api.CertificateRequest) {
		cr.Spec.IssuerRef = api.IssuerReference{Name: name, Kind: kind, Group: group}
	}
}
func duration(d time.Duration) crOpt {
	return func(cr *api.CertificateRequest) { cr.Spec.Duration = api.NewDuration(d) }
}
func expirationSeconds(s int32) crOpt {
	return func(cr *api.CertificateRequest) { cr.Spec.ExpirationSeconds = &s }
}
func isCA() crOpt { return func(cr *api.CertificateRequest) { cr.Spec.IsCA = true } }
func usages(u ...api.KeyUsage) crOpt {
	return func(cr *api.CertificateRequest) { cr.Spec.Usages = u }
}
func csrPEM(b []byte) crOpt { return func(cr *api.CertificateRequest) { cr.Spec.Request = b } }

// newCR returns a request in namespace "default" by user "alice" for
// Issuer "ca", carrying a CSR built from csrOpts.
func newCR(t testing.TB, csrOpts []csrOpt, opts ...crOpt) *api.CertificateRequest {
	t.Helper()
	_, p := buildCSR(t, csrOpts...)
	cr := &api.CertificateRequest{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "req-1"},
		Spec: api.CertificateRequestSpec{
			IssuerRef: api.IssuerReference{Name: "ca"},
			Request:   p,
			Username:  "alice",
			Groups:    []string{rbac.GroupAuthenticated},
		},
	}
	for _, o := range opts {
		o(cr)
	}
	return cr
}

func csr(opts ...csrOpt) []csrOpt { return opts }

// decodeAll decodes manifests with the real decoder (as `certfn apply` does).
func decodeAll(t testing.TB, yaml string) []api.Object {
	t.Helper()
	objs, err := api.Decode([]byte(yaml))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return objs
}

// policyYAML decodes one CertificateRequestPolicy whose metadata and kind
// are added around spec (indented by two spaces).
func policyYAML(t testing.TB, name, spec string) *api.CertificateRequestPolicy {
	t.Helper()
	doc := "apiVersion: policy.cert-manager.io/v1alpha1\nkind: CertificateRequestPolicy\nmetadata:\n  name: " + name +
		"\n  generation: 1\nspec:\n" + indent(strings.Trim(spec, "\n"), "  ") + "\n"
	objs := decodeAll(t, doc)
	p, ok := objs[0].(*api.CertificateRequestPolicy)
	if !ok {
		t.Fatalf("decoded %T", objs[0])
	}
	return p
}

func indent(s, by string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "\n")
}

// bindAll binds every policy to system:authenticated (use, all names).
func bindAll() *rbac.Authorizer {
	return rbac.NewAuthorizer(rbac.Snapshot{
		ClusterRoles: []api.ClusterRole{{ObjectMeta: api.ObjectMeta{Name: "use-all"}, Rules: []api.PolicyRule{{
			Verbs: []string{"use"}, APIGroups: []string{api.PolicyGroup}, Resources: []string{"certificaterequestpolicies"}}}}},
		ClusterRoleBindings: []api.ClusterRoleBinding{{ObjectMeta: api.ObjectMeta{Name: "use-all"},
			Subjects: []api.Subject{{Kind: api.SubjectKindGroup, Name: rbac.GroupAuthenticated}},
			RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.KindClusterRole, Name: "use-all"}}},
	})
}

// authorizerFrom builds an Authorizer from the RBAC objects among objs.
func authorizerFrom(objs []api.Object) *rbac.Authorizer {
	return rbac.NewAuthorizer(rbac.SnapshotOf(objs))
}

func policiesFrom(objs []api.Object) []*api.CertificateRequestPolicy {
	var out []*api.CertificateRequestPolicy
	for _, o := range objs {
		if p, ok := o.(*api.CertificateRequestPolicy); ok {
			out = append(out, p)
		}
	}
	return out
}

func newEvaluator(t testing.TB, plugins ...Plugin) *Evaluator {
	t.Helper()
	ev, err := NewEvaluator(Options{Plugins: plugins})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// evalCase is one row of an evaluation table.
type evalCase struct {
	name    string
	cr      *api.CertificateRequest
	labels  map[string]string
	want    Result
	msg     []string // substrings the message must contain
	policy  string   // approving policy, when Approved
	noMatch []string // substrings the message must not contain
}

func runEvalCases(t *testing.T, ev *Evaluator, policies []*api.CertificateRequestPolicy, authz *rbac.Authorizer, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := ev.Evaluate(context.Background(), Input{Request: tc.cr, Policies: policies, NamespaceLabels: tc.labels, Authorizer: authz})
			if d.Result != tc.want {
				t.Fatalf("result %s (%s), want %s", d.Result, d.Message(), tc.want)
			}
			for _, m := range tc.msg {
				// An Unmatched request's reasons are in the operator's
				// detail, not in the message the requester reads.
				if !strings.Contains(d.Message()+"\n"+d.Detail, m) {
					t.Errorf("message %q (detail %q) lacks %q", d.Message(), d.Detail, m)
				}
			}
			for _, m := range tc.noMatch {
				if strings.Contains(d.Message(), m) {
					t.Errorf("message %q should not contain %q", d.Message(), m)
				}
			}
			if tc.want == Approved && tc.policy != "" && d.Policy != tc.policy {
				t.Errorf("approved by %q, want %q", d.Policy, tc.policy)
			}
			if tc.want != Approved && d.Policy != "" {
				t.Errorf("policy %q set on a %s decision", d.Policy, d.Result)
			}
		})
	}
}

func pkiParse(cr *api.CertificateRequest) (*x509.CertificateRequest, error) {
	return pki.ParseCSRPEM(cr.Spec.Request)
}
