package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

// errDead is what every call of a process that died returns.
var errDead = errors.New("injected: the process died")

// dying is one process's fate: once trigger matches a call (the call
// itself took effect), the process is dead and every later store and
// secret store call fails without effect, as if it had been SIGKILLed
// there; its in-memory queue is lost with it.
type dying struct {
	mu      sync.Mutex
	armed   bool
	dead    bool
	trigger func(op string, key api.Key, data []byte) bool
}

func (d *dying) before() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return errDead
	}
	return nil
}

func (d *dying) after(op string, key api.Key, data []byte, err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil && d.armed && !d.dead && d.trigger(op, key, data) {
		d.dead = true
		return errDead
	}
	return err
}

func (d *dying) isDead() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}

type dyingStore struct {
	ports.Store
	d *dying
}

func (s dyingStore) Get(ctx context.Context, k api.Key) (ports.Record, error) {
	if err := s.d.before(); err != nil {
		return ports.Record{}, err
	}
	return s.Store.Get(ctx, k)
}

func (s dyingStore) List(ctx context.Context, o ports.ListOptions) ([]ports.Record, error) {
	if err := s.d.before(); err != nil {
		return nil, err
	}
	return s.Store.List(ctx, o)
}

func (s dyingStore) Due(ctx context.Context, now time.Time, limit int) ([]ports.DueItem, error) {
	if err := s.d.before(); err != nil {
		return nil, err
	}
	return s.Store.Due(ctx, now, limit)
}

func (s dyingStore) Create(ctx context.Context, r ports.Record) (ports.Record, error) {
	if err := s.d.before(); err != nil {
		return ports.Record{}, err
	}
	out, err := s.Store.Create(ctx, r)
	return out, s.d.after("create", r.Key, r.Data, err)
}

func (s dyingStore) Update(ctx context.Context, r ports.Record) (ports.Record, error) {
	if err := s.d.before(); err != nil {
		return ports.Record{}, err
	}
	out, err := s.Store.Update(ctx, r)
	return out, s.d.after("update", r.Key, r.Data, err)
}

func (s dyingStore) Delete(ctx context.Context, k api.Key, v int64) error {
	if err := s.d.before(); err != nil {
		return err
	}
	return s.d.after("delete", k, nil, s.Store.Delete(ctx, k, v))
}

type dyingSecrets struct {
	ports.SecretStore
	d *dying
}

func secretKey(ns, name string) api.Key { return api.Key{Kind: "Secret", Namespace: ns, Name: name} }

func (s dyingSecrets) Get(ctx context.Context, ns, name string) (ports.Secret, error) {
	if err := s.d.before(); err != nil {
		return ports.Secret{}, err
	}
	return s.SecretStore.Get(ctx, ns, name)
}

func (s dyingSecrets) Create(ctx context.Context, sec ports.Secret) error {
	if err := s.d.before(); err != nil {
		return err
	}
	return s.d.after("create", secretKey(sec.Namespace, sec.Name), nil, s.SecretStore.Create(ctx, sec))
}

func (s dyingSecrets) Put(ctx context.Context, sec ports.Secret) error {
	if err := s.d.before(); err != nil {
		return err
	}
	return s.d.after("put", secretKey(sec.Namespace, sec.Name), nil, s.SecretStore.Put(ctx, sec))
}

func (s dyingSecrets) Delete(ctx context.Context, ns, name string) error {
	if err := s.d.before(); err != nil {
		return err
	}
	return s.d.after("delete", secretKey(ns, name), nil, s.SecretStore.Delete(ctx, ns, name))
}

