package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/memory"
)

// key builds a Certificate key in namespace default.
func key(name string) api.Key {
	return api.Key{Kind: api.KindCertificate, Namespace: "default", Name: name}
}

// qstep is one action on a Queue in a scripted test.
type qstep struct {
	do      string        // enqueue, receive, ack, ack-stale, nack, advance
	key     string        // for enqueue/ack/nack
	d       time.Duration // delay or advance
	want    string        // receive: "a#1,b#2": keys in order with attempts
	wantErr error         // ack/nack
}

// runScript runs steps on a fresh queue (visibility 1m) and checks each.
func runScript(t *testing.T, steps []qstep) *memory.Queue {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(qt0)
	q := memory.NewQueue(clk, time.Minute)
	held := map[string][]memory.Delivery{} // deliveries per key name, oldest first
	for i, st := range steps {
		switch st.do {
		case "enqueue":
			if err := q.Enqueue(ctx, key(st.key), st.d); err != nil {
				t.Fatalf("step %d: Enqueue: %v", i, err)
			}
		case "advance":
			clk.Advance(st.d)
		case "receive":
			ds, err := q.Receive(ctx, 10)
			if err != nil {
				t.Fatalf("step %d: Receive: %v", i, err)
			}
			var got []string
			for _, d := range ds {
				got = append(got, fmt.Sprintf("%s#%d", d.Key.Name, d.Attempt))
				held[d.Key.Name] = append(held[d.Key.Name], d)
			}
			if g := strings.Join(got, ","); g != st.want {
				t.Fatalf("step %d: Receive at +%v = %q, want %q", i, clk.Now().Sub(qt0), g, st.want)
			}
		case "ack", "ack-stale", "nack":
			ds := held[st.key]
			if len(ds) == 0 {
				t.Fatalf("step %d: no delivery of %s held", i, st.key)
			}
			var err error
			switch st.do {
			case "ack":
				err = q.Ack(ctx, ds[len(ds)-1])
			case "ack-stale":
				err = q.Ack(ctx, ds[0])
			default:
				err = q.Nack(ctx, ds[len(ds)-1], st.d)
			}
			if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
				t.Fatalf("step %d: %s(%s) = %v, want %v", i, st.do, st.key, err, st.wantErr)
			}
		default:
			t.Fatalf("step %d: unknown action %q", i, st.do)
		}
	}
	return q
}

