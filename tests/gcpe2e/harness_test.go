// Package gcpe2e runs certfn's Google Cloud deployment end to end in this
// process: the Cloud Run services (internal/gcpmode.Runtime.ServeHTTP of
// the api, worker, signer, scheduler and http01 services) driving the
// flow, with
//
//   - the state in Google's official Firestore emulator (one collection
//     per test; tests/emulators starts it, a missing emulator fails);
//   - the secrets in the HAND-WRITTEN Secret Manager TEST DOUBLE
//     (adapters/gcp/secretmanager/gsmtest; not Google's service), which
//     counts its calls, seen by each service through secretGuard: the
//     grants infra/terraform/gcp's iam.tf gives its service account, a
//     call outside them failing the test (the double has no IAM);
//   - Pub/Sub push and Cloud Tasks played by the test (topic, below): what
//     the services publish is pushed to /push as Pub/Sub's push
//     subscription would (the pubsubq.PushRequest envelope, a 503 retried
//     with the subscription's backoff), and a delayed enqueue is a Cloud
//     Tasks task held until the shared clock passes its schedule time,
//     then published. The pubsubq adapter itself (publishing, tasks, the
//     push envelope) is tested in adapters/gcp/pubsubq;
//   - Google ID tokens checked by a fake validator ("token-<email>");
//   - Cloud DNS on the HAND-WRITTEN TEST DOUBLE
//     (adapters/dns/clouddns/clouddnstest), which copies the TXT records
//     it holds to Pebble's challtestsrv;
//   - ACME from Let's Encrypt's Pebble in this process, HTTP-01
//     validated against the http01 service on a loopback port.
//
// The clock of every service is one shiftClock: the wall clock, moved
// ahead by the test (renewals) and by the delivery loop when only short
// waits (Cloud Tasks, Pub/Sub retries) are left, so that ACME waits cost
// no real time.
package gcpe2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gfs "cloud.google.com/go/firestore"
	"google.golang.org/api/idtoken"
	"google.golang.org/api/iterator"

	"github.com/certfn/certfn/adapters/gcp/firestore"
	"github.com/certfn/certfn/adapters/gcp/pubsubq"
	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/gcp/secretmanager/gsmtest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/gcpmode"
	"github.com/certfn/certfn/tests/emulators"
)

const (
	project     = "certfn-e2e-test"
	workerTopic = "projects/" + project + "/topics/certfn-worker"
	signerTopic = "projects/" + project + "/topics/certfn-signer"
	admin       = "token-ops@example.com"
	// shortWait is the longest wait the delivery loop skips over (the
	// ACME steps' polls, Pub/Sub's retry backoff, an acknowledgement
	// deadline); longer ones (a daily resync, a renewal) are the test's
	// to reach by moving the clock.
	shortWait = 15 * time.Minute
	// maxDeliveries is the subscriptions' max_delivery_attempts
	// (infra/terraform/gcp default): then the dead-letter topic.
	maxDeliveries = 5
)

// Pub/Sub's retry policy of the push subscriptions (infra/terraform/gcp
// retry_backoff_seconds) and the acknowledgement deadlines (the services'
// request timeouts).
var (
	retryMin    = 10 * time.Second
	retryMax    = 600 * time.Second
	ackDeadline = map[string]time.Duration{"worker": 120 * time.Second, "signer": 60 * time.Second}
)

// trace prints every push and task (CERTFN_TRACE=1).
var trace = os.Getenv("CERTFN_TRACE") != ""

// shiftClock is the wall clock moved ahead by what the test added. Pebble
// signs in real time; the services see the shifted time.
type shiftClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *shiftClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().UTC().Add(c.off)
}

