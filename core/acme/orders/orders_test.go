package orders_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/acme/orders"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

var httpSolver = []api.ACMEChallengeSolver{{HTTP01: &api.ACMEChallengeSolverHTTP01{}}}

func csrPEM(t *testing.T, names ...string) []byte {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: names}, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func certPEM(t *testing.T, issuerCN string) []byte {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "leaf"}, Issuer: pkix.Name{CommonName: issuerCN},
		NotBefore: acmetest.T0, NotAfter: acmetest.T0.Add(90 * 24 * time.Hour)}
	parent := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: issuerCN}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// order builds an Order for names changed by fns.
func order(t *testing.T, names []string, fns ...func(*api.Order)) *api.Order {
	o := &api.Order{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindOrder},
		ObjectMeta: api.ObjectMeta{Name: "o1", Namespace: "ns"},
		Spec:       api.OrderSpec{Request: csrPEM(t, names...), IssuerRef: acmetest.IssuerRef, DNSNames: names}}
	acme.StampSpec(&o.ObjectMeta, o.Spec)
	for _, f := range fns {
		f(o)
	}
	return o
}

var orderKey = api.Key{Kind: api.KindOrder, Namespace: "ns", Name: "o1"}

func getOrder(r *acmetest.Rig) *api.Order { return r.Get(orderKey).(*api.Order) }

func TestCreateOrderOnceThenChallenges(t *testing.T) {
	r := acmetest.NewRig(t, httpSolver, challenges.Config{})
	r.Create(order(t, []string{"a.example.com", "b.example.com"}))
	r.MustReconcile(orderKey) // newOrder
	o := getOrder(r)
	if o.Status.URL == "" || len(o.Status.Authorizations) != 2 || o.Status.State != api.StatePending {
		t.Fatalf("after create: %+v", o.Status)
	}
	r.MustReconcile(orderKey) // authorizations
	r.MustReconcile(orderKey) // challenges
	r.MustReconcile(orderKey) // nothing new: they exist
	calls := strings.Join(r.Client.Calls(), "\n")
	if strings.Count(calls, "NewOrder") != 1 || strings.Count(calls, "GetAuthorization") != 2 {
		t.Fatalf("ACME calls:\n%s", calls)
	}
	chs := r.List(api.KindChallenge)
	if len(chs) != 2 {
		t.Fatalf("%d Challenges, want 2", len(chs))
	}
	for _, obj := range chs {
		c := obj.(*api.Challenge)
		if c.Spec.Type != api.ACMEChallengeTypeHTTP01 || c.Spec.Key != c.Spec.Token+".thumb" || c.Spec.URL == "" ||
			c.ControllerOf() == nil || c.ControllerOf().Name != "o1" {
			t.Errorf("challenge %s: %+v", c.Name, c.Spec)
		}
	}
}

func TestOrderFailures(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, r *acmetest.Rig) *api.Order
		state   api.State
		reason  string
		wantNew bool // NewOrder called
	}{
		{"rejected identifier", func(t *testing.T, r *acmetest.Rig) *api.Order {
			r.Client.NewOrderFn = func(acme.NewOrderRequest) (acme.Order, error) {
				return acme.Order{}, errs.Permanentf("rejectedIdentifier: no")
			}
			return order(t, []string{"a.example.com"})
		}, api.StateErrored, "rejectedIdentifier", true},
		{"no identifier", func(t *testing.T, r *acmetest.Rig) *api.Order {
			return order(t, nil, func(o *api.Order) { o.Spec.DNSNames = nil; acme.StampSpec(&o.ObjectMeta, o.Spec) })
		}, api.StateErrored, "no identifier", false},
		{"spec changed", func(t *testing.T, r *acmetest.Rig) *api.Order {
			return order(t, []string{"a.example.com"}, func(o *api.Order) { o.Spec.DNSNames = []string{"evil.example.com"} })
		}, api.StateErrored, "immutable", false},
		{"no solver for a wildcard", func(t *testing.T, r *acmetest.Rig) *api.Order {
			r.Client.GetAuthorizationFn = func(url string) (acme.Authorization, error) {
				return acme.Authorization{URL: url, Status: "pending", Identifier: "example.com", Wildcard: true,
					Challenges: []acme.Challenge{{URL: "u", Type: "dns-01", Token: "t"}}}, nil
			}
			return order(t, []string{"*.example.com"})
		}, api.StateErrored, "no configured challenge solver", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := acmetest.NewRig(t, httpSolver, challenges.Config{})
			r.Create(tc.setup(t, r))
			for i := 0; i < 4 && !getOrder(r).IsFinal(); i++ {
				r.MustReconcile(orderKey)
			}
			o := getOrder(r)
			if o.Status.State != tc.state || !strings.Contains(o.Status.Reason, tc.reason) || o.Status.FailureTime == nil {
				t.Fatalf("state %q reason %q, want %q containing %q", o.Status.State, o.Status.Reason, tc.state, tc.reason)
			}
			if got := strings.Contains(strings.Join(r.Client.Calls(), ","), "NewOrder"); got != tc.wantNew {
				t.Fatalf("NewOrder called=%t, want %t", got, tc.wantNew)
			}
			// Final: further reconciles make no ACME request.
			n := len(r.Client.Calls())
			r.MustReconcile(orderKey)
			r.MustReconcile(orderKey)
			if len(r.Client.Calls()) != n {
				t.Fatalf("ACME calls after the Order failed: %v", r.Client.Calls()[n:])
			}
		})
	}
}

