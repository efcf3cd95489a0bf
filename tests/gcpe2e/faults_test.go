package gcpe2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/gcpmode"
	"github.com/certfn/certfn/tests/faultsweep"
)

// The fault harness of tests/faults on the Cloud Run services themselves:
// the api, worker, signer and scheduler built by
// gcpmode.FromEnvWith, served their Pub/Sub pushes over HTTP, with their
// state in Google's Firestore emulator and their secrets in the Secret
// Manager double. Every call they make to the state store, Secret Manager
// and Pub/Sub/Cloud Tasks goes through wrappers that count it and fault
// the N-th:
//
//   - crash: the call takes effect, then the request dies (its context is
//     canceled, its answer lost): Pub/Sub pushes the message again after
//     the subscription's acknowledgement deadline (worker 120 s, signer
//     60 s);
//   - transient: the call fails without effect (a transient error);
//   - lost: the call takes effect and its caller sees a timeout.
//
// For every N: the Certificate is Ready at revision 1 with a key pair that
// matches, one CertificateRequest, every request final, no
// next-private-key secret, no dead letter, converged within one
// acknowledgement deadline plus one sweep of fake time after the fault.
// Every message is pushed twice and reordered, as in the other gcpe2e
// tests, so the order of the calls is not asserted. By default each call
// is faulted as one of the three kinds in turn (call n as kind n mod 3);
// CERTFN_FAULTS_STRIDE=1 faults every call as every kind:
// `CERTFN_FAULTS_STRIDE=1 go test -count=1 -run 'TestFaultHarnessOnCloudRun$' -v ./tests/gcpe2e/`.
func TestFaultHarnessOnCloudRun(t *testing.T) {
	faultsweep.Sweep(t, "fault harness on the Cloud Run services (Firestore emulator, Secret Manager double, Pub/Sub pushes), CA issuance",
		cloudRunBound, func(n int, kind string) faultsweep.Result { return runCloudRunFaults(t, n, kind, nil) })
}

// cloudRunBound is one acknowledgement deadline (the worker's) plus one
// sweep (and a second: the deployment's clock follows the wall clock
// between its shifts).
const cloudRunBound = 120*time.Second + time.Minute + time.Second

// cloudRunFaults numbers the services' calls and faults the at-th.
type cloudRunFaults struct {
	mu       sync.Mutex
	counting bool
	labels   []string
	at       int
	kind     string
	fired    string
	firedAt  time.Time
	d        *deployment
}

// call runs one call named label; do performs it.
func (f *cloudRunFaults) call(ctx context.Context, label string, do func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err // the request died
	}
	f.mu.Lock()
	fault := ""
	if f.counting {
		f.labels = append(f.labels, label)
		if len(f.labels) == f.at && f.fired == "" {
			fault, f.fired, f.firedAt = f.kind, label, f.d.clk.Now()
		}
	}
	f.mu.Unlock()
	if fault == "transient" {
		return fmt.Errorf("fault harness: injected transient failure of %s", label)
	}
	err := do(ctx)
	switch fault {
	case "crash":
		f.d.kill()
		return context.Canceled
	case "lost":
		return fmt.Errorf("fault harness: %s took effect, then its answer was lost: %w", label, context.DeadlineExceeded)
	}
	return err
}

// faultStore counts and faults a service's state store calls.
type faultStore struct {
	ports.Store
	f *cloudRunFaults
}

func (s faultStore) Get(ctx context.Context, k api.Key) (out ports.Record, err error) {
	err = s.f.call(ctx, "store.Get "+k.Kind, func(ctx context.Context) error { out, err = s.Store.Get(ctx, k); return err })
	return out, err
}

func (s faultStore) Create(ctx context.Context, r ports.Record) (out ports.Record, err error) {
	err = s.f.call(ctx, "store.Create "+r.Key.Kind, func(ctx context.Context) error { out, err = s.Store.Create(ctx, r); return err })
	return out, err
}

func (s faultStore) Update(ctx context.Context, r ports.Record) (out ports.Record, err error) {
	err = s.f.call(ctx, "store.Update "+r.Key.Kind, func(ctx context.Context) error { out, err = s.Store.Update(ctx, r); return err })
	return out, err
}

func (s faultStore) Delete(ctx context.Context, k api.Key, v int64) error {
	return s.f.call(ctx, "store.Delete "+k.Kind, func(ctx context.Context) error { return s.Store.Delete(ctx, k, v) })
}

func (s faultStore) List(ctx context.Context, o ports.ListOptions) (out []ports.Record, err error) {
	err = s.f.call(ctx, "store.List "+o.Kind, func(ctx context.Context) error { out, err = s.Store.List(ctx, o); return err })
	return out, err
}