func (c *shiftClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// AdvanceTo moves the clock to t if t is ahead.
func (c *shiftClock) AdvanceTo(t time.Time) {
	if d := t.Sub(c.Now()); d > 0 {
		c.Advance(d)
	}
}

// message is one message of a topic: published (ready at at, zero for
// now), a Cloud Tasks task not yet run (task != ""), or a redelivery.
type message struct {
	key     api.Key
	at      time.Time
	attempt int
	task    string
}

// topic stands for a Pub/Sub topic with its push subscription, plus the
// Cloud Tasks queue publishing the topic's delayed messages. It counts
// what Google bills: messages published (directly or by a task), tasks
// created (CreateTask calls, deduplicated by pubsubq.TaskID as Cloud
// Tasks refuses a second task of one name), tasks dispatched, and pushes.
type topic struct {
	name, full string
	clk        *shiftClock

	mu        sync.Mutex
	ready     []message // published or to be redelivered; at is when
	tasks     []message // tasks not yet run
	taskNames map[string]bool
	// drop, when set, is asked about every publish and task; true loses it
	// (the publisher dies there, see deployment.kill).
	drop func(publisher string, k api.Key, delay time.Duration) bool
	n    topicCounts
	// pushedKeys counts the pushes per key.
	pushedKeys map[api.Key]int
}

type topicCounts struct {
	published, tasksCreated, tasksDuplicate, tasksRun, pushes, retries int
}

func (c topicCounts) sub(o topicCounts) topicCounts {
	return topicCounts{c.published - o.published, c.tasksCreated - o.tasksCreated, c.tasksDuplicate - o.tasksDuplicate,
		c.tasksRun - o.tasksRun, c.pushes - o.pushes, c.retries - o.retries}
}

func (c topicCounts) add(o topicCounts) topicCounts {
	return topicCounts{c.published + o.published, c.tasksCreated + o.tasksCreated, c.tasksDuplicate + o.tasksDuplicate,
		c.tasksRun + o.tasksRun, c.pushes + o.pushes, c.retries + o.retries}
}

func newTopic(name, full string, clk *shiftClock) *topic {
	return &topic{name: name, full: full, clk: clk, taskNames: map[string]bool{}, pushedKeys: map[api.Key]int{}}
}

// publisher is a topic as one service's queue (app.BatchQueue).
type publisher struct {
	t    *topic
	who  string
	kill func() // called when a publish is dropped
}

func (p publisher) Enqueue(ctx context.Context, k api.Key, delay time.Duration) error {
	return p.EnqueueBatch(ctx, []api.Key{k}, delay)
}

func (p publisher) EnqueueBatch(ctx context.Context, keys []api.Key, delay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := p.t
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if t.drop != nil && t.drop(p.who, k, delay) {
			t.drop = nil
			if p.kill != nil {
				p.kill()
			}
			return context.Canceled
		}
		if delay <= 0 {
			t.n.published++
			t.ready = append(t.ready, message{key: k, attempt: 1})
			continue
		}
		at := pubsubq.ScheduleTime(t.clk.Now(), delay)
		name := pubsubq.TaskID(t.full, k, at)
		t.n.tasksCreated++
		if trace {
			fmt.Fprintf(os.Stderr, "TRACE %s task by %s for %s at %s\n", t.clk.Now().Format("01-02T15:04:05"), p.who, k, at.Format("01-02T15:04:05"))
		}
		if t.taskNames[name] {
			t.n.tasksDuplicate++ // AlreadyExists: one wake-up
			continue
		}
		t.taskNames[name] = true
		t.tasks = append(t.tasks, message{key: k, at: at, attempt: 1, task: name})
	}
	return nil
}

// due takes the messages to push now, running the tasks that are due (each
// publishes its message).
func (t *topic) due(now time.Time) []message {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keep []message
	for _, m := range t.tasks {
		if m.at.After(now) {
			keep = append(keep, m)
			continue
		}
		t.n.tasksRun++
		t.n.published++
		t.ready = append(t.ready, message{key: m.key, attempt: 1})
	}
	t.tasks = keep
	var out, later []message
	for _, m := range t.ready {
		if m.at.After(now) {
			later = append(later, m)
		} else {
			out = append(out, m)
		}
	}
	t.ready = later
	return out
}

