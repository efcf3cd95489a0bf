package challenges_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/api"
)

// checker is a self-check TEST DOUBLE answering ok.
type checker struct {
	mu    sync.Mutex
	ok    bool
	calls int
}

func (c *checker) Check(context.Context, *api.Challenge) (bool, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return c.ok, "not served yet", nil
}

// dnsSolver is a DNS01Solver TEST DOUBLE recording presents and clean-ups.
type dnsSolver struct {
	mu                 sync.Mutex
	presented, cleaned []string
}

func (d *dnsSolver) Present(_ context.Context, ch *api.Challenge) (api.ChallengeDNS01Status, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.presented = append(d.presented, ch.Name)
	return api.ChallengeDNS01Status{Zone: "example.com.", FQDN: "_acme-challenge." + ch.Spec.DNSName + ".", Value: "v"}, nil
}
func (d *dnsSolver) Check(context.Context, *api.Challenge) (bool, string, error) {
	return true, "", nil
}
func (d *dnsSolver) CleanUp(_ context.Context, ch *api.Challenge) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cleaned = append(d.cleaned, ch.Name)
	return nil
}

func challenge(name, dnsName string, typ api.ACMEChallengeType, age time.Duration) *api.Challenge {
	c := &api.Challenge{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindChallenge},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: api.NewTime(acmetest.T0.Add(-age))},
		Spec: api.ChallengeSpec{URL: "https://acme.test/chall/" + name, AuthorizationURL: "https://acme.test/authz/" + dnsName,
			DNSName: dnsName, Type: typ, Token: "tok-" + name, Key: "tok-" + name + ".thumb", IssuerRef: acmetest.IssuerRef}}
	acme.StampSpec(&c.ObjectMeta, c.Spec)
	return c
}

func key(name string) api.Key { return api.Key{Kind: api.KindChallenge, Namespace: "ns", Name: name} }

func get(r *acmetest.Rig, name string) *api.Challenge { return r.Get(key(name)).(*api.Challenge) }

func TestScheduling(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		others  []*api.Challenge // created first
		running []string         // of the others, already processing
		want    bool             // "new" starts
	}{
		{"free slot", 2, nil, nil, true},
		{"slots full", 1, []*api.Challenge{challenge("a", "a.example.com", api.ACMEChallengeTypeHTTP01, time.Hour)}, []string{"a"}, false},
		{"same name and type running", 5, []*api.Challenge{challenge("a", "new.example.com", api.ACMEChallengeTypeHTTP01, time.Hour)}, []string{"a"}, false},
		{"same name, other type", 5, []*api.Challenge{challenge("a", "new.example.com", api.ACMEChallengeTypeDNS01, time.Hour)}, []string{"a"}, true},
		{"older waiting one goes first", 1, []*api.Challenge{challenge("a", "a.example.com", api.ACMEChallengeTypeHTTP01, time.Hour)}, nil, false},
		{"younger waiting one does not block", 1, []*api.Challenge{challenge("z", "z.example.com", api.ACMEChallengeTypeHTTP01, -time.Hour)}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := acmetest.NewRig(t, nil, challenges.Config{MaxInFlight: tc.max})
			for _, o := range tc.others {
				r.Create(o)
			}
			for _, n := range tc.running {
				r.Mutate(key(n), func(o api.Object) { o.(*api.Challenge).Status.Processing = true })
			}
			r.Create(challenge("new", "new.example.com", api.ACMEChallengeTypeHTTP01, 0))
			r.MustReconcile(key("new"))
			c := get(r, "new")
			if c.Status.Processing != tc.want {
				t.Fatalf("processing=%t, want %t", c.Status.Processing, tc.want)
			}
			if !tc.want {
				if next := r.Record(key("new")).NextRunAt; !next.Equal(acmetest.T0.Add(5 * time.Second)) {
					t.Fatalf("a waiting Challenge looks again at %v", next)
				}
			}
			if len(r.Client.Calls()) != 0 {
				t.Fatalf("scheduling made ACME calls: %v", r.Client.Calls())
			}
		})
	}
}

