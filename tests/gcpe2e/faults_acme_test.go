package gcpe2e

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/internal/gcpmode"
	"github.com/certfn/certfn/tests/faultsweep"
)

// The fault harness of TestFaultHarnessOnCloudRun on an ACME issuance
// (HTTP-01, Pebble in this process): the worker registers the
// ClusterIssuer's account, orders, answers the challenge (the http01
// service answers Pebble's validation from Firestore) and finalizes; the
// signer is never involved. Every state store, Secret Manager and Pub/Sub
// call of the api, worker, signer and scheduler and every ACME HTTP
// request of the worker are counted and faulted the same three ways (an
// ACME request "crashed" reached Pebble, then the push died; a "lost" one
// reached Pebble and its answer was lost). The http01 service's own reads
// are not faulted (Pebble's VA calls it on its own goroutine, outside the
// push being faulted). Pebble's asynchronous answers are normalized by
// faultsweep.ACMECall; authorization reuse is off (PEBBLE_AUTHZREUSE=0;
// one in a hundred still reused, which only a second Order of a faulted
// run can meet) and a first issuance sends no "replaces".
//
// On top of the CA flow's invariants it asserts: one finalize reached
// Pebble (one certificate issued), one Order valid, every Order and
// Challenge final, the secrets are web-tls and the account key and
// nothing else, the certificate verifies against Pebble's roots, Pebble's
// VA was answered by the http01 service, and no state document holds
// private key material. The bound is cloudRunACMEBound.
//
// `make test` runs it at cloudRunACMEStride; CERTFN_FAULTS_STRIDE=1 faults every call as every kind:
// `CERTFN_FAULTS_STRIDE=1 go test -count=1 -run TestFaultHarnessOnCloudRunACME -v ./tests/gcpe2e/`.
func TestFaultHarnessOnCloudRunACME(t *testing.T) {
	a := newCloudRunACME(t)
	faultsweep.SweepStride(t, "fault harness on the Cloud Run services (Firestore emulator, Secret Manager double, Pub/Sub pushes, Pebble), ACME HTTP-01 issuance",
		cloudRunACMEBound, cloudRunACMEStride, func(n int, kind string) faultsweep.Result { return runCloudRunFaults(t, n, kind, a) })
}

// cloudRunACMEStride is the default stride: three calls in every 72, each
// as one of the kinds in turn, so that `make test` spends at most about
// 30 s on the sweep (a run takes about 2 s; the clean run makes about
// 220 calls). A sample: the full sweep is CERTFN_FAULTS_STRIDE=1.
const cloudRunACMEStride = 72

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
	// answered counts the current run's VA requests answered 200,
	// h01Errors its other answers; finalized the finalizes Pebble accepted.
	answered, h01Errors, finalized int
}

func newCloudRunACME(t *testing.T) *cloudRunACME {
	t.Helper()
	port := freePort(t)
	a := &cloudRunACME{h01Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	a.peb = startPebble(t, port)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		d := a.cur
		a.mu.Unlock()
		if d == nil {
			http.Error(w, "no run", http.StatusServiceUnavailable)
			return
		}
		rec := d.serve(d.http01, r)
		if strings.Contains(r.UserAgent(), "Pebble") {
			a.mu.Lock()
			if rec.Code == http.StatusOK {
				a.answered++
			} else {
				a.h01Errors++
			}
			a.mu.Unlock()
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}), ReadHeaderTimeout: 5 * time.Second}
	l, err := net.Listen("tcp", a.h01Addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
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
	a.cur, a.answered, a.h01Errors, a.finalized = d, 0, 0, 0
	a.pebble = &faultsweep.Pebble{Answered: a.vaAnswered}
	a.mu.Unlock()
	d.apply(a.peb.issuerYAML("pebble", "", "    - http01: {ingress: {}}\n"))
	d.apply(acmeCertYAML("web", "pebble", "web.example.com"))
}

func (a *cloudRunACME) vaAnswered() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.answered
}

// acmeFaultRT counts and faults the worker's ACME requests and
// normalizes Pebble's answers.
type acmeFaultRT struct {
	a    *cloudRunACME
	f    *cloudRunFaults
	next http.RoundTripper
}

func (r acmeFaultRT) RoundTrip(req *http.Request) (*http.Response, error) {
	c := r.a.pebble.Call(req)
	var resp *http.Response
	err := r.f.call(req.Context(), c.Label, func(context.Context) error {
		var err error
		resp, err = r.next.RoundTrip(req)
		if err == nil && c.Finalized(resp) {
			r.a.mu.Lock()
			r.a.finalized++
			r.a.mu.Unlock()
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
	var bad []string
	a.mu.Lock()
	finalized, answered, h01Errors := a.finalized, a.answered, a.h01Errors
	a.mu.Unlock()
	if finalized != 1 {
		bad = append(bad, fmt.Sprintf("%d finalize requests accepted by Pebble (certificates issued), want 1", finalized))
	}
	if answered == 0 {
		bad = append(bad, fmt.Sprintf("the http01 service never answered Pebble's VA (%d errors)", h01Errors))
	}
	valid, orders := 0, d.orders()
	for _, o := range orders {
		if o.Status.State == api.StateValid {
			valid++
		}
	}
	if valid != 1 {
		bad = append(bad, fmt.Sprintf("%d valid Orders of %d, want 1", valid, len(orders)))
	}
	ids := d.sm.SecretIDs()
	if len(ids) != 2 {
		bad = append(bad, fmt.Sprintf("%d secrets, want web-tls and the account key: %v", len(ids), ids))
	}
	if sec, err := d.secrets.Get(d.ctx, "default", "web-tls"); err == nil {
		if err := a.verify(sec.Data["tls.crt"]); err != nil {
			bad = append(bad, err.Error())
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

// verify checks tls.crt against Pebble's roots for web.example.com (the
// error-returning peb.verify).
func (a *cloudRunACME) verify(tlsCrt []byte) error {
	chain, err := pki.ParseChainPEM(tlsCrt)
	if err != nil {
		return fmt.Errorf("web-tls: %w", err)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: a.peb.roots, Intermediates: inter, DNSName: "web.example.com"}); err != nil {
		return fmt.Errorf("web-tls does not verify against Pebble's roots: %w", err)
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
