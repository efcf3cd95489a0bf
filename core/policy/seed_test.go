package policy

import (
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Every example of docs/design/approval-policy.md (approver-policy's documentation), as tables.

// The first example: a policy allowing only common name "hello.world",
// bound to every authenticated user through the seed's ClusterRole and
// ClusterRoleBinding (applied as manifests, unchanged).
const seedHelloWorld = `
apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata:
  name: test-policy
spec:
  allowed:
    commonName:
      value: "hello.world"
      required: true
  selector:
    # Select all IssuerRef
    issuerRef: {}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cert-manager-policy:hello-world
rules:
  - apiGroups: ["policy.cert-manager.io"]
    resources: ["certificaterequestpolicies"]
    verbs: ["use"]
    # Name of the CertificateRequestPolicies to be used.
    resourceNames: ["test-policy"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: cert-manager-policy:hello-world
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cert-manager-policy:hello-world
subjects:
  - kind: Group
    name: system:authenticated
    apiGroup: rbac.authorization.k8s.io
`

func TestSeedHelloWorld(t *testing.T) {
	objs := decodeAll(t, seedHelloWorld)
	authz := authorizerFrom(objs)
	if w := authz.Warnings(); len(w) > 0 {
		t.Fatalf("seed bindings produce warnings: %v", w)
	}
	runEvalCases(t, newEvaluator(t), policiesFrom(objs), authz, []evalCase{
		{name: "hello.world is approved", cr: newCR(t, csr(cn("hello.world"))), want: Approved, policy: "test-policy",
			msg: []string{`approved by CertificateRequestPolicy "test-policy"`}},
		{name: "any issuer is selected", cr: newCR(t, csr(cn("hello.world")), issuer("le", "ClusterIssuer", "")), want: Approved},
		{name: "another common name is denied", cr: newCR(t, csr(cn("hello.other"))), want: Denied,
			msg: []string{`policy "test-policy"`, `spec.allowed.commonName.value: "hello.other" is not allowed (allowed: "hello.world")`}},
		{name: "common name is required", cr: newCR(t, csr(dns())), want: Denied,
			msg: []string{"spec.allowed.commonName.required: the request must carry a common name"}},
		{name: "DNS names are not allowed by omission", cr: newCR(t, csr(cn("hello.world"), dns("hello.world"))), want: Denied,
			msg: []string{`spec.allowed.dnsNames: "hello.world" is not allowed: the policy allows no DNS names`}},
		{name: "a service account is authenticated too", cr: newCR(t, csr(cn("hello.world")),
			byUser("system:serviceaccount:cert-manager:cert-manager")), want: Approved},
		{name: "an unauthenticated requester is bound to nothing", cr: newCR(t, csr(cn("hello.world")), byUser("")), want: Unmatched,
			msg: []string{`no policy applies to requester "" for issuer Issuer "ca" (group cert-manager.io) in namespace "default"`,
				`not bound to the requester with "use"`}},
	})
}

func TestSeedDNSNames(t *testing.T) {
	p := policyYAML(t, "dns", `
allowed:
  dnsNames:
    values:
      - "example.com"
      - "foo.example.com"
selector:
  issuerRef: {}
`)
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "no DNS names", cr: newCR(t, csr()), want: Approved},
		{name: "example.com", cr: newCR(t, csr(dns("example.com"))), want: Approved},
		{name: "a subset of the list", cr: newCR(t, csr(dns("foo.example.com", "example.com"))), want: Approved},
		{name: "bar.example.com is denied", cr: newCR(t, csr(dns("bar.example.com"))), want: Denied,
			msg: []string{`spec.allowed.dnsNames.values: "bar.example.com" is not allowed (allowed: "example.com", "foo.example.com")`}},
		{name: "one value outside the list denies", cr: newCR(t, csr(dns("example.com", "bar.example.com"))), want: Denied,
			msg: []string{`"bar.example.com" is not allowed`}, noMatch: []string{`"example.com" is not allowed`}},
	})
}

func TestSeedRequiredWildcardCommonName(t *testing.T) {
	p := policyYAML(t, "dot-com", `
allowed:
  commonName:
    value: "*.com"
    required: true
selector:
  issuerRef: {}
`)
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "no common name is denied", cr: newCR(t, csr()), want: Denied, msg: []string{"spec.allowed.commonName.required"}},
		{name: "ends in .com", cr: newCR(t, csr(cn("example.com"))), want: Approved},
		{name: "deep name ending in .com", cr: newCR(t, csr(cn("a.b.example.com"))), want: Approved},
		{name: "ends in .org", cr: newCR(t, csr(cn("example.org"))), want: Denied,
			msg: []string{`spec.allowed.commonName.value: "example.org" is not allowed (allowed: "*.com")`}},
		{name: "no dot before com", cr: newCR(t, csr(cn("examplecom"))), want: Denied},
	})
}