// A failed Challenge fails the Order without an ACME request; the
// Challenge is kept.
func TestFailedChallengeFailsOrder(t *testing.T) {
	r := acmetest.NewRig(t, httpSolver, challenges.Config{})
	r.Create(order(t, []string{"a.example.com"}))
	for i := 0; i < 3; i++ {
		r.MustReconcile(orderKey)
	}
	ch := r.List(api.KindChallenge)[0].(*api.Challenge)
	r.Mutate(api.KeyOf(ch), func(o api.Object) {
		c := o.(*api.Challenge)
		c.Status.State, c.Status.Reason = api.StateInvalid, "incorrectResponse: wrong"
	})
	n := len(r.Client.Calls())
	r.MustReconcile(orderKey)
	o := getOrder(r)
	if o.Status.State != api.StateInvalid || !strings.Contains(o.Status.Reason, "incorrectResponse: wrong") {
		t.Fatalf("order: %q %q", o.Status.State, o.Status.Reason)
	}
	if len(r.Client.Calls()) != n {
		t.Fatalf("ACME calls: %v", r.Client.Calls()[n:])
	}
	if len(r.List(api.KindChallenge)) != 1 {
		t.Fatal("the failed Challenge was deleted")
	}
}

// All Challenges valid: finalize, poll no earlier than Retry-After,
// download the preferred chain, mark valid, delete the Challenges.
func TestFinalizePollDownload(t *testing.T) {
	r := acmetest.NewRig(t, httpSolver, challenges.Config{})
	r.Create(order(t, []string{"a.example.com"}))
	for i := 0; i < 3; i++ {
		r.MustReconcile(orderKey)
	}
	ch := r.List(api.KindChallenge)[0].(*api.Challenge)
	r.Mutate(api.KeyOf(ch), func(o api.Object) { o.(*api.Challenge).Status.State = api.StateValid })
	r.Client.FinalizeFn = func(u string) (acme.Order, error) {
		return acme.Order{URL: u, Status: acme.StatusProcessing, RetryAfter: 30 * time.Second}, nil
	}
	r.MustReconcile(orderKey)
	o := getOrder(r)
	if o.Status.State != api.StateProcessing || o.Status.NextPollAt == nil || !o.Status.NextPollAt.Equal(acmetest.T0.Add(30*time.Second)) {
		t.Fatalf("after finalize: %q next poll %v", o.Status.State, o.Status.NextPollAt)
	}
	n := len(r.Client.Calls())
	r.Clock.Advance(29 * time.Second)
	r.MustReconcile(orderKey)
	if len(r.Client.Calls()) != n {
		t.Fatalf("polled before Retry-After: %v", r.Client.Calls()[n:])
	}
	def, alt := certPEM(t, "Root A"), certPEM(t, "Root B")
	r.Client.ChainsFn = func(string) ([]acme.Chain, error) {
		return []acme.Chain{{PEM: def}, {PEM: alt}}, nil
	}
	r.Clock.Advance(time.Second)
	r.MustReconcile(orderKey)
	o = getOrder(r)
	if o.Status.State != api.StateValid || string(o.Status.Certificate) != string(def) {
		t.Fatalf("after the poll: %q, certificate is the default chain: %t", o.Status.State, string(o.Status.Certificate) == string(def))
	}
	r.MustReconcile(orderKey) // clean-up
	if n := len(r.List(api.KindChallenge)); n != 0 {
		t.Fatalf("%d Challenges left after success", n)
	}
}

func TestPreferredChain(t *testing.T) {
	a, b := certPEM(t, "Root A"), certPEM(t, "Root B")
	chains := []acme.Chain{{PEM: a, URL: "a"}, {PEM: b, URL: "b"}}
	tests := []struct {
		preferred, want string
	}{
		{"", "a"}, {"Root A", "a"}, {"root b", "b"}, {"Root C", "a"},
	}
	for _, tc := range tests {
		got, err := orders.PreferredChain(chains, tc.preferred)
		if err != nil || got.URL != tc.want {
			t.Errorf("PreferredChain(%q) = %s, %v; want %s", tc.preferred, got.URL, err, tc.want)
		}
	}
	if _, err := orders.PreferredChain([]acme.Chain{{PEM: []byte("junk")}}, ""); err == nil {
		t.Error("an unparsable default chain must fail")
	}
	if _, err := orders.PreferredChain(nil, ""); err == nil {
		t.Error("no chain must fail")
	}
}

