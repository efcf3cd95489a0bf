package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

// Each role holds the parts its data names, and nothing else.
func TestBuildRoles(t *testing.T) {
	for _, tc := range []struct {
		role      app.Role
		signers   []string // issuer types with a signer (signed here or handed off)
		engine    bool
		accounts  bool
		http01    bool
		secretsOK bool
	}{
		{app.Local, []string{"acme", "ca", "selfSigned"}, true, true, true, true},
		{app.Worker, []string{"acme", "ca", "selfSigned"}, true, true, false, true},
		{app.Signer, []string{"ca", "selfSigned"}, true, false, false, true},
		{app.Scheduler, nil, true, false, false, false},
		{app.API, nil, true, false, false, false},
		{app.HTTP01, nil, false, false, true, false},
	} {
		t.Run(tc.role.Name, func(t *testing.T) {
			clk := clock.NewFake(ct.T0)
			p := app.Ports{Store: memory.NewStore(), Secrets: memory.NewSecrets(), Queue: memory.NewQueue(clk, time.Minute), Clock: clk,
				ACME: acmetest.Dialer{}}
			a, err := app.Build(p, app.Settings{}, tc.role)
			if err != nil {
				t.Fatal(err)
			}
			if (a.Kernel != nil) != tc.engine || (a.Service != nil) != tc.engine || (a.Accounts != nil) != tc.accounts || (a.HTTP01 != nil) != tc.http01 {
				t.Fatalf("parts: engine %v service %v accounts %v http01 %v", a.Kernel != nil, a.Service != nil, a.Accounts != nil, a.HTTP01 != nil)
			}
			if a.Kernel == nil {
				return
			}
			var types []string
			for typ := range a.Wiring().Signers {
				types = append(types, typ)
			}
			slices.Sort(types)
			if strings.Join(types, ",") != strings.Join(tc.signers, ",") {
				t.Fatalf("signers %v, want %v", types, tc.signers)
			}
			_, err = a.Wiring().Secrets.Get(context.Background(), "default", "x")
			if refused := errs.IsPermanent(err) && strings.Contains(err.Error(), "not part of this role"); refused == tc.secretsOK {
				t.Fatalf("secret store of %s: %v", tc.role.Name, err)
			}
		})
	}
}

// A role that hands off sends the request to the signer queue and leaves
// it pending; without a signer queue it fails permanently.
func TestHandOff(t *testing.T) {
	clk := clock.NewFake(ct.T0)
	sq := memory.NewQueue(clk, time.Minute)
	build := func(q ports.Queue) signers.Signer {
		a, err := app.Build(app.Ports{Store: memory.NewStore(), Secrets: memory.NewSecrets(), Queue: memory.NewQueue(clk, time.Minute),
			SignerQueue: q, Clock: clk, ACME: acmetest.Dialer{}}, app.Settings{}, app.Worker)
		if err != nil {
			t.Fatal(err)
		}
		return a.Wiring().Signers["ca"]
	}
	cr := &api.CertificateRequest{ObjectMeta: api.ObjectMeta{Name: "r", Namespace: "default"}}
	_, err := build(sq).Sign(context.Background(), signers.Request{CR: cr})
	if err == nil || err.Error() != app.HandoffMessage {
		t.Fatalf("hand-off: %v", err)
	}
	if ds, _ := sq.Receive(context.Background(), 10); len(ds) != 1 || ds[0].Key.String() != "CertificateRequest/default/r" {
		t.Fatalf("signer queue holds %v", ds)
	}
	if _, err := build(nil).Sign(context.Background(), signers.Request{CR: cr}); !errs.IsPermanent(err) {
		t.Fatalf("hand-off without a signer queue: %v", err)
	}
}

// The api role never touches the secret store: deleting a Certificate
// leaves its next private key in place and says so in the log.
func TestAPIRoleLeavesSecrets(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.CertYAML)
	var logs bytes.Buffer
	a, err := app.Build(app.Ports{Store: r.Store, Queue: r.Queue, Clock: r.Clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		app.Settings{}, app.API)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Service.Delete(r.Ctx, apptest.Caller, apptest.CertKey, app.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "name=web-next-private-key") {
		t.Fatalf("log %q", logs.String())
	}
}

// What Build assembles without settings: the cluster resource namespace,
// an approver (certfn's policy approver) and certfn's identity.
func TestBuildDefaults(t *testing.T) {
	w := apptest.NewPolicyRig(t).App.Wiring()
	if w.ClusterResourceNamespace != "cert-manager" || w.Approver == nil || w.Identity.Username == "" || w.Evaluator == nil {
		t.Fatalf("defaults not applied: %+v", w)
	}
}