// next is the earliest time a held message becomes due.
func (t *topic) next() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first time.Time
	for _, m := range append(slices.Clone(t.tasks), t.ready...) {
		if first.IsZero() || m.at.Before(first) {
			first = m.at
		}
	}
	return first, !first.IsZero()
}

// redeliver puts m back for a later push.
func (t *topic) redeliver(m message) {
	t.mu.Lock()
	t.n.retries++
	t.ready = append(t.ready, m)
	t.mu.Unlock()
}

// pushes returns how many times k was pushed.
func (t *topic) pushes(k api.Key) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pushedKeys[k]
}

func (t *topic) counts() topicCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// fakeValidator accepts "token-<email>" for any audience.
type fakeValidator struct{}

func (fakeValidator) Validate(_ context.Context, tok, aud string) (*idtoken.Payload, error) {
	email, ok := strings.CutPrefix(tok, "token-")
	if !ok {
		return nil, fmt.Errorf("idtoken: bad token")
	}
	return &idtoken.Payload{Issuer: "https://accounts.google.com", Audience: aud, Subject: "sub-" + email,
		Claims: map[string]any{"email": email, "email_verified": true}}, nil
}

// service is one Cloud Run service: its runtime, its own Firestore client
// (as deployed: one per service), and what it was asked to do.
type service struct {
	name  string
	rt    *gcpmode.Runtime
	store *firestore.Store
	mu    sync.Mutex
	u     serviceUsage
}

// serviceUsage counts a service's Cloud Run requests and estimates their
// billed time (see billedSeconds).
type serviceUsage struct {
	requests int
	handler  time.Duration
	billed   float64 // seconds, estimated
}

// deployment is the Google Cloud deployment of one test.
type deployment struct {
	t                                  *testing.T
	ctx                                context.Context
	clk                                *shiftClock
	collection                         string
	sm                                 *gsmtest.Double
	workerQ, signerQ                   *topic
	api, worker, signer, sched, http01 *service
	// inspect reads state and secrets for assertions, uncounted.
	inspect *firestore.Store
	secrets *secretmanager.Store
	rng     *rand.Rand
	// twice delivers every message twice, the copies shuffled in with
	// the others (at-least-once delivery, reordered).
	twice bool
	// deadLetters are the messages pushed maxDeliveries times.
	deadLetters []string

	killMu  sync.Mutex
	cancel  context.CancelFunc // of the push being handled
	killed  bool
	counter *apiCounter

	// smCalls are the Secret Manager calls of the services, each as
	// infra/terraform/gcp's IAM would judge it (secretGuard).
	smMu    sync.Mutex
	smCalls []secretCall
}

// env is a service's environment, as infra/terraform/gcp sets it.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// options adjust one service's gcpmode.Options before it is built.
type options map[gcpmode.Role]func(*gcpmode.Options)

// deploy builds the five services on a fresh collection of the Firestore
// emulator and a fresh Secret Manager double.
func deploy(t *testing.T, mods options) *deployment {
	t.Helper()
	return deployEnv(t, nil, mods)
}

