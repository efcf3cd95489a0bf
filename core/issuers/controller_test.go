package issuers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/repo"
)

// A request waiting for a CA issuer is woken when the issuer becomes
// Ready (the CA secret appears), not only by its own poll.
func TestIssuerReadyWakesWaitingRequests(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.CAIssuerYAML)
	crt := ct.Cert() // issuerRef: Issuer "ca"
	csr := ct.CSR(t, crt, ct.Key(t, nil))
	r.Apply(fmt.Sprintf("apiVersion: cert-manager.io/v1\nkind: CertificateRequest\nmetadata: {name: req, namespace: default}\nspec: {issuerRef: {name: ca}, request: %s}\n", apptest.B64(csr)))
	r.Drain()
	reqKey := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}
	cr := r.Get(reqKey).(*api.CertificateRequest)
	if c := api.FindCondition(cr.Status.Conditions, "Ready"); c == nil || c.Reason != "Pending" || !strings.Contains(c.Message, `issuer "ca" does not have a Ready status condition`) {
		t.Fatalf("request not waiting for the issuer: %+v", cr.Status.Conditions)
	}
	// The CA secret appears; only the issuer is reconciled.
	ca := ct.NewCA(t)
	if err := r.Secrets.Put(r.Ctx, ca.Secret(t, "default", "ca-key-pair")); err != nil {
		t.Fatal(err)
	}
	r.ClearQueue()
	r.Reconcile(apptest.CAKey)
	if got := r.Visible(); !strings.Contains(strings.Join(got, ","), reqKey.String()) {
		t.Fatalf("the waiting request was not woken: queue %v", got)
	}
	r.Drain()
	if cr := r.Get(reqKey).(*api.CertificateRequest); !cr.IsIssued() {
		t.Fatalf("request not issued after the issuer became ready: %+v", cr.Status.Conditions)
	}
}

func TestNewControllerRequiresItsPorts(t *testing.T) {
	waiting := repo.New(memory.NewStore(), api.IssuerScope{})
	for _, tc := range []struct {
		name string
		cfg  issuers.Config
		want string
	}{
		{"secrets", issuers.Config{Waiting: waiting}, "Secrets is required"},
		{"waiting", issuers.Config{Secrets: ct.NewMemSecrets()}, "Waiting is required"},
	} {
		if _, err := issuers.NewController(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s missing: err = %v", tc.name, err)
		}
	}
	c, err := issuers.NewController(issuers.Config{Secrets: ct.NewMemSecrets(), Waiting: waiting})
	if err != nil {
		t.Fatal(err)
	}
	if c.Config().WaitPoll != 10*time.Minute {
		t.Fatalf("defaults not applied: %+v", c.Config())
	}
}