func TestQueueScripts(t *testing.T) {
	tests := []struct {
		name    string
		steps   []qstep
		wantLen int
	}{
		{"earliest due first", []qstep{
			{do: "enqueue", key: "c", d: 3 * time.Second},
			{do: "enqueue", key: "a", d: time.Second},
			{do: "enqueue", key: "b", d: 2 * time.Second},
			{do: "enqueue", key: "now"},
			{do: "receive", want: "now#1"},
			{do: "advance", d: 5 * time.Second},
			{do: "receive", want: "a#1,b#1,c#1"},
		}, 4},
		{"same due time keeps enqueue order", []qstep{
			{do: "enqueue", key: "x"}, {do: "enqueue", key: "y"}, {do: "enqueue", key: "a"},
			{do: "receive", want: "x#1,y#1,a#1"},
		}, 3},
		{"dedup keeps the earlier due time (later enqueue shorter)", []qstep{
			{do: "enqueue", key: "a", d: 10 * time.Minute},
			{do: "enqueue", key: "a", d: time.Minute},
			{do: "advance", d: time.Minute},
			{do: "receive", want: "a#1"},
			{do: "ack", key: "a"},
			{do: "advance", d: 10 * time.Minute},
			{do: "receive", want: ""},
		}, 0},
		{"dedup keeps the earlier due time (later enqueue longer)", []qstep{
			{do: "enqueue", key: "a", d: time.Minute},
			{do: "enqueue", key: "a", d: 10 * time.Minute},
			{do: "advance", d: time.Minute},
			{do: "receive", want: "a#1"},
			{do: "ack", key: "a"},
			{do: "advance", d: 10 * time.Minute},
			{do: "receive", want: ""},
		}, 0},
		{"negative delay is now", []qstep{
			{do: "enqueue", key: "a", d: -time.Hour},
			{do: "receive", want: "a#1"},
		}, 1},
		{"in flight: not delivered twice at once, again after ack", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "enqueue", key: "a"},
			{do: "receive", want: ""},
			{do: "advance", d: 30 * time.Second},
			{do: "receive", want: ""},
			{do: "ack", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "ack", key: "a"},
		}, 0},
		{"in flight with a delayed re-enqueue: delivered at its due time", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "enqueue", key: "a", d: 2 * time.Minute},
			{do: "ack", key: "a"},
			{do: "receive", want: ""},
			{do: "advance", d: 2 * time.Minute},
			{do: "receive", want: "a#1"},
		}, 1},
		{"lease expiry redelivers once, folding in a pending copy", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "enqueue", key: "a"},
			{do: "advance", d: time.Minute},
			{do: "receive", want: "a#2"},
			{do: "ack", key: "a"},
			{do: "receive", want: ""},
		}, 0},
		{"ack after the lease expired but before redelivery still counts", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "advance", d: 2 * time.Minute},
			{do: "ack", key: "a"},
			{do: "receive", want: ""},
		}, 0},
		{"stale ack after redelivery is refused", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "advance", d: time.Minute},
			{do: "receive", want: "a#2"},
			{do: "ack-stale", key: "a", wantErr: memory.ErrLeaseLost},
			{do: "receive", want: ""},
			{do: "ack", key: "a"},
			{do: "ack", key: "a", wantErr: memory.ErrLeaseLost},
		}, 0},
		{"nack delays and keeps the attempt count", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "nack", key: "a", d: 30 * time.Second},
			{do: "receive", want: ""},
			{do: "advance", d: 30 * time.Second},
			{do: "receive", want: "a#2"},
			{do: "nack", key: "a"},
			{do: "receive", want: "a#3"},
			{do: "ack", key: "a"},
			{do: "nack", key: "a", wantErr: memory.ErrLeaseLost},
		}, 0},
		{"nack keeps an earlier pending due time", []qstep{
			{do: "enqueue", key: "a"},
			{do: "receive", want: "a#1"},
			{do: "enqueue", key: "a", d: 10 * time.Second},
			{do: "nack", key: "a", d: time.Hour},
			{do: "advance", d: 10 * time.Second},
			{do: "receive", want: "a#2"},
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := runScript(t, tc.steps)
			if got := q.Len(); got != tc.wantLen {
				t.Errorf("Len = %d, want %d", got, tc.wantLen)
			}
		})
	}
}

