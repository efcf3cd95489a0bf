package gcpe2e

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/dns/clouddns/clouddnstest"
	"github.com/certfn/certfn/adapters/gcp/firestore"
)

// Public list prices assumed for the cost figures, in USD, as of 2025
// (check the price pages before relying on them: Google Cloud's pricing
// pages of Cloud Run, Firestore, Pub/Sub, Cloud Tasks, Secret Manager and
// Cloud Scheduler). Tier 1 region us-central1 (the Terraform module's
// default region, and its Firestore location unless firestore_location
// names another), free tiers ignored.
const (
	pricesAsOf = "2025"
	// Cloud Run, request-based billing (cpu_idle = true, as deployed):
	// per request, per vCPU-second and per GiB-second while a request is
	// in flight, rounded up to 100 ms.
	runPerRequest = 0.40 / 1e6
	runPerVCPUs   = 0.000024
	runPerGiBs    = 0.0000025
	runVCPU       = 1.0          // infra/terraform/gcp: cpu = "1"
	runGiB        = 512.0 / 1024 // infra/terraform/gcp memory_mb default
	// Firestore (Standard edition, regional us-central1; the nam5
	// multi-region costs twice as much): per document read (a query that
	// returns nothing is billed one read) and per document written;
	// deletes ($0.01/100,000) are billed here as writes.
	fsPerRead  = 0.03 / 100_000
	fsPerWrite = 0.09 / 100_000
	// Pub/Sub: $40 per TiB of publish and of delivery throughput, each
	// message billed at least 1 KiB (a reconcile key is far less).
	psPerMessage = 40.0 / (1 << 40) * 1024
	// Cloud Tasks: per billable operation (API calls such as CreateTask,
	// and dispatch attempts).
	tasksPerOp = 0.40 / 1e6
	// Secret Manager: per active (enabled or disabled) secret version and
	// location per month (automatic replication, as the store uses by
	// default, is billed as one location), and per access operation
	// (AccessSecretVersion); management operations are free.
	smPerVersionMonth = 0.06
	smPerAccess       = 0.03 / 10_000
	// Cloud Scheduler: per job and month (the sweep's job; three jobs per
	// billing account are free).
	schedulerPerJobMonth = 0.10
	// Billed time is estimated as the handler's time here plus a round
	// trip per Google API call (in-region) and per ACME request (to the
	// CA over the internet), assumed.
	googleRoundTrip = 0.010
	acmeRoundTrip   = 0.100
)

// pricesLine states the prices for the test output.
func pricesLine() string {
	return fmt.Sprintf("public list prices as of %s (check the price pages): Cloud Run (Tier 1, request-based) $0.40/1M requests + $0.000024/vCPU-s + $0.0000025/GiB-s, 1 vCPU, 512 MiB, 100 ms rounding, billed time = handler time + %.0f ms per Google API call + %.0f ms per ACME request (estimate); Firestore (us-central1) $0.03/100k reads, $0.09/100k writes; Pub/Sub $40/TiB, 1 KiB minimum per message published and per push; Cloud Tasks $0.40/1M operations (create + dispatch); Secret Manager $0.06 per active version per month (automatic replication: one location), $0.03/10k access operations, management operations free; Cloud Scheduler $0.10 per job per month; free tiers ignored",
		pricesAsOf, googleRoundTrip*1000, acmeRoundTrip*1000)
}

// billedSeconds estimates a request's billed Cloud Run time.
func billedSeconds(took time.Duration, c calls) float64 {
	s := took.Seconds() + googleRoundTrip*float64(c.google) + acmeRoundTrip*float64(c.acme)
	return math.Ceil(s*10) / 10
}

// calls counts the Google API calls (Firestore, Secret Manager, Pub/Sub
// publishes, Cloud Tasks, Cloud DNS) and ACME requests made so far.
type calls struct{ google, acme int }

func (c calls) sub(o calls) calls { return calls{c.google - o.google, c.acme - o.acme} }

// apiCounter snapshots the calls of a deployment (the delivery is
// sequential, so the difference around one request is that request's).
type apiCounter struct {
	d    *deployment
	dns  *clouddnstest.Double
	acme *acmeadapter.CountingTransport
}

func (a *apiCounter) snapshot() calls {
	var c calls
	if a.d.worker == nil || a.d.http01 == nil {
		return c // still deploying
	}
	for _, s := range a.d.services() {
		n := s.store.Counts()
		c.google += int(n.Reads + n.Writes)
	}
	c.google += a.d.sm.TotalCalls()
	for _, t := range []*topic{a.d.workerQ, a.d.signerQ} {
		n := t.counts()
		c.google += n.published - n.tasksRun + n.tasksCreated
	}
	if a.dns != nil {
		c.google += len(a.dns.Calls())
	}
	if a.acme != nil {
		c.acme = int(a.acme.Count())
	}
	return c
}

// usage is what the deployment used up to a point; sub gives a window.
type usage struct {
	requests map[string]int
	handler  map[string]time.Duration
	billed   map[string]float64
	fs       firestore.Counts
	topics   map[string]topicCounts
	sm       map[string]int
	calls    calls
}

