package porttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// NotifierHarness is one fresh notifier and a way to read what it
// delivered.
type NotifierHarness struct {
	// Notifier is the implementation under test.
	Notifier ports.Notifier
	// Delivered returns every notification delivered through Notifier
	// since the harness was made, in any order. It waits until at least
	// want arrived or the backend's patience ran out (a backend that
	// delivers asynchronously, through a rule and a queue, waits; one in
	// memory returns at once), and then returns what it has: the suite
	// judges the count. A backend that delivers something it cannot read
	// back as a Notification fails t.
	Delivered func(t *testing.T, want int) []ports.Notification
}

// NotifierSuite runs the ports.Notifier contract against harnesses made by
// newHarness, which must return a notifier with nothing delivered yet for
// every call. Notifications use whole-second UTC times (the contract lets a
// backend drop fractions).
func NotifierSuite(t *testing.T, newHarness func(t *testing.T) NotifierHarness) {
	t.Run("EveryType", func(t *testing.T) { notifyEveryType(t, newHarness(t)) })
	t.Run("Minimal", func(t *testing.T) { notifyMinimal(t, newHarness(t)) })
	t.Run("Invalid", func(t *testing.T) { notifyInvalid(t, newHarness(t)) })
	t.Run("Duplicate", func(t *testing.T) { notifyDuplicate(t, newHarness(t)) })
	t.Run("CanceledContext", func(t *testing.T) { notifyCanceled(t, newHarness(t)) })
	t.Run("Concurrent", func(t *testing.T) { notifyConcurrent(t, newHarness(t)) })
}

// notifyT0 is the suite's event time.
var notifyT0 = time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)

// FullNotification returns a notification of typ about
// Certificate/<namespace>/<name> with every field its type uses set
// (the other ones zero), as core/certificates/notify.go fills them in.
func FullNotification(typ ports.NotificationType, namespace, name string) ports.Notification {
	n := ports.Notification{
		Type:        typ,
		Certificate: api.Key{Kind: api.KindCertificate, Namespace: namespace, Name: name},
		Time:        notifyT0,
		Revision:    3,
		Serial:      "0a:1b:2c:3d:4e:5f",
		NotBefore:   notifyT0.Add(-time.Hour),
		NotAfter:    notifyT0.Add(90*24*time.Hour - time.Hour),
		CommonName:  name + ".example.com",
		DNSNames:    []string{name + ".example.com", "www." + name + ".example.com"},
		IssuerRef:   api.IssuerReference{Name: "letsencrypt", Kind: api.KindClusterIssuer, Group: api.CertManagerGroup},
		SecretName:  name + "-tls",
	}
	switch typ {
	case ports.NotificationIssued:
		n.Revision = 1
	case ports.NotificationFailed:
		n.Reason = "Denied"
		n.Message = `The certificate request "` + name + `-4" has failed to complete and will be retried: no policy allows it (attempt 2; next attempt after 2030-03-04T07:06:07Z)`
		n.Request = name + "-4"
		n.FailureTime = notifyT0.Add(-time.Minute)
		n.FailedAttempts = 2
		n.RetryAfter = notifyT0.Add(2*time.Hour - time.Minute)
	case ports.NotificationExpiring:
		n.NotBefore = notifyT0.Add(-80 * 24 * time.Hour)
		n.NotAfter = notifyT0.Add(10*24*time.Hour + 30*time.Minute)
	}
	return n
}

// suiteNames returns unique names for a test's Certificates (a backend may
// be shared between subtests).
func suiteNames(t *testing.T) (namespace, name string) {
	s := strings.ToLower(t.Name())
	s = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, s)
	if len(s) > 40 {
		s = s[len(s)-40:]
	}
	return "suite", strings.Trim(s, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%1e6)
}