// HTTP-01 through its life: present, self-check (failing, then passing),
// accept once, poll no earlier than Retry-After, valid.
func TestHTTP01Lifecycle(t *testing.T) {
	ck := &checker{}
	r := acmetest.NewRig(t, nil, challenges.Config{HTTP01: ck})
	r.Create(challenge("c", "www.example.com", api.ACMEChallengeTypeHTTP01, 0))
	r.MustReconcile(key("c")) // schedule
	r.MustReconcile(key("c")) // present
	if c := get(r, "c"); !c.Status.Presented || c.Status.PresentedAt == nil {
		t.Fatalf("not presented: %+v", c.Status)
	}
	r.MustReconcile(key("c")) // self-check fails
	c := get(r, "c")
	if c.Status.Accepted || !strings.Contains(c.Status.Reason, "not served yet") {
		t.Fatalf("after a failing self-check: %+v", c.Status)
	}
	if len(r.Client.Calls()) != 0 {
		t.Fatalf("accepted despite the self-check: %v", r.Client.Calls())
	}
	r.MustReconcile(key("c")) // same result: no write, no call
	ck.ok = true
	r.MustReconcile(key("c"))
	c = get(r, "c")
	if !c.Status.Accepted || c.Status.State != api.StateProcessing || ck.calls != 3 {
		t.Fatalf("after accepting: %+v (self-checks %d)", c.Status, ck.calls)
	}
	r.Client.GetAuthorizationFn = func(u string) (acme.Authorization, error) {
		return acme.Authorization{URL: u, Status: acme.StatusPending, RetryAfter: 10 * time.Second,
			Challenges: []acme.Challenge{{URL: "https://acme.test/chall/c", Status: acme.StatusProcessing}}}, nil
	}
	r.MustReconcile(key("c")) // before the poll interval: nothing
	if n := len(r.Client.Calls()); n != 1 {
		t.Fatalf("calls %v", r.Client.Calls())
	}
	r.Clock.Advance(2 * time.Second)
	r.MustReconcile(key("c")) // poll: still processing, Retry-After 10 s
	r.Clock.Advance(9 * time.Second)
	r.MustReconcile(key("c")) // too early
	if n := len(r.Client.Calls()); n != 2 {
		t.Fatalf("polled before Retry-After: %v", r.Client.Calls())
	}
	r.Client.GetAuthorizationFn = func(u string) (acme.Authorization, error) {
		return acme.Authorization{URL: u, Status: acme.StatusValid}, nil
	}
	r.Clock.Advance(time.Second)
	r.MustReconcile(key("c"))
	c = get(r, "c")
	if c.Status.State != api.StateValid || c.Status.Presented || c.Status.Processing {
		t.Fatalf("final: %+v", c.Status)
	}
	want := []string{"AcceptChallenge https://acme.test/chall/c", "GetAuthorization https://acme.test/authz/www.example.com",
		"GetAuthorization https://acme.test/authz/www.example.com"}
	if got := r.Client.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

func TestInvalidAuthorizationIsCleanedUp(t *testing.T) {
	d := &dnsSolver{}
	r := acmetest.NewRig(t, nil, challenges.Config{DNS01: d})
	r.Create(challenge("d", "x.example.com", api.ACMEChallengeTypeDNS01, 0))
	for i := 0; i < 3; i++ {
		r.MustReconcile(key("d"))
	}
	if c := get(r, "d"); !c.Status.Accepted || c.Status.DNS01 == nil || c.Status.DNS01.FQDN != "_acme-challenge.x.example.com." {
		t.Fatalf("after present+accept: %+v", c.Status)
	}
	r.Client.GetAuthorizationFn = func(u string) (acme.Authorization, error) {
		return acme.Authorization{URL: u, Status: acme.StatusInvalid,
			Challenges: []acme.Challenge{{URL: "https://acme.test/chall/d", Problem: "unauthorized: no TXT record"}}}, nil
	}
	r.Clock.Advance(time.Minute)
	r.MustReconcile(key("d"))
	c := get(r, "d")
	if c.Status.State != api.StateInvalid || !strings.Contains(c.Status.Reason, "no TXT record") || c.Status.Presented {
		t.Fatalf("final: %+v", c.Status)
	}
	if fmt.Sprint(d.cleaned) != "[d]" {
		t.Fatalf("clean-ups %v", d.cleaned)
	}
	n := len(r.Client.Calls())
	r.MustReconcile(key("d"))
	if len(r.Client.Calls()) != n || len(d.cleaned) != 1 {
		t.Fatal("a final Challenge made calls or cleaned up again")
	}
}

func TestDNS01WithoutSolverFails(t *testing.T) {
	r := acmetest.NewRig(t, nil, challenges.Config{})
	r.Create(challenge("d", "x.example.com", api.ACMEChallengeTypeDNS01, 0))
	r.MustReconcile(key("d"))
	r.MustReconcile(key("d"))
	if c := get(r, "d"); c.Status.State != api.StateErrored || !strings.Contains(c.Status.Reason, "no DNS-01 solver") {
		t.Fatalf("status %+v", c.Status)
	}
}

// A presented DNS-01 Challenge deleted with its Order (as when its
// CertificateRequest is deleted) is cleaned up first (kernel.Deleter).
func TestDeletedWithOwnerIsCleanedUp(t *testing.T) {
	d := &dnsSolver{}
	r := acmetest.NewRig(t, nil, challenges.Config{DNS01: d})
	c := challenge("d", "x.example.com", api.ACMEChallengeTypeDNS01, 0)
	r.Create(c) // with the Order (and approved request) that lists it
	o := r.Get(api.Key{Kind: api.KindOrder, Namespace: "ns", Name: c.ControllerOf().Name})
	r.MustReconcile(key("d")) // schedule
	r.MustReconcile(key("d")) // present
	if !get(r, "d").Status.Presented {
		t.Fatal("not presented")
	}
	if err := r.Objects.DeleteObject(r.Ctx, api.KeyOf(o), 0, api.Key{}); err != nil {
		t.Fatal(err)
	}
	if r.Get(key("d")) != nil {
		t.Fatal("the Challenge was not deleted with its Order")
	}
	if fmt.Sprint(d.cleaned) != "[d]" {
		t.Fatalf("clean-ups %v, want [d]", d.cleaned)
	}
}

// A valid Challenge reconciled again (its message redelivered because the
// process that wrote it valid died before the Order's wake-up was sent)
// wakes its Order, without a write or an ACME call: the Order finalizes
// within one redelivery instead of after its WaitPoll.
func TestFinalChallengeReconciledAgainWakesItsOrder(t *testing.T) {
	r := acmetest.NewRig(t, nil, challenges.Config{})
	c := challenge("c", "www.example.com", api.ACMEChallengeTypeHTTP01, 0)
	r.Create(c)
	r.Mutate(key("c"), func(o api.Object) { o.(*api.Challenge).Status.State = api.StateValid })
	r.MustReconcile(key("c")) // the first delivery: its due time is cleared
	for {
		ds, _ := r.Queue.Receive(r.Ctx, 100)
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			_ = r.Queue.Ack(r.Ctx, d)
		}
	}
	v := r.Record(key("c")).Version
	r.MustReconcile(key("c"))
	if got := r.Record(key("c")).Version; got != v {
		t.Fatalf("the valid Challenge was written again (version %d, was %d)", got, v)
	}
	ds, _ := r.Queue.Receive(r.Ctx, 100)
	var woken []string
	for _, d := range ds {
		woken = append(woken, d.Key.String())
	}
	if want := "Order/ns/c-order"; len(woken) != 1 || woken[0] != want {
		t.Fatalf("woke %v, want [%s]", woken, want)
	}
	if calls := r.Client.Calls(); len(calls) != 0 {
		t.Fatalf("ACME calls: %v", calls)
	}
}