func TestSeedSPIFFEValidation(t *testing.T) {
	p := policyYAML(t, "spiffe", `
allowed:
  uris:
    validations:
      - rule: self.startsWith('spiffe://trust.domain/ns/' + cr.namespace + '/sa/')
        message: only URIs representing the current namespace in the SPIFFE ID are allowed.
selector:
  issuerRef: {}
`)
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "own namespace", cr: newCR(t, csr(uris("spiffe://trust.domain/ns/team-a/sa/web")), inNamespace("team-a")), want: Approved},
		{name: "another namespace", cr: newCR(t, csr(uris("spiffe://trust.domain/ns/team-a/sa/web")), inNamespace("team-b")), want: Denied,
			msg: []string{`spec.allowed.uris.validations[0]: "spiffe://trust.domain/ns/team-a/sa/web": only URIs representing the current namespace in the SPIFFE ID are allowed.`}},
		{name: "checked once per value", cr: newCR(t, csr(uris("spiffe://trust.domain/ns/team-a/sa/web", "spiffe://trust.domain/ns/team-b/sa/web")),
			inNamespace("team-a")), want: Denied, msg: []string{`"spiffe://trust.domain/ns/team-b/sa/web"`},
			noMatch: []string{`"spiffe://trust.domain/ns/team-a/sa/web"`}},
		{name: "no URIs at all", cr: newCR(t, csr(), inNamespace("team-a")), want: Approved},
		{name: "prefix trick does not pass", cr: newCR(t, csr(uris("spiffe://trust.domain/ns/team-ab/sa/web")), inNamespace("team-a")), want: Denied},
	})
}

// The example listing every allowed field.
const seedAllAllowed = `
allowed:
  commonName:
    value: "example.com"
  dnsNames:
    values:
      - "example.com"
      - "*.example.com"
  ipAddresses:
    values:
      - "1.2.3.4"
      - "10.0.1.*"
  uris:
    values:
      - "spiffe://example.org/ns/*/sa/*"
  emailAddresses:
    values:
      - "*@example.com"
    required: true
  isCA: false
  usages:
    - "server auth"
    - "client auth"
  subject:
    organizations:
      values: ["hello-world"]
    countries:
      values: ["*"]
    organizationalUnits:
      values: ["*"]
    localities:
      values: ["*"]
    provinces:
      values: ["*"]
    streetAddresses:
      values: ["*"]
    postalCodes:
      values: ["*"]
    serialNumber:
      value: "*"
selector:
  issuerRef: {}
`

func TestSeedAllAllowedFields(t *testing.T) {
	p := policyYAML(t, "my-policy", seedAllAllowed)
	good := func(extra ...csrOpt) []csrOpt {
		return append([]csrOpt{cn("example.com"), dns("example.com", "www.example.com"), ips("1.2.3.4", "10.0.1.9"),
			uris("spiffe://example.org/ns/a/sa/b"), emails("ops@example.com"), orgs("hello-world"),
			subj(func(n *pkix.Name) {
				n.Country, n.OrganizationalUnit, n.Locality = []string{"JP"}, []string{"sec"}, []string{"Tokyo"}
				n.Province, n.StreetAddress, n.PostalCode, n.SerialNumber = []string{"Tokyo"}, []string{"1-1"}, []string{"100-0001"}, "42"
			})}, extra...)
	}
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "everything allowed", cr: newCR(t, good(), usages("server auth", "client auth")), want: Approved},
		{name: "usage subset", cr: newCR(t, good(), usages("server auth")), want: Approved},
		{name: "minimal request with the required e-mail", cr: newCR(t, csr(emails("a@example.com"))), want: Approved},
		{name: "e-mail required", cr: newCR(t, csr(cn("example.com"))), want: Denied,
			msg: []string{"spec.allowed.emailAddresses.required: the request must carry an e-mail address"}},
		{name: "usage outside the list", cr: newCR(t, good(), usages("server auth", "cert sign")), want: Denied,
			msg: []string{`spec.allowed.usages: "cert sign" is not allowed (allowed: "server auth", "client auth")`}},
		{name: "isCA false forbids CA", cr: newCR(t, good(), isCA()), want: Denied, msg: []string{"spec.allowed.isCA"}},
		{name: "IP outside the wildcard", cr: newCR(t, good(ips("10.0.2.1"))), want: Denied,
			msg: []string{`spec.allowed.ipAddresses.values: "10.0.2.1" is not allowed`}},
		{name: "subdomain by wildcard", cr: newCR(t, good(dns("a.b.example.com"))), want: Approved},
		{name: "wildcard needs the dot", cr: newCR(t, good(dns("badexample.com"))), want: Denied},
		{name: "URI outside the pattern", cr: newCR(t, good(uris("https://example.org/"))), want: Denied,
			msg: []string{`spec.allowed.uris.values: "https://example.org/" is not allowed`}},
		{name: "e-mail of another domain", cr: newCR(t, good(emails("x@example.org"))), want: Denied},
		{name: "organization outside the list", cr: newCR(t, good(orgs("evil"))), want: Denied,
			msg: []string{`spec.allowed.subject.organizations.values: "evil" is not allowed (allowed: "hello-world")`}},
		{name: "common name other than example.com", cr: newCR(t, good(cn("www.example.com"))), want: Denied},
	})
}