func TestQueueReceiveLimit(t *testing.T) {
	ctx := context.Background()
	q := memory.NewQueue(clock.NewFake(qt0), time.Minute)
	for i := range 5 {
		if err := q.Enqueue(ctx, key(fmt.Sprint(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int{2, 2, 1, 0} {
		ds, err := q.Receive(ctx, 2)
		if err != nil || len(ds) != want {
			t.Fatalf("Receive(2) = %d messages, %v; want %d", len(ds), err, want)
		}
	}
	if ds, _ := q.Receive(ctx, 0); len(ds) != 0 {
		t.Errorf("Receive(0) = %v", ds)
	}
}

func TestQueueRejectsBadKey(t *testing.T) {
	q := memory.NewQueue(clock.NewFake(qt0), 0)
	if q.Visibility() != memory.DefaultVisibility {
		t.Errorf("visibility %v, want the default %v", q.Visibility(), memory.DefaultVisibility)
	}
	for _, k := range []api.Key{{}, {Kind: api.KindCertificate, Namespace: "default"}, {Kind: api.KindCertificate, Name: "a/b"}} {
		if err := q.Enqueue(context.Background(), k, 0); !errs.IsPermanent(err) {
			t.Errorf("Enqueue(%#v) = %v, want a permanent error", k, err)
		}
	}
	if q.Len() != 0 {
		t.Errorf("Len = %d after rejected enqueues", q.Len())
	}
}

// A run-until-idle loop on a fake clock: receive, handle, and when nothing
// is visible jump the clock to NextDue. Handlers re-enqueue with a delay
// (as a step that must wait does); the loop ends when Len is 0.
func TestQueueRunUntilIdle(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(qt0)
	q := memory.NewQueue(clk, time.Minute)
	if _, ok := q.NextDue(); ok {
		t.Fatal("NextDue of an empty queue reported a time")
	}
	// Each key needs this many more runs, 90 s apart.
	runsLeft := map[string]int{"a": 2, "b": 0, "c": 1}
	for _, k := range []string{"a", "b", "c"} {
		if err := q.Enqueue(ctx, key(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	var log []string
	for steps := 0; q.Len() > 0; steps++ {
		if steps > 100 {
			t.Fatal("not idle after 100 steps")
		}
		ds, err := q.Receive(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			next, ok := q.NextDue()
			if !ok || !next.After(clk.Now()) {
				t.Fatalf("nothing visible, NextDue = %v, %v at %v", next, ok, clk.Now())
			}
			clk.Set(next)
			continue
		}
		for _, d := range ds {
			log = append(log, fmt.Sprintf("%s@%v", d.Key.Name, clk.Now().Sub(qt0)))
			if runsLeft[d.Key.Name] > 0 {
				runsLeft[d.Key.Name]--
				if err := q.Enqueue(ctx, d.Key, 90*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.Ack(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := "a@0s b@0s c@0s a@1m30s c@1m30s a@3m0s"
	if got := strings.Join(log, " "); got != want {
		t.Errorf("deliveries %q, want %q", got, want)
	}
}

// closed reports whether ch is closed, without blocking.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Each change that may bring NextDue forward closes the channel Changed
// handed out, and the next call hands out a new one.
func TestQueueChanged(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(q *memory.Queue) memory.Delivery // may return a delivery for do
		do    func(q *memory.Queue, d memory.Delivery) error
	}{
		{"enqueue of a new key", nil,
			func(q *memory.Queue, _ memory.Delivery) error { return q.Enqueue(ctx, key("a"), time.Hour) }},
		{"enqueue bringing a due time forward", func(q *memory.Queue) memory.Delivery {
			mustEnqueue(t, q, "a", time.Hour)
			return memory.Delivery{}
		}, func(q *memory.Queue, _ memory.Delivery) error { return q.Enqueue(ctx, key("a"), time.Minute) }},
		{"nack", func(q *memory.Queue) memory.Delivery { return mustReceive(t, q, "a") },
			func(q *memory.Queue, d memory.Delivery) error { return q.Nack(ctx, d, time.Hour) }},
		{"ack of a key enqueued again in flight", func(q *memory.Queue) memory.Delivery {
			d := mustReceive(t, q, "a")
			mustEnqueue(t, q, "a", 0)
			return d
		}, func(q *memory.Queue, d memory.Delivery) error { return q.Ack(ctx, d) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := memory.NewQueue(clock.NewFake(qt0), time.Minute)
			var d memory.Delivery
			if tc.setup != nil {
				d = tc.setup(q)
			}
			ch := q.Changed()
			if closed(ch) {
				t.Fatal("Changed is closed before any change")
			}
			if ch2 := q.Changed(); ch2 != ch {
				t.Error("two calls without a change between returned different channels")
			}
			if err := tc.do(q, d); err != nil {
				t.Fatal(err)
			}
			if !closed(ch) {
				t.Fatalf("%s did not close Changed", tc.name)
			}
			if closed(q.Changed()) {
				t.Error("Changed after a change returned a closed channel")
			}
		})
	}
}

// Whatever the operations, NextDue never moves earlier without closing
// the channel taken before them (random operations, fixed seed).
func TestQueueChangedNeverMissesAnEarlierNextDue(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(qt0)
	q := memory.NewQueue(clk, time.Minute)
	rng := rand.New(rand.NewPCG(1, 2))
	delays := []time.Duration{-time.Second, 0, 10 * time.Second, time.Minute, 2 * time.Minute}
	var held []memory.Delivery
	for i := range 5000 {
		ch := q.Changed()
		before, hadBefore := q.NextDue()
		var op string
		switch rng.IntN(5) {
		case 0:
			k, d := key(fmt.Sprint(rng.IntN(4))), delays[rng.IntN(len(delays))]
			op = fmt.Sprintf("Enqueue(%s, %v)", k.Name, d)
			if err := q.Enqueue(ctx, k, d); err != nil {
				t.Fatal(err)
			}
		case 1:
			op = "Receive"
			ds, err := q.Receive(ctx, 1+rng.IntN(2))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, ds...)
		case 2, 3:
			if len(held) == 0 {
				continue
			}
			j := rng.IntN(len(held))
			d := held[j]
			held = append(held[:j], held[j+1:]...)
			var err error
			if rng.IntN(2) == 0 {
				op = "Ack(" + d.Key.Name + ")"
				err = q.Ack(ctx, d)
			} else {
				delay := delays[rng.IntN(len(delays))]
				op = fmt.Sprintf("Nack(%s, %v)", d.Key.Name, delay)
				err = q.Nack(ctx, d, delay)
			}
			if err != nil && !errors.Is(err, memory.ErrLeaseLost) {
				t.Fatal(err)
			}
		case 4:
			d := time.Duration(rng.IntN(90)) * time.Second
			op = fmt.Sprintf("Advance(%v)", d)
			clk.Advance(d)
		}
		after, hasAfter := q.NextDue()
		if earlier := hasAfter && (!hadBefore || after.Before(before)); earlier && !closed(ch) {
			t.Fatalf("op %d %s moved NextDue from %v (%v) to %v without closing Changed", i, op, before, hadBefore, after)
		}
	}
}

func mustEnqueue(t *testing.T, q *memory.Queue, name string, delay time.Duration) {
	t.Helper()
	if err := q.Enqueue(context.Background(), key(name), delay); err != nil {
		t.Fatal(err)
	}
}

// mustReceive enqueues key(name) now and receives its delivery.
func mustReceive(t *testing.T, q *memory.Queue, name string) memory.Delivery {
	t.Helper()
	mustEnqueue(t, q, name, 0)
	ds, err := q.Receive(context.Background(), 1)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Receive = %v, %v; want one delivery", ds, err)
	}
	return ds[0]
}

// Namespaces share the consumers: Receive takes each message from the
// namespace with the fewest in flight, so a key of team-b is delivered
// before the backlog team-a queued earlier, and a namespace holds at most
// its share while another waits; within a namespace, earliest first.
func TestQueueReceiveIsFairAcrossNamespaces(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(qt0)
	q := memory.NewQueue(clk, time.Minute)
	in := func(ns, name string) api.Key { return api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name} }
	for i := 1; i <= 8; i++ {
		if err := q.Enqueue(ctx, in("team-a", fmt.Sprintf("rsa8192-%d", i)), 0); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if err := q.Enqueue(ctx, in("team-b", "web"), 0); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, api.Key{Kind: api.KindClusterIssuer, Name: "ca"}, 0); err != nil {
		t.Fatal(err)
	}
	recv := func(n int) []memory.Delivery {
		t.Helper()
		ds, err := q.Receive(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	names := func(ds []memory.Delivery) string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Key.Namespace+"/"+d.Key.Name)
		}
		return strings.Join(out, ",")
	}
	// Four consumers, one message each: team-a gets the first, then the
	// namespaces with nothing in flight, then team-a again.
	var got []memory.Delivery
	for range 4 {
		got = append(got, recv(1)...)
	}
	if g, want := names(got), "team-a/rsa8192-1,team-b/web,/ca,team-a/rsa8192-2"; g != want {
		t.Fatalf("received %s, want %s", g, want)
	}
	// team-b enqueues again while team-a holds two consumers: it is next.
	if err := q.Enqueue(ctx, in("team-b", "api"), 0); err != nil {
		t.Fatal(err)
	}
	if g := names(recv(1)); g != "team-b/api" {
		t.Fatalf("received %s, want team-b/api before team-a's backlog", g)
	}
	// Acks and nacks return the share: team-a's backlog drains in order.
	for _, d := range got {
		if err := q.Ack(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if g, want := names(recv(10)), "team-a/rsa8192-3,team-a/rsa8192-4,team-a/rsa8192-5,team-a/rsa8192-6,team-a/rsa8192-7,team-a/rsa8192-8"; g != want {
		t.Fatalf("received %s, want %s", g, want)
	}
	if n, ok := q.NextDue(); !ok || !n.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("NextDue = %s %v, want the end of the leases", n, ok)
	}
}