// A DNS provider that accepted the change and never serves it: the
// Challenge says why it waits (its reason), makes no ACME request, and
// its self-checks back off — at most 32 in the first hour and 12 an hour
// after (the fixed 5-s interval made 720 an hour), never a tight loop.
func TestSelfCheckBacksOff(t *testing.T) {
	ck := &checker{}
	r := acmetest.NewRig(t, nil, challenges.Config{DNS01: &neverVisible{ck}})
	r.Create(challenge("d", "x.example.com", api.ACMEChallengeTypeDNS01, 0))
	r.MustReconcile(key("d")) // schedule
	r.MustReconcile(key("d")) // present
	start := r.Clock.Now()
	perHour := []int{}
	for h := 1; h <= 3; h++ {
		before := ck.calls
		for r.Clock.Now().Before(start.Add(time.Duration(h) * time.Hour)) {
			next := r.Record(key("d")).NextRunAt
			if next.After(r.Clock.Now()) {
				r.Clock.Advance(next.Sub(r.Clock.Now()))
			} else {
				r.Clock.Advance(time.Second) // settled without a due time: a message after its delay
			}
			r.MustReconcile(key("d"))
		}
		perHour = append(perHour, ck.calls-before)
	}
	t.Logf("self-checks per hour of a record never visible: %v", perHour)
	if perHour[0] > 32 || perHour[1] > 13 || perHour[2] > 13 {
		t.Fatalf("self-checks per hour %v, want at most 32, then 13", perHour)
	}
	c := get(r, "d")
	if c.Status.Accepted || !strings.Contains(c.Status.Reason, "Waiting for DNS-01 challenge propagation: not served yet") {
		t.Fatalf("status %+v", c.Status)
	}
	if len(r.Client.Calls()) != 0 {
		t.Fatalf("ACME requests while the record is not visible: %v", r.Client.Calls())
	}
	// Once visible, it is seen at the next check (at most 5 minutes).
	ck.ok = true
	r.Clock.Advance(challenges.MaxCheckInterval)
	r.MustReconcile(key("d"))
	if c := get(r, "d"); !c.Status.Accepted {
		t.Fatalf("not accepted once visible: %+v", c.Status)
	}
}

