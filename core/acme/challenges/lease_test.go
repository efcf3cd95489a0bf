package challenges_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// putLease stores the lease of ch's name and type held by holder (nil:
// released).
func putLease(r *acmetest.Rig, ch *api.Challenge, holder *api.ChallengeLeaseHolder) {
	r.T.Helper()
	key := challenges.LeaseKey(ch)
	l := &api.ChallengeLease{TypeMeta: api.TypeMeta{APIVersion: api.CertfnACMEV1Alpha1, Kind: api.KindChallengeLease},
		ObjectMeta: api.ObjectMeta{Name: key.Name},
		Spec:       api.ChallengeLeaseSpec{Type: ch.Spec.Type, DNSName: ch.Spec.DNSName, Holder: holder}}
	data, err := json.Marshal(l)
	if err != nil {
		r.T.Fatal(err)
	}
	if _, err := r.Store.Create(r.Ctx, ports.Record{Key: key, Data: data}); err != nil {
		r.T.Fatal(err)
	}
}

// leaseOf returns the stored lease of ch's name and type (nil when none)
// and its version.
func leaseOf(r *acmetest.Rig, ch *api.Challenge) (*api.ChallengeLease, int64) {
	r.T.Helper()
	rec, err := r.Store.Get(r.Ctx, challenges.LeaseKey(ch))
	if errors.Is(err, ports.ErrNotFound) {
		return nil, 0
	}
	if err != nil {
		r.T.Fatal(err)
	}
	o, err := r.Objects.Decode(rec)
	if err != nil {
		r.T.Fatal(err)
	}
	return o.(*api.ChallengeLease), rec.Version
}

// holderName is the lease's holder as "name/uid", or "" when released or missing.
func holderName(l *api.ChallengeLease) string {
	if l == nil || l.Spec.Holder == nil {
		return ""
	}
	return l.Spec.Holder.Name + "/" + l.Spec.Holder.UID
}

func holderOf(ch *api.Challenge) *api.ChallengeLeaseHolder {
	return &api.ChallengeLeaseHolder{Namespace: ch.Namespace, Name: ch.Name, UID: ch.UID}
}

func TestLeaseName(t *testing.T) {
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
	tests := []struct {
		typ  api.ACMEChallengeType
		name string
		want string
	}{
		{api.ACMEChallengeTypeDNS01, "WWW.Example.COM", "dns-01.www.example.com"},
		{api.ACMEChallengeTypeHTTP01, "www.example.com.", "http-01.www.example.com"},
		{api.ACMEChallengeTypeDNS01, long, "dns-01.sha256-"},
	}
	for _, tc := range tests {
		got := api.ChallengeLeaseName(tc.typ, tc.name)
		if !strings.HasPrefix(got, tc.want) || len(got) > 253 || strings.HasSuffix(tc.want, "-") && len(got) != len(tc.want)+40 {
			t.Errorf("ChallengeLeaseName(%s, %q) = %q, want %q", tc.typ, tc.name, got, tc.want)
		}
	}
	if a, b := api.ChallengeLeaseName(api.ACMEChallengeTypeDNS01, long), api.ChallengeLeaseName(api.ACMEChallengeTypeDNS01, long+"e"); a == b {
		t.Errorf("two long names share the lease name %q", a)
	}
}

