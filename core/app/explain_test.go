package app

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// world is a fake store for Lookup: objects by key, and keys the caller may not read.
type world struct {
	objs   map[api.Key]api.Object
	hidden map[api.Key]bool
	// hiddenEvents are the objects whose Events the caller may not read.
	hiddenEvents map[api.Key]bool
}

func (w world) events(_ context.Context, of api.Key) ([]api.Event, error) {
	if w.hiddenEvents[of] {
		return nil, fmt.Errorf("%w: may not read the Events of %s", ErrForbidden, of)
	}
	var out []api.Event
	for _, o := range w.objs {
		if e, ok := o.(*api.Event); ok && e.InvolvedObject.Kind == of.Kind && e.InvolvedObject.Namespace == of.Namespace && e.InvolvedObject.Name == of.Name {
			out = append(out, *e)
		}
	}
	api.SortEvents(out)
	return out, nil
}

func (w world) lookup(_ context.Context, k api.Key) (api.Object, error) {
	if w.hidden[k] {
		return nil, fmt.Errorf("%w: may not get %s", ErrForbidden, k)
	}
	if o, ok := w.objs[k]; ok {
		return o, nil
	}
	return nil, fmt.Errorf("get %s: %w", k, ports.ErrNotFound)
}

func cond(t, status, reason, msg string) api.Condition {
	return api.Condition{Type: t, Status: api.ConditionStatus(status), Reason: reason, Message: msg}
}

func cert(conds ...api.Condition) *api.Certificate {
	rev := 1
	return &api.Certificate{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificate},
		ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default", Generation: 2},
		Spec: api.CertificateSpec{SecretName: "web-tls", CommonName: "web", DNSNames: []string{"web.example.com"},
			IssuerRef: api.IssuerReference{Name: "ca"}},
		Status: api.CertificateStatus{Conditions: conds, Revision: &rev},
	}
}

func issuer(conds ...api.Condition) *api.Issuer {
	return &api.Issuer{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindIssuer},
		ObjectMeta: api.ObjectMeta{Name: "ca", Namespace: "default"}, Status: api.IssuerStatus{Conditions: conds}}
}

func request(name string, conds ...api.Condition) *api.CertificateRequest {
	return &api.CertificateRequest{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{api.AnnotationRevision: "1"}},
		Spec:       api.CertificateRequestSpec{Username: "system:serviceaccount:cert-manager:cert-manager"},
		Status:     api.CertificateRequestStatus{Conditions: conds}}
}

var (
	certKey = api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}
	issKey  = api.Key{Kind: api.KindIssuer, Namespace: "default", Name: "ca"}
	reqKey  = api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"}
)

func objs(c *api.Certificate, more ...api.Object) map[api.Key]api.Object {
	m := map[api.Key]api.Object{certKey: c}
	for _, o := range more {
		m[api.KeyOf(o)] = o
	}
	return m
}