// neverVisible is a DNS01Solver TEST DOUBLE whose records are presented
// and then checked by ck.
type neverVisible struct{ ck *checker }

func (n *neverVisible) Present(ctx context.Context, ch *api.Challenge) (api.ChallengeDNS01Status, error) {
	return (&dnsSolver{}).Present(ctx, ch)
}
func (n *neverVisible) Check(ctx context.Context, ch *api.Challenge) (bool, string, error) {
	return n.ck.Check(ctx, ch)
}
func (n *neverVisible) CleanUp(context.Context, *api.Challenge) error { return nil }

// After the accept, the authorization is polled soon (acme.Polling's
// first step, or the accept answer's Retry-After), then backing off; a
// poll's Retry-After is followed whatever the backoff says.
func TestAuthorizationPollBacksOff(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		acceptRA time.Duration
		pollRAs  []time.Duration // Retry-After of each pending answer
		want     []time.Duration // delay before each poll
	}{
		{name: "no Retry-After", pollRAs: []time.Duration{0, 0, 0, 0, 0}, want: []time.Duration{150 * ms, 300 * ms, 600 * ms, 1200 * ms, 2000 * ms, 2000 * ms}},
		{name: "Retry-After on the accept", acceptRA: 3 * time.Second, pollRAs: []time.Duration{0}, want: []time.Duration{3 * time.Second, 300 * ms}},
		{name: "Retry-After on a poll", pollRAs: []time.Duration{7 * time.Second, 0}, want: []time.Duration{150 * ms, 7 * time.Second, 600 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := acmetest.NewRig(t, nil, challenges.Config{HTTP01: &checker{ok: true}})
			r.Create(challenge("c", "www.example.com", api.ACMEChallengeTypeHTTP01, 0))
			r.Client.AcceptFn = func(u string) (acme.Challenge, error) {
				return acme.Challenge{URL: u, Status: acme.StatusProcessing, RetryAfter: tc.acceptRA}, nil
			}
			for i := 0; i < 3; i++ { // schedule, present, accept
				r.MustReconcile(key("c"))
			}
			polls := 0
			r.Client.GetAuthorizationFn = func(u string) (acme.Authorization, error) {
				polls++
				if polls > len(tc.pollRAs) {
					return acme.Authorization{URL: u, Status: acme.StatusValid}, nil
				}
				return acme.Authorization{URL: u, Status: acme.StatusPending, RetryAfter: tc.pollRAs[polls-1],
					Challenges: []acme.Challenge{{URL: "https://acme.test/chall/c", Status: acme.StatusProcessing}}}, nil
			}
			for i, d := range tc.want {
				c := get(r, "c")
				if c.Status.NextPollAt == nil || !c.Status.NextPollAt.Equal(r.Clock.Now().Add(d)) {
					t.Fatalf("poll %d: next poll %v, want now + %s", i+1, c.Status.NextPollAt, d)
				}
				r.Clock.Advance(d - ms)
				r.MustReconcile(key("c"))
				if polls != i {
					t.Fatalf("poll %d made %s early", i+1, ms)
				}
				r.Clock.Advance(ms)
				r.MustReconcile(key("c"))
				if polls != i+1 {
					t.Fatalf("poll %d not made when due", i+1)
				}
			}
			if c := get(r, "c"); c.Status.State != api.StateValid || c.Status.Polls != len(tc.want) {
				t.Fatalf("final: %+v", c.Status)
			}
		})
	}
}
