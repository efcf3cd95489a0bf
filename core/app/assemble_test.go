package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// factoryLog records which factories Assemble called, and the secret
// access it asked for.
type factoryLog struct {
	calls  []app.Port
	access *app.SecretAccess
}

// countingFactories returns factories of memory adapters that record
// their calls in log.
func countingFactories(log *factoryLog) app.PortFactories {
	clk := clock.NewFake(ct.T0)
	note := func(p app.Port) { log.calls = append(log.calls, p) }
	return app.PortFactories{
		Store: func(context.Context) (ports.Store, error) { note(app.PortStore); return memory.NewStore(), nil },
		Secrets: func(_ context.Context, a app.SecretAccess) (ports.SecretStore, error) {
			note(app.PortSecrets)
			log.access = &a
			return memory.NewSecrets(), nil
		},
		Queue: func(context.Context) (ports.Queue, error) {
			note(app.PortQueue)
			return memory.NewQueue(clk, time.Minute), nil
		},
		SignerQueue: func(context.Context) (ports.Queue, error) {
			note(app.PortSignerQueue)
			return memory.NewQueue(clk, time.Minute), nil
		},
		ACME: func(context.Context) (acme.Dialer, error) { note(app.PortACME); return acmetest.Dialer{}, nil },
		DNS01: func(context.Context) (map[string]dns01.ProviderFactory, error) {
			note(app.PortDNS01)
			return map[string]dns01.ProviderFactory{}, nil
		},
		CertificateImporter: func(context.Context) (ports.CertificateImporter, error) {
			note(app.PortCertificateImporter)
			return memory.NewImporter(), nil
		},
		Notifier: func(context.Context) (ports.Notifier, error) {
			note(app.PortNotifier)
			return memory.NewNotifier(), nil
		},
	}
}

func without(r app.Role, change func(*app.Role)) app.Role {
	change(&r)
	return r
}

// Assemble calls the factory of every port a role needs, once, and never
// one of a port it lacks: the worker never builds a secret store that
// reaches CA keys, a role without ACME builds no ACME dialer, a role that
// hands nothing off builds no signer queue.
func TestAssembleBuildsOnlyTheRolesPorts(t *testing.T) {
	all := app.AllPorts
	for _, tc := range []struct {
		name   string
		role   app.Role
		ports  []app.Port
		access app.SecretAccess
	}{
		{"local", app.Local, []app.Port{app.PortStore, app.PortSecrets, app.PortQueue, app.PortACME, app.PortDNS01, app.PortCertificateImporter, app.PortNotifier},
			app.SecretAccess{Issued: true, ACMEAccounts: true, SolverCredentials: true, CAKeys: true, PrivateKeys: true}},
		{"worker", app.Worker, all,
			app.SecretAccess{Issued: true, ACMEAccounts: true, SolverCredentials: true, PrivateKeys: true}},
		{"signer", app.Signer, []app.Port{app.PortStore, app.PortSecrets, app.PortQueue},
			app.SecretAccess{CAKeys: true, PrivateKeys: true}},
		{"scheduler", app.Scheduler, []app.Port{app.PortStore, app.PortQueue}, app.SecretAccess{}},
		{"api", app.API, []app.Port{app.PortStore, app.PortQueue}, app.SecretAccess{}},
		{"http01", app.HTTP01, []app.Port{app.PortStore}, app.SecretAccess{}},
		{"worker without ACME", without(app.Worker, func(r *app.Role) { r.ACME = false; r.Signs = nil }),
			[]app.Port{app.PortStore, app.PortSecrets, app.PortQueue, app.PortSignerQueue, app.PortCertificateImporter, app.PortNotifier},
			app.SecretAccess{Issued: true, PrivateKeys: true}},
		{"worker handing nothing off", without(app.Worker, func(r *app.Role) { r.HandsOff = nil }),
			[]app.Port{app.PortStore, app.PortSecrets, app.PortQueue, app.PortACME, app.PortDNS01, app.PortCertificateImporter, app.PortNotifier},
			app.SecretAccess{Issued: true, ACMEAccounts: true, SolverCredentials: true, PrivateKeys: true}},
		{"worker without secrets", without(app.Worker, func(r *app.Role) { r.Secrets = false }),
			[]app.Port{app.PortStore, app.PortQueue, app.PortSignerQueue, app.PortACME, app.PortDNS01, app.PortCertificateImporter, app.PortNotifier},
			app.SecretAccess{}},
		{"signer signing CA issuers only", without(app.Signer, func(r *app.Role) { r.Signs = []string{"ca"} }),
			[]app.Port{app.PortStore, app.PortSecrets, app.PortQueue}, app.SecretAccess{CAKeys: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.role.Ports(); !slices.Equal(got, tc.ports) {
				t.Fatalf("Ports() = %v, want %v", got, tc.ports)
			}
			for _, p := range all {
				if tc.role.Needs(p) != slices.Contains(tc.ports, p) {
					t.Errorf("Needs(%s) = %v", p, tc.role.Needs(p))
				}
			}
			if got := tc.role.SecretAccess(); got != tc.access {
				t.Errorf("SecretAccess() = %+v, want %+v", got, tc.access)
			}
			var log factoryLog
			a, err := app.Assemble(context.Background(), app.Ports{}, countingFactories(&log), app.Settings{}, tc.role)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(log.calls, tc.ports) {
				t.Errorf("factories called %v, want %v (each once)", log.calls, tc.ports)
			}
			if (log.access != nil) != tc.role.Needs(app.PortSecrets) || (log.access != nil && *log.access != tc.access) {
				t.Errorf("secret store built for %+v, want %+v", log.access, tc.access)
			}
			if (a.Kernel != nil) != tc.role.Engine || (a.Accounts != nil) != tc.role.Needs(app.PortACME) || (a.HTTP01 != nil) != tc.role.HTTP01 {
				t.Errorf("parts: engine %v accounts %v http01 %v", a.Kernel != nil, a.Accounts != nil, a.HTTP01 != nil)
			}
		})
	}
}

