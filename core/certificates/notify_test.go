package certificates_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

const day = 24 * time.Hour

// notifyFixture describes one stored Certificate, as its controller loads it.
type notifyFixture struct {
	rev        int           // status.revision (0: never issued)
	notBefore  time.Duration // the leaf's, from T0 (default -1h)
	lifetime   time.Duration // the leaf's (default 90 days)
	issuedAgo  time.Duration // the revision's request Ready transition, before T0 (default 1 min; <0: no request)
	noSecret   bool
	noRenewal  bool // spec.renewal.policy: Disabled
	notified   *int // status.notifiedRevision
	failureAgo time.Duration
	failures   int           // status.failedIssuanceAttempts (with failureAgo)
	denied     bool          // the next revision's request was denied
	notedFail  bool          // notifiedFailureTime = lastFailureTime
	expiryAgo  time.Duration // notifiedExpiryTime, before T0 (0: none)
	nextRunAt  time.Duration // the record's due time from T0 (0: T0+24h)
	sharedWith string        // another, older Certificate owning spec.secretName
}

// build returns the loaded state of f at T0 and the issued leaf's serial.
func (f notifyFixture) build(t *testing.T) (*certificates.State, string) {
	t.Helper()
	crt := ct.Cert()
	if f.noRenewal {
		crt.Spec.Renewal = &api.CertificateRenewal{Policy: api.RenewalPolicyDisabled}
	}
	var reqs []*api.CertificateRequest
	var sec *ports.Secret
	serial := ""
	if f.rev > 0 {
		crt.Status.Revision = intp(f.rev)
		nb := ct.T0.Add(-time.Hour)
		if f.notBefore != 0 {
			nb = ct.T0.Add(f.notBefore)
		}
		life := 90 * day
		if f.lifetime != 0 {
			life = f.lifetime
		}
		ca := ct.NewCAValid(t, ct.T0.Add(-400*day), ct.T0.Add(400*day), true)
		is := ca.IssueSecret(t, crt, nil, ct.Leaf{NotBefore: nb, NotAfter: nb.Add(life)})
		serial = certificates.FormatACMSerial(is.Leaf.SerialNumber)
		if !f.noSecret {
			sec = &is.Secret
		}
		if f.issuedAgo >= 0 {
			ago := f.issuedAgo
			if ago == 0 {
				ago = time.Minute
			}
			reqs = append(reqs, ct.Request(t, crt, is.Key, f.rev, ct.Issued(is.CertPEM, ca.PEM, ct.T0.Add(-ago))))
		}
	}
	if f.notified != nil {
		crt.Status.NotifiedRevision = intp(*f.notified)
	}
	if f.failureAgo != 0 {
		n := f.failures
		if n == 0 {
			n = 1
		}
		ct.WithFailures(n, ct.T0.Add(-f.failureAgo))(crt)
		api.SetCondition(&crt.Status.Conditions, api.Condition{Type: api.CertificateConditionIssuing, Status: api.ConditionFalse,
			Reason: "Failed", Message: "The certificate request \"web-9\" has failed to complete and will be retried: no (attempt 1)"}, ct.T0.Add(-f.failureAgo))
		if f.notedFail {
			crt.Status.NotifiedFailureTime = crt.Status.LastFailureTime
		}
		if f.denied {
			reqs = append(reqs, ct.Request(t, crt, ct.Key(t, nil), f.rev+1, ct.Denied("no policy allows it", ct.T0.Add(-f.failureAgo))))
		}
	}
	if f.expiryAgo != 0 {
		crt.Status.NotifiedExpiryTime = api.NewTime(ct.T0.Add(-f.expiryAgo))
	}
	st := ct.State(crt, sec, reqs...)
	if f.sharedWith != "" {
		// The older Certificate owns the secret (its annotation names it).
		if sec != nil {
			sec.Annotations[api.AnnotationCertificateName] = f.sharedWith
		}
		ct.Sharing(st, ct.Cert(ct.Named(f.sharedWith), ct.CreatedAt(ct.T0.Add(-48*time.Hour))))
		if _, err := st.Ownership(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	certificates.ApplyReadiness(st)
	st.NextRunAt = ct.T0.Add(day)
	if f.nextRunAt != 0 {
		st.NextRunAt = ct.T0.Add(f.nextRunAt)
	}
	return st, serial
}

// windowStart is when the expiry window of a leaf valid from T0+notBefore
// for lifetime starts (its renewal time, at 2/3, is earlier).
func windowStart(notBefore, lifetime time.Duration) time.Time {
	return ct.T0.Add(notBefore + lifetime - certificates.NotifyDefaultExpiryWindow)
}

func TestNotifyStep(t *testing.T) {
	transient := errors.New("throttled")
	permanent := errs.Permanentf("access denied")
	cases := []struct {
		name       string
		f          notifyFixture
		window     time.Duration // default certificates.NotifyDefaultExpiryWindow; <0: 0 (off)
		noNotifier bool
		fail       error
		wantTypes  []ports.NotificationType // published
		wantWrite  bool
		wantErr    bool
		wantWake   time.Time // Outcome.RequeueAt
		wantWhy    string    // substring of Outcome.Why
		check      func(t *testing.T, st *certificates.State, sent []ports.Notification, w *ct.Writer)
	}{
		{name: "no notifier: nothing, written or said", f: notifyFixture{rev: 1}, noNotifier: true, wantWhy: "notifications are off"},
		{name: "never issued: nothing", f: notifyFixture{}, wantWhy: "nothing to notify"},
		{name: "first revision: Certificate Issued", f: notifyFixture{rev: 1}, wantTypes: []ports.NotificationType{ports.NotificationIssued}, wantWrite: true,
			check: func(t *testing.T, st *certificates.State, sent []ports.Notification, w *ct.Writer) {
				if nr := w.LastCert().Status.NotifiedRevision; nr == nil || *nr != 1 {
					t.Errorf("notifiedRevision = %v, want 1", nr)
				}
				n := sent[0]
				if n.Revision != 1 || n.CommonName != "web.example.com" || !slices.Equal(n.DNSNames, []string{"web.example.com"}) ||
					n.SecretName != ct.SecretName || n.IssuerRef.Name != ct.IssuerName || !n.Time.Equal(ct.T0) ||
					!n.NotBefore.Equal(ct.T0.Add(-time.Hour)) || !n.NotAfter.Equal(ct.T0.Add(-time.Hour+90*day)) || n.Serial == "" {
					t.Errorf("notification = %+v", n)
				}
				// The due time the controller computed stays.
				if got := w.Calls[0].NextRunAt; !got.Equal(ct.T0.Add(day)) {
					t.Errorf("written nextRunAt = %v, want the record's T0+24h", got)
				}
			}},
		{name: "later revision: Certificate Renewed", f: notifyFixture{rev: 3, notified: intp(2)}, wantTypes: []ports.NotificationType{ports.NotificationRenewed}, wantWrite: true},
		{name: "revision already announced: wakes when the expiry window starts", f: notifyFixture{rev: 2, notified: intp(2)}, wantWhy: "nothing to notify",
			wantWake: windowStart(-time.Hour, 90*day)},
		{name: "fresh revision without a recorded one: announced", f: notifyFixture{rev: 4}, wantTypes: []ports.NotificationType{ports.NotificationRenewed}, wantWrite: true},
		{name: "old revision without a recorded one (notifications just enabled): silent, nothing written",
			f: notifyFixture{rev: 2, notBefore: -30 * day, issuedAgo: 30 * day}, wantWhy: "before notifications were on", wantWake: windowStart(-30*day, 90*day)},
		{name: "old revision, a newer one than recorded: silent (missed while off)",
			f: notifyFixture{rev: 5, notified: intp(3), notBefore: -8 * day, issuedAgo: 8 * day}, wantWhy: "not announced", wantWake: windowStart(-8*day, 90*day)},
		{name: "no request left: the certificate's notBefore dates the revision", f: notifyFixture{rev: 1, issuedAgo: -1},
			wantTypes: []ports.NotificationType{ports.NotificationIssued}, wantWrite: true},
		{name: "no request left, old notBefore: silent", f: notifyFixture{rev: 1, issuedAgo: -1, notBefore: -10 * day}, wantWhy: "not announced",
			wantWake: windowStart(-10*day, 90*day)},
		{name: "revision without its secret: waits", f: notifyFixture{rev: 1, noSecret: true}, wantWhy: "once its secret holds a valid certificate"},
		{name: "failed issuance (denied): Certificate Issuance Failed", f: notifyFixture{rev: 1, notified: intp(1), failureAgo: time.Minute, failures: 2, denied: true},
			wantTypes: []ports.NotificationType{ports.NotificationFailed}, wantWrite: true,
			check: func(t *testing.T, st *certificates.State, sent []ports.Notification, w *ct.Writer) {
				n := sent[0]
				ft := ct.T0.Add(-time.Minute)
				if n.Reason != "Denied" || n.Request != "web-2" || !n.FailureTime.Equal(ft) || n.FailedAttempts != 2 ||
					!n.RetryAfter.Equal(ft.Add(2*time.Hour)) || !strings.Contains(n.Message, "has failed to complete") || n.Revision != 1 || n.Serial == "" {
					t.Errorf("notification = %+v", n)
				}
				if got := w.LastCert().Status.NotifiedFailureTime; got == nil || !got.Equal(ft) {
					t.Errorf("notifiedFailureTime = %v, want %v", got, ft)
				}
			}},
		{name: "failed first issuance: no certificate to describe", f: notifyFixture{failureAgo: time.Minute},
			wantTypes: []ports.NotificationType{ports.NotificationFailed}, wantWrite: true,
			check: func(t *testing.T, st *certificates.State, sent []ports.Notification, w *ct.Writer) {
				n := sent[0]
				if n.Reason != "Failed" || n.Request != "" || n.Revision != 0 || n.Serial != "" || !n.NotAfter.IsZero() {
					t.Errorf("notification = %+v", n)
				}
				// The backoff's due time stays.
				if got := w.Calls[0].NextRunAt; !got.Equal(ct.T0.Add(day)) {
					t.Errorf("written nextRunAt = %v", got)
				}
			}},
		{name: "failure already announced: nothing", f: notifyFixture{rev: 1, notified: intp(1), failureAgo: time.Minute, notedFail: true}, wantWhy: "nothing to notify",
			wantWake: windowStart(-time.Hour, 90*day)},
		{name: "old failure (notifications just enabled): silent", f: notifyFixture{rev: 1, notified: intp(1), failureAgo: 8 * day}, wantWhy: "failed issuance",
			wantWake: windowStart(-time.Hour, 90*day)},
		{name: "a new revision goes before a failure", f: notifyFixture{rev: 2, notified: intp(1), failureAgo: time.Minute},
			wantTypes: []ports.NotificationType{ports.NotificationRenewed}, wantWrite: true},
		{name: "expiring, renewal overdue: Certificate Approaching Expiration", f: notifyFixture{rev: 1, notified: intp(1), notBefore: -80 * day, issuedAgo: 80 * day},
			wantTypes: []ports.NotificationType{ports.NotificationExpiring}, wantWrite: true,
			check: func(t *testing.T, st *certificates.State, sent []ports.Notification, w *ct.Writer) {
				if got := w.LastCert().Status.NotifiedExpiryTime; got == nil || !got.Equal(ct.T0) {
					t.Errorf("notifiedExpiryTime = %v, want T0", got)
				}
				if n := sent[0]; !n.NotAfter.Equal(ct.T0.Add(10 * day)) {
					t.Errorf("notAfter = %v", n.NotAfter)
				}
				if got, want := w.Calls[0].NextRunAt, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
					t.Errorf("written nextRunAt = %v, want the next UTC midnight %v", got, want)
				}
			}},
		{name: "expiring, renewal disabled", f: notifyFixture{rev: 1, notified: intp(1), notBefore: -80 * day, issuedAgo: 80 * day, noRenewal: true},
			wantTypes: []ports.NotificationType{ports.NotificationExpiring}, wantWrite: true},
		{name: "expiring, published today: wakes at midnight", f: notifyFixture{rev: 1, notified: intp(1), notBefore: -80 * day, issuedAgo: 80 * day, expiryAgo: 11 * time.Hour},
			wantWake: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), wantWhy: "today's approaching-expiration event"},
		{name: "expiring, published yesterday: again", f: notifyFixture{rev: 1, notified: intp(1), notBefore: -80 * day, issuedAgo: 80 * day, expiryAgo: 13 * time.Hour},
			wantTypes: []ports.NotificationType{ports.NotificationExpiring}, wantWrite: true},
		{name: "expiring, the window off", f: notifyFixture{rev: 1, notified: intp(1), notBefore: -80 * day, issuedAgo: 80 * day}, window: -1, wantWhy: "nothing to notify"},
		{name: "before the window: wakes at its start", f: notifyFixture{rev: 1, notified: intp(1), notBefore: -50 * day, issuedAgo: 50 * day, noRenewal: true},
			wantWake: ct.T0.Add(-50*day + 90*day - 14*day)},
		{name: "in the window, renewal still ahead: wakes an hour after the renewal time",
			f:        notifyFixture{rev: 1, notified: intp(1), notBefore: -time.Hour, lifetime: day},
			wantWake: ct.T0.Add(-time.Hour + 16*time.Hour + certificates.NotifyRenewalGrace)},
		{name: "the secret is another Certificate's: not announced as expiring", f: notifyFixture{rev: 1, notified: intp(1), notBefore: -80 * day, issuedAgo: 80 * day, sharedWith: "aaa"},
			wantWhy: "nothing to notify"},
		{name: "expired: no more events", f: notifyFixture{rev: 1, notified: intp(1), notBefore: -91 * day, issuedAgo: 91 * day, noRenewal: true}, wantWhy: "has expired"},
		{name: "transient failure: returned, nothing written", f: notifyFixture{rev: 1}, fail: transient, wantErr: true},
		{name: "permanent failure: counted, retried in an hour, nothing written", f: notifyFixture{rev: 1}, fail: permanent,
			wantWake: ct.T0.Add(certificates.NotifyPermanentRetry), wantWhy: "failed permanently",
			check: func(t *testing.T, st *certificates.State, sent []ports.Notification, w *ct.Writer) {
				if st.Cert.Status.NotifiedRevision != nil {
					t.Error("a failed publication was recorded")
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := tc.f.build(t)
			w := &ct.Writer{}
			env, _, m := ct.Env(ct.NewMemSecrets(), w)
			notifier := memory.NewNotifier()
			if !tc.noNotifier {
				env.Notifier = notifier
			}
			env.NotifyExpiryWindow = certificates.NotifyDefaultExpiryWindow
			if tc.window < 0 {
				env.NotifyExpiryWindow = 0
			}
			if tc.fail != nil {
				notifier.FailWith(func(ports.Notification) error { return tc.fail })
			}
			out, err := certificates.NotifyStep(context.Background(), env, st)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Step error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && errs.IsPermanent(err) {
				t.Errorf("Step returned a permanent error: %v", err)
			}
			sent := notifier.Delivered()
			var types []ports.NotificationType
			for _, n := range sent {
				types = append(types, n.Type)
			}
			if !slices.Equal(types, tc.wantTypes) {
				t.Errorf("published %v, want %v", types, tc.wantTypes)
			}
			if out.Wrote != tc.wantWrite || len(w.Calls) != map[bool]int{true: 1}[tc.wantWrite] {
				t.Errorf("Wrote = %v with %d writer calls (%v), want write %v", out.Wrote, len(w.Calls), w.Ops(), tc.wantWrite)
			}
			if !out.RequeueAt.Equal(tc.wantWake) {
				t.Errorf("RequeueAt = %v, want %v", out.RequeueAt, tc.wantWake)
			}
			if !strings.Contains(out.Why, tc.wantWhy) || (!out.Wrote && err == nil && out.Why == "") {
				t.Errorf("Why = %q, want it to contain %q", out.Why, tc.wantWhy)
			}
			for _, n := range sent {
				if got := m.Get(fmt.Sprintf("%s{result=published,type=%s}", certificates.MetricNotifications, n.Type)); got != 1 {
					t.Errorf("metric %s published %s = %v, want 1", certificates.MetricNotifications, n.Type, got)
				}
			}
			if tc.fail != nil && errs.IsPermanent(tc.fail) && (m.Get(certificates.MetricNotifications+"{result=failed,type=Issued}") != 1 || m.Get(certificates.MetricNotificationFailures) != 1) {
				t.Errorf("permanent failure not counted: %v", m.Counts)
			}
			if tc.check != nil {
				tc.check(t, st, sent, w)
			}
		})
	}
}

// stored runs certificates.NotifyStep as its controller does, invocation after invocation: each
// one loads the stored Certificate afresh, and a successful write replaces
// it.
type stored struct {
	t        *testing.T
	cert     *api.Certificate
	secret   *ports.Secret
	reqs     []certificates.Request
	notifier *memory.Notifier
	writeErr error // the next write fails with it (then succeeds again)
}

func newStored(t *testing.T, f notifyFixture) *stored {
	st, _ := f.build(t)
	return &stored{t: t, cert: st.Cert, secret: st.Secret, reqs: st.Requests, notifier: memory.NewNotifier()}
}

// invoke runs one invocation at now and returns what it published.
func (s *stored) invoke(now time.Time) (certificates.Outcome, []ports.Notification, error) {
	s.t.Helper()
	before := len(s.notifier.Delivered())
	st := &certificates.State{Cert: ct.Copy(s.t, s.cert), Version: 1, Now: now, Secret: s.secret, Requests: s.reqs, NextRunAt: now.Add(day)}
	w := &ct.Writer{Err: s.writeErr}
	s.writeErr = nil
	env, _, _ := ct.Env(ct.NewMemSecrets(), w)
	env.Notifier, env.NotifyExpiryWindow = s.notifier, certificates.NotifyDefaultExpiryWindow
	out, err := certificates.NotifyStep(context.Background(), env, st)
	if c := w.LastCert(); c != nil {
		s.cert = c
	}
	return out, s.notifier.Delivered()[before:], err
}

// The events of one Certificate: each published once per invocation, in
// order (revision, failure, expiry), with duplicates only after a lost
// record.
func TestNotifyStepSequence(t *testing.T) {
	t.Run("duplicate invocations publish once", func(t *testing.T) {
		s := newStored(t, notifyFixture{rev: 1})
		for i, want := range []int{1, 0, 0} {
			out, sent, err := s.invoke(ct.T0)
			if err != nil || len(sent) != want || out.Wrote != (want == 1) {
				t.Fatalf("invocation %d: published %d (want %d), wrote %v, err %v", i+1, len(sent), want, out.Wrote, err)
			}
		}
	})

	t.Run("crash after publishing: published again, then recorded", func(t *testing.T) {
		s := newStored(t, notifyFixture{rev: 2, notified: intp(1)})
		s.writeErr = ports.ErrConflict // the record is lost (a lost race, a crash)
		_, first, err := s.invoke(ct.T0)
		if !errors.Is(err, ports.ErrConflict) || len(first) != 1 {
			t.Fatalf("first invocation: published %d, err %v; want 1 and the conflict", len(first), err)
		}
		_, second, err := s.invoke(ct.T0.Add(time.Second))
		if err != nil || len(second) != 1 || second[0].ID() != first[0].ID() {
			t.Fatalf("second invocation: published %v, err %v; want the same event again", second, err)
		}
		if _, third, err := s.invoke(ct.T0.Add(2 * time.Second)); err != nil || len(third) != 0 {
			t.Fatalf("third invocation: published %v, err %v; want nothing", third, err)
		}
	})

	t.Run("crash before publishing: nothing lost", func(t *testing.T) {
		s := newStored(t, notifyFixture{rev: 1})
		s.notifier.FailWith(func(ports.Notification) error { return errors.New("connection reset") })
		if _, sent, err := s.invoke(ct.T0); err == nil || len(sent) != 0 {
			t.Fatalf("published %d, err %v; want nothing and the error", len(sent), err)
		}
		s.notifier.FailWith(nil)
		if _, sent, err := s.invoke(ct.T0.Add(time.Minute)); err != nil || len(sent) != 1 || sent[0].Type != ports.NotificationIssued {
			t.Fatalf("retry: published %v, err %v; want Certificate Issued", sent, err)
		}
	})

	t.Run("pending events go out one per invocation, then daily expiry", func(t *testing.T) {
		// Renewed to revision 2 long ago and about to expire, a renewal
		// failed a minute ago: revision 2 is too old to announce; the
		// failure and the expiry are not.
		s := newStored(t, notifyFixture{rev: 2, notified: intp(1), notBefore: -80 * day, issuedAgo: 80 * day, failureAgo: time.Minute, failures: 3})
		var got []ports.NotificationType
		now := ct.T0
		for i := 0; i < 4; i++ {
			out, sent, err := s.invoke(now)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range sent {
				got = append(got, n.Type)
			}
			if !out.Wrote && i == 2 {
				if want := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC); !out.RequeueAt.Equal(want) {
					t.Errorf("after today's events: RequeueAt %v, want %v", out.RequeueAt, want)
				}
			}
		}
		if want := []ports.NotificationType{ports.NotificationFailed, ports.NotificationExpiring}; !slices.Equal(got, want) {
			t.Fatalf("published %v, want %v", got, want)
		}
		// The next days: one event each, until the expiry.
		for d := 1; d <= 12; d++ {
			now = time.Date(2026, 1, 1+d, 0, 0, 5, 0, time.UTC)
			_, sent, err := s.invoke(now)
			want := 1
			if !now.Before(ct.T0.Add(10 * day)) {
				want = 0
			}
			if err != nil || len(sent) != want {
				t.Fatalf("day %d: published %v, err %v; want %d", d, sent, err, want)
			}
			if _, again, _ := s.invoke(now.Add(time.Hour)); len(again) != 0 {
				t.Fatalf("day %d: a second event the same day", d)
			}
		}
	})
}
