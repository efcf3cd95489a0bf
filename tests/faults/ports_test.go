package faults

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// kind is what the faulted call does.
type kind int

const (
	none kind = iota
	// crash: the call takes effect, then the process dies before its
	// caller learns the answer. Every later call of that process fails
	// without effect (it is gone) and its in-memory queue is lost; the
	// driver restarts it as `certfn serve` starts. A crash "before" call N
	// is the crash after call N-1, so faulting every N covers both.
	crash
	// transient: the call fails without effect with an error errs.Classify
	// calls transient (a 503, a throttle, a dropped connection before the
	// request was sent); the process goes on.
	transient
	// lost: the call takes effect, but its caller sees a timeout (the
	// answer was lost: a secret store or DynamoDB write that timed out
	// after it was made); the process goes on and retries.
	lost
)

func (k kind) String() string {
	switch k {
	case crash:
		return "crash"
	case transient:
		return "transient"
	case lost:
		return "lost"
	}
	return "none"
}

// errDead is what every call of a dead process returns.
var errDead = errors.New("fault harness: the process died")

// injector numbers the port calls of one run and faults the at-th.
type injector struct {
	mu       sync.Mutex
	counting bool     // false during the flow's set-up
	labels   []string // each counted call, in order
	at       int      // 1-based number of the call to fault (0: none)
	kind     kind
	fired    string // the faulted call's label, once it fired
	dead     bool
}

// call runs one port call named label; do performs it.
func (in *injector) call(label string, do func() error) error {
	in.mu.Lock()
	if in.dead {
		in.mu.Unlock()
		return errDead
	}
	fault := kind(none)
	if in.counting {
		in.labels = append(in.labels, label)
		if len(in.labels) == in.at && in.fired == "" {
			fault, in.fired = in.kind, label
		}
	}
	in.mu.Unlock()
	if fault == transient {
		return fmt.Errorf("fault harness: injected transient failure of %s", label)
	}
	err := do()
	if fault == lost {
		return fmt.Errorf("fault harness: %s took effect, then its answer was lost: %w", label, context.DeadlineExceeded)
	}
	if fault == crash {
		in.mu.Lock()
		in.dead = true
		in.mu.Unlock()
		return errDead
	}
	return err
}

func (in *injector) isDead() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.dead
}

// revive is the restart: the new process's calls succeed again (the
// fault fired once and does not fire again).
func (in *injector) revive() {
	in.mu.Lock()
	in.dead = false
	in.mu.Unlock()
}

// ledger is what the wrappers saw take effect during a run, across
// restarts: the invariants are checked against it.
type ledger struct {
	mu sync.Mutex
	// requests counts the CertificateRequests created per
	// "namespace/certificate#revision".
	requests map[string]int
	// signed holds the distinct leaf serial numbers written into requests'
	// status.certificate per "namespace/certificate#revision".
	signed map[string]map[string]bool
	// orderRevision maps an ACME order URL to the revision of its Order.
	orderRevision map[string]string
	// finalized lists the ACME order URLs a Finalize reached (took effect).
	finalized map[string]bool
	// authzOf maps an ACME challenge URL to its authorization URL.
	authzOf map[string]string
	// mismatched names secrets written with a tls.key that does not
	// match tls.crt.
	mismatched []string
}

func newLedger() *ledger {
	return &ledger{requests: map[string]int{}, signed: map[string]map[string]bool{}, orderRevision: map[string]string{},
		finalized: map[string]bool{}, authzOf: map[string]string{}}
}

// revisionOf is "namespace/owner#revision" for an object an owner created.
func revisionOf(m *api.ObjectMeta) string {
	owner := ""
	if ref := m.ControllerOf(); ref != nil {
		owner = ref.Name
	}
	return m.Namespace + "/" + owner + "#" + m.Annotations[api.AnnotationRevision]
}

