package denydomains

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/url"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/policy"
	"github.com/certfn/certfn/core/rbac"
)

func TestCompile(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]string
		wantErr string
	}{
		{"one domain", map[string]string{"domains": "corp.example.com"}, ""},
		{"lists with commas, spaces, case and trailing dots", map[string]string{"domains": "Corp.Example.com., payments.example.com\tsecret.test",
			"except": "status.corp.example.com"}, ""},
		{"domains required", map[string]string{}, "domains: required"},
		{"empty domains", map[string]string{"domains": " , "}, "domains: required"},
		{"wildcard entry", map[string]string{"domains": "*.corp.example.com"}, `domains: "*.corp.example.com": wildcards are not needed`},
		{"bad label", map[string]string{"domains": "corp..example.com"}, "not a domain name"},
		{"bad character", map[string]string{"domains": "corp/example.com"}, `character '/'`},
		{"hyphen edge", map[string]string{"domains": "-corp.example.com"}, "starts or ends with a hyphen"},
		{"except outside the domains", map[string]string{"domains": "corp.example.com", "except": "www.example.com"},
			`except: "www.example.com" is not inside any denied domain`},
		{"unknown key", map[string]string{"domains": "a.test", "domain": "b.test"}, `domain: unknown key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().Compile(tc.values)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	pc, err := New().Compile(map[string]string{"domains": "corp.example.com, payments.example.com", "except": "status.corp.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  policy.Request
		want []string // violations (substrings), in order; none means allowed
	}{
		{"outside", policy.Request{DNSNames: []string{"www.example.com", "evilcorp.example.com"}}, nil},
		{"apex", policy.Request{DNSNames: []string{"corp.example.com"}}, []string{`DNS name "corp.example.com" is in the protected domain "corp.example.com"`}},
		{"subdomain, any case, trailing dot", policy.Request{DNSNames: []string{"DB.Corp.Example.COM."}}, []string{`DNS name "DB.Corp.Example.COM."`}},
		{"wildcard under the domain", policy.Request{DNSNames: []string{"*.corp.example.com"}}, []string{`"*.corp.example.com"`}},
		{"wildcard covering the domain's apex", policy.Request{DNSNames: []string{"*.example.com"}}, []string{`DNS name "*.example.com" is in the protected domain "corp.example.com"`}},
		{"partial wildcard covering the apex", policy.Request{DNSNames: []string{"c*.example.com"}}, []string{`"c*.example.com"`}},
		{"wildcard two levels up is fine", policy.Request{DNSNames: []string{"*.com"}}, nil},
		{"exception", policy.Request{DNSNames: []string{"status.corp.example.com", "eu.status.corp.example.com"}}, nil},
		{"wildcard over the exception's parent is not exempt", policy.Request{DNSNames: []string{"*.corp.example.com"}}, []string{"protected domain"}},
		{"common name", policy.Request{CommonNames: []string{"pay.payments.example.com"}}, []string{`common name "pay.payments.example.com" is in the protected domain "payments.example.com"`}},
		{"e-mail domain", policy.Request{EmailAddresses: []string{"ceo@corp.example.com", "x@example.com"}}, []string{`e-mail address "ceo@corp.example.com"`}},
		{"URI host", policy.Request{URIs: []string{"https://api.corp.example.com:8443/x", "spiffe://example.com/ns/a"}}, []string{`URI "https://api.corp.example.com:8443/x"`}},
		{"several", policy.Request{CommonNames: []string{"corp.example.com"}, DNSNames: []string{"corp.example.com", "ok.test"}},
			[]string{`common name "corp.example.com"`, `DNS name "corp.example.com"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pc.Check(context.Background(), &tc.req)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d violations %q, want %d %q", len(got), got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("violation %d = %q, want it to contain %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestWithEvaluator runs the plugin the way certfn does: registered
// explicitly, named by a policy, judged together with allowed.
func TestWithEvaluator(t *testing.T) {
	objs, err := api.Decode([]byte(`
apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: example-com-but-not-corp, generation: 1}
spec:
  allowed:
    dnsNames: {values: ["*.example.com"]}
  plugins:
    deny-domains:
      values:
        domains: corp.example.com
  selector: {issuerRef: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := objs[0].(*api.CertificateRequestPolicy)
	ev, err := policy.NewEvaluator(policy.Options{Plugins: []policy.Plugin{New()}})
	if err != nil {
		t.Fatal(err)
	}
	if c := ev.ReadyCondition(p); c.Status != api.ConditionTrue {
		t.Fatalf("policy not Ready: %s", c.Message)
	}
	authz := rbac.NewAuthorizer(rbac.Snapshot{
		ClusterRoles: []api.ClusterRole{{ObjectMeta: api.ObjectMeta{Name: "use"}, Rules: []api.PolicyRule{{
			Verbs: []string{"use"}, APIGroups: []string{api.PolicyGroup}, Resources: []string{"certificaterequestpolicies"}}}}},
		ClusterRoleBindings: []api.ClusterRoleBinding{{ObjectMeta: api.ObjectMeta{Name: "use"},
			Subjects: []api.Subject{{Kind: "Group", Name: rbac.GroupAuthenticated}},
			RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: "ClusterRole", Name: "use"}}},
	})
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dns  []string
		uri  string
		want policy.Result
		msg  string
	}{
		{[]string{"www.example.com"}, "", policy.Approved, ""},
		{[]string{"db.corp.example.com"}, "", policy.Denied, `spec.plugins.deny-domains: DNS name "db.corp.example.com" is in the protected domain "corp.example.com"`},
		{[]string{"*.example.com"}, "", policy.Denied, `DNS name "*.example.com" is in the protected domain`},
		{[]string{"www.example.com"}, "spiffe://corp.example.com/ns/a/sa/b", policy.Denied,
			`spec.allowed.uris: "spiffe://corp.example.com/ns/a/sa/b" is not allowed: the policy allows no URIs`},
	}
	for _, tc := range tests {
		tmpl := &x509.CertificateRequest{Subject: pkix.Name{}, DNSNames: tc.dns}
		if tc.uri != "" {
			pu, _ := url.Parse(tc.uri)
			tmpl.URIs = []*url.URL{pu}
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
		if err != nil {
			t.Fatal(err)
		}
		cr := &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "r"}, Spec: api.CertificateRequestSpec{
			IssuerRef: api.IssuerReference{Name: "ca"}, Username: "alice",
			Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
		d := ev.Evaluate(context.Background(), policy.Input{Request: cr, Policies: []*api.CertificateRequestPolicy{p}, Authorizer: authz})
		if d.Result != tc.want || !strings.Contains(d.Message(), tc.msg) {
			t.Errorf("%v: got %s %q, want %s containing %q", tc.dns, d.Result, d.Message(), tc.want, tc.msg)
		}
	}
}