// deployEnv is deploy with the variables of over replacing the
// environment infra/terraform/gcp sets (in every service).
func deployEnv(t *testing.T, over env, mods options) *deployment {
	t.Helper()
	t.Setenv("FIRESTORE_EMULATOR_HOST", emulators.Firestore(t))
	d := &deployment{t: t, ctx: context.Background(), clk: &shiftClock{}, sm: gsmtest.New(), twice: true,
		collection: fmt.Sprintf("gcpe2e-%d", time.Now().UnixNano()), rng: rand.New(rand.NewPCG(1, 2))}
	d.sm.SetClock(d.clk.Now)
	d.counter = &apiCounter{d: d}
	d.workerQ, d.signerQ = newTopic("worker", workerTopic, d.clk), newTopic("signer", signerTopic, d.clk)
	d.inspect = d.openStore()
	sec, err := secretmanager.New(d.sm, secretmanager.Options{Project: project, Clock: d.clk})
	if err != nil {
		t.Fatal(err)
	}
	d.secrets = sec
	vars := env{
		"CERTFN_PROJECT": project, "CERTFN_FIRESTORE_COLLECTION": d.collection,
		"CERTFN_TOPIC": workerTopic, "CERTFN_SIGNER_TOPIC": signerTopic, "CERTFN_MANAGE_CA_CERTIFICATES": "true",
		"CERTFN_TASKS_QUEUE": "projects/" + project + "/locations/us-central1/queues/certfn-delays", "CERTFN_TASKS_SERVICE_ACCOUNT": "tasks@" + project + ".iam.gserviceaccount.com",
		"CERTFN_API_AUDIENCE": "https://api.example", "CERTFN_API_ADMINS": "ops@example.com", "CERTFN_AUTO_APPROVE": "*",
		"CERTFN_CLOUDDNS_ZONES": "example-com", "CERTFN_LOG_LEVEL": "error",
	}
	for k, v := range over {
		vars[k] = v
	}
	grants := secretGrants(vars.get(gcpmode.EnvManageCA) == "true")
	build := func(role gcpmode.Role) *service {
		s := &service{name: string(role), store: d.openStore()}
		o := gcpmode.Options{Getenv: vars.get, Clock: d.clk, Store: s.store, TokenValidator: fakeValidator{},
			SecretManager: d.guard(s.name, grants[s.name])}
		if !trace {
			// Expected failures (a killed request) log errors.
			o.Logger = slog.New(slog.DiscardHandler)
		}
		if role != gcpmode.RoleHTTP01 {
			o.Queue = publisher{t: d.workerQ, who: s.name, kill: d.kill}
		}
		if role == gcpmode.RoleWorker {
			o.SignerQueue = publisher{t: d.signerQ, who: s.name, kill: d.kill}
		}
		if m := mods[role]; m != nil {
			m(&o)
		}
		rt, err := gcpmode.FromEnvWith(d.ctx, role, o)
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		s.rt = rt
		return s
	}
	d.api, d.worker, d.signer = build(gcpmode.RoleAPI), build(gcpmode.RoleWorker), build(gcpmode.RoleSigner)
	d.sched, d.http01 = build(gcpmode.RoleScheduler), build(gcpmode.RoleHTTP01)
	return d
}

func (d *deployment) openStore() *firestore.Store {
	d.t.Helper()
	s, err := firestore.Open(d.ctx, project, firestore.Options{Collection: d.collection, Clock: d.clk, ExpiresAt: app.ExpiresAt})
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = s.Close() })
	return s
}

func (d *deployment) services() []*service {
	return []*service{d.api, d.worker, d.signer, d.sched, d.http01}
}

// serve hands r to s as Cloud Run would, counting the request and
// estimating its billed time from its duration and the Google API calls
// it made (apiCounter).
func (d *deployment) serve(s *service, r *http.Request) *httptest.ResponseRecorder {
	before := d.counter.snapshot()
	w := httptest.NewRecorder()
	start := time.Now()
	s.rt.ServeHTTP(w, r)
	took := time.Since(start)
	calls := d.counter.snapshot().sub(before)
	s.mu.Lock()
	s.u.requests++
	s.u.handler += took
	s.u.billed += billedSeconds(took, calls)
	s.mu.Unlock()
	return w
}

// call sends an api request with the admin's ID token.
func (d *deployment) call(method, path, body string) *httptest.ResponseRecorder {
	d.t.Helper()
	return d.callAs(admin, method, path, body)
}

// callAs sends an api request with the ID token tok ("token-<email>"): a
// JSON body (starting with '{') as application/json, any other as
// application/yaml.
func (d *deployment) callAs(tok, method, path, body string) *httptest.ResponseRecorder {
	d.t.Helper()
	r := httptest.NewRequest(method, "https://api.example"+path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	switch {
	case strings.HasPrefix(body, "{"):
		r.Header.Set("Content-Type", "application/json")
	case body != "":
		r.Header.Set("Content-Type", "application/yaml")
	}
	return d.serve(d.api, r)
}

// apply sends manifests to the api service.
func (d *deployment) apply(manifests string) {
	d.t.Helper()
	if w := d.call("POST", "/v1/apply", manifests); w.Code != http.StatusOK {
		d.t.Fatalf("apply: %d %s", w.Code, w.Body)
	}
}

// sweep is one Cloud Scheduler run of the scheduler service.
func (d *deployment) sweep() gcpmode.SweepResult {
	d.t.Helper()
	w := d.serve(d.sched, httptest.NewRequest("POST", "/sweep", nil))
	var res gcpmode.SweepResult
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &res) != nil {
		d.t.Fatalf("sweep: %d %s", w.Code, w.Body)
	}
	return res
}