// Two Challenges for the same name and type scheduled at the same moment
// by parallel workers (each also delivered twice), then each retried once:
// exactly one starts and holds the lease; the other waits. Real
// goroutines on the SQLite store.
func TestConcurrentClaimersOfOneNameAndType(t *testing.T) {
	r := acmetest.NewRig(t, nil, challenges.Config{MaxInFlight: 1000, DNS01: &dnsSolver{}})
	for round := 0; round < 40; round++ {
		typ := api.ACMEChallengeTypeHTTP01
		if round%2 == 1 {
			typ = api.ACMEChallengeTypeDNS01
		}
		name := fmt.Sprintf("r%02d.example.com", round)
		a := challenge(fmt.Sprintf("a%02d", round), name, typ, time.Minute)
		b := challenge(fmt.Sprintf("b%02d", round), name, typ, 0)
		b.Spec.Wildcard = true
		acme.StampSpec(&b.ObjectMeta, b.Spec)
		r.Create(a)
		r.Create(b)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, n := range []string{a.Name, b.Name, a.Name, b.Name} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// A duplicate of a winner loses its conditional write
				// (ports.ErrConflict, retried by the queue): not a failure.
				if err := r.Reconcile(key(n)); err != nil && !errors.Is(err, ports.ErrConflict) {
					t.Errorf("round %d: reconcile %s: %v", round, n, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		// Redeliveries: an invocation may have lost its write to a
		// duplicate's (a waiting duplicate records its next run), leaving
		// the lease claimed and the Challenge not processing yet; its
		// retry carries on. A second start cannot be undone by this.
		for _, n := range []string{a.Name, b.Name} {
			r.MustReconcile(key(n))
		}
		var started []string
		for _, n := range []string{a.Name, b.Name} {
			if get(r, n).Status.Processing {
				started = append(started, n)
			}
		}
		if len(started) != 1 {
			l, v := leaseOf(r, a)
			t.Fatalf("round %d: %d Challenges for %s %s started: %v (lease held by %q, version %d; a %s %+v; b %s %+v)", round, len(started), typ, name, started,
				holderName(l), v, get(r, a.Name).UID, get(r, a.Name).Status, get(r, b.Name).UID, get(r, b.Name).Status)
		}
		winner := get(r, started[0])
		if l, _ := leaseOf(r, winner); holderName(l) != winner.Name+"/"+winner.UID {
			t.Fatalf("round %d: %s started but the lease is held by %q", round, winner.Name, holderName(l))
		}
	}
}

// A Challenge that may start claims the lease unless a Challenge that
// exists with the holder's UID and is not final holds it; a lease whose
// holder is gone, was recreated or is final is taken over in one
// conditional write; a lease the Challenge holds itself (a crash between
// its claim and its processing write) is used without a lease write.
func TestClaimingTheLease(t *testing.T) {
	type holderKind int
	const (
		none holderKind = iota
		released
		self
		deleted
		final
		recreated
		liveWaiting
		liveProcessing
	)
	tests := []struct {
		name   string
		holder holderKind
		start  bool
	}{
		{"no lease", none, true},
		{"released lease", released, true},
		{"held by itself after a crash", self, true},
		{"holder deleted", deleted, true},
		{"holder final", final, true},
		{"holder recreated under its name", recreated, true},
		{"holder claimed but not processing yet", liveWaiting, false},
		{"holder processing", liveProcessing, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := acmetest.NewRig(t, nil, challenges.Config{})
			other := challenge("other", "new.example.com", api.ACMEChallengeTypeDNS01, time.Hour)
			other.UID = "other-uid"
			c := challenge("new", "new.example.com", api.ACMEChallengeTypeDNS01, 0)
			c.UID = "new-uid"
			switch tc.holder {
			case released:
				putLease(r, c, nil)
			case self:
				putLease(r, c, holderOf(c))
			case deleted:
				putLease(r, c, holderOf(other))
			case final:
				other.Status.State = api.StateValid
				r.Create(other)
				putLease(r, c, holderOf(other))
			case recreated:
				putLease(r, c, holderOf(other))
				other.UID = "other-uid-2"
				r.Create(other)
			case liveWaiting:
				r.Create(other)
				putLease(r, c, holderOf(other))
			case liveProcessing:
				other.Status.Processing = true
				r.Create(other)
				putLease(r, c, holderOf(other))
			}
			r.Create(c)
			_, v0 := leaseOf(r, c)
			r.MustReconcile(key("new"))
			l, v := leaseOf(r, c)
			if got := get(r, "new").Status.Processing; got != tc.start {
				t.Fatalf("processing=%t, want %t (lease held by %q)", got, tc.start, holderName(l))
			}
			switch {
			case !tc.start:
				if v != v0 || holderName(l) != "other/other-uid" {
					t.Fatalf("a waiting Challenge changed the lease: holder %q, version %d -> %d", holderName(l), v0, v)
				}
				if next := r.Record(key("new")).NextRunAt; !next.Equal(acmetest.T0.Add(5 * time.Second)) {
					t.Fatalf("a waiting Challenge looks again at %v", next)
				}
			case holderName(l) != "new/new-uid":
				t.Fatalf("started, but the lease is held by %q", holderName(l))
			case tc.holder == self && v != v0:
				t.Fatalf("its own lease was written again: version %d -> %d", v0, v)
			case tc.holder != none && tc.holder != self && v != v0+1:
				t.Fatalf("lease version %d -> %d, want one conditional write", v0, v)
			}
		})
	}
}

// A lease holder starts at the next free slot even when an older
// Challenge waits (which could be waiting for that very lease); without
// the lease it would queue behind the older one.
func TestLeaseHolderTakesTheNextSlot(t *testing.T) {
	for _, holds := range []bool{true, false} {
		t.Run(fmt.Sprintf("holds=%t", holds), func(t *testing.T) {
			r := acmetest.NewRig(t, nil, challenges.Config{MaxInFlight: 1})
			r.Create(challenge("old", "new.example.com", api.ACMEChallengeTypeHTTP01, time.Hour))
			c := challenge("new", "new.example.com", api.ACMEChallengeTypeHTTP01, 0)
			r.Create(c)
			c = get(r, "new")
			if holds {
				putLease(r, c, holderOf(c))
			}
			r.MustReconcile(key("new"))
			r.MustReconcile(key("old"))
			if n, o := get(r, "new").Status.Processing, get(r, "old").Status.Processing; n != holds || o == holds {
				t.Fatalf("new processing=%t, old processing=%t; want the lease holder (new: %t) to go first", n, o, holds)
			}
		})
	}
}

// The lease is released (kept, without holder) once the Challenge is
// final, and the next Challenge for the name and type then starts.
func TestLeaseReleasedWhenFinal(t *testing.T) {
	tests := []struct {
		name  string
		authz string
		want  api.State
	}{
		{"valid", acme.StatusValid, api.StateValid},
		{"invalid", acme.StatusInvalid, api.StateInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &dnsSolver{}
			r := acmetest.NewRig(t, nil, challenges.Config{DNS01: d})
			r.Create(challenge("a", "x.example.com", api.ACMEChallengeTypeDNS01, time.Hour))
			r.Create(challenge("b", "x.example.com", api.ACMEChallengeTypeDNS01, 0))
			r.MustReconcile(key("a")) // schedule
			r.MustReconcile(key("b")) // waits
			a, b := get(r, "a"), get(r, "b")
			if l, _ := leaseOf(r, a); !a.Status.Processing || b.Status.Processing || holderName(l) != "a/"+a.UID {
				t.Fatalf("a processing=%t, b processing=%t, lease held by %q", a.Status.Processing, b.Status.Processing, holderName(l))
			}
			r.MustReconcile(key("a")) // present
			r.MustReconcile(key("a")) // self-check and accept
			r.Client.GetAuthorizationFn = func(u string) (acme.Authorization, error) {
				return acme.Authorization{URL: u, Status: tc.authz}, nil
			}
			r.Clock.Advance(time.Minute)
			r.MustReconcile(key("a")) // poll: final
			a = get(r, "a")
			l, _ := leaseOf(r, a)
			if a.Status.State != tc.want || l == nil || l.Spec.Holder != nil || l.Spec.ReleasedAt == nil {
				t.Fatalf("a state %q, lease %+v", a.Status.State, l)
			}
			r.MustReconcile(key("b"))
			b = get(r, "b")
			if l, _ := leaseOf(r, b); !b.Status.Processing || holderName(l) != "b/"+b.UID {
				t.Fatalf("b processing=%t after a finished, lease held by %q", b.Status.Processing, holderName(l))
			}
		})
	}
}

