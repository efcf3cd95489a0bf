package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
)

// orderYAML is an Order a caller writes itself, carrying its own CSR.
const orderYAML = `apiVersion: acme.cert-manager.io/v1
kind: Order
metadata: {name: mine, namespace: team-a}
spec:
  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==
  issuerRef: {name: le, kind: ClusterIssuer}
  dnsNames: [victim.team-b.example.com]
`

// challengeYAML is a Challenge a caller writes itself: its own token, key
// authorization, URL and solver.
const challengeYAML = `apiVersion: acme.cert-manager.io/v1
kind: Challenge
metadata: {name: mine, namespace: team-a}
spec:
  url: https://attacker.example/chall/1
  authorizationURL: https://attacker.example/authz/1
  dnsName: victim.team-b.example.com
  type: HTTP-01
  token: tok
  key: tok.thumb
  issuerRef: {name: le, kind: ClusterIssuer}
  solver: {http01: {ingress: {}}}
`

// Orders, Challenges, Challenge leases and Events are written only by
// certfn: no caller may create or change them through the API — not a
// team whose role grants create on them (cert-manager's stock
// cert-manager-edit role does), not even system:masters. They may still
// be read and deleted with permission.
func TestMachineKindsAreNotWritable(t *testing.T) {
	e := newEnv(t, 0)
	edit := apitest.Grant("acme-edit", alice, "team-a", "acme.cert-manager.io", []string{"orders", "challenges"}, []string{"create", "update", "get", "list", "delete"})
	e.mustDo(200, "POST", "/v1/apply", admin, "application/yaml", edit)
	for _, tc := range []struct{ name, user, body, plural string }{
		{"order by a team with create", alice, orderYAML, "orders"},
		{"challenge by a team with create", alice, challengeYAML, "challenges"},
		{"order by system:masters", admin, orderYAML, "orders"},
		{"challenge by system:masters", admin, challengeYAML, "challenges"},
		{"event", admin, "apiVersion: v1\nkind: Event\nmetadata: {name: x, namespace: team-a}\n", "events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.mustDo(http.StatusForbidden, "POST", "/v1/apply", tc.user, "application/yaml", tc.body)
			if msg, reason, _ := r.err(t); reason != "Forbidden" || !strings.Contains(msg, tc.plural+" are created and changed only by certfn") {
				t.Fatalf("%s: %q", reason, msg)
			}
		})
	}
	if n := e.count(api.KindOrder, "") + e.count(api.KindChallenge, ""); n != 0 {
		t.Fatalf("%d Orders/Challenges stored", n)
	}
	// Reading them stays allowed.
	e.mustDo(200, "GET", "/v1/namespaces/team-a/orders", alice, "", "")
}

// A caller without create permission anywhere gets a short 403 for a
// large batch, decided before any validation; an allowed caller's invalid
// batch gets a bounded 422.
func TestErrorsDoNotGrowWithTheInput(t *testing.T) {
	e := newEnv(t, 4<<20)
	var b strings.Builder
	for i := 0; b.Len() < 900<<10; i++ {
		fmt.Fprintf(&b, "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c%d, namespace: default}\nspec: {secretName: s, dnsNames: [\"a..%s\"], issuerRef: {name: x}}\n", i, strings.Repeat("b", 200))
		if i > 900 {
			break
		}
	}
	body := b.String()
	r := e.mustDo(http.StatusForbidden, "POST", "/v1/apply", bob, "application/yaml", body)
	if len(r.body) > 1024 {
		t.Fatalf("403 body of %d bytes for a %d-byte request", len(r.body), len(body))
	}
	r = e.mustDo(http.StatusUnprocessableEntity, "POST", "/v1/apply", admin, "application/yaml", body)
	if len(r.body) > 64<<10 {
		t.Fatalf("422 body of %d bytes for a %d-byte request", len(r.body), len(body))
	}
	var eb struct {
		Error   string
		Details []json.RawMessage
	}
	if err := json.Unmarshal([]byte(r.body), &eb); err != nil || len(eb.Details) > api.MaxReportedErrors || !strings.Contains(eb.Error, "more problems") {
		t.Fatalf("details %d, error %q (%v)", len(eb.Details), api.Truncate(eb.Error, 200), err)
	}
	// Undecodable input is bounded too.
	junk := "[" + strings.Repeat(`{"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "bogus": 1},`, 5000) + `{}]`
	r = e.mustDo(http.StatusBadRequest, "POST", "/v1/apply", admin, "application/json", junk)
	if len(r.body) > 64<<10 {
		t.Fatalf("400 body of %d bytes for a %d-byte request", len(r.body), len(junk))
	}
}

