package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// noteCtl is a controller whose step records its notes, then writes the
// object (unless write is false) or fails with err.
type noteCtl struct {
	notes       []kernel.Note
	notesAfter  []kernel.Note // recorded after the write
	write       bool
	err         error
	staleWriter bool // writes with an old version (a duplicate delivery that lost the race)
}

func (c *noteCtl) Reconcile(ctx context.Context, o kernel.Objects, rec ports.Record) error {
	for _, n := range c.notes {
		if err := o.RecordEvent(ctx, rec.Key, n, kernel.EventRepeat); err != nil {
			return err
		}
	}
	if c.write {
		obj, err := o.Decode(rec)
		if err != nil {
			return err
		}
		v := rec.Version
		if c.staleWriter {
			v--
		}
		if _, err := o.UpdateObject(ctx, obj, v, time.Time{}); err != nil {
			return err
		}
	}
	for _, n := range c.notesAfter {
		if err := o.RecordEvent(ctx, rec.Key, n, kernel.EventRepeat); err != nil {
			return err
		}
	}
	if c.err != nil {
		return c.err
	}
	if !c.write {
		return o.Settle(ctx, rec, time.Time{})
	}
	return nil
}

// failingStore fails every Update of a Certificate (a crash or an outage
// at the step's write).
type failingStore struct{ *memory.Store }

func (s failingStore) Update(ctx context.Context, rec ports.Record) (ports.Record, error) {
	if rec.Key.Kind == api.KindCertificate {
		return ports.Record{}, errors.New("store unavailable")
	}
	return s.Store.Update(ctx, rec)
}

type eventsRig struct {
	ctx   context.Context
	store *memory.Store
	clk   *clock.Fake
	k     *kernel.Kernel
	key   api.Key
	log   *strings.Builder
}