// sawWrite records what a store write that took effect means.
func (l *ledger) sawWrite(op string, rec ports.Record) {
	switch rec.Key.Kind {
	case api.KindCertificateRequest:
		var cr api.CertificateRequest
		if json.Unmarshal(rec.Data, &cr) != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if op == "Create" {
			l.requests[revisionOf(&cr.ObjectMeta)]++
		}
		if len(cr.Status.Certificate) > 0 {
			if chain, err := pki.ParseChainPEM(cr.Status.Certificate); err == nil {
				k := revisionOf(&cr.ObjectMeta)
				if l.signed[k] == nil {
					l.signed[k] = map[string]bool{}
				}
				l.signed[k][chain[0].SerialNumber.String()] = true
			}
		}
	case api.KindOrder:
		var o api.Order
		if json.Unmarshal(rec.Data, &o) != nil || o.Status.URL == "" {
			return
		}
		l.mu.Lock()
		l.orderRevision[o.Status.URL] = o.Namespace + "#" + o.Annotations[api.AnnotationRevision]
		l.mu.Unlock()
	}
}

// sawSecret checks a secret that was written.
func (l *ledger) sawSecret(s ports.Secret) {
	crt, key := s.Data["tls.crt"], s.Data["tls.key"]
	if len(crt) == 0 || len(key) == 0 {
		return
	}
	if !keyMatches(crt, key) {
		l.mu.Lock()
		l.mismatched = append(l.mismatched, s.Namespace+"/"+s.Name)
		l.mu.Unlock()
	}
}

// keyMatches reports whether the PEM key is the PEM leaf's.
func keyMatches(crtPEM, keyPEM []byte) bool {
	chain, err := pki.ParseChainPEM(crtPEM)
	if err != nil {
		return false
	}
	k, err := pki.DecodePrivateKeyPEM(keyPEM)
	return err == nil && pki.PublicKeysEqual(chain[0].PublicKey, k.Public())
}

// store counts and faults ports.Store calls.
type store struct {
	s  ports.Store
	in *injector
	l  *ledger
}

func (s store) Get(ctx context.Context, k api.Key) (out ports.Record, err error) {
	err = s.in.call("store.Get "+k.Kind, func() error { out, err = s.s.Get(ctx, k); return err })
	return out, err
}

func (s store) Create(ctx context.Context, r ports.Record) (out ports.Record, err error) {
	err = s.in.call("store.Create "+r.Key.Kind, func() error {
		if out, err = s.s.Create(ctx, r); err == nil {
			s.l.sawWrite("Create", r)
		}
		return err
	})
	return out, err
}

func (s store) Update(ctx context.Context, r ports.Record) (out ports.Record, err error) {
	err = s.in.call("store.Update "+r.Key.Kind, func() error {
		if out, err = s.s.Update(ctx, r); err == nil {
			s.l.sawWrite("Update", r)
		}
		return err
	})
	return out, err
}

func (s store) Delete(ctx context.Context, k api.Key, v int64) error {
	return s.in.call("store.Delete "+k.Kind, func() error { return s.s.Delete(ctx, k, v) })
}

func (s store) List(ctx context.Context, o ports.ListOptions) (out []ports.Record, err error) {
	err = s.in.call("store.List "+o.Kind, func() error { out, err = s.s.List(ctx, o); return err })
	return out, err
}

func (s store) ListPage(ctx context.Context, o ports.ListOptions) (out ports.Page, err error) {
	err = s.in.call("store.ListPage "+o.Kind, func() error { out, err = s.s.ListPage(ctx, o); return err })
	return out, err
}

func (s store) Due(ctx context.Context, now time.Time, limit int) (out []ports.DueItem, err error) {
	err = s.in.call("store.Due", func() error { out, err = s.s.Due(ctx, now, limit); return err })
	return out, err
}

// secrets counts and faults ports.SecretStore calls.
type secrets struct {
	s  ports.SecretStore
	in *injector
	l  *ledger
}

func (s secrets) Get(ctx context.Context, ns, name string) (out ports.Secret, err error) {
	err = s.in.call("secrets.Get", func() error { out, err = s.s.Get(ctx, ns, name); return err })
	return out, err
}

func (s secrets) Create(ctx context.Context, sec ports.Secret) error {
	return s.in.call("secrets.Create", func() error {
		err := s.s.Create(ctx, sec)
		if err == nil {
			s.l.sawSecret(sec)
		}
		return err
	})
}

