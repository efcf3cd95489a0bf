package kernel_test

import (
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
)

// A transient failure moves a due time that has passed to the retry's
// time, so that sweeps do not enqueue the failing key again at once and
// cut the backoff short (an ACME server answering 500 was asked
// at every sweep).
func TestTransientFailureDefersTheDueTime(t *testing.T) {
	r := apptest.NewRig(t)
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "broken"}
	past := r.Clock.Now().Add(-time.Minute)
	// A stored record the kernel cannot decode fails every reconcile.
	if _, err := r.Store.Store.Create(r.Ctx, ports.Record{Key: key, Data: []byte(`{"spec": 7}`), NextRunAt: past}); err != nil {
		t.Fatal(err)
	}
	d := r.Kernel.Handle(r.Ctx, kernel.Message{Key: key, Attempt: 4})
	if d.Err == nil || d.Ack {
		t.Fatalf("not a transient failure (err %v, ack %v)", d.Err, d.Ack)
	}
	want := r.Clock.Now().Add(kernel.RetryBackoff(4))
	if d.RetryAfter != kernel.RetryBackoff(4) {
		t.Fatalf("retry after %s, want %s", d.RetryAfter, kernel.RetryBackoff(4))
	}
	rec, err := r.Store.Store.Get(r.Ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.NextRunAt.Equal(want) {
		t.Fatalf("due at %s after a transient failure, want %s (the retry)", rec.NextRunAt, want)
	}
	due, err := r.Store.Store.Due(r.Ctx, r.Clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range due {
		if it.Key == key {
			t.Fatalf("%s still due now: a sweep would run it again before its backoff", key)
		}
	}
}