func (d *deployment) usage() usage {
	u := usage{requests: map[string]int{}, handler: map[string]time.Duration{}, billed: map[string]float64{},
		topics: map[string]topicCounts{}, sm: d.sm.CallsByOp(), calls: d.counter.snapshot()}
	for _, s := range d.services() {
		s.mu.Lock()
		u.requests[s.name], u.handler[s.name], u.billed[s.name] = s.u.requests, s.u.handler, s.u.billed
		s.mu.Unlock()
		n := s.store.Counts()
		u.fs.Reads += n.Reads
		u.fs.Writes += n.Writes
		u.fs.DocsRead += n.DocsRead
		u.fs.DocsWritten += n.DocsWritten
		u.fs.BilledReads += n.BilledReads
	}
	for _, t := range []*topic{d.workerQ, d.signerQ} {
		u.topics[t.name] = t.counts()
	}
	return u
}

func (u usage) sub(o usage) usage {
	out := usage{requests: map[string]int{}, handler: map[string]time.Duration{}, billed: map[string]float64{},
		topics: map[string]topicCounts{}, sm: map[string]int{}, calls: u.calls.sub(o.calls)}
	for k, v := range u.requests {
		out.requests[k] = v - o.requests[k]
		out.handler[k] = u.handler[k] - o.handler[k]
		out.billed[k] = u.billed[k] - o.billed[k]
	}
	out.fs = firestore.Counts{Reads: u.fs.Reads - o.fs.Reads, Writes: u.fs.Writes - o.fs.Writes, DocsRead: u.fs.DocsRead - o.fs.DocsRead,
		DocsWritten: u.fs.DocsWritten - o.fs.DocsWritten, BilledReads: u.fs.BilledReads - o.fs.BilledReads}
	for k, v := range u.topics {
		out.topics[k] = v.sub(o.topics[k])
	}
	for k, v := range u.sm {
		if n := v - o.sm[k]; n != 0 {
			out.sm[k] = n
		}
	}
	return out
}

// figures are a window's counts per unit of work.
type figures struct {
	units                              int
	requests                           map[string]float64
	billedSeconds                      float64
	fsReads, fsWrites                  float64 // billed document reads, documents written
	published, pushes, tasksOps, tasks float64
	smOps, smAccess                    float64
	acme                               float64
}

func perUnit(u usage, units int) figures {
	n := float64(units)
	f := figures{units: units, requests: map[string]float64{}}
	for k, v := range u.requests {
		if v != 0 {
			f.requests[k] = float64(v) / n
		}
		f.billedSeconds += u.billed[k] / n
	}
	f.fsReads, f.fsWrites = float64(u.fs.BilledReads)/n, float64(u.fs.DocsWritten)/n
	var t topicCounts
	for _, v := range u.topics {
		t = t.add(v)
	}
	f.published, f.pushes = float64(t.published)/n, float64(t.pushes)/n
	f.tasks, f.tasksOps = float64(t.tasksCreated)/n, float64(t.tasksCreated+t.tasksRun)/n
	for op, v := range u.sm {
		f.smOps += float64(v) / n
		if op == "AccessSecretVersion" {
			f.smAccess += float64(v) / n
		}
	}
	f.acme = float64(u.calls.acme) / n
	return f
}

func (f figures) totalRequests() float64 {
	s := 0.0
	for _, v := range f.requests {
		s += v
	}
	return s
}

// cost in dollars of one unit at the prices above.
func (f figures) cost() float64 {
	return f.totalRequests()*runPerRequest + f.billedSeconds*(runVCPU*runPerVCPUs+runGiB*runPerGiBs) +
		f.fsReads*fsPerRead + f.fsWrites*fsPerWrite + (f.published+f.pushes)*psPerMessage + f.tasksOps*tasksPerOp + f.smAccess*smPerAccess
}

func (f figures) String() string {
	var svc []string
	for _, k := range slices.Sorted(maps.Keys(f.requests)) {
		svc = append(svc, fmt.Sprintf("%s %.1f", k, f.requests[k]))
	}
	acme := ""
	if f.acme > 0 {
		acme = fmt.Sprintf(", %.1f ACME requests", f.acme)
	}
	return fmt.Sprintf("Cloud Run requests %.1f (%s), ~%.1f s billed (estimate); Firestore %.1f reads / %.1f writes; Pub/Sub %.1f published / %.1f pushed; Cloud Tasks %.1f tasks (%.1f operations); Secret Manager %.1f operations (%.1f accesses)%s → $%.7f",
		f.totalRequests(), strings.Join(svc, ", "), f.billedSeconds, f.fsReads, f.fsWrites, f.published, f.pushes, f.tasks, f.tasksOps, f.smOps, f.smAccess, acme, f.cost())
}

// detail prints a window's raw counts.
func (u usage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests %v, Firestore %d read requests (%d billed reads) / %d write requests (%d documents), topics %+v, Secret Manager %v",
		u.requests, u.fs.Reads, u.fs.BilledReads, u.fs.Writes, u.fs.DocsWritten, u.topics, u.sm)
	return b.String()
}
