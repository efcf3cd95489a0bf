package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
)

// keyNames renders keys as their string forms joined by spaces.
func keyNames(keys []api.Key) string {
	var out []string
	for _, k := range keys {
		out = append(out, k.String())
	}
	return strings.Join(out, " ")
}

// The CLI's handle pushes, serve's handle (another connection to the same
// file, as in another process) drains.
func TestInboxAcrossHandles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "certfn.db")
	cli, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	serve, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer serve.Close()
	clk := clock.NewFake(qt0)
	push, drain := cli.Inbox(clk), serve.Inbox(clk)

	if keys, err := drain.Drain(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("Drain of an empty inbox = %v, %v", keys, err)
	}
	ca := api.Key{Kind: api.KindClusterIssuer, Name: "ca"}
	for _, k := range []api.Key{key("web"), ca, key("api"), key("web")} {
		if err := push.Push(ctx, k); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
	}
	keys, err := drain.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keyNames(keys), "Certificate/default/web ClusterIssuer/ca Certificate/default/api"; got != want {
		t.Errorf("Drain = %q, want %q (oldest first, no duplicates)", got, want)
	}
	if keys, err := drain.Drain(ctx); err != nil || len(keys) != 0 {
		t.Errorf("second Drain = %v, %v; want nothing (Drain deletes what it returns)", keys, err)
	}
	var stamped int64
	if err := push.Push(ctx, key("late")); err != nil {
		t.Fatal(err)
	}
	if err := serve.db.QueryRow(`SELECT enqueued_at FROM inbox`).Scan(&stamped); err != nil {
		t.Fatal(err)
	}
	if stamped != clk.Now().UnixNano() {
		t.Errorf("enqueued_at = %d, want the clock's %d", stamped, clk.Now().UnixNano())
	}
}

// Forward feeds serve's MemQueue; a row that is not a key is dropped and
// reported without hiding the good ones.
func TestInboxForward(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	in := s.Inbox(clock.NewFake(qt0))
	q := NewMemQueue(clock.NewFake(qt0), time.Minute)
	for _, k := range []api.Key{key("a"), key("b")} {
		if err := in.Push(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.Exec(`INSERT INTO inbox (key, enqueued_at) VALUES ('not-a-key', 1)`); err != nil {
		t.Fatal(err)
	}
	n, err := in.Forward(ctx, q)
	if n != 2 || err == nil || !strings.Contains(err.Error(), `"not-a-key"`) {
		t.Fatalf("Forward = %d, %v; want 2 and an error naming the bad row", n, err)
	}
	ds, _ := q.Receive(ctx, 10)
	var got []api.Key
	for _, d := range ds {
		got = append(got, d.Key)
	}
	if keyNames(got) != "Certificate/default/a Certificate/default/b" {
		t.Errorf("queue holds %q", keyNames(got))
	}
	if n, err := in.Forward(ctx, q); n != 0 || err != nil {
		t.Errorf("second Forward = %d, %v; want 0, nil", n, err)
	}
}

// failingQueue refuses enqueues after the first ok ones.
type failingQueue struct {
	ok  int
	got []api.Key
}

func (f *failingQueue) Enqueue(_ context.Context, k api.Key, _ time.Duration) error {
	if len(f.got) >= f.ok {
		return errors.New("queue full")
	}
	f.got = append(f.got, k)
	return nil
}

// A failed Enqueue puts the remaining keys back: no wake-up is lost.
func TestInboxForwardPushesBackOnFailure(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	in := s.Inbox(clock.NewFake(qt0))
	for _, n := range []string{"a", "b", "c"} {
		if err := in.Push(ctx, key(n)); err != nil {
			t.Fatal(err)
		}
	}
	fq := &failingQueue{ok: 1}
	n, err := in.Forward(ctx, fq)
	if n != 1 || err == nil || !strings.Contains(err.Error(), "queue full") {
		t.Fatalf("Forward = %d, %v; want 1 and the queue's error", n, err)
	}
	left, err := in.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := keyNames(left); got != "Certificate/default/b Certificate/default/c" {
		t.Errorf("inbox after the failure holds %q, want b and c", got)
	}
}

func TestInboxRejectsBadKey(t *testing.T) {
	in := openTestStore(t).Inbox(clock.NewFake(qt0))
	for _, k := range []api.Key{{}, {Kind: "Certificate", Name: "a/b"}} {
		err := in.Push(context.Background(), k)
		if err == nil {
			t.Errorf("Push(%#v): want an error", k)
		}
	}
}

// A wake-up pushed by another process reaches a serve loop polling every
// 200 ms well within a second.
func TestInboxWakeLatency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "certfn.db")
	serve, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer serve.Close()
	q := NewMemQueue(clock.Real{}, time.Minute)
	in := serve.Inbox(clock.Real{})
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := in.Forward(ctx, q); err != nil && ctx.Err() == nil {
					t.Errorf("Forward: %v", err)
				}
			}
		}
	}()
	cli, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	pushed := time.Now()
	if err := cli.Inbox(clock.Real{}).Push(ctx, key("web")); err != nil {
		t.Fatal(err)
	}
	if err := q.Wait(ctx); err != nil {
		t.Fatalf("no wake-up: %v", err)
	}
	latency := time.Since(pushed)
	t.Logf("wake-up latency %v", latency)
	if latency > time.Second {
		t.Errorf("wake-up took %v, want under a second", latency)
	}
	ds, _ := q.Receive(ctx, 10)
	if len(ds) != 1 || ds[0].Key != key("web") {
		t.Errorf("queue holds %v", fmt.Sprint(ds))
	}
}