// kill makes the push being handled die now: its context is canceled
// (nothing more is written) and its answer is lost.
func (d *deployment) kill() {
	d.killMu.Lock()
	defer d.killMu.Unlock()
	d.killed = true
	if d.cancel != nil {
		d.cancel()
	}
}

// push delivers m to the service of t as Pub/Sub's push subscription:
// 2xx acknowledges; anything else (or no answer) is delivered again after
// the retry policy's backoff, up to maxDeliveries.
func (d *deployment) push(t *topic, m message) {
	d.t.Helper()
	s := d.worker
	if t == d.signerQ {
		s = d.signer
	}
	body, _ := json.Marshal(pubsubq.PushRequest{Message: &pubsubq.PushMessage{Data: base64.StdEncoding.EncodeToString([]byte(m.key.String())),
		Attributes: map[string]string{pubsubq.FormatAttribute: pubsubq.FormatVersion}, MessageID: fmt.Sprint(d.rng.Int64())},
		Subscription: "projects/" + project + "/subscriptions/certfn-" + t.name, DeliveryAttempt: m.attempt})
	ctx, cancel := context.WithCancel(d.ctx)
	d.killMu.Lock()
	d.cancel, d.killed = cancel, false
	d.killMu.Unlock()
	t.mu.Lock()
	t.n.pushes++
	t.pushedKeys[m.key]++
	t.mu.Unlock()
	w := d.serve(s, httptest.NewRequest("POST", "/push", bytes.NewReader(body)).WithContext(ctx))
	cancel()
	if trace {
		fmt.Fprintf(os.Stderr, "TRACE %s push %s %s attempt %d: %d\n", d.clk.Now().Format("01-02T15:04:05"), t.name, m.key, m.attempt, w.Code)
	}
	d.killMu.Lock()
	killed := d.killed
	d.cancel, d.killed = nil, false
	d.killMu.Unlock()
	switch {
	case killed:
		// No answer: Pub/Sub pushes again after the acknowledgement deadline.
		m.at, m.attempt = d.clk.Now().Add(ackDeadline[t.name]), m.attempt+1
	case w.Code >= 200 && w.Code < 300:
		return
	case w.Code == http.StatusServiceUnavailable:
		m.at, m.attempt = d.clk.Now().Add(min(retryMin<<(m.attempt-1), retryMax)), m.attempt+1
	default:
		d.t.Fatalf("%s push %s: %d %s", t.name, m.key, w.Code, w.Body)
	}
	if m.attempt > maxDeliveries {
		d.deadLetters = append(d.deadLetters, t.name+" "+m.key.String())
		return
	}
	t.redeliver(m)
}

// round pushes every message due now on both topics (each twice when
// d.twice, shuffled) and reports how many it pushed.
func (d *deployment) round() int {
	type delivery struct {
		t *topic
		m message
	}
	now := d.clk.Now()
	var batch []delivery
	for _, t := range []*topic{d.workerQ, d.signerQ} {
		for _, m := range t.due(now) {
			batch = append(batch, delivery{t, m})
			if d.twice {
				batch = append(batch, delivery{t, message{key: m.key, attempt: m.attempt + 1}})
			}
		}
	}
	d.rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	for _, b := range batch {
		d.push(b.t, b.m)
	}
	return len(batch)
}

// nextDue is the earliest held message of both topics.
func (d *deployment) nextDue() (time.Time, bool) {
	a, okA := d.workerQ.next()
	b, okB := d.signerQ.next()
	switch {
	case okA && okB && b.Before(a), !okA && okB:
		return b, true
	}
	return a, okA
}

