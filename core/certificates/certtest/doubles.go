package certtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificates"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/issuers"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// MemSecrets is a TEST DOUBLE of ports.SecretStore: a memory.Secrets (the
// in-memory store that passes the SecretSuite contract: Get of a missing
// secret is ErrNotFound, Create of an existing one ErrAlreadyExists,
// Delete of a missing one nil; secrets copied in and out) that also counts
// calls and can inject errors.
type MemSecrets struct {
	mu    sync.Mutex
	store *memory.Secrets

	// GetErr, CreateErr, PutErr and DeleteErr, when set, are returned by
	// the matching method instead of doing anything.
	GetErr, CreateErr, PutErr, DeleteErr error
	// BeforeCreate, when set, runs before Create stores anything (a test
	// uses it to let a "concurrent" writer win the race).
	BeforeCreate func(s *MemSecrets, sec ports.Secret)

	// Calls lists "op ns/name" for every call, in order.
	Calls []string
}

// NewMemSecrets returns a store holding secrets.
func NewMemSecrets(secrets ...ports.Secret) *MemSecrets {
	return &MemSecrets{store: memory.NewSecrets(secrets...)}
}

// call records op and returns the error injected for it (nil: go on).
func (m *MemSecrets) call(op, ns, name string, injected *error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls = append(m.Calls, op+" "+ns+"/"+name)
	return *injected
}

// Get implements ports.SecretStore.
func (m *MemSecrets) Get(ctx context.Context, ns, name string) (ports.Secret, error) {
	if err := m.call("get", ns, name, &m.GetErr); err != nil {
		return ports.Secret{}, err
	}
	return m.store.Get(ctx, ns, name)
}

// Create implements ports.SecretStore.
func (m *MemSecrets) Create(ctx context.Context, s ports.Secret) error {
	m.mu.Lock()
	hook := m.BeforeCreate
	m.mu.Unlock()
	if hook != nil {
		hook(m, s)
	}
	if err := m.call("create", s.Namespace, s.Name, &m.CreateErr); err != nil {
		return err
	}
	return m.store.Create(ctx, s)
}

// Put implements ports.SecretStore.
func (m *MemSecrets) Put(ctx context.Context, s ports.Secret) error {
	if err := m.call("put", s.Namespace, s.Name, &m.PutErr); err != nil {
		return err
	}
	return m.store.Put(ctx, s)
}

// Delete implements ports.SecretStore.
func (m *MemSecrets) Delete(ctx context.Context, ns, name string) error {
	if err := m.call("delete", ns, name, &m.DeleteErr); err != nil {
		return err
	}
	return m.store.Delete(ctx, ns, name)
}

// Set stores s directly (no call recorded).
func (m *MemSecrets) Set(s ports.Secret) {
	if err := m.store.Put(context.Background(), s); err != nil {
		panic(fmt.Sprintf("certtest: MemSecrets.Set: %v", err))
	}
}

// Lookup returns a stored secret directly (no call recorded).
func (m *MemSecrets) Lookup(ns, name string) (ports.Secret, bool) {
	s, err := m.store.Get(context.Background(), ns, name)
	return s, err == nil
}

// Writes returns the recorded calls other than get.
func (m *MemSecrets) Writes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, c := range m.Calls {
		if !strings.HasPrefix(c, "get ") {
			out = append(out, c)
		}
	}
	return out
}

// Call is one recorded call of a recording writer.
type Call struct {
	// Op is UpdateCertificate, CreateRequest, DeleteRequest, SecretWritten,
	// Enqueue, UpdateRequest, UpdateIssuer or IssuerReady.
	Op string
	// Key is the written or enqueued key (SecretWritten: Kind "Secret").
	Key api.Key
	// NextRunAt is the due time passed to an update.
	NextRunAt time.Time
	// Delay is Enqueue's delay.
	Delay time.Duration
	// Cert, Request and Issuer are snapshots of what was written.
	Cert    *api.Certificate
	Request *api.CertificateRequest
	Issuer  api.GenericIssuer
}

// Writer is a TEST DOUBLE recording every call of certificates.Writer,
// certificaterequests.Writer and issuers.Writer. A successful update bumps the
// state's version as a store would. Err (or ErrOn[op]) is returned instead
// of recording, e.g. ports.ErrConflict to simulate a lost race.
type Writer struct {
	Calls []Call
	Err   error
	ErrOn map[string]error
}

func (w *Writer) fail(op string) error {
	if err := w.ErrOn[op]; err != nil {
		return err
	}
	return w.Err
}

func snapshot[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("certtest: snapshot: %v", err))
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("certtest: snapshot: %v", err))
	}
	return &out
}

// UpdateCertificate implements certificates.Writer.
func (w *Writer) UpdateCertificate(_ context.Context, st *certificates.State, next time.Time) error {
	if err := w.fail("UpdateCertificate"); err != nil {
		return err
	}
	w.Calls = append(w.Calls, Call{Op: "UpdateCertificate", Key: st.Key(), NextRunAt: next, Cert: snapshot(st.Cert)})
	st.Version++
	st.NextRunAt = next
	return nil
}

