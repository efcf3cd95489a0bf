package awse2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// csrYAML is a CertificateSigningRequest for name.example.internal.
func csrYAML(t *testing.T, name, signer string, expirationSeconds int) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dns := name + ".example.internal"
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: dns}, DNSNames: []string{dns}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s}
spec:
  request: %s
  signerName: %s
  expirationSeconds: %d
  usages: [digital signature, key encipherment, server auth]
`, name, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), signer, expirationSeconds)
}

// CertificateSigningRequests on the AWS functions: created through the api
// function (requester from the caller), approved through the approval
// subresource (the cloud approver is policy-only: nothing decides it
// before), handed by the worker to the signer, which signs it with the CA
// key the worker never reads, within the IAM policies of iam.tf (the
// guard fails the test on a denied call); requested and honoured lifetimes
// are recorded. A requester who may create CSRs cannot approve them.
func TestCSRIssuedOnAWS(t *testing.T) {
	// Auto-approve only another issuer's requests: this CSR waits for a person.
	d := deployEnv(t, func(e *awstest.Env) { e.Vars[awsmode.EnvAutoApprove] = "clusterissuers.cert-manager.io/other" }, nil)
	d.installCA("ops-ca")
	d.run()
	d.apply(csrYAML(t, "app", "clusterissuers.cert-manager.io/ops-ca", 3600))
	d.run()
	key := api.Key{Kind: api.KindCertificateSigningRequest, Name: "app"}
	get := func() *api.CertificateSigningRequest {
		t.Helper()
		o, err := d.api.Repo.Get(d.Ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*api.CertificateSigningRequest)
	}
	if c := get(); len(c.Status.Conditions) != 0 || c.Spec.Username != caller.Username {
		t.Fatalf("before approval: %+v, requester %q", c.Status.Conditions, c.Spec.Username)
	}
	nobody := app.Caller{Username: "arn:aws:iam::123456789012:role/app", Groups: []string{"system:authenticated"}}
	if _, err := d.api.App.Service.ApproveCSR(d.Ctx, nobody, "app", true, "", "", ""); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("an unbound caller approved: %v", err)
	}
	if _, err := d.api.App.Service.ApproveCSR(d.Ctx, caller, "app", true, "", "reviewed", ""); err != nil {
		t.Fatal(err)
	}
	d.run()
	c := get()
	if !c.IsIssued() {
		t.Fatalf("not issued: %+v", c.Status.Conditions)
	}
	chain, err := pki.ParseChainPEM(c.Status.Certificate)
	if err != nil || chain[0].NotAfter.Sub(chain[0].NotBefore) != time.Hour || chain[0].DNSNames[0] != "app.example.internal" {
		t.Fatalf("certificate: %v %+v", err, chain)
	}
	if c.Status.RequestedDuration.Duration != time.Hour || c.Status.HonouredDuration.Duration != time.Hour {
		t.Fatalf("durations: %+v", c.Status)
	}
	// A denied CSR is never signed.
	d.apply(csrYAML(t, "denied", "clusterissuers.cert-manager.io/ops-ca", 600))
	if _, err := d.api.App.Service.ApproveCSR(d.Ctx, caller, "denied", false, "Nope", "denied on AWS", ""); err != nil {
		t.Fatal(err)
	}
	d.run()
	o, _ := d.api.Repo.Get(d.Ctx, api.Key{Kind: api.KindCertificateSigningRequest, Name: "denied"})
	if dc := o.(*api.CertificateSigningRequest); !dc.Status.Has(api.CSRConditionDenied) || dc.IsIssued() {
		t.Fatalf("denied CSR: %+v", dc.Status.Conditions)
	}
	// A namespaced Issuer's CSR whose requester may not reference it: the
	// worker fails it (the signer, which may not read RBAC, never sees it).
	d.apply("apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata: {name: team-ca, namespace: default}\nspec: {ca: {secretName: team-ca}}\n")
	d.InstallSecret(ct.NewCA(t).Secret(t, "default", "team-ca"), "ca")
	d.run()
	requester := app.Caller{Username: "arn:aws:iam::123456789012:role/requester", Groups: []string{"system:authenticated"}}
	d.apply(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-requester}
rules: [{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: requester}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-requester}
subjects: [{kind: User, name: "arn:aws:iam::123456789012:role/requester"}]
`)
	objs, err := api.Decode([]byte(csrYAML(t, "noref", "issuers.cert-manager.io/default.team-ca", 600)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.api.App.Service.Apply(d.Ctx, requester, objs); err != nil {
		t.Fatal(err)
	}
	if _, err := d.api.App.Service.ApproveCSR(d.Ctx, caller, "noref", true, "", "", ""); err != nil {
		t.Fatal(err)
	}
	d.run()
	o, _ = d.api.Repo.Get(d.Ctx, api.Key{Kind: api.KindCertificateSigningRequest, Name: "noref"})
	if f := o.(*api.CertificateSigningRequest).Status.Condition(api.CSRConditionFailed); f == nil || f.Reason != certificatesigningrequests.ReasonDeniedReference {
		t.Fatalf("noref: %+v", o.(*api.CertificateSigningRequest).Status.Conditions)
	}
	if strings.Contains(string(c.Status.Certificate), "PRIVATE KEY") {
		t.Fatal("key material in status")
	}
	d.scanForKeys()
}

// A CertificateSigningRequest for an ACME ClusterIssuer on the AWS
// functions: the worker (never the signer) creates the Order the CSR owns
// in the cluster resource namespace, the Order and its Challenge run
// against Pebble with the http01 function answering, and the Order's last
// write wakes the CSR, which takes its certificate — all within iam.tf's
// policies (the IAM guard fails the test on a denied call). Deleting the
// CSR through the api function takes its Order along.
func TestACMECSROnAWS(t *testing.T) {
	h01Port := freePort(t)
	h01Addr := fmt.Sprintf("127.0.0.1:%d", h01Port)
	peb := startPebble(t, h01Port)
	e := awstest.New(t)
	e.EngineClock = &awstest.WallClock{}
	d := &deployment{Env: e, t: t, api: e.Runtime(app.API.Name), signer: e.Runtime(app.Signer.Name), sched: e.Runtime(app.Scheduler.Name),
		worker: e.Runtime(app.Worker.Name, func(o *awsmode.Options) { o.ACME.HTTP01SelfCheckAddr = h01Addr })}
	serveHTTP01(t, h01Addr, e.Runtime(app.HTTP01.Name))
	d.apply(fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: pebble}
spec:
  acme:
    server: %s
    caBundle: %s
    privateKeySecretRef: {name: pebble-account}
    solvers:
    - http01: {ingress: {}}
`, peb.dirURL, base64.StdEncoding.EncodeToString(peb.tlsPEM)))
	d.apply(csrYAML(t, "workload", "clusterissuers.cert-manager.io/pebble", 3600))
	key := api.Key{Kind: api.KindCertificateSigningRequest, Name: "workload"}
	get := func() *api.CertificateSigningRequest {
		t.Helper()
		o, err := d.api.Repo.Get(d.Ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*api.CertificateSigningRequest)
	}
	deadline := time.Now().Add(90 * time.Second)
	for !get().IsFinal() {
		n1, _ := d.Deliver(d.worker, d.WorkerQueueURL)
		n2, _ := d.Deliver(d.signer, d.SignerQueueURL)
		if time.Now().After(deadline) {
			t.Fatalf("CSR not signed after 90 s: %+v", get().Status.Conditions)
		}
		if n1 == 0 && n2 == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	c := get()
	if !c.IsIssued() {
		t.Fatalf("CSR final but not issued: %+v", c.Status.Conditions)
	}
	chain, err := pki.ParseChainPEM(c.Status.Certificate)
	if err != nil || chain[0].DNSNames[0] != "workload.example.internal" {
		t.Fatalf("certificate: %v", err)
	}
	inter := x509.NewCertPool()
	for _, ic := range chain[1:] {
		inter.AddCert(ic)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: peb.roots, Intermediates: inter, DNSName: "workload.example.internal"}); err != nil {
		t.Fatalf("the CSR's certificate does not verify against Pebble's root: %v", err)
	}
	orders, err := d.api.Repo.List(d.Ctx, api.KindOrder, "")
	if err != nil || len(orders) != 1 {
		t.Fatalf("orders: %v %d", err, len(orders))
	}
	if o := orders[0].(*api.Order); o.Namespace != "cert-manager" || o.ControllerOf() == nil || o.ControllerOf().Kind != api.KindCertificateSigningRequest {
		t.Fatalf("Order %s/%s owned by %+v, want in cert-manager owned by the CSR", o.Namespace, o.Name, o.OwnerReferences)
	}
	if n := d.Usage().Invocations[app.Signer.Name]; n != 0 {
		t.Errorf("the signer was invoked %d times for an ACME CSR", n)
	}
	if err := d.api.App.Service.Delete(d.Ctx, caller, key, app.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if orders, err := d.api.Repo.List(d.Ctx, api.KindOrder, ""); err != nil || len(orders) != 0 {
		t.Fatalf("after deleting the CSR: %v, %d Orders left", err, len(orders))
	}
	d.scanForKeys()
}