func TestSummary(t *testing.T) {
	readyIss := issuer(cond("Ready", "True", "KeyPairVerified", "Signing CA verified"))
	for _, tc := range []struct {
		name   string
		w      world
		want   string
		issuer string
	}{
		{"ready", world{objs: objs(cert(cond("Ready", "True", "Ready", "Certificate is up to date")), readyIss)},
			"Ready: Certificate is up to date", StateFound},
		{"issuer missing", world{objs: objs(cert(cond("Ready", "False", "DoesNotExist", "no secret")))},
			`Not ready: Issuer "ca" does not exist in namespace default`, StateMissing},
		{"a ClusterIssuer named without kind", world{objs: objs(cert(cond("Ready", "False", "DoesNotExist", "no secret")),
			&api.ClusterIssuer{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindClusterIssuer}, ObjectMeta: api.ObjectMeta{Name: "ca"}})},
			`Not ready: Issuer "ca" does not exist in namespace default; a ClusterIssuer "ca" exists: set issuerRef.kind: ClusterIssuer (a ref without kind names an Issuer of the Certificate's namespace)`, StateMissing},
		{"issuer not ready", world{objs: objs(cert(), issuer(cond("Ready", "False", "ErrGetKeyPair", "secret ca-key not found")))},
			`Not ready: issuer "ca" is not ready (ErrGetKeyPair): secret ca-key not found`, StateFound},
		{"issuance failed", world{objs: objs(cert(cond("Issuing", "False", "Failed", "The certificate request has failed to complete")), readyIss)},
			"Not ready: The certificate request has failed to complete", StateFound},
		{"request denied", world{objs: objs(cert(cond("Issuing", "True", "Issuing", "Issuing certificate")), readyIss,
			request("web-1", cond("Denied", "True", "Nope", "not today")))}, "Not ready: request web-1 denied: not today", StateFound},
		{"request pending", world{objs: objs(cert(cond("Issuing", "True", "Issuing", "Issuing certificate")), readyIss,
			request("web-1", cond("Ready", "False", "Pending", "no policy applies")))}, "Not ready: request web-1 is waiting for approval: no policy applies", StateFound},
		{"issuing", world{objs: objs(cert(cond("Issuing", "True", "Issuing", "Issuing certificate as Secret does not exist")), readyIss)},
			"Issuing: Issuing certificate as Secret does not exist", StateFound},
		{"issuer hidden", world{objs: objs(cert(cond("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist")), readyIss),
			hidden: map[api.Key]bool{issKey: true}}, "Not ready: Issuing certificate as Secret does not exist", StateHidden},
		{"another Certificate owns the secret (before a stopped request)", world{objs: objs(cert(
			cond("Ready", "False", "DuplicateSecretName", `Secret "web-tls" is owned by Certificate "api"`),
			cond("Issuing", "False", "DuplicateSecretName", `Secret "web-tls" is owned by Certificate "api"`)), readyIss,
			request("web-1", cond("Ready", "False", "Pending", "no policy applies")))},
			`Not ready: Secret "web-tls" is owned by Certificate "api"`, StateFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Explain(context.Background(), tc.w.lookup, tc.w.events, nil, certKey)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Summary != tc.want || rep.Issuer.State != tc.issuer {
				t.Fatalf("summary %q issuer %s, want %q %s", rep.Summary, rep.Issuer.State, tc.want, tc.issuer)
			}
		})
	}
}

