package faults

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/tests/faultsweep"
)

// loadCerts is how many Certificates TestDuplicateShuffledDeliveryLocal
// issues and renews: every fifth from the selfSigned ClusterIssuer, the
// others from the CA Issuer.
const loadCerts = 1000

// loadStats counts what the duplicating, shuffling driver did.
type loadStats struct {
	received   int // deliveries the queue handed out
	delivered  int // messages the engine handled (received × 2)
	duplicates int // the second copies among them
	reconciles int
	nacks      int
	sweeps     int
}

// TestDuplicateShuffledDeliveryLocal is "duplicate and
// reordered delivery under load" in local mode: 1,000 Certificates (CA
// Issuer; every fifth selfSigned) through the engine built as `certfn
// serve` builds it (app.Build, app.Local) over core/memory's stores, then
// a renewal of all of them. The driver receives every visible message at
// once, hands each to the engine twice, and shuffles the batch (seeded:
// the seed is logged; CERTFN_LOAD_SEED=<seed> runs another schedule, and
// CERTFN_LOAD_SEED=random a new one each time). A message is
// acknowledged only when both of its copies asked for it; otherwise it is
// returned after the shorter of their retry delays, as a queue that holds
// two copies of it would. The invariants are the fault harness's, for
// every Certificate: it converges (Ready at the revision, nothing issuing,
// every request final), exactly one CertificateRequest per revision, at
// most one certificate issued per revision, tls.key matching tls.crt in
// every secret written and stored, no orphaned secret, nothing stuck.
func TestDuplicateShuffledDeliveryLocal(t *testing.T) {
	seed := faultsweep.LoadSeed(t)
	rng := rand.New(rand.NewSource(seed))
	began := time.Now()

	w := newWorld(t, &env{tokens: &tokenHub{}}, &flow{name: "load", autoApprove: []string{"*"}}, "load", ct.T0)
	defer w.close()
	w.in.counting = true // count every port call (nothing is faulted)
	if err := w.boot(); err != nil {
		t.Fatal(err)
	}
	if err := putCA(w); err != nil {
		t.Fatal(err)
	}
	if err := w.apply(selfSignedYAML + "---\n" + caIssuerYAML); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < loadCerts; i++ {
		issuer := "{name: ca}"
		if i%5 == 4 {
			issuer = "{name: selfsigned, kind: ClusterIssuer}"
		}
		fmt.Fprintf(&b, `---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %[1]s, namespace: default}
spec:
  secretName: %[1]s-tls
  dnsNames: ["%[1]s.example.com"]
  duration: 24h
  privateKey: {algorithm: ECDSA, size: 256, rotationPolicy: Always}
  issuerRef: %[2]s
`, loadName(i), issuer)
		if (i+1)%500 == 0 || i == loadCerts-1 { // an apply takes at most 1,000 objects
			if err := w.apply(b.String()); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}

	var st loadStats
	if err := driveDuplicated(w, rng, &st, 1); err != nil {
		t.Fatalf("seed %d, issuance: %v", seed, err)
	}
	issued := st
	checkLoad(t, w, 1)
	t.Logf("issuance: %d deliveries received, %d messages handled (%d duplicates), %d nacked, %d sweeps",
		issued.received, issued.delivered, issued.duplicates, issued.nacks, issued.sweeps)

	// Renewal: the clock moves to the latest renewal time.
	var renewAt time.Time
	for i := 0; i < loadCerts; i++ {
		c := w.cert(loadName(i))
		if c.Status.RenewalTime == nil {
			t.Fatalf("%s: no renewal time", c.Name)
		}
		if c.Status.RenewalTime.After(renewAt) {
			renewAt = c.Status.RenewalTime.Time
		}
	}
	w.clk.Set(renewAt)
	if err := driveDuplicated(w, rng, &st, 2); err != nil {
		t.Fatalf("seed %d, renewal: %v", seed, err)
	}
	checkLoad(t, w, 2)

	w.in.mu.Lock()
	byOp := map[string]int{}
	for _, l := range w.in.labels {
		op, _, _ := strings.Cut(l, " ")
		byOp[op]++
	}
	calls := len(w.in.labels)
	w.in.mu.Unlock()
	writes := byOp["store.Create"] + byOp["store.Update"] + byOp["store.Delete"]
	secretWrites := byOp["secrets.Create"] + byOp["secrets.Put"] + byOp["secrets.Delete"]
	t.Logf("renewal: %d deliveries received, %d messages handled (%d duplicates), %d nacked, %d sweeps",
		st.received-issued.received, st.delivered-issued.delivered, st.duplicates-issued.duplicates,
		st.nacks-issued.nacks, st.sweeps-issued.sweeps)
	t.Logf("port calls: %d (store writes %d: Create %d, Update %d, Delete %d; store reads %d; secret writes %d; enqueues %d)",
		calls, writes, byOp["store.Create"], byOp["store.Update"], byOp["store.Delete"],
		byOp["store.Get"]+byOp["store.List"]+byOp["store.Due"], secretWrites, byOp["queue.Enqueue"])
	t.Logf("SUMMARY local: %d Certificates issued and renewed, every message delivered twice and shuffled (seed %d): "+
		"%d messages handled (%d duplicates), %d reconciles, %d store writes, %d secret writes; "+
		"2 CertificateRequests and 2 certificates per Certificate; 0 orphans; %s",
		loadCerts, seed, st.delivered, st.duplicates, st.reconciles, writes, secretWrites, time.Since(began).Round(time.Millisecond))
}

func loadName(i int) string { return fmt.Sprintf("c%04d", i) }

// driveDuplicated runs the process like `certfn serve --until-idle`, but
// every batch of visible messages is handled twice over in a shuffled
// order. It returns once every Certificate is Ready at rev and nothing is
// due within quiet.
func driveDuplicated(w *world, rng *rand.Rand, st *loadStats, rev int) error {
	start := w.clk.Now()
	for steps := 0; steps < 100000; steps++ {
		now := w.clk.Now()
		if now.Sub(start) > giveUp {
			return fmt.Errorf("stuck: not converged %s after the start: %s", now.Sub(start), loadWhy(w, rev))
		}
		ds, err := w.p.q.Receive(w.ctx, 10*loadCerts)
		if err != nil {
			return err
		}
		if len(ds) > 0 {
			st.received += len(ds)
			type copyOf struct {
				i      int
				second bool
			}
			order := make([]copyOf, 0, 2*len(ds))
			for i := range ds {
				order = append(order, copyOf{i, false}, copyOf{i, true})
			}
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			disp := make([][]kernel.Disposition, len(ds))
			for _, c := range order {
				d := ds[c.i]
				// The first copy handled of a delivery counts as the
				// original; the other is the duplicate.
				if len(disp[c.i]) > 0 {
					st.duplicates++
				}
				st.delivered++
				st.reconciles++
				disp[c.i] = append(disp[c.i], w.p.app.Kernel.Handle(w.ctx, kernel.Message{Key: d.Key, Attempt: d.Attempt}))
			}
			for i, d := range ds {
				ack, retry := true, time.Duration(-1)
				for _, x := range disp[i] {
					if !x.Ack {
						ack = false
						if retry < 0 || x.RetryAfter < retry {
							retry = x.RetryAfter
						}
					}
				}
				if ack {
					err = w.p.q.Ack(w.ctx, d)
				} else {
					st.nacks++
					err = w.p.q.Nack(w.ctx, d, retry)
				}
				if err != nil {
					return err
				}
			}
			continue
		}
		n, err := w.p.app.Kernel.Sweep(w.ctx, 10*loadCerts)
		if err != nil {
			return err
		}
		st.sweeps++
		if n > 0 {
			continue
		}
		next, has := w.p.q.NextDue()
		if due, err := w.store.Due(w.ctx, now.Add(100*365*24*time.Hour), 1); err == nil && len(due) > 0 && (!has || due[0].NextRunAt.Before(next)) {
			next, has = due[0].NextRunAt, true
		}
		if !has || next.Sub(now) > quiet {
			if why := loadWhy(w, rev); why != "" {
				return fmt.Errorf("stuck: nothing due within %s, not converged: %s", quiet, why)
			}
			return nil
		}
		if !next.After(now) {
			next = now.Add(10 * time.Millisecond)
		}
		w.clk.Set(next)
	}
	return fmt.Errorf("stuck: no end after 100000 steps: %s", loadWhy(w, rev))
}

// loadWhy says why the load run has not converged at rev ("" if it has).
func loadWhy(w *world, rev int) string {
	var why []string
	for _, o := range w.list(api.KindCertificate) {
		c := o.(*api.Certificate)
		switch {
		case api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing):
			why = append(why, c.Name+" issuing")
		case !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) || c.Status.Revision == nil || *c.Status.Revision != rev:
			why = append(why, fmt.Sprintf("%s not Ready at revision %d: %s", c.Name, rev, conditions(c.Status.Conditions)))
		}
	}
	for _, o := range w.list(api.KindCertificateRequest) {
		if !o.(*api.CertificateRequest).IsFinal() {
			why = append(why, "request "+o.GetObjectMeta().Name+" not final")
		}
	}
	for _, kind := range []string{api.KindIssuer, api.KindClusterIssuer} {
		for _, o := range w.list(kind) {
			if !api.IsTrue(o.(api.GenericIssuer).GetStatus().Conditions, api.IssuerConditionReady) {
				why = append(why, kind+" "+o.GetObjectMeta().Name+" not Ready")
			}
		}
	}
	if len(why) > 5 {
		why = append(why[:5], fmt.Sprintf("and %d more", len(why)-5))
	}
	return strings.Join(why, "; ")
}