// drain pushes what is due now until nothing is, without moving the clock.
func (d *deployment) drain() {
	d.t.Helper()
	for i := 0; d.round() > 0; i++ {
		if i > 100 {
			d.t.Fatal("the topics never drained")
		}
	}
}

// settle delivers until nothing is due within shortWait of the clock at
// its start: when only held messages are left, it lets real time pass
// briefly (Pebble validates in real time) and moves the clock to the
// first of them. The scheduler's sweep is the test's to run.
func (d *deployment) settle() { d.t.Helper(); d.runUntil("", nil) }

// runUntil is settle that stops once done returns true, and fails when
// nothing is left within shortWait before that.
func (d *deployment) runUntil(what string, done func() bool) {
	d.t.Helper()
	deadline, horizon := time.Now().Add(60*time.Second), d.clk.Now().Add(shortWait)
	for time.Now().Before(deadline) {
		if d.round() > 0 {
			continue
		}
		if done != nil && done() {
			return
		}
		next, ok := d.nextDue()
		if !ok || next.After(horizon) {
			if done == nil {
				return
			}
			d.t.Fatalf("not done and nothing left to deliver within %s: %s", shortWait, what)
		}
		time.Sleep(20 * time.Millisecond)
		d.clk.AdvanceTo(next)
	}
	d.t.Fatalf("not settled after 60 s of delivery: %s", what)
}

// cert reads a Certificate from the state (uncounted).
func (d *deployment) cert(ns, name string) *api.Certificate {
	d.t.Helper()
	var c api.Certificate
	d.get(api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name}, &c)
	return &c
}

func (d *deployment) get(k api.Key, into any) {
	d.t.Helper()
	rec, err := d.inspect.Get(d.ctx, k)
	if err != nil {
		d.t.Fatalf("get %s: %v", k, err)
	}
	if err := json.Unmarshal(rec.Data, into); err != nil {
		d.t.Fatalf("decode %s: %v", k, err)
	}
}

// requests lists the CertificateRequests of ns (uncounted).
func (d *deployment) requests(ns string) []*api.CertificateRequest {
	d.t.Helper()
	recs, err := d.inspect.List(d.ctx, ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: ns})
	if err != nil {
		d.t.Fatal(err)
	}
	var out []*api.CertificateRequest
	for _, r := range recs {
		var cr api.CertificateRequest
		if err := json.Unmarshal(r.Data, &cr); err != nil {
			d.t.Fatal(err)
		}
		out = append(out, &cr)
	}
	return out
}

func ready(c *api.Certificate) bool {
	return api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) && !api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing)
}

func revision(c *api.Certificate) int {
	if c.Status.Revision == nil {
		return 0
	}
	return *c.Status.Revision
}

// requireReady fails unless ns/name is Ready at revision rev.
func (d *deployment) requireReady(ns, name string, rev int) *api.Certificate {
	d.t.Helper()
	c := d.cert(ns, name)
	if !ready(c) || revision(c) != rev {
		d.t.Fatalf("certificate %s/%s: want Ready at revision %d, got revision %d, %+v", ns, name, rev, revision(c), c.Status.Conditions)
	}
	return c
}

// waitReady delivers until ns/name is Ready at revision rev.
func (d *deployment) waitReady(ns, name string, rev int) *api.Certificate {
	d.t.Helper()
	d.runUntil(fmt.Sprintf("%s/%s Ready at revision %d", ns, name, rev), func() bool {
		c := d.cert(ns, name)
		return ready(c) && revision(c) == rev
	})
	return d.cert(ns, name)
}

// secret reads the newest version of ns/name from Secret Manager.
func (d *deployment) secret(ns, name string) ports.Secret {
	d.t.Helper()
	s, err := d.secrets.Get(d.ctx, ns, name)
	if err != nil {
		d.t.Fatalf("secret %s/%s: %v", ns, name, err)
	}
	return s
}