// sameNotification reports how got differs from want ("" when it does
// not): every field, times by instant, nil and empty DNS names alike.
func sameNotification(got, want ports.Notification) string {
	var diffs []string
	cmp := func(field string, g, w any) {
		if fmt.Sprint(g) != fmt.Sprint(w) {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	cmpTime := func(field string, g, w time.Time) {
		if !g.Equal(w) {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	cmp("Type", got.Type, want.Type)
	cmp("Certificate", got.Certificate, want.Certificate)
	cmpTime("Time", got.Time, want.Time)
	cmp("Revision", got.Revision, want.Revision)
	cmp("Serial", got.Serial, want.Serial)
	cmpTime("NotBefore", got.NotBefore, want.NotBefore)
	cmpTime("NotAfter", got.NotAfter, want.NotAfter)
	cmp("CommonName", got.CommonName, want.CommonName)
	if !slices.Equal(got.DNSNames, want.DNSNames) {
		diffs = append(diffs, fmt.Sprintf("DNSNames = %q, want %q", got.DNSNames, want.DNSNames))
	}
	cmp("IssuerRef", got.IssuerRef, want.IssuerRef)
	cmp("SecretName", got.SecretName, want.SecretName)
	cmp("Reason", got.Reason, want.Reason)
	cmp("Message", got.Message, want.Message)
	cmp("Request", got.Request, want.Request)
	cmpTime("FailureTime", got.FailureTime, want.FailureTime)
	cmp("FailedAttempts", got.FailedAttempts, want.FailedAttempts)
	cmpTime("RetryAfter", got.RetryAfter, want.RetryAfter)
	cmp("ID()", got.ID(), want.ID())
	return strings.Join(diffs, "; ")
}

// byID sorts notifications by ID, then type.
func byID(ns []ports.Notification) []ports.Notification {
	out := slices.Clone(ns)
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := out[i].ID(), out[j].ID(); a != b {
			return a < b
		}
		return out[i].Type < out[j].Type
	})
	return out
}

// expectDelivered waits for want and requires exactly want (in any order).
func expectDelivered(t *testing.T, h NotifierHarness, want ...ports.Notification) {
	t.Helper()
	got := byID(h.Delivered(t, len(want)))
	want = byID(want)
	if len(got) != len(want) {
		var ids []string
		for _, g := range got {
			ids = append(ids, string(g.Type)+" "+g.ID())
		}
		t.Fatalf("delivered %d notifications %v, want %d", len(got), ids, len(want))
	}
	for i := range want {
		if d := sameNotification(got[i], want[i]); d != "" {
			t.Errorf("notification %s: %s", want[i].ID(), d)
		}
	}
}

func notifyEveryType(t *testing.T, h NotifierHarness) {
	ns, name := suiteNames(t)
	var want []ports.Notification
	for _, typ := range ports.NotificationTypes {
		n := FullNotification(typ, ns, name)
		if err := h.Notifier.Notify(context.Background(), n); err != nil {
			t.Fatalf("Notify(%s): %v", n, err)
		}
		want = append(want, n)
	}
	expectDelivered(t, h, want...)
}

// notifyMinimal sends notifications with only the required fields: the
// zero fields come back zero (no invented times, names or serials).
func notifyMinimal(t *testing.T, h NotifierHarness) {
	ns, name := suiteNames(t)
	key := api.Key{Kind: api.KindCertificate, Namespace: ns, Name: name}
	want := []ports.Notification{
		{Type: ports.NotificationRenewed, Certificate: key, Time: notifyT0, Revision: 7},
		{Type: ports.NotificationFailed, Certificate: key, Time: notifyT0, FailureTime: notifyT0.Add(-time.Second)},
		{Type: ports.NotificationExpiring, Certificate: key, Time: notifyT0, NotAfter: notifyT0.Add(time.Hour)},
	}
	for _, n := range want {
		if err := h.Notifier.Notify(context.Background(), n); err != nil {
			t.Fatalf("Notify(%s): %v", n, err)
		}
	}
	expectDelivered(t, h, want...)
}

// notifyInvalid: every invalid notification is refused permanently and
// nothing of it is delivered.
func notifyInvalid(t *testing.T, h NotifierHarness) {
	ns, name := suiteNames(t)
	valid := FullNotification(ports.NotificationRenewed, ns, name)
	for _, tc := range []struct {
		name string
		edit func(*ports.Notification)
	}{
		{"no type", func(n *ports.Notification) { n.Type = "" }},
		{"unknown type", func(n *ports.Notification) { n.Type = "Deleted" }},
		{"no key", func(n *ports.Notification) { n.Certificate = api.Key{} }},
		{"not a Certificate", func(n *ports.Notification) { n.Certificate.Kind = api.KindIssuer }},
		{"no namespace", func(n *ports.Notification) { n.Certificate.Namespace = "" }},
		{"no time", func(n *ports.Notification) { n.Time = time.Time{} }},
		{"renewed without revision", func(n *ports.Notification) { n.Revision = 0 }},
		{"failed without failure time", func(n *ports.Notification) { n.Type, n.FailureTime = ports.NotificationFailed, time.Time{} }},
		{"expiring without notAfter", func(n *ports.Notification) { n.Type, n.NotAfter = ports.NotificationExpiring, time.Time{} }},
	} {
		n := valid
		n.DNSNames = slices.Clone(valid.DNSNames)
		tc.edit(&n)
		err := h.Notifier.Notify(context.Background(), n)
		if err == nil || !errs.IsPermanent(err) {
			t.Errorf("%s: Notify = %v, want a permanent error", tc.name, err)
		}
	}
	if err := h.Notifier.Notify(context.Background(), valid); err != nil {
		t.Fatalf("Notify(valid): %v", err)
	}
	expectDelivered(t, h, valid)
}

// notifyDuplicate: the same notification twice is delivered twice (at
// least once each; the backend deduplicates nothing) with one ID.
func notifyDuplicate(t *testing.T, h NotifierHarness) {
	ns, name := suiteNames(t)
	n := FullNotification(ports.NotificationIssued, ns, name)
	for i := 0; i < 2; i++ {
		if err := h.Notifier.Notify(context.Background(), n); err != nil {
			t.Fatalf("Notify #%d: %v", i+1, err)
		}
	}
	expectDelivered(t, h, n, n)
}

// notifyCanceled: a canceled context fails (not permanently: the caller
// retries) and publishes nothing.
func notifyCanceled(t *testing.T, h NotifierHarness) {
	ns, name := suiteNames(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gone := FullNotification(ports.NotificationExpiring, ns, name)
	err := h.Notifier.Notify(ctx, gone)
	if err == nil || errs.IsPermanent(err) || !errors.Is(err, context.Canceled) {
		t.Errorf("Notify with a canceled context = %v, want a transient error wrapping context.Canceled", err)
	}
	sent := FullNotification(ports.NotificationRenewed, ns, name)
	if err := h.Notifier.Notify(context.Background(), sent); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	expectDelivered(t, h, sent)
}

// notifyConcurrent: notifications sent at once are each delivered.
func notifyConcurrent(t *testing.T, h NotifierHarness) {
	ns, name := suiteNames(t)
	const n = 8
	want := make([]ports.Notification, n)
	errc := make(chan error, n)
	for i := range want {
		want[i] = FullNotification(ports.NotificationRenewed, ns, fmt.Sprintf("%s-%d", name, i))
		go func(note ports.Notification) { errc <- h.Notifier.Notify(context.Background(), note) }(want[i])
	}
	for range want {
		if err := <-errc; err != nil {
			t.Errorf("Notify: %v", err)
		}
	}
	expectDelivered(t, h, want...)
}