func (s secrets) Put(ctx context.Context, sec ports.Secret) error {
	return s.in.call("secrets.Put", func() error {
		err := s.s.Put(ctx, sec)
		if err == nil {
			s.l.sawSecret(sec)
		}
		return err
	})
}

func (s secrets) Delete(ctx context.Context, ns, name string) error {
	return s.in.call("secrets.Delete", func() error { return s.s.Delete(ctx, ns, name) })
}

// queue counts and faults ports.Queue calls (the engine's enqueues; the
// driver's Receive, Ack and Nack are the runtime's, not a port of core).
type queue struct {
	q  ports.Queue
	in *injector
}

func (q queue) Enqueue(ctx context.Context, k api.Key, d time.Duration) error {
	return q.in.call("queue.Enqueue "+k.Kind, func() error { return q.q.Enqueue(ctx, k, d) })
}

// dialer hands out counting ACME clients.
type dialer struct {
	d  acme.Dialer
	in *injector
	l  *ledger
}

func (d dialer) Client(cfg acme.ServerConfig) (acme.Client, error) {
	c, err := d.d.Client(cfg)
	if err != nil {
		return nil, err
	}
	return client{c: c, in: d.in, l: d.l}, nil
}

func (d dialer) Thumbprint(k crypto.Signer) (string, error) { return d.d.Thumbprint(k) }

// client counts and faults acme.Client calls. Pebble validates
// challenges and issues certificates asynchronously; AcceptChallenge and
// Finalize wait (real time, with uncounted requests) until it is done, so
// that every run sees the same answers and makes the same calls.
type client struct {
	c  acme.Client
	in *injector
	l  *ledger
}

func (c client) Register(ctx context.Context, req acme.RegisterRequest) (out acme.Account, err error) {
	err = c.in.call("acme.Register", func() error { out, err = c.c.Register(ctx, req); return err })
	return out, err
}

// NewOrder sends no "replaces": Pebble 2.10 refuses one whose serial
// starts with a zero octet (RFC 9773's encoding; about 1 run in 100), and
// certfn then orders again without it, one call more, so runs would
// differ. The fallback is tested in core/acme/orders and "replaces" in
// tests/acme. And it asks again (uncounted) when Pebble answers with an
// order that is already ready: PEBBLE_AUTHZREUSE=0 still reuses a valid
// authorization 1 time in 100 (its test is rand.Intn(100) > percent), and
// a renewal would then skip its Challenge.
func (c client) NewOrder(ctx context.Context, a acme.Account, req acme.NewOrderRequest) (out acme.Order, err error) {
	req.Replaces = ""
	err = c.in.call("acme.NewOrder", func() error {
		for range 10 {
			if out, err = c.c.NewOrder(ctx, a, req); err != nil || out.Status != acme.StatusReady {
				break
			}
		}
		return err
	})
	return out, err
}

func (c client) GetOrder(ctx context.Context, a acme.Account, url string) (out acme.Order, err error) {
	err = c.in.call("acme.GetOrder", func() error { out, err = c.c.GetOrder(ctx, a, url); return err })
	return out, err
}

func (c client) GetAuthorization(ctx context.Context, a acme.Account, url string) (out acme.Authorization, err error) {
	err = c.in.call("acme.GetAuthorization", func() error {
		out, err = c.c.GetAuthorization(ctx, a, url)
		if err == nil {
			c.l.mu.Lock()
			for _, ch := range out.Challenges {
				c.l.authzOf[ch.URL] = url
			}
			c.l.mu.Unlock()
		}
		return err
	})
	return out, err
}

func (c client) AcceptChallenge(ctx context.Context, a acme.Account, url string) (out acme.Challenge, err error) {
	err = c.in.call("acme.AcceptChallenge", func() error {
		if out, err = c.c.AcceptChallenge(ctx, a, url); err != nil {
			return err
		}
		c.l.mu.Lock()
		authz := c.l.authzOf[url]
		c.l.mu.Unlock()
		// Pebble's VA may finish before the answer is written: the answer
		// then says valid and certfn skips its poll. Runs would differ;
		// the answer is made the one a slower server gives.
		if out.Status == acme.StatusValid {
			out.Status = acme.StatusProcessing
		}
		return c.settled(func() (bool, error) {
			az, err := c.c.GetAuthorization(ctx, a, authz)
			return az.Status != acme.StatusPending, err
		})
	})
	return out, err
}