// checkLoad asserts the invariants for every Certificate at revision rev.
func checkLoad(t *testing.T, w *world, rev int) {
	t.Helper()
	if why := loadWhy(w, rev); why != "" {
		t.Errorf("revision %d: not converged: %s", rev, why)
	}
	w.l.mu.Lock()
	for i := 0; i < loadCerts; i++ {
		for r := 1; r <= rev; r++ {
			k := fmt.Sprintf("default/%s#%d", loadName(i), r)
			if n := w.l.requests[k]; n != 1 {
				t.Errorf("%d CertificateRequests created for %s, want 1", n, k)
			}
			if n := len(w.l.signed[k]); n != 1 {
				t.Errorf("%d certificates issued for %s, want 1", n, k)
			}
		}
	}
	if len(w.l.requests) != rev*loadCerts {
		t.Errorf("CertificateRequests created for %d revisions, want %d", len(w.l.requests), rev*loadCerts)
	}
	if len(w.l.mismatched) > 0 {
		t.Errorf("key pairs written with a tls.key that is not tls.crt's: %v", w.l.mismatched)
	}
	w.l.mu.Unlock()
	if n := len(w.list(api.KindCertificateRequest)); n > rev*loadCerts {
		t.Errorf("%d CertificateRequests stored, more than the %d created for %d revisions", n, rev*loadCerts, rev)
	}

	named := map[string]bool{"default/ca-key-pair": true}
	for _, o := range w.list(api.KindCertificate) {
		c := o.(*api.Certificate)
		named[c.Namespace+"/"+c.Spec.SecretName] = true
		if c.Status.NextPrivateKeySecretName != nil {
			named[c.Namespace+"/"+*c.Status.NextPrivateKeySecretName] = true
		}
	}
	refs, err := w.sec.ListSecrets(w.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	keyPairs := 0
	for _, r := range refs {
		id := r.Namespace + "/" + r.Name
		if !named[id] {
			t.Errorf("orphaned secret %s", id)
		}
		sec, err := w.sec.Get(w.ctx, r.Namespace, r.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(sec.Data["tls.crt"]) > 0 {
			keyPairs++
			if !keyMatches(sec.Data["tls.crt"], sec.Data["tls.key"]) {
				t.Errorf("secret %s: tls.key does not match tls.crt", id)
			}
		}
	}
	if keyPairs != loadCerts+1 {
		t.Errorf("%d key pairs stored, want %d (one per Certificate and the CA's)", keyPairs, loadCerts+1)
	}
}