func TestSeedConstraints(t *testing.T) {
	keys(t)
	p := policyYAML(t, "constrained", `
allowed:
  dnsNames:
    values: ["*"]
constraints:
  minDuration: 1h
  maxDuration: 24h
  privateKey:
    algorithm: RSA
    minSize: 2048
    maxSize: 4096
selector:
  issuerRef: {}
`)
	rsaCSR := csr(withKey(rsaKey2048), dns("a.example.com"))
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "12h RSA 2048", cr: newCR(t, rsaCSR, duration(12*time.Hour)), want: Approved},
		{name: "bounds are inclusive", cr: newCR(t, rsaCSR, duration(24*time.Hour)), want: Approved},
		{name: "min bound inclusive", cr: newCR(t, rsaCSR, duration(time.Hour)), want: Approved},
		{name: "expirationSeconds counts as the duration (docs/design/request-duration.md)", cr: newCR(t, rsaCSR, expirationSeconds(7200)), want: Approved},
		{name: "a duration is required", cr: newCR(t, rsaCSR), want: Denied,
			msg: []string{"spec.constraints.maxDuration: the request carries no duration"}},
		{name: "too long", cr: newCR(t, rsaCSR, duration(48*time.Hour)), want: Denied,
			msg: []string{"spec.constraints.maxDuration: requested duration 48h0m0s is longer than 24h0m0s"}},
		{name: "too short", cr: newCR(t, rsaCSR, duration(30*time.Minute)), want: Denied,
			msg: []string{"spec.constraints.minDuration: requested duration 30m0s is shorter than 1h0m0s"}},
		{name: "ECDSA key", cr: newCR(t, csr(dns("a.example.com")), duration(2*time.Hour)), want: Denied,
			msg: []string{"spec.constraints.privateKey.algorithm: the request's key is ECDSA, the policy requires RSA",
				"spec.constraints.privateKey.minSize: the request's ECDSA key has size 256"}},
		{name: "RSA 1024 too small", cr: newCR(t, csr(withKey(rsa1k)), duration(2*time.Hour)), want: Denied,
			msg: []string{"spec.constraints.privateKey.minSize: the request's RSA key has size 1024, the policy requires at least 2048"}},
	})
}

func TestSeedConstraintsMaxKeySize(t *testing.T) {
	keys(t)
	p := policyYAML(t, "ec", `
constraints:
  privateKey:
    algorithm: ECDSA
    maxSize: 256
selector:
  issuerRef: {}
`)
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "P-256", cr: newCR(t, csr()), want: Approved},
		{name: "P-384 over maxSize", cr: newCR(t, csr(withKey(ecKey384))), want: Denied,
			msg: []string{"spec.constraints.privateKey.maxSize: the request's ECDSA key has size 384, the policy allows at most 256"}},
		{name: "no duration needed without duration constraints", cr: newCR(t, csr()), want: Approved},
	})
}