// The explanation goes down to the ACME Challenge that blocks, with the
// ACME server's error, and says which blockers are permanent (wait exits
// at once on them).
func TestSummaryBlockers(t *testing.T) {
	readyIss := issuer(cond("Ready", "True", "ACMEAccountRegistered", "registered"))
	issuing := cert(cond("Issuing", "True", "Issuing", "Issuing certificate"))
	approved := func() *api.CertificateRequest {
		cr := request("web-1", cond("Approved", "True", "policy.cert-manager.io", "approved"),
			cond("Ready", "False", "Pending", "Waiting on certificate issuance from order default/web-1-abc: pending"))
		cr.UID = "uid-1"
		return cr
	}
	order := func(state api.State, reason string, authz ...string) *api.Order {
		o := &api.Order{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindOrder},
			ObjectMeta: api.ObjectMeta{Name: acme.OrderName(approved()), Namespace: "default"},
			Status:     api.OrderStatus{State: state, Reason: reason}}
		for _, a := range authz {
			o.Status.Authorizations = append(o.Status.Authorizations, api.ACMEAuthorization{URL: a})
		}
		return o
	}
	challenge := func(o *api.Order, authz string, state api.State, reason string) *api.Challenge {
		return &api.Challenge{TypeMeta: api.TypeMeta{APIVersion: api.ACMEV1, Kind: api.KindChallenge},
			ObjectMeta: api.ObjectMeta{Name: acme.ChallengeName(o.Name, authz), Namespace: "default"},
			Spec:       api.ChallengeSpec{Type: api.ACMEChallengeTypeHTTP01, DNSName: authz + ".example.com"},
			Status:     api.ChallengeStatus{State: state, Reason: reason, Presented: true}}
	}
	o := order(api.StatePending, "", "a", "b")
	for _, tc := range []struct {
		name      string
		w         world
		want      string
		permanent bool
	}{
		{"challenge invalid", world{objs: objs(issuing, readyIss, approved(), o, challenge(o, "a", api.StateValid, ""),
			challenge(o, "b", api.StateInvalid, "urn:ietf:params:acme:error:connection: connection refused"))},
			"Not ready: order " + o.Name + ": challenge " + acme.ChallengeName(o.Name, "b") + " (HTTP-01 for b.example.com) is invalid: urn:ietf:params:acme:error:connection: connection refused", false},
		{"challenge pending", world{objs: objs(issuing, readyIss, approved(), o, challenge(o, "a", api.StatePending, "self check: no HTTP-01 listener is running"))},
			"Not ready: order " + o.Name + ": challenge " + acme.ChallengeName(o.Name, "a") + " (HTTP-01 for a.example.com) is pending: self check: no HTTP-01 listener is running", false},
		{"order without challenges yet", world{objs: objs(issuing, readyIss, approved(), order("", ""))},
			"Not ready: order " + o.Name + " is being created", false},
		{"no order yet", world{objs: objs(issuing, readyIss, approved())},
			"Not ready: request web-1: Waiting on certificate issuance from order default/web-1-abc: pending", false},
		{"request failed", world{objs: objs(issuing, readyIss, request("web-1", cond("Approved", "True", "x", "y"), cond("Ready", "False", "Failed", "order invalid")))},
			"Not ready: request web-1 failed: order invalid", true},
		{"request denied", world{objs: objs(issuing, readyIss, request("web-1", cond("Denied", "True", "policy.cert-manager.io", "no policy approved it")))},
			"Not ready: request web-1 denied: no policy approved it", true},
		{"issuer misconfigured", world{objs: objs(issuing, issuer(cond("Ready", "False", "SolverNotAvailable", "spec.acme.solvers[0].dns01.akamai: no")))},
			`Not ready: issuer "ca" is not ready (SolverNotAvailable): spec.acme.solvers[0].dns01.akamai: no`, true},
		{"issuer secret missing: may come", world{objs: objs(issuing, issuer(cond("Ready", "False", "ErrGetKeyPair", "secret ca-key does not exist")))},
			`Not ready: issuer "ca" is not ready (ErrGetKeyPair): secret ca-key does not exist`, false},
		{"issuer not checked yet", world{objs: objs(issuing, issuer())}, `Not ready: issuer "ca" has not been checked yet`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Explain(context.Background(), tc.w.lookup, tc.w.events, nil, certKey)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Summary != tc.want || rep.Permanent != tc.permanent {
				t.Fatalf("summary %q permanent %t\nwant    %q permanent %t", rep.Summary, rep.Permanent, tc.want, tc.permanent)
			}
			var b strings.Builder
			if err := rep.Render(&b); err != nil {
				t.Fatal(err)
			}
			for _, ch := range rep.Challenges {
				if !strings.Contains(b.String(), "Challenge: "+ch.Name) || (ch.Status.Reason != "" && !strings.Contains(b.String(), ch.Status.Reason)) {
					t.Errorf("render lacks challenge %s:\n%s", ch.Name, b.String())
				}
			}
		})
	}
}