// A Challenge deleted while it may hold the lease (processing, or claimed
// just before a crash) releases it; a final one has nothing to release and
// its deletion writes no lease.
func TestLeaseReleasedWhenDeleted(t *testing.T) {
	tests := []struct {
		name    string
		status  api.ChallengeStatus
		holds   bool
		written bool
	}{
		{"processing", api.ChallengeStatus{Processing: true, Presented: true}, true, true},
		{"claimed, not processing yet", api.ChallengeStatus{}, true, true},
		{"final, lease released", api.ChallengeStatus{State: api.StateValid}, false, false},
		{"final, lease left by a crash", api.ChallengeStatus{State: api.StateValid}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &dnsSolver{}
			r := acmetest.NewRig(t, nil, challenges.Config{DNS01: d})
			o := &api.Order{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindOrder},
				ObjectMeta: api.ObjectMeta{Name: "o1", Namespace: "ns", UID: "order-uid"}}
			r.Create(o)
			c := challenge("d", "x.example.com", api.ACMEChallengeTypeDNS01, 0)
			c.UID = "d-uid"
			c.OwnerReferences = []api.OwnerReference{acme.ControllerRef(o)}
			c.Status = tc.status
			r.Create(c)
			h := holderOf(c)
			if !tc.holds {
				h = nil
			}
			putLease(r, c, h)
			_, v0 := leaseOf(r, c)
			if err := r.Objects.DeleteObject(r.Ctx, api.KeyOf(o), 0, api.Key{}); err != nil {
				t.Fatal(err)
			}
			if r.Get(key("d")) != nil {
				t.Fatal("the Challenge was not deleted with its Order")
			}
			l, v := leaseOf(r, c)
			if written := v != v0; written != tc.written {
				t.Fatalf("lease written=%t, want %t (version %d -> %d)", written, tc.written, v0, v)
			}
			if tc.written && (l.Spec.Holder != nil || l.Spec.ReleasedAt == nil) {
				t.Fatalf("lease not released: %+v", l.Spec)
			}
		})
	}
}

