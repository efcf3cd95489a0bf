package awse2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/tests/faultsweep"
)

// dupCerts is how many Certificates TestDuplicateShuffledDeliveryOnAWS
// issues and renews: as many as fit in under 60 s on 2 cores against
// dynalite and local-aws-sqs (about 45 s; the local-mode test,
// tests/faults, does 1,000 in about 8 s).
const dupCerts = 600

// TestDuplicateShuffledDeliveryOnAWS is "duplicate and
// reordered delivery under load" on the AWS shape: 600 Certificates (an
// operator-installed CA ClusterIssuer; every fifth from a selfSigned one)
// issued by the worker and signer functions on dynalite and local-aws-sqs,
// then renewed by the scheduler's sweep. Every SQS message is handed to
// the functions twice: the driver receives every visible message of a
// queue, makes a second copy of each (its own message id, as SQS's
// at-least-once delivery does), cuts the originals and the copies into
// invocations of up to 10 in shuffled orders (a message and its copy never
// share an invocation: the handler folds copies within a batch) and runs
// those invocations in a shuffled order (seeded: the seed is logged;
// CERTFN_LOAD_SEED=<seed> runs another schedule, =random a new one each
// time). A message is deleted only when neither copy was reported failed.
// The invariants, for every Certificate: Ready at the revision, nothing
// issuing, exactly one CertificateRequest created per revision, at most one
// certificate signed per revision, tls.key matching tls.crt, nothing in
// the dead-letter queues, no next-private-key secret left behind (overlapping
// reconciles of one Certificate used to leave 0–9 of 600 per revision;
// fixed in the keymanager).
func TestDuplicateShuffledDeliveryOnAWS(t *testing.T) {
	seed := faultsweep.LoadSeed(t)
	rng := rand.New(rand.NewSource(seed))
	began := time.Now()

	l := &crLedger{requests: map[string]int{}, signed: map[string]map[string]bool{}}
	wrap := func(o *awsmode.Options) {
		o.WrapStore = func(s ports.Store) ports.Store { return ledgerStore{Store: s, l: l} }
	}
	d := deploy(t, map[string]func(*awsmode.Options){
		app.API.Name: wrap, app.Worker.Name: wrap, app.Signer.Name: wrap, app.Scheduler.Name: wrap,
	})
	d.installCA("load-ca")
	d.apply("apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: load-selfsigned}\nspec: {selfSigned: {}}\n")
	var b strings.Builder
	for i := 0; i < dupCerts; i++ {
		issuer := "load-ca"
		if i%5 == 4 {
			issuer = "load-selfsigned"
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(leafYAML(dupName(i), issuer))
	}
	d.apply(b.String())

	var st dupStats
	d.runDuplicated(rng, &st)
	d.checkDuplicated(l, 1)
	issued := st
	t.Logf("issuance: %d messages received, %d handed to the functions (%d copies) in %d invocations, %d reported failed; %s",
		issued.received, issued.handled, issued.copies, issued.invocations, issued.failed, time.Since(began).Round(time.Millisecond))

	var renewAt time.Time
	for i := 0; i < dupCerts; i++ {
		if c := d.cert("default", dupName(i)); c.Status.RenewalTime != nil && c.Status.RenewalTime.After(renewAt) {
			renewAt = c.Status.RenewalTime.Time
		}
	}
	if renewAt.IsZero() {
		t.Fatal("no renewal time")
	}
	d.Clock.Set(renewAt.Add(time.Minute))
	for round := 0; ; round++ {
		if round == 20 {
			t.Fatal("the sweep still finds work after 20 rounds")
		}
		res := d.Sweep(d.sched)
		if round == 0 && res.Due == 0 {
			t.Fatal("the sweep found nothing due at the renewal time")
		}
		if res.Due == 0 {
			break
		}
		d.runDuplicated(rng, &st)
	}
	d.checkDuplicated(l, 2)

	if n := d.VisibleMessages(d.WorkerDLQURL) + d.VisibleMessages(d.SignerDLQURL); n != 0 {
		t.Errorf("%d messages in the dead-letter queues", n)
	}
	t.Logf("renewal: %d messages received, %d handed to the functions (%d copies) in %d invocations, %d reported failed",
		st.received-issued.received, st.handled-issued.handled, st.copies-issued.copies, st.invocations-issued.invocations, st.failed-issued.failed)
	t.Logf("SUMMARY aws: %d Certificates issued and renewed, every SQS message delivered twice in shuffled batches (seed %d): "+
		"%d messages handled (%d duplicates) in %d invocations, %.0f reconciles, %.0f state writes, %.0f folded in-batch copies; "+
		"2 CertificateRequests and 2 certificates per Certificate; %s",
		dupCerts, seed, st.handled, st.copies, st.invocations, d.Metrics.Sum("certfn_reconciles_total"),
		d.Metrics.Sum("certfn_state_writes_total"), d.Metrics.Sum("certfn_duplicate_messages_total"), time.Since(began).Round(time.Millisecond))
}

func dupName(i int) string { return fmt.Sprintf("c%03d", i) }

type dupStats struct {
	received, handled, copies, invocations, failed int
}

// runDuplicated delivers both queues, every message twice in shuffled
// invocations, until neither has a visible message.
func (d *deployment) runDuplicated(rng *rand.Rand, st *dupStats) {
	d.t.Helper()
	for polls := 0; polls < 2000; polls++ {
		n := d.deliverDuplicated(d.worker, d.WorkerQueueURL, rng, st) + d.deliverDuplicated(d.signer, d.SignerQueueURL, rng, st)
		if n == 0 {
			return
		}
	}
	d.t.Fatal("queues still busy after 2000 rounds (a message loop?)")
}

// deliverDuplicated receives every visible message of queueURL (up to
// 100), hands each to rt twice, and deletes the ones neither copy failed.
func (d *deployment) deliverDuplicated(rt *awsmode.Runtime, queueURL string, rng *rand.Rand, st *dupStats) int {
	d.t.Helper()
	ev := events.SQSEvent{}
	var parts []events.SQSEvent // as received: deleted 10 at a time
	for len(ev.Records) < 100 {
		part := d.Receive(queueURL, 10)
		if len(part.Records) == 0 {
			break
		}
		parts = append(parts, part)
		ev.Records = append(ev.Records, part.Records...)
	}
	if len(ev.Records) == 0 {
		return 0
	}
	st.received += len(ev.Records)
	origs := append([]events.SQSMessage(nil), ev.Records...)
	copies := make([]events.SQSMessage, len(origs))
	for i, m := range origs {
		m.MessageId += "-copy"
		copies[i] = m
	}
	var batches [][]events.SQSMessage
	for _, recs := range [][]events.SQSMessage{origs, copies} {
		rng.Shuffle(len(recs), func(a, b int) { recs[a], recs[b] = recs[b], recs[a] })
		for len(recs) > 0 {
			n := min(10, len(recs))
			batches = append(batches, recs[:n])
			recs = recs[n:]
		}
	}
	rng.Shuffle(len(batches), func(a, b int) { batches[a], batches[b] = batches[b], batches[a] })
	failed := map[string]bool{}
	for _, recs := range batches {
		resp, err := rt.HandleSQS(d.Ctx, events.SQSEvent{Records: recs})
		if err != nil {
			d.t.Fatalf("%s HandleSQS: %v", rt.Role.Name, err)
		}
		st.invocations++
		st.handled += len(recs)
		for _, f := range resp.BatchItemFailures {
			failed[strings.TrimSuffix(f.ItemIdentifier, "-copy")] = true
			st.failed++
		}
	}
	st.copies += len(copies)
	resp := events.SQSEventResponse{}
	for _, m := range origs {
		if failed[m.MessageId] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	for _, part := range parts {
		d.Finish(queueURL, part, resp)
	}
	return len(ev.Records)
}

// checkDuplicated asserts the invariants for every Certificate at rev.
func (d *deployment) checkDuplicated(l *crLedger, rev int) {
	d.t.Helper()
	var orphans []string
	defer func() {
		if len(orphans) > 0 {
			d.t.Errorf("%d orphaned next-private-key secrets at revision %d: %v", len(orphans), rev, orphans)
		}
	}()
	for i := 0; i < dupCerts; i++ {
		name := dupName(i)
		c := d.cert("default", name)
		if !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) || api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing) || revision(c) != rev {
			d.t.Errorf("%s not Ready at revision %d (revision %d): %+v", name, rev, revision(c), c.Status.Conditions)
			continue
		}
		sec := d.secret("default", name+"-tls")
		if !keyPairMatches(sec.Data["tls.crt"], sec.Data["tls.key"]) {
			d.t.Errorf("secret default/%s-tls: tls.key does not match tls.crt", name)
		}
		if _, err := d.worker.Secrets.Get(d.Ctx, "default", name+"-next-private-key"); err == nil && c.Status.NextPrivateKeySecretName == nil {
			// Two reconciles of one Certificate at once (a duplicate in
			// another invocation, or a follow-up beside the message of the
			// same key): one completes the issuance and deletes the
			// next-private-key secret; the other, reading the Certificate
			// from before, finds it gone. It used to create it again, and
			// nothing deleted that secret; the keymanager now unsets the
			// name with a conditional write instead (keymanager.forgetGone).
			orphans = append(orphans, name+"-next-private-key")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < dupCerts; i++ {
		for r := 1; r <= rev; r++ {
			k := fmt.Sprintf("default/%s#%d", dupName(i), r)
			if n := l.requests[k]; n != 1 {
				d.t.Errorf("%d CertificateRequests created for %s, want 1", n, k)
			}
			if n := len(l.signed[k]); n != 1 {
				d.t.Errorf("%d certificates signed for %s, want 1", n, k)
			}
		}
	}
	if len(l.requests) != rev*dupCerts {
		d.t.Errorf("CertificateRequests created for %d revisions, want %d", len(l.requests), rev*dupCerts)
	}
	recs, err := d.api.Store.List(d.Ctx, ports.ListOptions{Kind: api.KindCertificateRequest})
	if err != nil {
		d.t.Fatal(err)
	}
	for _, r := range recs {
		var cr api.CertificateRequest
		if err := json.Unmarshal(r.Data, &cr); err != nil {
			d.t.Fatal(err)
		}
		if !cr.IsFinal() {
			d.t.Errorf("request %s not final", cr.Name)
		}
	}
}

func keyPairMatches(crtPEM, keyPEM []byte) bool {
	chain, err := pki.ParseChainPEM(crtPEM)
	if err != nil {
		return false
	}
	k, err := pki.DecodePrivateKeyPEM(keyPEM)
	return err == nil && pki.PublicKeysEqual(chain[0].PublicKey, k.Public())
}

// crLedger records, per "namespace/certificate#revision", the
// CertificateRequests created and the leaf serials written into their
// status, across every function.
type crLedger struct {
	mu       sync.Mutex
	requests map[string]int
	signed   map[string]map[string]bool
}

// ledgerStore is a state store that tells the ledger what took effect.
type ledgerStore struct {
	ports.Store
	l *crLedger
}

func (s ledgerStore) Create(ctx context.Context, r ports.Record) (ports.Record, error) {
	out, err := s.Store.Create(ctx, r)
	if err == nil {
		s.l.saw(true, r)
	}
	return out, err
}

func (s ledgerStore) Update(ctx context.Context, r ports.Record) (ports.Record, error) {
	out, err := s.Store.Update(ctx, r)
	if err == nil {
		s.l.saw(false, r)
	}
	return out, err
}

func (l *crLedger) saw(created bool, r ports.Record) {
	if r.Key.Kind != api.KindCertificateRequest {
		return
	}
	var cr api.CertificateRequest
	if json.Unmarshal(r.Data, &cr) != nil {
		return
	}
	owner := ""
	if ref := cr.ControllerOf(); ref != nil {
		owner = ref.Name
	}
	k := cr.Namespace + "/" + owner + "#" + cr.Annotations[api.AnnotationRevision]
	l.mu.Lock()
	defer l.mu.Unlock()
	if created {
		l.requests[k]++
	}
	if len(cr.Status.Certificate) > 0 {
		if chain, err := pki.ParseChainPEM(cr.Status.Certificate); err == nil {
			if l.signed[k] == nil {
				l.signed[k] = map[string]bool{}
			}
			l.signed[k][chain[0].SerialNumber.String()] = true
		}
	}
}