func TestSeedIssuerRefSelector(t *testing.T) {
	p := policyYAML(t, "my-policy", `
allowed:
  dnsNames:
    values: ["*"]
selector:
  issuerRef:
    name: "my-ca"
    kind: "*Issuer"
    group: "cert-manager.io"
`)
	all := policyYAML(t, "match-all-requests", `
allowed:
  commonName:
    value: "*"
selector:
  issuerRef: {}
`)
	ev := newEvaluator(t)
	runEvalCases(t, ev, []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "Issuer my-ca", cr: newCR(t, csr(dns("a")), issuer("my-ca", "Issuer", "cert-manager.io")), want: Approved},
		{name: "ClusterIssuer my-ca", cr: newCR(t, csr(dns("a")), issuer("my-ca", "ClusterIssuer", "cert-manager.io")), want: Approved},
		{name: "kind and group default", cr: newCR(t, csr(dns("a")), issuer("my-ca", "", "")), want: Approved},
		{name: "another issuer", cr: newCR(t, csr(dns("a")), issuer("other-ca", "Issuer", "")), want: Unmatched,
			msg: []string{`for issuer Issuer "other-ca"`, "1 not selecting this request"}},
		{name: "external group", cr: newCR(t, csr(dns("a")), issuer("my-ca", "Issuer", "awspca.cert-manager.io")), want: Unmatched},
		{name: "kind not ending in Issuer", cr: newCR(t, csr(dns("a")), issuer("my-ca", "Signer", "")), want: Unmatched},
	})
	runEvalCases(t, ev, []*api.CertificateRequestPolicy{all}, bindAll(), []evalCase{
		{name: "{} matches any issuer", cr: newCR(t, csr(cn("x")), issuer("anything", "AWSPCAClusterIssuer", "awspca.cert-manager.io")), want: Approved},
	})
}

func TestSeedNamespaceSelector(t *testing.T) {
	p := policyYAML(t, "my-policy", `
allowed:
  commonName:
    value: "*"
selector:
  namespace:
    matchNames:
      - "default"
      - "app-team-*"
    matchLabels:
      foo: bar
      team: dev
`)
	all := policyYAML(t, "match-all-requests", `
allowed:
  commonName:
    value: "*"
selector:
  namespace: {}
`)
	both := policyYAML(t, "both", `
allowed:
  commonName:
    value: "*"
selector:
  issuerRef:
    name: "ca"
  namespace:
    matchNames: ["app-team-*"]
`)
	devLabels := map[string]string{"foo": "bar", "team": "dev", "other": "x"}
	ev := newEvaluator(t)
	runEvalCases(t, ev, []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "default with labels", cr: newCR(t, csr(cn("x"))), labels: devLabels, want: Approved},
		{name: "app-team-1 with labels", cr: newCR(t, csr(cn("x")), inNamespace("app-team-1")), labels: devLabels, want: Approved},
		{name: "name matches, a label differs", cr: newCR(t, csr(cn("x")), inNamespace("app-team-1")),
			labels: map[string]string{"foo": "bar", "team": "ops"}, want: Unmatched},
		{name: "name matches, no Namespace object", cr: newCR(t, csr(cn("x")), inNamespace("app-team-1")), want: Unmatched},
		{name: "labels match, name does not", cr: newCR(t, csr(cn("x")), inNamespace("prod")), labels: devLabels, want: Unmatched},
	})
	runEvalCases(t, ev, []*api.CertificateRequestPolicy{all}, bindAll(), []evalCase{
		{name: "{} matches any namespace", cr: newCR(t, csr(cn("x")), inNamespace("anything")), want: Approved},
	})
	runEvalCases(t, ev, []*api.CertificateRequestPolicy{both}, bindAll(), []evalCase{
		{name: "both selectors match", cr: newCR(t, csr(cn("x")), inNamespace("app-team-2")), want: Approved},
		{name: "namespace matches, issuer does not", cr: newCR(t, csr(cn("x")), inNamespace("app-team-2"), issuer("other", "", "")), want: Unmatched},
		{name: "issuer matches, namespace does not", cr: newCR(t, csr(cn("x")), inNamespace("default")), want: Unmatched},
	})
}

func TestSeedPluginsBlockDecodes(t *testing.T) {
	// The seed's plugins example: a plugin this build does not register
	// makes the policy not Ready (it never approves), with a clear reason.
	p := policyYAML(t, "plugins", `
plugins:
  my-plugin:
    values:
      val-1: key-1
selector:
  issuerRef: {}
`)
	if got := p.Spec.Plugins["my-plugin"].Values["val-1"]; got != "key-1" {
		t.Fatalf("plugins.my-plugin.values.val-1 = %q", got)
	}
	errs := Validate(p)
	if len(errs) != 1 || errs[0].Path != "spec.plugins" || !strings.Contains(errs[0].Rule, `Unsupported value: "my-plugin"`) {
		t.Fatalf("Validate = %v, want one error at spec.plugins naming my-plugin", errs)
	}
	runEvalCases(t, newEvaluator(t), []*api.CertificateRequestPolicy{p}, bindAll(), []evalCase{
		{name: "not Ready never approves", cr: newCR(t, csr()), want: Unmatched, msg: []string{"1 not Ready"}},
	})
}