func leaf(t *testing.T, pemChain []byte) *x509.Certificate {
	t.Helper()
	chain, err := pki.ParseChainPEM(pemChain)
	if err != nil {
		t.Fatalf("tls.crt: %v", err)
	}
	return chain[0]
}

// requireClean fails when a message is in a dead-letter topic, the due
// index holds a key already due, or a state document holds key material.
func (d *deployment) requireClean() {
	d.t.Helper()
	if len(d.deadLetters) > 0 {
		d.t.Errorf("dead letters: %q", d.deadLetters)
	}
	due, err := d.inspect.Due(d.ctx, d.clk.Now(), 100)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, it := range due {
		d.t.Errorf("%s is due since %s and nothing delivered it", it.Key, it.NextRunAt.Format(time.RFC3339))
	}
	c, err := gfs.NewClient(d.ctx, project)
	if err != nil {
		d.t.Fatal(err)
	}
	defer c.Close()
	it := c.Collection(d.collection).Documents(d.ctx)
	defer it.Stop()
	n := 0
	for {
		doc, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			d.t.Fatal(err)
		}
		n++
		if s := fmt.Sprint(doc.Data()); strings.Contains(s, "PRIVATE KEY") {
			d.t.Errorf("state document %s holds private key material", doc.Ref.ID)
		}
	}
	if n == 0 {
		d.t.Error("the collection is empty")
	}
}

// caIssuers are a self-signed root (an issued CA: its key pair is the
// worker's to write, CERTFN_MANAGE_CA_CERTIFICATES) and a CA ClusterIssuer
// on it, whose key the signer alone reads.
const caIssuers = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: root, namespace: cert-manager}
spec:
  isCA: true
  commonName: certfn gcpe2e root
  secretName: root-ca
  duration: 87600h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: ca}
spec: {ca: {secretName: root-ca}}
`

// leafYAML is a 90-day server certificate default/<name> from ClusterIssuer issuer.
func leafYAML(name, issuer string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %[1]s, namespace: default}
spec:
  secretName: %[1]s-tls
  dnsNames: [%[1]s.example.com]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256, rotationPolicy: Always}
  issuerRef: {name: %[2]s, kind: ClusterIssuer}
`, name, issuer)
}

// requireOnePerRevision fails unless each Certificate ns/<name> issued
// exactly one certificate per revision: one CertificateRequest for its
// current revision (older ones may be gone: revisionHistoryLimit), none
// for a later one, and one Secret Manager version of its secret per
// revision (a second certificate for a revision would add one).
func (d *deployment) requireOnePerRevision(ns string, names ...string) {
	d.t.Helper()
	byCert := map[string][]int{}
	for _, cr := range d.requests(ns) {
		if o := cr.ControllerOf(); o != nil {
			r, _ := strconv.Atoi(cr.Annotations[api.AnnotationRevision])
			byCert[o.Name] = append(byCert[o.Name], r)
		}
	}
	for _, n := range names {
		c := d.cert(ns, n)
		rev, got := revision(c), byCert[n]
		slices.Sort(got)
		if i := slices.Index(got, rev); i < 0 || i != len(got)-1 || (i > 0 && got[i-1] == rev) {
			d.t.Errorf("%s/%s at revision %d: requests of revisions %v, want one of %d and none later", ns, n, rev, got, rev)
		}
		versions := 0
		for _, class := range []secretmanager.Class{secretmanager.ClassTLS, secretmanager.ClassIssuedCA} {
			id, err := d.secrets.SecretID(class, ns, c.Spec.SecretName)
			if err != nil {
				d.t.Fatal(err)
			}
			versions += len(d.sm.Versions(id))
		}
		if versions != rev {
			d.t.Errorf("%s/%s at revision %d: its secret %s has %d versions, want one per revision", ns, n, rev, c.Spec.SecretName, versions)
		}
	}
}

func listOf(kind, ns string) ports.ListOptions { return ports.ListOptions{Kind: kind, Namespace: ns} }

// requests returns the Cloud Run requests s served.
func (s *service) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.u.requests
}