// A failure recorded before what would change it does not end a wait: a
// condition observed at an older generation than the spec's (the spec
// was corrected), or a request decided before the issuance in flight
// began (`certfn renew`, or the corrected spec, came after it). The same
// failures recorded now are permanent.
func TestSummaryStaleFailures(t *testing.T) {
	readyIss := issuer(cond("Ready", "True", "KeyPairVerified", "verified"))
	// seen is c observed at generation gen, with its transition at t0+sec.
	seen := func(c api.Condition, gen int64, sec int) api.Condition {
		c.ObservedGeneration, c.LastTransitionTime = gen, api.NewTime(t0.Add(time.Duration(sec)*time.Second))
		return c
	}
	denied := func(sec int) *api.CertificateRequest {
		return request("web-1", seen(cond("Denied", "True", "policy.cert-manager.io", "no policy approved it"), 0, sec))
	}
	failedReq := func(sec int) *api.CertificateRequest {
		return request("web-1", cond("Approved", "True", "x", "y"), seen(cond("Ready", "False", "Failed", "order invalid"), 0, sec))
	}
	issuerAt := func(gen, observed int64) *api.Issuer {
		iss := issuer(seen(cond("Ready", "False", "SolverNotAvailable", "spec.acme.solvers[0].dns01.akamai: no"), observed, 0))
		iss.Generation = gen
		return iss
	}
	failedAt := func(gen int64) api.Condition {
		return seen(cond("Issuing", "False", "Failed", "the request failed"), gen, 10)
	}
	issuingSince := func(sec int) api.Condition {
		return seen(cond("Issuing", "True", "ManuallyTriggered", "renew"), 2, sec)
	}
	keyRefused := func(gen int64) api.Condition {
		return seen(cond("Ready", "False", "KeyNotAllowed", "spec.privateKey: RSA 1024 is not allowed"), gen, 10)
	}
	for _, tc := range []struct {
		name      string
		w         world
		permanent bool
	}{
		{"issuance failed at this generation", world{objs: objs(cert(failedAt(2)), readyIss)}, true},
		{"issuance failed at the last generation", world{objs: objs(cert(failedAt(1)), readyIss)}, false},
		{"key refused at this generation", world{objs: objs(cert(keyRefused(2)), readyIss)}, true},
		{"key refused at the last generation", world{objs: objs(cert(keyRefused(1)), readyIss)}, false},
		{"denied during this issuance", world{objs: objs(cert(issuingSince(10)), readyIss, denied(11))}, true},
		{"denied before a renew", world{objs: objs(cert(issuingSince(10)), readyIss, denied(5))}, false},
		{"denied in the renew's second", world{objs: objs(cert(issuingSince(10)), readyIss, denied(10))}, false},
		{"denied, the spec corrected since", world{objs: objs(cert(failedAt(1)), readyIss, denied(5))}, false},
		{"denied, failure recorded at this generation", world{objs: objs(cert(failedAt(2)), readyIss, denied(5))}, true},
		{"request failed during this issuance", world{objs: objs(cert(issuingSince(10)), readyIss, failedReq(12))}, true},
		{"request failed before a renew", world{objs: objs(cert(issuingSince(10)), readyIss, failedReq(3))}, false},
		{"issuer misconfigured now", world{objs: objs(cert(issuingSince(10)), issuerAt(3, 3))}, true},
		{"issuer misconfigured before its fix", world{objs: objs(cert(issuingSince(10)), issuerAt(4, 3))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Explain(context.Background(), tc.w.lookup, tc.w.events, nil, certKey)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Permanent != tc.permanent || !strings.HasPrefix(rep.Summary, "Not ready: ") {
				t.Fatalf("summary %q permanent %t, want not ready, permanent %t", rep.Summary, rep.Permanent, tc.permanent)
			}
		})
	}
}

func TestCertificateErrors(t *testing.T) {
	w := world{objs: objs(cert()), hidden: map[api.Key]bool{}}
	if _, err := Explain(context.Background(), w.lookup, w.events, nil, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "nope"}); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing certificate: %v", err)
	}
	w.hidden[certKey] = true
	if _, err := Explain(context.Background(), w.lookup, w.events, nil, certKey); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("hidden certificate: %v", err)
	}
	broken := func(context.Context, string, string) ([]byte, error) { return nil, fmt.Errorf("throttled") }
	delete(w.hidden, certKey)
	if _, err := Explain(context.Background(), w.lookup, w.events, broken, certKey); err == nil || !strings.Contains(err.Error(), "read secret default/web-tls: throttled") {
		t.Fatalf("secret store failure: %v", err)
	}
}

func leafPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "web"}, DNSNames: []string{"web.example.com"},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}, NotBefore: t0, NotAfter: t0.Add(90 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Render prints every section; a report decoded from JSON (the API's
// answer) renders the same text.
func TestRender(t *testing.T) {
	crt := leafPEM(t)
	c := cert(cond("Ready", "True", "Ready", "Certificate is up to date"))
	na := api.NewTime(t0.Add(90 * 24 * time.Hour))
	c.Status.NotAfter, c.Status.NotBefore, c.Status.RenewalTime = na, api.NewTime(t0), api.NewTime(t0.Add(60*24*time.Hour))
	w := world{objs: objs(c, issuer(cond("Ready", "True", "KeyPairVerified", "Signing CA verified")),
		request("web-1", cond("Approved", "True", "policy.cert-manager.io", "ok"), cond("Ready", "True", "Issued", "done")))}
	secrets := map[string]func(context.Context, string, string) ([]byte, error){
		"found":   func(context.Context, string, string) ([]byte, error) { return crt, nil },
		"invalid": func(context.Context, string, string) ([]byte, error) { return []byte("junk"), nil },
		"missing": func(_ context.Context, ns, n string) ([]byte, error) {
			return nil, fmt.Errorf("%s/%s: %w", ns, n, ports.ErrNotFound)
		},
		"notread": nil,
	}
	want := map[string]string{
		"found":   "Secret: default/web-tls\n  Subject: CN=web  Issuer: CN=web\n  SANs: web.example.com, 10.0.0.1\n  Valid: 2026-03-01T12:00:00Z → 2026-05-30T12:00:00Z\n",
		"invalid": "Secret: default/web-tls\n  tls.crt: invalid: ",
		"missing": "Secret: default/web-tls — does not exist\n",
		"notread": "Secret: default/web-tls — not read (the API never reads the secret store",
	}
	for name, sr := range secrets {
		t.Run(name, func(t *testing.T) {
			var reader SecretReader
			if sr != nil {
				reader = sr
			}
			rep, err := Explain(context.Background(), w.lookup, w.events, reader, certKey)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := rep.Render(&out); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			for _, s := range []string{"Ready: Certificate is up to date\n\n", "Certificate: default/web (generation 2, revision 1)\n",
				"  Names: CN=web, web.example.com\n", "  Not before: 2026-03-01T12:00:00Z  Not after: 2026-05-30T12:00:00Z  Renewal: 2026-04-30T12:00:00Z\n",
				"Issuer: Issuer \"ca\"\n  Ready=True (KeyPairVerified) Signing CA verified\n", want[name],
				"CertificateRequest: default/web-1 (revision 1, requester system:serviceaccount:cert-manager:cert-manager)\n  Approved=True (policy.cert-manager.io) ok\n"} {
				if !strings.Contains(text, s) {
					t.Errorf("render lacks %q:\n%s", s, text)
				}
			}
			b, err := json.Marshal(rep)
			if err != nil {
				t.Fatal(err)
			}
			var back Report
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			if err := back.Render(&again); err != nil || again.String() != text {
				t.Fatalf("decoded report renders differently (%v):\n%s\nvs\n%s", err, again.String(), text)
			}
		})
	}
	// Hidden parts say so.
	w.hidden = map[api.Key]bool{issKey: true, reqKey: true}
	rep, err := Explain(context.Background(), w.lookup, w.events, nil, certKey)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_ = rep.Render(&out)
	for _, s := range []string{"Issuer: Issuer \"ca\" — not shown (the caller may not get it)\n", "CertificateRequest: not shown (the caller may not get it)\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("render lacks %q:\n%s", s, out.String())
		}
	}
	if err := (&Report{}).Render(&out); err == nil {
		t.Fatal("a report without a certificate rendered")
	}
}

// Recorded failures of the Certificate, its request and its issuer are in
// the report, oldest first; an Event the caller may not read is left out.
func TestRecordedFailures(t *testing.T) {
	ev := func(of api.Key, reason, msg string, count int, last time.Time) *api.Event {
		k := api.EventKey(of, api.EventTypeWarning, reason, msg)
		return &api.Event{TypeMeta: api.TypeMeta{APIVersion: api.CoreV1, Kind: api.KindEvent},
			ObjectMeta:     api.ObjectMeta{Name: k.Name, Namespace: k.Namespace},
			InvolvedObject: api.ObjectReference{Kind: of.Kind, Namespace: of.Namespace, Name: of.Name},
			Reason:         reason, Message: msg, Type: api.EventTypeWarning, Count: count,
			FirstTimestamp: &api.Time{Time: last.Add(-time.Hour)}, LastTimestamp: &api.Time{Time: last}}
	}
	w := world{objs: objs(cert(cond("Ready", "False", "DoesNotExist", "no secret")), issuer(cond("Ready", "True", "KeyPairVerified", "")),
		request("web-1", cond("Approved", "True", "test", "")),
		ev(reqKey, "Failed", "sign: AccessDenied on secret default/ca", 4, t0.Add(2*time.Minute)),
		ev(certKey, "FailedPermanently", "write secret: forbidden", 1, t0),
		ev(issKey, "Failed", "hidden detail", 1, t0)),
		hiddenEvents: map[api.Key]bool{issKey: true}}
	r, err := Explain(context.Background(), w.lookup, w.events, nil, certKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Events) != 2 || r.Events[0].InvolvedObject.Kind != api.KindCertificate || r.Events[1].Count != 4 {
		t.Fatalf("events %+v", r.Events)
	}
	var b strings.Builder
	if err := r.Render(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Recorded failures:", "Certificate web: FailedPermanently ×1", "CertificateRequest web-1: Failed ×4", "AccessDenied on secret default/ca"} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden detail") {
		t.Error("an Event the caller may not read was shown")
	}
}