func newEventsRig(t *testing.T, ctl kernel.Controller, failWrites bool) *eventsRig {
	t.Helper()
	st := memory.NewStore()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var store ports.Store = st
	if failWrites {
		store = failingStore{st}
	}
	log := &strings.Builder{}
	k, err := kernel.New(kernel.Config{Store: store, Queue: memory.NewQueue(clk, time.Minute), Clock: clk,
		Controllers: []kernel.Row{{Kinds: []string{api.KindCertificate}, Controller: ctl}},
		Logger:      slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	data, _ := json.Marshal(&api.Certificate{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificate},
		ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default"}})
	if _, err := st.Create(context.Background(), ports.Record{Key: key, Data: data}); err != nil {
		t.Fatal(err)
	}
	return &eventsRig{ctx: context.Background(), store: st, clk: clk, k: k, key: key, log: log}
}

func (r *eventsRig) events(t *testing.T) []api.Event {
	t.Helper()
	recs, err := r.store.List(r.ctx, ports.ListOptions{Kind: api.KindEvent, Namespace: "default", Owner: r.key})
	if err != nil {
		t.Fatal(err)
	}
	var out []api.Event
	for _, rec := range recs {
		var e api.Event
		if err := json.Unmarshal(rec.Data, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	api.SortEvents(out)
	return out
}

// An Event is written only once the step's state write succeeded: a step
// whose write fails, or that loses the write race (a duplicate delivery),
// records nothing of what it noted; a step that writes nothing records
// its notes when it returns without error; notes made after the write of
// a step that then fails are dropped, those before it kept.
func TestEventsAfterTheStateWrite(t *testing.T) {
	issuing := kernel.Normal("Issuing", "Issuing certificate as Secret does not exist")
	later := kernel.Warning("Later", "noted after the write")
	for _, tc := range []struct {
		name       string
		ctl        *noteCtl
		failWrites bool
		want       []string // reasons recorded
	}{
		{"the write succeeds", &noteCtl{notes: []kernel.Note{issuing}, write: true}, false, []string{"Issuing"}},
		{"the write fails (a crash before it)", &noteCtl{notes: []kernel.Note{issuing}, write: true}, true, []string{"Failed"}},
		{"the write loses the race (a duplicate delivery)", &noteCtl{notes: []kernel.Note{issuing}, write: true, staleWriter: true}, false, nil},
		{"no write, no error", &noteCtl{notes: []kernel.Note{issuing}}, false, []string{"Issuing"}},
		{"no write, an error", &noteCtl{notes: []kernel.Note{issuing}, err: errors.New("boom")}, false, []string{"Failed"}},
		{"noted after a write, then an error", &noteCtl{notes: []kernel.Note{issuing}, notesAfter: []kernel.Note{later}, write: true, err: errors.New("boom")},
			false, []string{"Issuing", "Failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newEventsRig(t, tc.ctl, tc.failWrites)
			r.k.Handle(r.ctx, kernel.Message{Key: r.key, Attempt: 1})
			var got []string
			for _, e := range r.events(t) {
				got = append(got, e.Reason)
			}
			sort.Strings(got) // recorded in the same instant of the fake clock
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("recorded %v, want %v", got, tc.want)
			}
		})
	}
}

// Aggregation as Kubernetes': one Event per (object, type, reason,
// message); the same note again within EventMinInterval writes nothing,
// after it raises count and lastTimestamp and keeps firstTimestamp; a
// different message, reason or type is another Event. Every write is
// logged, INFO for Normal and WARN for Warning, naming the object.
func TestEventAggregation(t *testing.T) {
	a := kernel.Normal("Issuing", "m1")
	type pass struct {
		advance time.Duration
		notes   []kernel.Note
	}
	for _, tc := range []struct {
		name   string
		passes []pass
		counts map[string]int // "type/reason/message" -> count
		writes int            // Event writes
	}{
		{"once", []pass{{0, []kernel.Note{a}}}, map[string]int{"Normal/Issuing/m1": 1}, 1},
		{"twice within the interval", []pass{{0, []kernel.Note{a}}, {30 * time.Second, []kernel.Note{a}}}, map[string]int{"Normal/Issuing/m1": 1}, 1},
		{"twice, the interval apart", []pass{{0, []kernel.Note{a}}, {kernel.EventMinInterval, []kernel.Note{a}}}, map[string]int{"Normal/Issuing/m1": 2}, 2},
		{"a retry loop for five minutes, every 5 s", func() []pass {
			var ps []pass
			for i := 0; i < 60; i++ {
				ps = append(ps, pass{5 * time.Second, []kernel.Note{kernel.Warning("SelfCheckFailed", "wrong status code 404")}})
			}
			return ps
		}(), map[string]int{"Warning/SelfCheckFailed/wrong status code 404": 5}, 5},
		{"another message, reason or type", []pass{{0, []kernel.Note{a, kernel.Normal("Issuing", "m2"), kernel.Normal("Issued", "m1"), kernel.Warning("Issuing", "m1")}}},
			map[string]int{"Normal/Issuing/m1": 1, "Normal/Issuing/m2": 1, "Normal/Issued/m1": 1, "Warning/Issuing/m1": 1}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := &noteCtl{}
			r := newEventsRig(t, ctl, false)
			var first time.Time
			for i, p := range tc.passes {
				r.clk.Advance(p.advance)
				if i == 0 {
					first = r.clk.Now()
				}
				ctl.notes = p.notes
				if d := r.k.Handle(r.ctx, kernel.Message{Key: r.key, Attempt: 1}); d.Err != nil {
					t.Fatal(d.Err)
				}
			}
			evs := r.events(t)
			got := map[string]int{}
			for _, e := range evs {
				got[e.Type+"/"+e.Reason+"/"+e.Message] = e.Count
				if e.Source.Component != "certfn" || e.ReportingComponent != "certfn" || e.InvolvedObject.Name != "web" {
					t.Errorf("event %+v", e)
				}
				if !e.FirstTimestamp.Time.Equal(first) {
					t.Errorf("firstTimestamp %v, want %v", e.FirstTimestamp, first)
				}
			}
			if len(got) != len(tc.counts) {
				t.Fatalf("events %v, want %v", got, tc.counts)
			}
			for k, n := range tc.counts {
				if got[k] != n {
					t.Errorf("%s: count %d, want %d (all: %v)", k, got[k], n, got)
				}
			}
			if n := strings.Count(r.log.String(), "msg=event "); n != tc.writes {
				t.Errorf("%d Event log lines, want %d:\n%s", n, tc.writes, r.log.String())
			}
			for _, line := range strings.Split(strings.TrimSpace(r.log.String()), "\n") {
				warn := strings.Contains(line, "type=Warning")
				if (warn && !strings.Contains(line, "level=WARN")) || (!warn && !strings.Contains(line, "level=INFO")) ||
					!strings.Contains(line, "namespace=default kind=Certificate name=web") {
					t.Errorf("log line %q", line)
				}
			}
		})
	}
}
