package awsmode_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

const leafYAML = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
`

// setupFollowUps applies a Ready selfSigned ClusterIssuer and a
// Certificate, leaving exactly one message (the Certificate's key) on the
// worker queue.
func setupFollowUps(t *testing.T, e *awstest.Env, followUps int, mods ...func(*awsmode.Options)) *awsmode.Runtime {
	t.Helper()
	e.Vars[awsmode.EnvFollowUps] = strconv.Itoa(followUps)
	apiRT := e.Runtime(app.API.Name)
	put(t, apiRT, clusterIssuer("selfsigned", api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}}, true))
	apply(t, apiRT, leafYAML)
	if got := drain(t, e, e.WorkerQueueURL); len(got) != 1 || got[0] != "Certificate/default/web" {
		t.Fatalf("worker queue %v", got)
	}
	send(t, e, e.WorkerQueueURL, "Certificate/default/web", "1")
	return e.Runtime(app.Worker.Name, mods...)
}

func TestFollowUps(t *testing.T) {
	cr := "CertificateRequest/default/web-1"
	for _, tc := range []struct {
		name        string
		followUps   int
		wantWorker  func([]string) bool // what is left on the worker queue
		wantSigner  []string
		minFollowUp float64
	}{
		// One message drives the Certificate to its request and the request
		// to its approval; the approved request goes to the signer.
		{"unbounded chain", 32, func(q []string) bool { return len(q) == 0 }, []string{cr}, 3},
		// Out of budget: the rest is sent to the worker queue.
		{"budget of one", 1, func(q []string) bool { return len(q) > 0 }, nil, 1},
		// Disabled: the step's wake-up goes to the queue.
		{"disabled", 0, func(q []string) bool { return len(q) == 1 && q[0] == "Certificate/default/web" }, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := awstest.New(t)
			worker := setupFollowUps(t, e, tc.followUps)
			if n, f := e.Deliver(worker, e.WorkerQueueURL); n != 1 || f != 0 {
				t.Fatalf("delivered %d, %d failed", n, f)
			}
			if got := drain(t, e, e.WorkerQueueURL); !tc.wantWorker(got) {
				t.Errorf("worker queue after one message: %v", got)
			}
			if got := drain(t, e, e.SignerQueueURL); len(got) != len(tc.wantSigner) || (len(got) > 0 && got[0] != tc.wantSigner[0]) {
				t.Errorf("signer queue %v, want %v", got, tc.wantSigner)
			}
			if n := e.Metrics.Sum("certfn_follow_ups_total"); n < tc.minFollowUp || (tc.followUps > 0 && n > float64(tc.followUps)) {
				t.Errorf("follow-ups %v, want %v..%d", n, tc.minFollowUp, tc.followUps)
			}
		})
	}
}

// failSecond fails the second and later Gets of key (the follow-up's).
type failSecond struct {
	ports.Store
	key api.Key
	mu  sync.Mutex
	n   int
}

func (f *failSecond) Get(ctx context.Context, k api.Key) (ports.Record, error) {
	if k == f.key {
		f.mu.Lock()
		f.n++
		n := f.n
		f.mu.Unlock()
		if n > 1 {
			return ports.Record{}, errSlow
		}
	}
	return f.Store.Get(ctx, k)
}

type slowErr struct{}

func (slowErr) Error() string { return "dynamodb: GetItem: ThrottlingException (injected)" }

var errSlow error = slowErr{}

// A follow-up that fails transiently goes back to the queue with its
// backoff; the message itself is acknowledged.
func TestFollowUpFailureGoesBackToTheQueue(t *testing.T) {
	e := awstest.New(t)
	key := api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	worker := setupFollowUps(t, e, 32, func(o *awsmode.Options) {
		o.WrapStore = func(s ports.Store) ports.Store { return &failSecond{Store: s, key: key} }
	})
	if n, f := e.Deliver(worker, e.WorkerQueueURL); n != 1 || f != 0 {
		t.Fatalf("delivered %d, %d failed; want the message acknowledged", n, f)
	}
	if got := drain(t, e, e.WorkerQueueURL); len(got) != 0 {
		t.Fatalf("worker queue %v before the backoff", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := drain(t, e, e.WorkerQueueURL)
		if len(got) == 1 && got[0] == key.String() {
			return
		}
		if len(got) > 0 || time.Now().After(deadline) {
			t.Fatalf("worker queue %v, want the follow-up %s back after its backoff", got, key)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