// Liveness after a crash: a `certfn serve` killed right after
// a step's write, before the wake-up that write queued in memory was
// delivered, is restarted as serve starts (Runtime.Resume, then its
// loops): the Certificate is Ready within 5 s of fake time, not at a
// safety net (the Certificate's FollowUpGrace of 2 minutes, or WaitPoll).
func TestRestartAfterCrashConvergesWithinSeconds(t *testing.T) {
	appKey := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "app"}
	for _, tc := range []struct {
		name    string
		trigger func(op string, key api.Key, data []byte) bool
	}{
		{"request issued, its Certificate's wake-up lost", func(op string, k api.Key, data []byte) bool {
			if op != "update" || k.Kind != api.KindCertificateRequest || k.Namespace != "default" {
				return false
			}
			cr := &api.CertificateRequest{}
			return decodeJSON(data, cr) && cr.IsIssued()
		}},
		{"secret written, the status write (revision) not done", func(op string, k api.Key, _ []byte) bool {
			return op == "put" && k == secretKey("default", "app-tls")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &dying{trigger: tc.trigger}
			clk := clock.NewFake(t0)
			o := localmode.Options{DataDir: t.TempDir(), Clock: clk, AutoApprove: []string{"*"}, Logger: quietLogger(),
				WrapStore:   func(s ports.Store) ports.Store { return dyingStore{Store: s, d: d} },
				WrapSecrets: func(s ports.SecretStore) ports.SecretStore { return dyingSecrets{SecretStore: s, d: d} }}
			rt, err := localmode.Open(o)
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t: t, ctx: context.Background(), clk: clk, rt: rt}
			h.applyExamples()
			h.run()
			h.requireReady("cert-manager", "demo-ca")
			d.mu.Lock()
			d.armed = true
			d.mu.Unlock()
			h.apply(leafYAML(""))
			_, _ = rt.RunUntilIdle(h.ctx, 1) // fails once dead
			if !d.isDead() {
				t.Fatal("the process never reached the crash point")
			}
			_ = rt.Close()

			// The restart: a new process on the same data directory.
			o.WrapStore, o.WrapSecrets = nil, nil
			if h.rt, err = localmode.Open(o); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.rt.Close() })
			if err := h.rt.Resume(h.ctx); err != nil {
				t.Fatal(err)
			}
			restart := clk.Now()
			for !readyAt(h, appKey, 1) {
				if clk.Now().Sub(restart) > 5*time.Minute {
					break
				}
				h.run()
				if readyAt(h, appKey, 1) {
					break
				}
				clk.Advance(time.Second)
			}
			took := clk.Now().Sub(restart)
			t.Logf("converged %s (fake time) after the restart", took)
			if !readyAt(h, appKey, 1) || took > 5*time.Second {
				t.Fatalf("Certificate app not Ready at revision 1 within 5 s of the restart (after %s): %+v", took, h.cert("default", "app").Status.Conditions)
			}
			sec := h.secret("default", "app-tls")
			key, err := pki.DecodePrivateKeyPEM(sec.Data["tls.key"])
			if err != nil {
				t.Fatal(err)
			}
			if !pki.PublicKeysEqual(leaf(t, sec).PublicKey, key.Public()) {
				t.Fatal("tls.key does not match tls.crt")
			}
			if got := h.requestNames("default", "app-"); len(got) != 1 {
				t.Fatalf("requests = %v, want one", got)
			}
		})
	}
}

// readyAt: Ready, not Issuing, at revision rev.
func readyAt(h *harness, k api.Key, rev int) bool {
	c := h.cert(k.Namespace, k.Name)
	return api.IsTrue(c.Status.Conditions, "Ready") && !api.IsTrue(c.Status.Conditions, "Issuing") && revision(c) == rev
}

func decodeJSON(data []byte, v any) bool { return json.Unmarshal(data, v) == nil }

// `certfn serve --until-idle` itself, on the wall clock, after a serve
// killed right after a request was issued (the Certificate's wake-up lost
// with the in-memory queue): the restarted serve resumes the Certificate
// at start and exits with it Ready, instead of finding nothing due within
// its 5 s horizon and reporting it not Ready.
func TestServeUntilIdleResumesAfterCrash(t *testing.T) {
	d := &dying{trigger: func(op string, k api.Key, data []byte) bool {
		cr := &api.CertificateRequest{}
		return op == "update" && k.Kind == api.KindCertificateRequest && k.Namespace == "default" && decodeJSON(data, cr) && cr.IsIssued()
	}}
	o := localmode.Options{DataDir: t.TempDir(), AutoApprove: []string{"*"}, Logger: quietLogger(),
		WrapStore: func(s ports.Store) ports.Store { return dyingStore{Store: s, d: d} }}
	rt, err := localmode.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: context.Background(), rt: rt}
	h.applyExamples()
	h.run()
	h.requireReady("cert-manager", "demo-ca")
	d.mu.Lock()
	d.armed = true
	d.mu.Unlock()
	h.apply(leafYAML(""))
	_, _ = rt.RunUntilIdle(h.ctx, 1)
	if !d.isDead() {
		t.Fatal("the process never reached the crash point")
	}
	_ = rt.Close()

	o.WrapStore = nil
	if h.rt, err = localmode.Open(o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.rt.Close() })
	began := time.Now()
	if err := h.rt.Serve(h.ctx, localmode.ServeOptions{UntilIdle: true, Workers: 1}); err != nil {
		t.Fatalf("serve --until-idle after the crash: %v", err)
	}
	t.Logf("serve --until-idle converged in %s", time.Since(began).Round(time.Millisecond))
	h.requireReady("default", "app")
}
