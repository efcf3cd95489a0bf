package certificates_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
)

func TestBackoffTable(t *testing.T) {
	h := time.Hour
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{
		{-1, 0}, {0, 0}, {1, h}, {2, 2 * h}, {3, 4 * h}, {4, 8 * h}, {5, 16 * h},
		{6, 32 * h}, {7, 32 * h}, {8, 32 * h}, {1000, 32 * h},
	} {
		if got := certificates.Backoff(tc.attempts); got != tc.want {
			t.Errorf("Backoff(%d) = %s, want %s", tc.attempts, got, tc.want)
		}
	}
}

func TestRequestRevision(t *testing.T) {
	for _, tc := range []struct {
		ann  string
		set  bool
		want int
	}{
		{"", false, 0}, {"1", true, 1}, {"12", true, 12}, {"0", true, 0}, {"-3", true, 0}, {"x", true, 0}, {"", true, 0},
	} {
		cr := &api.CertificateRequest{}
		cr.Annotations = map[string]string{}
		if tc.set {
			cr.Annotations[api.AnnotationRevision] = tc.ann
		}
		if got := (certificates.Request{CR: cr}).Revision(); got != tc.want {
			t.Errorf("Revision(annotation %q set=%v) = %d, want %d", tc.ann, tc.set, got, tc.want)
		}
	}
}

func TestNamesAndRevisions(t *testing.T) {
	if got := certificates.RequestName("web", 3); got != "web-3" {
		t.Errorf("RequestName = %q", got)
	}
	if got := certificates.NextKeySecretName("web"); got != "web-next-private-key" {
		t.Errorf("NextKeySecretName = %q", got)
	}
	for _, tc := range []struct {
		rev       *int
		cur, next int
	}{
		{nil, 0, 1}, {intp(1), 1, 2}, {intp(7), 7, 8},
	} {
		st := ct.State(ct.Cert(func(c *api.Certificate) { c.Status.Revision = tc.rev }), nil)
		if st.CurrentRevision() != tc.cur || st.NextRevision() != tc.next {
			t.Errorf("revision %v: current %d next %d, want %d %d", tc.rev, st.CurrentRevision(), st.NextRevision(), tc.cur, tc.next)
		}
	}
}

func TestRequestsForAndSort(t *testing.T) {
	crt := ct.Cert()
	key := ct.Key(t, nil)
	b := ct.Request(t, crt, key, 2, ct.WithName("web-b"))
	a := ct.Request(t, crt, key, 2, ct.WithName("web-a"))
	one := ct.Request(t, crt, key, 1)
	st := ct.State(crt, nil, b, one, a)
	got := st.RequestsFor(2)
	if len(got) != 2 {
		t.Fatalf("RequestsFor(2) = %d requests, want 2", len(got))
	}
	certificates.SortRequests(st.Requests)
	var names []string
	for _, r := range st.Requests {
		names = append(names, r.CR.Name)
	}
	if want := []string{"web-1", "web-a", "web-b"}; !equal(names, want) {
		t.Fatalf("SortRequests = %v, want %v", names, want)
	}
}

func TestEarliest(t *testing.T) {
	a, b := ct.T0, ct.T0.Add(time.Hour)
	for _, tc := range []struct{ x, y, want time.Time }{
		{time.Time{}, time.Time{}, time.Time{}}, {a, time.Time{}, a}, {time.Time{}, b, b}, {a, b, a}, {b, a, a},
	} {
		if got := certificates.Earliest(tc.x, tc.y); !got.Equal(tc.want) {
			t.Errorf("Earliest(%s, %s) = %s, want %s", tc.x, tc.y, got, tc.want)
		}
	}
}

