package localmode

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A stopping serve goes on while an HTTP-01 challenge the CA was asked to
// validate is not final, saying so, and stops once it is final — or at
// its limit, saying what is left in flight.
func TestDrainHTTP01(t *testing.T) {
	var logs syncBuffer
	rt, err := Open(Options{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	ch := &api.Challenge{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindChallenge},
		ObjectMeta: api.ObjectMeta{Name: "web-1-abc-1", Namespace: "default"},
		Spec:       api.ChallengeSpec{Type: api.ACMEChallengeTypeHTTP01, DNSName: "web.example.test", Token: "tok", Key: "tok.thumb"},
		Status:     api.ChallengeStatus{Processing: true, Presented: true, Accepted: true, State: api.StatePending}}
	version, err := rt.Kernel.Direct().CreateObject(ctx, ch, time.Time{})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	rt.drainHTTP01(ctx, 400*time.Millisecond)
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Fatalf("stopped after %s with a challenge in flight", waited)
	}
	for _, want := range []string{"stopping: 1 challenges in flight; answering HTTP-01 until they are final (at most 400ms)",
		"stopping with HTTP-01 challenges in flight: the next serve polls their result"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}

	// It becomes final while the serve drains: the drain ends then.
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		rt.drainHTTP01(ctx, time.Minute)
		done <- time.Since(start)
	}()
	time.Sleep(300 * time.Millisecond)
	ch.Status.State, ch.Status.Processing, ch.Status.Presented = api.StateValid, false, false
	if _, err := rt.Kernel.Direct().UpdateObject(ctx, ch, version, time.Time{}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-done:
		if d > 10*time.Second {
			t.Fatalf("the drain went on %s after the challenge was final", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the drain did not end once the challenge was final")
	}
	if !strings.Contains(logs.String(), "stopping: the HTTP-01 challenges in flight are final") {
		t.Errorf("log lacks the end of the drain:\n%s", logs.String())
	}
}