// A new-order whose "replaces" the server refuses — already replaced, or
// any problem it answers (Pebble 2.10 answers serverInternal to a serial
// with a leading zero octet: the renewal was retried for ever) — is ordered
// again at once without it; a rate limit or a request that got no answer
// is not (the same refusal would follow, or the server may never have seen
// it).
func TestRefusedReplacesRetriesWithoutReplaces(t *testing.T) {
	problem := struct{ error }{errors.New("HTTP 500 serverInternal: could not find an order for the given certificate")}
	for _, tc := range []struct {
		name  string
		err   error
		retry bool
	}{
		{"already replaced", errs.Permanent(errors.Join(acme.ErrAlreadyReplaced, errors.New("dup"))), true},
		{"server error problem", errors.Join(acme.ErrProblem, problem), true},
		{"malformed problem", errs.Permanent(errors.Join(acme.ErrProblem, errors.New("malformed: parsing ARI CertID failed"))), true},
		{"rate limited", errs.RetryAfter(errors.Join(acme.ErrProblem, errors.New("rateLimited")), time.Hour), false},
		{"no answer", errors.New("cannot reach the ACME server"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := acmetest.NewRig(t, httpSolver, challenges.Config{})
			r.Client.NewOrderFn = func(req acme.NewOrderRequest) (acme.Order, error) {
				if req.Replaces != "" {
					return acme.Order{}, tc.err
				}
				return acme.Order{URL: "https://acme.test/order/2", Status: "pending", Authorizations: []string{"https://acme.test/authz/a.example.com"}}, nil
			}
			r.Create(order(t, []string{"a.example.com"}, func(o *api.Order) { o.Spec.Replaces = "aki.serial"; acme.StampSpec(&o.ObjectMeta, o.Spec) }))
			_ = r.Reconcile(orderKey)
			want := []string{"NewOrder aki.serial"}
			if tc.retry {
				want = append(want, "NewOrder ")
			}
			if c := r.Client.Calls(); strings.Join(c, ",") != strings.Join(want, ",") {
				t.Fatalf("calls %q, want %q", c, want)
			}
			if o := getOrder(r); (o.Status.URL == "https://acme.test/order/2") != tc.retry {
				t.Fatalf("order: %+v", o.Status)
			}
		})
	}
}

// A processing order is polled soon after finalize, then backing off
// (acme.Polling's defaults: 150 ms, doubling, capped at 2 s); a
// Retry-After is followed whatever the backoff says. No poll is made
// before it is due.
func TestProcessingOrderBacksOff(t *testing.T) {
	r := acmetest.NewRig(t, httpSolver, challenges.Config{})
	r.Create(order(t, []string{"a.example.com"}))
	for i := 0; i < 3; i++ {
		r.MustReconcile(orderKey)
	}
	ch := r.List(api.KindChallenge)[0].(*api.Challenge)
	r.Mutate(api.KeyOf(ch), func(o api.Object) { o.(*api.Challenge).Status.State = api.StateValid })
	var retryAfter time.Duration
	processing := func(u string) (acme.Order, error) {
		return acme.Order{URL: u, Status: acme.StatusProcessing, RetryAfter: retryAfter}, nil
	}
	r.Client.FinalizeFn, r.Client.GetOrderFn = processing, processing
	ms := time.Millisecond
	start := r.Clock.Now()
	r.MustReconcile(orderKey) // finalize
	steps := []struct {
		ra        time.Duration // on the answer that schedules this step
		wantDelay time.Duration
	}{
		{0, 150 * ms}, // after finalize
		{0, 300 * ms}, // after the first poll
		{0, 600 * ms},
		{0, 1200 * ms},
		{0, 2 * time.Second}, // capped
		{5 * time.Second, 5 * time.Second},
		{100 * ms, 100 * ms},
	}
	for i, tc := range steps {
		o := getOrder(r)
		if o.Status.NextPollAt == nil || !o.Status.NextPollAt.Equal(r.Clock.Now().Add(tc.wantDelay)) {
			t.Fatalf("step %d: next poll %v, want now + %s", i, o.Status.NextPollAt, tc.wantDelay)
		}
		if o.Status.Polls != i {
			t.Fatalf("step %d: status.polls = %d", i, o.Status.Polls)
		}
		n := len(r.Client.Calls())
		r.Clock.Advance(tc.wantDelay - ms)
		r.MustReconcile(orderKey)
		if len(r.Client.Calls()) != n {
			t.Fatalf("step %d: polled before it was due: %v", i, r.Client.Calls()[n:])
		}
		if retryAfter = 0; i+1 < len(steps) {
			retryAfter = steps[i+1].ra
		}
		r.Clock.Advance(ms)
		r.MustReconcile(orderKey)
		if got := r.Client.Calls()[n:]; len(got) != 1 || !strings.HasPrefix(got[0], "GetOrder") {
			t.Fatalf("step %d: calls %v, want one GetOrder", i, got)
		}
	}
	if el := r.Clock.Now().Sub(start); el != (150+300+600+1200+2000+5000+100)*ms {
		t.Fatalf("elapsed %s", el)
	}
}