// A caller who may not read an object learns nothing about it from apply:
// the same answer whether it exists or not, in any namespace.
func TestApplyIsNoExistenceOracle(t *testing.T) {
	e := newEnv(t, 0)
	e.mustDo(200, "POST", "/v1/apply", admin, "application/yaml", apitest.Issuer("team-b", "exists"))
	// bob may create issuers in team-b but not get or update them.
	e.mustDo(200, "POST", "/v1/apply", admin, "application/yaml",
		apitest.Grant("issuer-creator", bob, "team-b", "cert-manager.io", []string{"issuers"}, []string{"create"}))
	msg := func(user, name, ns string) string {
		r := e.mustDo(http.StatusForbidden, "POST", "/v1/apply", user, "application/yaml",
			strings.Replace(apitest.Issuer(ns, name), "selfSigned: {}", "selfSigned: {crlDistributionPoints: [\"http://x\"]}", 1))
		m, _, _ := r.err(t)
		return strings.ReplaceAll(m, name, "NAME")
	}
	if a, b := msg(alice, "exists", "team-b"), msg(alice, "missing", "team-b"); a != b {
		t.Fatalf("alice tells an existing Issuer from a missing one:\n%s\n%s", a, b)
	}
	e.mustDo(200, "POST", "/v1/apply", bob, "application/yaml", apitest.Issuer("team-b", "new")) // creating is allowed
	if a := msg(bob, "exists", "team-b"); !strings.Contains(a, "may not create or update") {
		t.Fatalf("bob updating an Issuer he may not read: %s", a)
	}
}

// A requester reads its pending request's message: it says no policy
// applies, the same whether there are none or several, for whatever
// reasons (not selecting it, not bound to the requester).
func TestPendingMessageIsNoPolicyOracle(t *testing.T) {
	e := newEnv(t, 0)
	e.mustDo(200, "POST", "/v1/apply", admin, "application/yaml", apitest.Docs(apitest.Issuer("team-a", "ss"),
		apitest.Grant("requester", alice, "team-a", "cert-manager.io", []string{"certificaterequests"}, []string{"create", "get"})))
	message := func(name string) string {
		t.Helper()
		e.mustDo(200, "POST", "/v1/apply", alice, "application/yaml", apitest.Request(t, "team-a", name, "ss", name+".example.com"))
		if _, err := e.rt.RunUntilIdle(t.Context(), 2); err != nil {
			t.Fatal(err)
		}
		r := e.mustDo(200, "GET", "/v1/namespaces/team-a/certificaterequests/"+name, alice, "", "")
		var cr api.CertificateRequest
		if err := json.Unmarshal([]byte(r.body), &cr); err != nil {
			t.Fatal(err)
		}
		c := api.FindCondition(cr.Status.Conditions, api.CertificateRequestConditionReady)
		if c == nil || c.Reason != api.CertificateRequestReasonPending {
			t.Fatalf("%s: %+v", name, cr.Status.Conditions)
		}
		return c.Message
	}
	none := message("first")
	for i, sel := range []string{"{issuerRef: {name: other}}", "{issuerRef: {}}", "{issuerRef: {}}"} {
		e.mustDo(200, "POST", "/v1/apply", admin, "application/yaml", fmt.Sprintf(`apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: p%d}
spec:
  allowed: {dnsNames: {values: ["*"]}}
  selector: %s
`, i, sel))
	}
	many := message("second")
	if none != many || strings.Contains(many, "of 3 policies") || strings.Contains(none, "there are no") {
		t.Fatalf("the pending message tells the policies apart:\n%s\n%s", none, many)
	}
}