func (c client) Finalize(ctx context.Context, a acme.Account, orderURL, finalizeURL string, csr []byte) (out acme.Order, err error) {
	err = c.in.call("acme.Finalize", func() error {
		out, err = c.c.Finalize(ctx, a, orderURL, finalizeURL, csr)
		if err != nil {
			return err
		}
		c.l.mu.Lock()
		c.l.finalized[orderURL] = true
		c.l.mu.Unlock()
		if out.Status == acme.StatusValid { // as for AcceptChallenge
			out.Status = acme.StatusProcessing
		}
		return c.settled(func() (bool, error) {
			o, err := c.c.GetOrder(ctx, a, orderURL)
			return o.Status != acme.StatusProcessing, err
		})
	})
	return out, err
}

// settled waits up to 10 s of real time for done.
func (c client) settled(done func() (bool, error)) error {
	for i := 0; i < 1000; i++ {
		ok, err := done()
		if err != nil {
			return fmt.Errorf("fault harness: waiting for Pebble: %w", err)
		}
		if ok {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("fault harness: Pebble did not finish within 10 s")
}

func (c client) Chains(ctx context.Context, a acme.Account, url string) (out []acme.Chain, err error) {
	err = c.in.call("acme.Chains", func() error { out, err = c.c.Chains(ctx, a, url); return err })
	for _, ch := range out {
		if ch.RenewalInfo != nil {
			narrow(ch.RenewalInfo)
		}
	}
	return out, err
}

func (c client) RenewalInfo(ctx context.Context, leaf *x509.Certificate) (out acme.RenewalInfo, err error) {
	err = c.in.call("acme.RenewalInfo", func() error { out, err = c.c.RenewalInfo(ctx, leaf); return err })
	narrow(&out)
	return out, err
}

// narrow shrinks an ARI window to its first nanosecond: certfn picks a
// random moment inside the window (RFC 9773 §4.2), and whether that
// moment comes before the Certificate's own renewal time decides whether
// the Certificate is written, which would make runs differ.
func narrow(ri *acme.RenewalInfo) {
	if !ri.WindowStart.IsZero() {
		ri.WindowEnd = ri.WindowStart.Add(time.Nanosecond)
	}
}

func (c client) Revoke(ctx context.Context, a acme.Account, leaf *x509.Certificate, reason int) error {
	return c.in.call("acme.Revoke", func() error { return c.c.Revoke(ctx, a, leaf, reason) })
}

// dnsProvider counts and faults a DNS-01 provider's changes; Authority
// (a test DNS server's zone, no request) passes through.
type dnsProvider struct {
	p  dns01.Provider
	in *injector
}

func (p dnsProvider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) (out []libdns.Record, err error) {
	err = p.in.call("dns.AppendRecords", func() error { out, err = p.p.AppendRecords(ctx, zone, recs); return err })
	return out, err
}

func (p dnsProvider) DeleteRecords(ctx context.Context, zone string, recs []libdns.Record) (out []libdns.Record, err error) {
	err = p.in.call("dns.DeleteRecords", func() error { out, err = p.p.DeleteRecords(ctx, zone, recs); return err })
	return out, err
}

func (p dnsProvider) Authority(ctx context.Context, fqdn string) (string, []string, error) {
	return p.p.(dns01.Authority).Authority(ctx, fqdn)
}

// importer counts and faults the certificate manager's imports (ACM,
// Certificate Manager), over the world's memory.Importer.
type importer struct {
	im *memory.Importer
	in *injector
}

func (i importer) Import(ctx context.Context, req ports.CertificateImport) (out ports.CertificateImported, err error) {
	err = i.in.call("importer.Import", func() error { out, err = i.im.Import(ctx, req); return err })
	return out, err
}
