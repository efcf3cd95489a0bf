package kernel_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
)

// A failed reconcile is recorded as a Warning Event on the object: created
// once, updated at most every EventMinInterval while the same failure
// repeats (count grows), started anew when the failure changes; Events
// themselves and lost races record nothing.
func TestFailuresAreRecordedAsEvents(t *testing.T) {
	r := apptest.NewRig(t)
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "broken"}
	// A stored record the kernel cannot decode fails every reconcile.
	if _, err := r.Store.Store.Create(r.Ctx, ports.Record{Key: key, Data: []byte(`{"spec": 7}`)}); err != nil {
		t.Fatal(err)
	}
	var ek api.Key
	// event is the latest Event about key.
	event := func() (*api.Event, int64) {
		t.Helper()
		recs, err := r.Store.Store.List(r.Ctx, ports.ListOptions{Kind: api.KindEvent, Namespace: "default", Owner: key})
		if err != nil || len(recs) == 0 {
			t.Fatalf("no event: %v", err)
		}
		var latest *api.Event
		var v int64
		for _, rec := range recs {
			ev := &api.Event{}
			if err := json.Unmarshal(rec.Data, ev); err != nil {
				t.Fatal(err)
			}
			if latest == nil || !api.EventTime(ev).Before(api.EventTime(latest)) {
				latest, v, ek = ev, rec.Version, rec.Key
			}
		}
		return latest, v
	}
	d := r.Kernel.Handle(r.Ctx, kernel.Message{Key: key, Attempt: 1})
	if d.Err == nil {
		t.Fatal("the reconcile of an undecodable record did not fail")
	}
	ev, v1 := event()
	if ev.Type != api.EventTypeWarning || ev.Count != 1 || ev.InvolvedObject.Kind != api.KindCertificate || ev.InvolvedObject.Name != "broken" ||
		!strings.Contains(ev.Message, "decode") || !ev.FirstTimestamp.Time.Equal(r.Clock.Now()) {
		t.Fatalf("event %+v", ev)
	}
	wantReason := "Failed"
	if d.Ack {
		wantReason = "FailedPermanently"
	}
	if ev.Reason != wantReason {
		t.Fatalf("reason %q, want %q (ack %v)", ev.Reason, wantReason, d.Ack)
	}
	// The same failure again within a minute: no write.
	r.Clock.Advance(30 * time.Second)
	r.Kernel.Handle(r.Ctx, kernel.Message{Key: key, Attempt: 2})
	if _, v := event(); v != v1 {
		t.Fatalf("event rewritten within EventMinInterval (version %d → %d)", v1, v)
	}
	// After it: count 2, first time kept, last time now.
	r.Clock.Advance(kernel.EventMinInterval)
	r.Kernel.Handle(r.Ctx, kernel.Message{Key: key, Attempt: 3})
	ev, _ = event()
	if ev.Count != 2 || !ev.LastTimestamp.Time.Equal(r.Clock.Now()) || ev.FirstTimestamp.Time.Equal(r.Clock.Now()) {
		t.Fatalf("repeated failure: %+v", ev)
	}
	if ek != api.EventKey(key, api.EventTypeWarning, ev.Reason, ev.Message) || !strings.HasPrefix(ek.Name, "certificate.broken.") {
		t.Fatalf("event key %v", ek)
	}
	// Another failure starts anew.
	r.Clock.Advance(time.Second)
	if _, err := r.Store.Store.Update(r.Ctx, ports.Record{Key: key, Version: 1, Data: []byte(`{"status": "x"}`)}); err != nil {
		t.Fatal(err)
	}
	r.Kernel.Handle(r.Ctx, kernel.Message{Key: key, Attempt: 1})
	if ev2, _ := event(); ev2.Count != 1 || ev2.Message == ev.Message {
		t.Fatalf("a different failure did not start a new count: %+v", ev2)
	}
	// Events are listed like any kind, and an Event key itself records nothing.
	r.Kernel.Handle(r.Ctx, kernel.Message{Key: ek, Attempt: 1})
	objs, err := r.Repo.List(r.Ctx, api.KindEvent, "")
	if err != nil || len(objs) != 2 {
		t.Fatalf("events %v %v, want the two failures", objs, err)
	}
	// Deleting the object deletes its Events.
	if err := r.Service.Delete(r.Ctx, apptest.Caller, key, app.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if objs, _ := r.Repo.List(r.Ctx, api.KindEvent, ""); len(objs) != 0 {
		t.Fatalf("the Events outlived the deleted object: %v", objs)
	}
}