// Two Certificates with one secretName: one owns the secret, the other is
// not Ready and names the owner; no more than one request each (cert-manager PR #6406).
func TestSharedSecretNameHasOneOwner(t *testing.T) {
	e := newEnv(t, 0)
	second := strings.Replace(apitest.Certificate("team-a", "b", "ss", "b.example.com"), "secretName: b-tls", "secretName: a-tls", 1)
	e.mustDo(200, "POST", "/v1/apply", admin, "application/yaml", apitest.Docs(apitest.Issuer("team-a", "ss"),
		apitest.Certificate("team-a", "a", "ss", "a.example.com"), second))
	run := func() {
		for range 3 {
			if _, err := e.rt.RunUntilIdle(t.Context(), 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	// No policy here: the owner's request is approved by hand. Both
	// Certificates asked for a certificate before either was stored; once
	// a's is, b sees the owner at its next look (within WaitPoll).
	e.mustDo(200, "POST", "/v1/namespaces/team-a/certificaterequests/a-1/approval", admin, "application/json", `{"approve": true}`)
	run()
	e.rt.Clock.Advance(11 * time.Minute)
	run()
	ready := func(name string) *api.Condition {
		r := e.mustDo(200, "GET", "/v1/namespaces/team-a/certificates/"+name, admin, "", "")
		var c api.Certificate
		if err := json.Unmarshal([]byte(r.body), &c); err != nil {
			t.Fatal(err)
		}
		return api.FindCondition(c.Status.Conditions, api.CertificateConditionReady)
	}
	if c := ready("a"); c == nil || c.Status != api.ConditionTrue {
		t.Fatalf("owner a: %+v", c)
	}
	if c := ready("b"); c == nil || c.Status != api.ConditionFalse || c.Reason != "DuplicateSecretName" || !strings.Contains(c.Message, `"a"`) {
		t.Fatalf("b: %+v", c)
	}
	if n := e.count(api.KindCertificateRequest, "team-a"); n > 2 {
		t.Fatalf("%d CertificateRequests, want one each at most", n)
	}
}

// Names a CA must never sign, under a policy allowing
// *.team-a.example.com: denied through the API, never signed; a valid name
// under the same policy is approved.
func TestNamesACAMustNotSignThroughTheAPI(t *testing.T) {
	e := newEnv(t, 0)
	e.mustDo(200, "POST", "/v1/apply", admin, "application/yaml", apitest.Docs(apitest.Issuer("team-a", "ss"),
		apitest.Grant("requester", alice, "team-a", "cert-manager.io", []string{"certificaterequests"}, []string{"create", "get"}),
		apitest.Grant("team-a-policy", alice, "team-a", "policy.cert-manager.io", []string{"certificaterequestpolicies"}, []string{"use"}),
		`apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: team-a}
spec:
  allowed:
    commonName: {value: "*.team-a.example.com"}
    dnsNames: {values: ["*.team-a.example.com"]}
    usages: ["digital signature", "server auth"]
  selector: {issuerRef: {}}
`))
	names := map[string]string{"nul": "evil.com\x00.team-a.example.com", "slash": "evil.org/.team-a.example.com",
		"space": "evil.org .team-a.example.com", "good": "www.team-a.example.com"}
	for name, dnsName := range names {
		e.mustDo(200, "POST", "/v1/apply", alice, "application/yaml", apitest.Request(t, "team-a", name, "ss", dnsName))
	}
	if _, err := e.rt.RunUntilIdle(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	for name := range names {
		r := e.mustDo(200, "GET", "/v1/namespaces/team-a/certificaterequests/"+name, alice, "", "")
		var cr api.CertificateRequest
		if err := json.Unmarshal([]byte(r.body), &cr); err != nil {
			t.Fatal(err)
		}
		denied := api.IsTrue(cr.Status.Conditions, api.CertificateRequestConditionDenied)
		if name == "good" {
			// (A selfSigned issuer then needs the request's key; approval
			// is what the policy decides.)
			if !api.IsTrue(cr.Status.Conditions, api.CertificateRequestConditionApproved) {
				t.Fatalf("valid name not approved: %+v", cr.Status.Conditions)
			}
			continue
		}
		if !denied || len(cr.Status.Certificate) != 0 {
			t.Fatalf("%s: denied %v, certificate %d bytes: %+v", name, denied, len(cr.Status.Certificate), cr.Status.Conditions)
		}
	}
}

// The objects quota through the API: a team's apply that would take its
// namespace over the quota is a 403 naming the namespace, the count and
// the limit, and stores nothing; up to the limit is allowed.
func TestObjectsQuota(t *testing.T) {
	e := newEnvWith(t, 0, app.Settings{Quotas: app.Quotas{ObjectsPerNamespace: 2}})
	e.mustDo(200, "POST", "/v1/apply", admin, "application/yaml",
		apitest.Grant("issuers", alice, "team-a", "cert-manager.io", []string{"issuers"}, []string{"create", "get", "update"}))
	// The RoleBinding of the grant is one of team-a's objects.
	e.mustDo(200, "POST", "/v1/apply", alice, "application/yaml", apitest.Issuer("team-a", "one"))
	r := e.mustDo(http.StatusForbidden, "POST", "/v1/apply", alice, "application/yaml",
		apitest.Docs(apitest.Issuer("team-a", "two"), apitest.Issuer("team-a", "three")))
	msg, reason, _ := r.err(t)
	if reason != "Forbidden" || !strings.Contains(msg, "exceeded quota: namespace team-a holds 2 objects and this apply would create 2 more, over its quota of 2") {
		t.Fatalf("%s: %q", reason, msg)
	}
	if n := e.count(api.KindIssuer, "team-a"); n != 1 {
		t.Fatalf("%d Issuers in team-a after a refused apply, want 1", n)
	}
	// Updating what it holds stays allowed.
	e.mustDo(200, "POST", "/v1/apply", alice, "application/yaml",
		strings.Replace(apitest.Issuer("team-a", "one"), "selfSigned: {}", "selfSigned: {crlDistributionPoints: [\"http://crl\"]}", 1))
}