func (s faultStore) ListPage(ctx context.Context, o ports.ListOptions) (out ports.Page, err error) {
	err = s.f.call(ctx, "store.ListPage "+o.Kind, func(ctx context.Context) error { out, err = s.Store.ListPage(ctx, o); return err })
	return out, err
}

func (s faultStore) Due(ctx context.Context, now time.Time, limit int) (out []ports.DueItem, err error) {
	err = s.f.call(ctx, "store.Due", func(ctx context.Context) error { out, err = s.Store.Due(ctx, now, limit); return err })
	return out, err
}

// faultSM counts and faults a service's Secret Manager calls.
type faultSM struct {
	secretmanager.API
	f *cloudRunFaults
}

func (s faultSM) CreateSecret(ctx context.Context, req *smpb.CreateSecretRequest, o ...gax.CallOption) (out *smpb.Secret, err error) {
	err = s.f.call(ctx, "secretmanager.CreateSecret", func(ctx context.Context) error { out, err = s.API.CreateSecret(ctx, req, o...); return err })
	return out, err
}

func (s faultSM) GetSecret(ctx context.Context, req *smpb.GetSecretRequest, o ...gax.CallOption) (out *smpb.Secret, err error) {
	err = s.f.call(ctx, "secretmanager.GetSecret", func(ctx context.Context) error { out, err = s.API.GetSecret(ctx, req, o...); return err })
	return out, err
}

func (s faultSM) UpdateSecret(ctx context.Context, req *smpb.UpdateSecretRequest, o ...gax.CallOption) (out *smpb.Secret, err error) {
	err = s.f.call(ctx, "secretmanager.UpdateSecret", func(ctx context.Context) error { out, err = s.API.UpdateSecret(ctx, req, o...); return err })
	return out, err
}

func (s faultSM) DeleteSecret(ctx context.Context, req *smpb.DeleteSecretRequest, o ...gax.CallOption) error {
	return s.f.call(ctx, "secretmanager.DeleteSecret", func(ctx context.Context) error { return s.API.DeleteSecret(ctx, req, o...) })
}

func (s faultSM) AddSecretVersion(ctx context.Context, req *smpb.AddSecretVersionRequest, o ...gax.CallOption) (out *smpb.SecretVersion, err error) {
	err = s.f.call(ctx, "secretmanager.AddSecretVersion", func(ctx context.Context) error { out, err = s.API.AddSecretVersion(ctx, req, o...); return err })
	return out, err
}

func (s faultSM) AccessSecretVersion(ctx context.Context, req *smpb.AccessSecretVersionRequest, o ...gax.CallOption) (out *smpb.AccessSecretVersionResponse, err error) {
	err = s.f.call(ctx, "secretmanager.AccessSecretVersion", func(ctx context.Context) error { out, err = s.API.AccessSecretVersion(ctx, req, o...); return err })
	return out, err
}

func (s faultSM) DestroySecretVersion(ctx context.Context, req *smpb.DestroySecretVersionRequest, o ...gax.CallOption) (out *smpb.SecretVersion, err error) {
	err = s.f.call(ctx, "secretmanager.DestroySecretVersion", func(ctx context.Context) error { out, err = s.API.DestroySecretVersion(ctx, req, o...); return err })
	return out, err
}

func (s faultSM) ListSecretVersionsPage(ctx context.Context, req *smpb.ListSecretVersionsRequest, o ...gax.CallOption) (out *smpb.ListSecretVersionsResponse, err error) {
	err = s.f.call(ctx, "secretmanager.ListSecretVersions", func(ctx context.Context) error { out, err = s.API.ListSecretVersionsPage(ctx, req, o...); return err })
	return out, err
}

// faultQueue counts and faults a service's publishes (Pub/Sub, Cloud Tasks).
type faultQueue struct {
	q app.BatchQueue
	f *cloudRunFaults
}

func (q faultQueue) Enqueue(ctx context.Context, k api.Key, delay time.Duration) error {
	return q.f.call(ctx, "pubsub.Publish", func(ctx context.Context) error { return q.q.Enqueue(ctx, k, delay) })
}

func (q faultQueue) EnqueueBatch(ctx context.Context, keys []api.Key, delay time.Duration) error {
	return q.f.call(ctx, "pubsub.PublishBatch", func(ctx context.Context) error { return q.q.EnqueueBatch(ctx, keys, delay) })
}