// CreateRequest implements certificates.Writer.
func (w *Writer) CreateRequest(_ context.Context, _ *certificates.State, cr *api.CertificateRequest) error {
	if err := w.fail("CreateRequest"); err != nil {
		return err
	}
	w.Calls = append(w.Calls, Call{Op: "CreateRequest", Key: api.KeyOf(cr), Request: snapshot(cr)})
	return nil
}

// DeleteRequest implements certificates.Writer.
func (w *Writer) DeleteRequest(_ context.Context, r certificates.Request) error {
	if err := w.fail("DeleteRequest"); err != nil {
		return err
	}
	w.Calls = append(w.Calls, Call{Op: "DeleteRequest", Key: api.KeyOf(r.CR)})
	return nil
}

// SecretWritten implements certificates.Writer.
func (w *Writer) SecretWritten(_ context.Context, ns, name string) error {
	if err := w.fail("SecretWritten"); err != nil {
		return err
	}
	w.Calls = append(w.Calls, Call{Op: "SecretWritten", Key: api.Key{Kind: "Secret", Namespace: ns, Name: name}})
	return nil
}

// Enqueue implements certificates.Writer.
func (w *Writer) Enqueue(_ context.Context, key api.Key, delay time.Duration) error {
	if err := w.fail("Enqueue"); err != nil {
		return err
	}
	w.Calls = append(w.Calls, Call{Op: "Enqueue", Key: key, Delay: delay})
	return nil
}

// UpdateRequest implements certificaterequests.Writer.
func (w *Writer) UpdateRequest(_ context.Context, st *certificaterequests.State, next time.Time) error {
	if err := w.fail("UpdateRequest"); err != nil {
		return err
	}
	w.Calls = append(w.Calls, Call{Op: "UpdateRequest", Key: api.KeyOf(st.CR), NextRunAt: next, Request: snapshot(st.CR)})
	st.Version++
	st.NextRunAt = next
	return nil
}

// UpdateIssuer implements issuers.Writer.
func (w *Writer) UpdateIssuer(_ context.Context, st *issuers.State, next time.Time) error {
	if err := w.fail("UpdateIssuer"); err != nil {
		return err
	}
	var snap api.GenericIssuer
	switch v := st.Issuer.(type) {
	case *api.Issuer:
		snap = snapshot(v)
	case *api.ClusterIssuer:
		snap = snapshot(v)
	}
	w.Calls = append(w.Calls, Call{Op: "UpdateIssuer", Key: api.KeyOf(st.Issuer), NextRunAt: next, Issuer: snap})
	st.Version++
	st.NextRunAt = next
	return nil
}

// IssuerReady implements issuers.Writer.
func (w *Writer) IssuerReady(_ context.Context, st *issuers.State) error {
	if err := w.fail("IssuerReady"); err != nil {
		return err
	}
	w.Calls = append(w.Calls, Call{Op: "IssuerReady", Key: api.KeyOf(st.Issuer)})
	return nil
}

// Ops returns the recorded operations in order.
func (w *Writer) Ops() []string {
	out := make([]string, len(w.Calls))
	for i, c := range w.Calls {
		out[i] = c.Op
	}
	return out
}

// Only returns the calls of one operation.
func (w *Writer) Only(op string) []Call {
	var out []Call
	for _, c := range w.Calls {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// LastCert returns the last written Certificate, or nil.
func (w *Writer) LastCert() *api.Certificate {
	for i := len(w.Calls) - 1; i >= 0; i-- {
		if w.Calls[i].Cert != nil {
			return w.Calls[i].Cert
		}
	}
	return nil
}

// Metrics is a TEST DOUBLE of ports.Metrics counting Inc calls by
// "name{k=v,...}" (labels sorted) and by name alone.
type Metrics struct {
	mu     sync.Mutex
	Counts map[string]float64
	// Values holds every observed value by name (Observe).
	Values map[string][]float64
}

// NewMetrics returns an empty counter set.
func NewMetrics() *Metrics { return &Metrics{Counts: map[string]float64{}} }

// Inc implements ports.Metrics.
func (m *Metrics) Inc(name string, labels ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var kv []string
	for i := 0; i+1 < len(labels); i += 2 {
		kv = append(kv, labels[i]+"="+labels[i+1])
	}
	sort.Strings(kv)
	m.Counts[name]++
	if len(kv) > 0 {
		m.Counts[name+"{"+strings.Join(kv, ",")+"}"]++
	}
}

// Observe implements ports.Metrics: observations are counted like Inc,
// and their values kept in Values.
func (m *Metrics) Observe(name string, v float64, labels ...string) {
	m.Inc(name, labels...)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Values == nil {
		m.Values = map[string][]float64{}
	}
	m.Values[name] = append(m.Values[name], v)
}

// Get returns the count of name (total) or of "name{k=v,...}".
func (m *Metrics) Get(series string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.Counts[series]
}

// Env returns a certificates.Env at T0 (fake clock) with secrets, w, a
// counting metrics double, certfn's identity and a 10-minute WaitPoll.
func Env(secrets ports.SecretStore, w certificates.Writer) (*certificates.Env, *clock.Fake, *Metrics) {
	clk := clock.NewFake(T0)
	m := NewMetrics()
	return &certificates.Env{Clock: clk, Secrets: secrets, Writer: w, Metrics: m,
		Username: "system:certfn", UID: "certfn-uid", Groups: []string{"system:certfn", "system:authenticated"},
		WaitPoll: 10 * time.Minute}, clk, m
}