// Among the functions, only the signer reads CA keys, only roles that
// run every step write secrets, and only the worker may import and notify.
func TestFunctionsPowers(t *testing.T) {
	for _, r := range app.Functions {
		a := r.SecretAccess()
		if a.CAKeys != (r.Name == "signer") {
			t.Errorf("%s: reads CA keys = %v", r.Name, a.CAKeys)
		}
		if a.Writes() != (r.Name == "worker") {
			t.Errorf("%s: writes secrets = %v", r.Name, a.Writes())
		}
		if r.Needs(app.PortCertificateImporter) != (r.Name == "worker") || r.Needs(app.PortNotifier) != (r.Name == "worker") {
			t.Errorf("%s: importer %v notifier %v", r.Name, r.Needs(app.PortCertificateImporter), r.Needs(app.PortNotifier))
		}
	}
}

// A needed port without a factory, or whose factory builds nothing, is an
// error naming it; an optional one stays unset; a factory's error is
// returned as it is; an adapter given in base is refused.
func TestAssembleErrors(t *testing.T) {
	ctx := context.Background()
	var log factoryLog
	noSigner := countingFactories(&log)
	noSigner.SignerQueue = nil
	if _, err := app.Assemble(ctx, app.Ports{}, noSigner, app.Settings{}, app.Worker); err == nil || !strings.Contains(err.Error(), "worker role needs the signerQueue port") {
		t.Errorf("no signer queue factory: %v", err)
	}
	nilStore := countingFactories(&log)
	nilStore.Store = func(context.Context) (ports.Store, error) { return nil, nil }
	if _, err := app.Assemble(ctx, app.Ports{}, nilStore, app.Settings{}, app.HTTP01); err == nil || !strings.Contains(err.Error(), "needs the store port") {
		t.Errorf("store factory building nothing: %v", err)
	}
	optional := countingFactories(&log)
	optional.CertificateImporter, optional.Notifier = nil, func(context.Context) (ports.Notifier, error) { return nil, nil }
	a, err := app.Assemble(ctx, app.Ports{}, optional, app.Settings{}, app.Worker)
	if err != nil {
		t.Fatalf("optional ports unset: %v", err)
	}
	if cfg := a.Wiring(); cfg.Importer != nil || cfg.Notifier != nil {
		t.Errorf("importer %v notifier %v, want none", cfg.Importer, cfg.Notifier)
	}
	boom := errors.New("CERTFN_X: no")
	failing := countingFactories(&log)
	failing.ACME = func(context.Context) (acme.Dialer, error) { return nil, boom }
	if _, err := app.Assemble(ctx, app.Ports{}, failing, app.Settings{}, app.Worker); !errors.Is(err, boom) || err.Error() != boom.Error() {
		t.Errorf("factory error: %v", err)
	}
	log = factoryLog{}
	if _, err := app.Assemble(ctx, app.Ports{Secrets: memory.NewSecrets()}, countingFactories(&log), app.Settings{}, app.API); err == nil ||
		!strings.Contains(err.Error(), "Ports.secrets is set") || len(log.calls) != 0 {
		t.Errorf("base with an adapter: %v, factories called %v", err, log.calls)
	}
}

// Every function is found by its name; others are not, and the error
// lists the names.
func TestFunctionNamed(t *testing.T) {
	for _, r := range app.Functions {
		got, err := app.FunctionNamed(r.Name)
		if err != nil || got.Name != r.Name {
			t.Errorf("FunctionNamed(%q) = %v, %v", r.Name, got.Name, err)
		}
	}
	for _, name := range []string{"local", "janitor", ""} {
		if _, err := app.FunctionNamed(name); err == nil || !strings.Contains(err.Error(), "unknown role") ||
			!strings.Contains(err.Error(), "worker, signer, scheduler, api, http01") {
			t.Errorf("FunctionNamed(%q): %v", name, err)
		}
	}
	if len(app.Roles) != len(app.Functions)+1 || app.Roles[0].Name != "local" {
		t.Errorf("Roles = %v", app.Roles)
	}
}

// A role's Deliverer: none without a consumed queue, the hand-off only
// with the signer queue port, follow-ups only from the work queue.
func TestNewDeliverer(t *testing.T) {
	clk := clock.NewFake(ct.T0)
	handOff := memory.NewQueue(clk, time.Minute)
	for _, r := range app.Roles {
		var log factoryLog
		a, err := app.Assemble(context.Background(), app.Ports{}, countingFactories(&log), app.Settings{}, r)
		if err != nil {
			t.Fatal(err)
		}
		d := app.NewDeliverer(a, app.Deliverer{HandOff: handOff, FollowUps: 7})
		if (d != nil) != (r.Consumes != "") {
			t.Errorf("%s: deliverer %v", r.Name, d)
			continue
		}
		if d == nil {
			continue
		}
		if d.App != a || (d.HandOff != nil) != r.Needs(app.PortSignerQueue) || (d.FollowUps == 7) != (r.Consumes == app.WorkQueue) {
			t.Errorf("%s: deliverer hand-off %v follow-ups %d", r.Name, d.HandOff, d.FollowUps)
		}
	}
}