func TestRenewalTime(t *testing.T) {
	ca := ct.NewCA(t)
	nb := ct.T0.Add(-time.Hour)
	for _, tc := range []struct {
		name string
		opt  func(*api.Certificate)
		want time.Time
	}{
		{"2/3 of the lifetime", func(*api.Certificate) {}, nb.Add(60 * 24 * time.Hour)},
		{"renewBefore", func(c *api.Certificate) { c.Spec.RenewBefore = api.NewDuration(24 * time.Hour) }, nb.Add(89 * 24 * time.Hour)},
		{"renewBeforePercentage", func(c *api.Certificate) { p := int32(10); c.Spec.RenewBeforePercentage = &p }, nb.Add(81 * 24 * time.Hour)},
		{"earlier ACME window wins", func(c *api.Certificate) {
			c.Status.RenewalInfo = &api.RenewalInfo{SelectedTime: api.NewTime(nb.Add(24 * time.Hour))}
		}, nb.Add(24 * time.Hour)},
		{"later ACME window loses", func(c *api.Certificate) {
			c.Status.RenewalInfo = &api.RenewalInfo{SelectedTime: api.NewTime(nb.Add(80 * 24 * time.Hour))}
		}, nb.Add(60 * 24 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crt := ct.Cert(tc.opt)
			sec := ca.IssueSecret(t, crt, nil, ct.Leaf{NotBefore: nb, NotAfter: nb.Add(90 * 24 * time.Hour)}).Secret
			if got := certificates.RenewalTime(ct.State(crt, &sec)); !got.Equal(tc.want) {
				t.Fatalf("RenewalTime = %s, want %s", got, tc.want)
			}
		})
	}
	if got := certificates.RenewalTime(ct.State(ct.Cert(), nil)); !got.IsZero() {
		t.Fatalf("RenewalTime without a secret = %s, want zero", got)
	}
}

func TestNextKeySecretLoadsOnce(t *testing.T) {
	crt := ct.Cert(ct.WithNextKey("web-next-private-key"))
	key := ct.Key(t, nil)
	secrets := ct.NewMemSecrets(ct.NextKeySecret(t, crt, key))
	env, _, _ := ct.Env(secrets, &ct.Writer{})
	st := ct.State(crt, nil)
	for i := 0; i < 2; i++ {
		sec, err := st.NextKeySecret(context.Background(), env)
		if err != nil || sec == nil || sec.Name != "web-next-private-key" {
			t.Fatalf("NextKeySecret = %v, %v", sec, err)
		}
	}
	if n := len(secrets.Calls); n != 1 {
		t.Fatalf("secret store called %d times, want 1 (cached)", n)
	}

	// Unset or missing: nil without error; a store failure is returned.
	st = ct.State(ct.Cert(), nil)
	if sec, err := st.NextKeySecret(context.Background(), env); sec != nil || err != nil {
		t.Fatalf("unset: %v, %v", sec, err)
	}
	st = ct.State(ct.Cert(ct.WithNextKey("gone")), nil)
	if sec, err := st.NextKeySecret(context.Background(), env); sec != nil || err != nil {
		t.Fatalf("missing: %v, %v", sec, err)
	}
	boom := errors.New("throttled")
	failing := ct.NewMemSecrets()
	failing.GetErr = boom
	env2, _, _ := ct.Env(failing, &ct.Writer{})
	st = ct.State(ct.Cert(ct.WithNextKey("web-next-private-key")), nil)
	if _, err := st.NextKeySecret(context.Background(), env2); !errors.Is(err, boom) {
		t.Fatalf("store error not returned: %v", err)
	}
}

func TestParseNeverLeaksKeyMaterial(t *testing.T) {
	crt := ct.Cert()
	sec := ct.NewCA(t).IssueSecret(t, crt, nil, ct.Leaf{}).Secret
	keyPEM := string(sec.Data["tls.key"])
	// Damage the key body so parsing fails; the problem must not echo it.
	sec.Data["tls.key"] = []byte(keyPEM[:len(keyPEM)-40] + "!!!!\n-----END PRIVATE KEY-----\n")
	_, p := ct.State(crt, &sec).Parse()
	if p.Reason != "InvalidKeyPair" {
		t.Fatalf("reason = %q", p.Reason)
	}
	body := keyPEM[28:60]
	if strings.Contains(p.Message, body) {
		t.Fatalf("problem message contains key material: %q", p.Message)
	}
}

func intp(i int) *int { return &i }

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
