package acme

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

var errDead = errors.New("injected: the process died")

// dyingStore is a store whose process dies right after the write that
// trigger matches (the write took effect): every later call fails without
// effect, as after a SIGKILL there.
type dyingStore struct {
	ports.Store
	mu      sync.Mutex
	armed   bool
	dead    bool
	trigger func(op string, rec ports.Record) bool
}

func (s *dyingStore) before() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return errDead
	}
	return nil
}

func (s *dyingStore) after(op string, rec ports.Record, err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.armed && !s.dead && s.trigger(op, rec) {
		s.dead = true
		return errDead
	}
	return err
}

func (s *dyingStore) isDead() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.dead }

func (s *dyingStore) Get(ctx context.Context, k api.Key) (ports.Record, error) {
	if err := s.before(); err != nil {
		return ports.Record{}, err
	}
	return s.Store.Get(ctx, k)
}

func (s *dyingStore) List(ctx context.Context, o ports.ListOptions) ([]ports.Record, error) {
	if err := s.before(); err != nil {
		return nil, err
	}
	return s.Store.List(ctx, o)
}

func (s *dyingStore) Due(ctx context.Context, now time.Time, n int) ([]ports.DueItem, error) {
	if err := s.before(); err != nil {
		return nil, err
	}
	return s.Store.Due(ctx, now, n)
}

func (s *dyingStore) Create(ctx context.Context, r ports.Record) (ports.Record, error) {
	if err := s.before(); err != nil {
		return ports.Record{}, err
	}
	out, err := s.Store.Create(ctx, r)
	return out, s.after("create", r, err)
}

func (s *dyingStore) Update(ctx context.Context, r ports.Record) (ports.Record, error) {
	if err := s.before(); err != nil {
		return ports.Record{}, err
	}
	out, err := s.Store.Update(ctx, r)
	return out, s.after("update", r, err)
}

func (s *dyingStore) Delete(ctx context.Context, k api.Key, v int64) error {
	if err := s.before(); err != nil {
		return err
	}
	return s.after("delete", ports.Record{Key: k}, s.Store.Delete(ctx, k, v))
}

// Liveness after a crash: `certfn serve` killed right after a
// Challenge was written valid, before its Order handled the wake-up
// (lost with the in-memory queue), is restarted as serve starts
// (Runtime.Resume, then its loops): the Order finalizes and the
// Certificate is Ready within 5 s of fake time, not after the Order's
// 10-minute WaitPoll.
func TestRestartAfterChallengeValidConvergesWithinSeconds(t *testing.T) {
	ds := &dyingStore{trigger: func(op string, r ports.Record) bool {
		if op != "update" || r.Key.Kind != api.KindChallenge {
			return false
		}
		var ch api.Challenge
		return json.Unmarshal(r.Data, &ch) == nil && ch.Status.State == api.StateValid
	}}
	e := newEnv(t, envOpts{local: func(o *localmode.Options) {
		o.WrapStore = func(s ports.Store) ports.Store {
			if ds.Store == nil {
				ds.Store = s
				return ds
			}
			return s // after the restart: no more crashes
		}
	}})
	e.apply(e.issuerYAML(http01Solvers))
	e.run()
	ds.mu.Lock()
	ds.armed = true
	ds.mu.Unlock()
	e.apply(certYAML("crash", []string{"crash.example.test"}, ""))
	for i := 0; i < 200 && !ds.isDead(); i++ {
		_, _ = e.rt.RunUntilIdle(e.ctx, 1)
		time.Sleep(5 * time.Millisecond)
		e.clk.Advance(time.Second)
	}
	if !ds.isDead() {
		t.Fatalf("the Challenge never became valid:%s", e.describe(api.KindChallenge))
	}
	e.restart()
	if err := e.rt.Resume(e.ctx); err != nil {
		t.Fatal(err)
	}
	restart := e.clk.Now()
	ok := e.until(400, time.Second, func() bool { return e.ready("crash") })
	took := e.clk.Now().Sub(restart)
	t.Logf("Ready %s (fake time) after the restart", took)
	if !ok || took > 5*time.Second {
		t.Fatalf("not Ready within 5 s of the restart (%s, ready %t):%s", took, ok, e.describe(api.KindOrder))
	}
	e.verify("crash-tls", "crash.example.test")
	valid := 0
	for _, o := range e.orders() {
		if o.Status.State == api.StateValid {
			valid++
		}
	}
	if valid != 1 {
		t.Fatalf("%d valid Orders, want 1:%s", valid, e.describe(api.KindOrder))
	}
}