// runCloudRunFaults runs the CA issuance flow (acme nil) or the ACME one
// with call at faulted as kind (at 0: a clean run).
func runCloudRunFaults(t *testing.T, at int, kind string, acme *cloudRunACME) faultsweep.Result {
	t.Helper()
	f := &cloudRunFaults{at: at, kind: kind}
	wrap := func(o *gcpmode.Options) {
		o.Store = faultStore{Store: o.Store, f: f}
		o.SecretManager = faultSM{API: o.SecretManager, f: f}
		if o.Queue != nil {
			o.Queue = faultQueue{q: o.Queue, f: f}
		}
		if o.SignerQueue != nil {
			o.SignerQueue = faultQueue{q: o.SignerQueue.(app.BatchQueue), f: f}
		}
	}
	opts := options{gcpmode.RoleAPI: wrap, gcpmode.RoleWorker: wrap, gcpmode.RoleSigner: wrap, gcpmode.RoleScheduler: wrap}
	if acme != nil {
		opts[gcpmode.RoleWorker] = func(o *gcpmode.Options) { wrap(o); acme.options(f, o) }
	}
	d := deploy(t, opts)
	f.d = d
	if acme != nil {
		acme.setUp(d)
	} else {
		d.apply(caIssuers)
		d.settle()
		d.requireReady("cert-manager", "root", 1)
		d.apply(leafYAML("web", "ca"))
	}
	f.mu.Lock()
	f.counting = true
	f.mu.Unlock()

	var run faultsweep.Result
	var convergedAt time.Time
	for steps := 0; steps < 2000; steps++ {
		ok, why := cloudRunConverged(d)
		if ok && acme != nil {
			ok, why = acme.converged(d)
		}
		if ok && convergedAt.IsZero() {
			convergedAt = d.clk.Now()
		} else if !ok {
			convergedAt = time.Time{}
		}
		if d.round() > 0 {
			continue
		}
		next, has := d.nextDue()
		if ok && (!has || next.Sub(d.clk.Now()) > time.Minute) {
			f.mu.Lock()
			run.Labels, run.Fired = append([]string(nil), f.labels...), f.fired
			firedAt := f.firedAt
			f.mu.Unlock()
			if !firedAt.IsZero() && convergedAt.After(firedAt) {
				run.Lag = convergedAt.Sub(firedAt)
			}
			run.Err = cloudRunCheck(d)
			if acme != nil {
				run.Err = errors.Join(run.Err, acme.check(d))
			}
			return run
		}
		if !ok && d.clk.Now().Sub(f.firedAt) > 2*time.Hour && !f.firedAt.IsZero() {
			run.Labels, run.Fired = f.labels, f.fired
			run.Err = fmt.Errorf("stuck 2 h after the fault: %s", why)
			return run
		}
		// Idle: the next held message, or the next sweep a minute on.
		step := d.clk.Now().Add(time.Minute)
		if has && next.Before(step) {
			d.clk.AdvanceTo(next)
			continue
		}
		d.clk.AdvanceTo(step)
		d.serve(d.sched, httptest.NewRequest("POST", "/sweep", nil))
	}
	run.Labels, run.Fired = f.labels, f.fired
	run.Err = errors.New("no end after 2000 steps")
	return run
}

// cloudRunConverged says whether the flow reached its end, and why not.
func cloudRunConverged(d *deployment) (bool, string) {
	rec, err := d.inspect.Get(d.ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"})
	if err != nil {
		return false, err.Error()
	}
	var c api.Certificate
	if err := json.Unmarshal(rec.Data, &c); err != nil {
		return false, err.Error()
	}
	if !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) || api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing) ||
		c.Status.Revision == nil || *c.Status.Revision != 1 {
		return false, fmt.Sprintf("Certificate not Ready at revision 1: %+v", c.Status.Conditions)
	}
	if c.Status.NextPrivateKeySecretName != nil {
		return false, "the next private key is still named"
	}
	for _, cr := range d.requests("default") {
		if !cr.IsFinal() {
			return false, "request " + cr.Name + " not final"
		}
	}
	return true, ""
}

// cloudRunCheck asserts the invariants of a converged run.
func cloudRunCheck(d *deployment) error {
	var bad []string
	if n := len(d.requests("default")); n != 1 {
		bad = append(bad, fmt.Sprintf("%d CertificateRequests, want 1", n))
	}
	sec, err := d.secrets.Get(d.ctx, "default", "web-tls")
	if err != nil {
		bad = append(bad, "web-tls: "+err.Error())
	} else if !keyMatches(sec.Data["tls.crt"], sec.Data["tls.key"]) {
		bad = append(bad, "web-tls: tls.key does not match tls.crt")
	}
	if _, err := d.secrets.Get(d.ctx, "default", "web-next-private-key"); err == nil {
		bad = append(bad, "orphaned web-next-private-key secret")
	}
	if len(d.deadLetters) > 0 {
		bad = append(bad, fmt.Sprintf("dead letters: %v", d.deadLetters))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// keyMatches says whether keyPEM is the private key of crtPEM's leaf.
func keyMatches(crtPEM, keyPEM []byte) bool {
	chain, err := pki.ParseChainPEM(crtPEM)
	if err != nil {
		return false
	}
	key, err := pki.DecodePrivateKeyPEM(keyPEM)
	return err == nil && pki.PublicKeysEqual(key.Public(), chain[0].PublicKey)
}