// A processing Challenge that does not hold the lease (marked processing
// before leases existed, or whose lease a failed deletion released)
// presents only after claiming it; when another live Challenge holds it,
// it removes what a lost Present may have left and goes back to waiting.
func TestPresentNeedsTheLease(t *testing.T) {
	tests := []struct {
		name      string
		otherHold bool
		presented bool
	}{
		{"lease free", false, true},
		{"lease held by another live Challenge", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &dnsSolver{}
			r := acmetest.NewRig(t, nil, challenges.Config{DNS01: d})
			other := challenge("other", "x.example.com", api.ACMEChallengeTypeDNS01, time.Hour)
			r.Create(other)
			c := challenge("d", "x.example.com", api.ACMEChallengeTypeDNS01, 0)
			c.Status.Processing = true
			r.Create(c)
			if tc.otherHold {
				putLease(r, c, holderOf(get(r, "other")))
			}
			r.MustReconcile(key("d"))
			c = get(r, "d")
			l, _ := leaseOf(r, c)
			if c.Status.Presented != tc.presented || c.Status.Processing != tc.presented {
				t.Fatalf("presented=%t processing=%t, want %t (reason %q, lease held by %q)", c.Status.Presented, c.Status.Processing, tc.presented, c.Status.Reason, holderName(l))
			}
			if tc.presented {
				if holderName(l) != "d/"+c.UID || fmt.Sprint(d.presented) != "[d]" {
					t.Fatalf("lease held by %q, presented %v", holderName(l), d.presented)
				}
				return
			}
			if len(d.presented) != 0 || fmt.Sprint(d.cleaned) != "[d]" || !strings.Contains(c.Status.Reason, "same DNS name and type") {
				t.Fatalf("presented %v, cleaned %v, reason %q", d.presented, d.cleaned, c.Status.Reason)
			}
			if holderName(l) != "other/"+get(r, "other").UID {
				t.Fatalf("the lease moved to %q", holderName(l))
			}
		})
	}
}
