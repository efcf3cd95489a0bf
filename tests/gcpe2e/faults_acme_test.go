package gcpe2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/internal/gcpmode"
	"github.com/certfn/certfn/tests/faultsweep"
)

// The fault harness of TestFaultHarnessOnCloudRun on the ACME HTTP-01
// issuance of tests/awse2e's TestFaultHarnessOnLambdaACME (see there what
// is faulted, how Pebble's answers are made the same in every run, and
// what is asserted), on the Cloud Run services: every state store, Secret
// Manager and Pub/Sub call of the api, worker, signer and scheduler and
// every ACME request of the worker; the http01 service answers Pebble's
// VA from Firestore (its own reads not faulted). An ACME request
// "crashed" reached Pebble, then the push died. Every message is pushed
// twice, as in the CA flow. The bound is cloudRunACMEBound; `make test`
// runs it at cloudRunACMEStride, and every call as every kind is
// `CERTFN_FAULTS_STRIDE=1 go test -count=1 -run TestFaultHarnessOnCloudRunACME -v ./tests/gcpe2e/`.
func TestFaultHarnessOnCloudRunACME(t *testing.T) {
	a := newCloudRunACME(t)
	faultsweep.SweepStride(t, "fault harness on the Cloud Run services (Firestore emulator, Secret Manager double, Pub/Sub pushes, Pebble), ACME HTTP-01 issuance",
		cloudRunACMEBound, cloudRunACMEStride, func(n int, kind string) faultsweep.Result { return runCloudRunFaults(t, n, kind, a) })
}

// cloudRunACMEStride is the default stride: three calls in every 12, each
// as one of the kinds in turn, so that `make test` spends at most about
// 30 s on the sweep (a run takes about 0.4 s; the clean run makes about
// 220 calls). A sample: the full sweep is CERTFN_FAULTS_STRIDE=1.
const cloudRunACMEStride = 12

// cloudRunACMEBound is the CA flow's bound (the worker's acknowledgement
// deadline plus a sweep) plus the ACME polls after the redelivery (the
// worker's acme.DefaultPollMax of 2 s each; 10 s covers the challenge's
// and the order's).
const cloudRunACMEBound = cloudRunBound + 10*time.Second

// cloudRunACME is what the ACME runs share: Pebble, and the HTTP-01
// address Pebble's VA calls, served by the current run's http01 service.
type cloudRunACME struct {
	peb     *pebbleServer
	h01Addr string

	mu     sync.Mutex
	cur    *deployment
	pebble *faultsweep.Pebble
}

func newCloudRunACME(t *testing.T) *cloudRunACME {
	t.Helper()
	port := freePort(t)
	a := &cloudRunACME{h01Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	a.peb = startPebble(t, port)
	faultsweep.ServeHTTP01(t, a.h01Addr, func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		d, p := a.cur, a.pebble
		a.mu.Unlock()
		if d == nil {
			http.Error(w, "no run", http.StatusServiceUnavailable)
			return
		}
		rec := d.serve(d.http01, r)
		p.Served(r.UserAgent(), rec.Code)
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	return a
}

// options points the worker at Pebble, its ACME requests through f.
func (a *cloudRunACME) options(f *cloudRunFaults, o *gcpmode.Options) {
	o.ACME.HTTP01SelfCheckAddr = a.h01Addr
	o.ACME.WrapTransport = func(next http.RoundTripper) http.RoundTripper { return acmeFaultRT{a: a, f: f, next: next} }
}

// setUp makes d the current run and applies the ClusterIssuer and the
// Certificate.
func (a *cloudRunACME) setUp(d *deployment) {
	a.mu.Lock()
	a.cur, a.pebble = d, &faultsweep.Pebble{}
	a.mu.Unlock()
	d.apply(a.peb.issuerYAML("pebble", "", "    - http01: {ingress: {}}\n"))
	d.apply(acmeCertYAML("web", "pebble", "web.example.com"))
}

// acmeFaultRT counts and faults the worker's ACME requests and
// normalizes Pebble's answers.
type acmeFaultRT struct {
	a    *cloudRunACME
	f    *cloudRunFaults
	next http.RoundTripper
}

func (r acmeFaultRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.a.mu.Lock()
	p := r.a.pebble // the run's (the services are built before setUp)
	r.a.mu.Unlock()
	c := p.Call(req)
	var resp *http.Response
	err := r.f.call(req.Context(), c.Label, func(context.Context) error {
		var err error
		resp, err = r.next.RoundTrip(req)
		if err == nil {
			c.Answered(resp)
		}
		return err
	})
	if err != nil {
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, err
	}
	return c.Settle(resp)
}

// converged says whether every Order and Challenge is final.
func (a *cloudRunACME) converged(d *deployment) (bool, string) {
	for _, o := range d.orders() {
		if !o.IsFinal() {
			return false, "Order " + o.Name + " not final"
		}
	}
	for _, kind := range []string{api.KindChallenge} {
		recs, err := d.inspect.List(d.ctx, listOf(kind, "default"))
		if err != nil {
			return false, err.Error()
		}
		for _, rec := range recs {
			var c api.Challenge
			d.get(rec.Key, &c)
			if !c.IsFinal() {
				return false, "Challenge " + c.Name + " not final"
			}
		}
	}
	return true, ""
}

// orders are default's Orders.
func (d *deployment) orders() []*api.Order {
	recs, err := d.inspect.List(d.ctx, listOf(api.KindOrder, "default"))
	if err != nil {
		d.t.Fatal(err)
	}
	var out []*api.Order
	for _, rec := range recs {
		var o api.Order
		d.get(rec.Key, &o)
		out = append(out, &o)
	}
	return out
}

// check asserts the ACME invariants of a converged run.
func (a *cloudRunACME) check(d *deployment) error {
	valid, orders := 0, d.orders()
	for _, o := range orders {
		if o.Status.State == api.StateValid {
			valid++
		}
	}
	bad := a.pebble.Check(valid, len(orders))
	ids := d.sm.SecretIDs()
	if len(ids) != 2 {
		bad = append(bad, fmt.Sprintf("%d secrets, want web-tls and the account key: %v", len(ids), ids))
	}
	if sec, err := d.secrets.Get(d.ctx, "default", "web-tls"); err == nil {
		if err := faultsweep.Verify(sec.Data["tls.crt"], a.peb.roots, "web.example.com"); err != nil {
			bad = append(bad, "web-tls does not verify against Pebble's roots: "+err.Error())
		}
	}
	if err := d.keysOutsideSecrets(); err != nil {
		bad = append(bad, err.Error())
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// keysOutsideSecrets reports a state document holding private key
// material (the error-returning half of requireClean).
func (d *deployment) keysOutsideSecrets() error {
	c, err := firestore.NewClient(d.ctx, project)
	if err != nil {
		return err
	}
	defer c.Close()
	it := c.Collection(d.collection).Documents(d.ctx)
	defer it.Stop()
	for {
		doc, err := it.Next()
		if err == iterator.Done {
			return nil
		}
		if err != nil {
			return err
		}
		if s := fmt.Sprint(doc.Data()); strings.Contains(s, "PRIVATE KEY") {
			return fmt.Errorf("state document %s holds private key material", doc.Ref.ID)
		}
	}
}
