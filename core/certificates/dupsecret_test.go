package certificates_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificates"
)

func requestNames(t *testing.T, r *apptest.Rig) []string {
	t.Helper()
	objs, err := r.Repo.List(r.Ctx, api.KindCertificateRequest, "default")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetObjectMeta().Name)
	}
	return out
}

func cert(r *apptest.Rig, name string) *api.Certificate {
	return r.Get(apptest.NamedCertKey(name)).(*api.Certificate)
}

// requireOwner checks that owner is Ready, stored in secret and that
// every Certificate in others is not Ready, naming owner, and not issuing.
func requireOwner(t *testing.T, r *apptest.Rig, secret, owner string, others ...string) {
	t.Helper()
	if c := cert(r, owner); !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) || c.Status.Revision == nil {
		t.Fatalf("owner %s not Ready: %+v", owner, c.Status.Conditions)
	}
	sec, err := r.Secrets.Get(r.Ctx, "default", secret)
	if err != nil {
		t.Fatalf("secret %s: %v", secret, err)
	}
	if got := sec.Annotations[api.AnnotationCertificateName]; got != owner {
		t.Fatalf("secret %s names Certificate %q, want %q", secret, got, owner)
	}
	if got := sec.Annotations[api.AnnotationAltNames]; got != owner+".example.com" {
		t.Fatalf("secret %s holds a certificate for %q, want %s.example.com", secret, got, owner)
	}
	for _, o := range others {
		c := cert(r, o)
		ready := api.FindCondition(c.Status.Conditions, api.CertificateConditionReady)
		want := fmt.Sprintf("Secret %q is owned by Certificate %q", secret, owner)
		if ready == nil || ready.Status != api.ConditionFalse || ready.Reason != certificates.ReasonDuplicateSecretName || !strings.Contains(ready.Message, want) {
			t.Fatalf("%s: Ready = %+v, want False/DuplicateSecretName containing %q", o, ready, want)
		}
		if c.Status.NotAfter != nil || c.Status.RenewalTime != nil {
			t.Errorf("%s shows the owner's validity: notAfter %v renewalTime %v", o, c.Status.NotAfter, c.Status.RenewalTime)
		}
		if api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing) {
			t.Errorf("%s is issuing", o)
		}
	}
}

// settle drains the queue and runs two WaitPoll polls, so that
// Certificates that issued into a shared secret before the first write
// was seen converge.
func settle(t *testing.T, r *apptest.Rig) {
	t.Helper()
	r.Drain()
	for i := 0; i < 2; i++ {
		r.Clock.Advance(apptest.WaitPoll + time.Second)
		if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
			t.Fatal(err)
		}
		r.Drain()
	}
}

// secretOwner is the Certificate the secret's annotation names.
func secretOwner(t *testing.T, r *apptest.Rig, secret string) string {
	t.Helper()
	sec, err := r.Secrets.Get(r.Ctx, "default", secret)
	if err != nil {
		t.Fatalf("secret %s: %v", secret, err)
	}
	return sec.Annotations[api.AnnotationCertificateName]
}

// Two Certificates with one secretName (cert-manager PR #6406) applied
// together, before the secret exists: each may issue once (nothing is
// listed until a write shows the sharing), then one owns the secret and
// the other is not Ready, names the owner and issues no more; nothing
// loops. Deleting the owner wakes the other, which then owns the secret.
func TestDuplicateSecretNameOneOwnerNoLoop(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML + "---\n" + apptest.NamedCertYAML("b", "shared-tls") + "---\n" + apptest.NamedCertYAML("a", "shared-tls"))
	settle(t, r)
	owner := secretOwner(t, r, "shared-tls")
	other := map[string]string{"a": "b", "b": "a"}[owner]
	if other == "" {
		t.Fatalf("the secret names %q", owner)
	}
	requireOwner(t, r, "shared-tls", owner, other)
	before := requestNames(t, r)
	if len(before) > 3 {
		t.Fatalf("requests %v: more than one issuance each before converging", before)
	}

	// No loop: the owner, settled, lists nothing (the secret names it);
	// the other looks again after WaitPoll, and still changes nothing.
	r.Store.Listed(api.KindCertificate)
	r.Reconcile(apptest.NamedCertKey(owner))
	if n := r.Store.Listed(api.KindCertificate); n != 0 {
		t.Errorf("the settled owner listed Certificates %d times, want 0", n)
	}
	secBefore, _ := r.Secrets.Get(r.Ctx, "default", "shared-tls")
	if due := r.Rec(apptest.NamedCertKey(other)).NextRunAt; due.IsZero() || due.After(r.Clock.Now().Add(apptest.WaitPoll)) {
		t.Errorf("%s is due at %s, want within WaitPoll", other, due)
	}
	settle(t, r)
	settle(t, r)
	if got := requestNames(t, r); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("requests %v after more polls, want still %v", got, before)
	}
	secAfter, _ := r.Secrets.Get(r.Ctx, "default", "shared-tls")
	if string(secAfter.Data["tls.crt"]) != string(secBefore.Data["tls.crt"]) {
		t.Fatal("the shared secret was rewritten")
	}
	requireOwner(t, r, "shared-tls", owner, other)

	// The owner goes: the other is woken at once (no clock movement) and issues.
	if err := r.Service.Delete(r.Ctx, apptest.Caller, apptest.NamedCertKey(owner), app.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	requireOwner(t, r, "shared-tls", other)
}

// A Certificate that owns a secret keeps it: Certificates applied later
// with the same secretName see the owner's write and never issue. Changing
// the owner's spec.secretName wakes them: the first by creation time, then
// name, owns the secret now and issues once.
func TestDuplicateSecretNameOwnerMovesAway(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML + "---\n" + apptest.NamedCertYAML("a", "shared-tls"))
	r.Drain()
	r.Apply(apptest.NamedCertYAML("b", "shared-tls") + "---\n" + apptest.NamedCertYAML("c", "shared-tls"))
	settle(t, r)
	requireOwner(t, r, "shared-tls", "a", "b", "c")

	r.Apply(apptest.NamedCertYAML("a", "a-tls"))
	r.Drain()
	requireOwner(t, r, "a-tls", "a")
	requireOwner(t, r, "shared-tls", "b", "c")
	// a's revision 2 went into a-tls (revision 1's request is pruned:
	// revisionHistoryLimit 1); b issued once, c never.
	if got := strings.Join(requestNames(t, r), ","); got != "a-2,b-1" {
		t.Fatalf("requests %s, want a-2,b-1", got)
	}
}

// A Certificate caught issuing into a secret another Certificate owns
// stops (Issuing=False, DuplicateSecretName) and creates nothing more.
func TestDuplicateSecretNameStopsAnIssuance(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML + "---\n" + apptest.NamedCertYAML("a", "shared-tls") + "---\n" + apptest.NamedCertYAML("b", "b-tls"))
	r.Drain()
	// b's re-issuance is triggered, and before it runs b is pointed at a's secret.
	if _, err := r.Service.Renew(r.Ctx, apptest.Caller, apptest.NamedCertKey("b")); err != nil {
		t.Fatal(err)
	}
	r.Apply(apptest.NamedCertYAML("b", "shared-tls"))
	if !api.IsTrue(cert(r, "b").Status.Conditions, api.CertificateConditionIssuing) {
		t.Fatal("b is not issuing")
	}
	settle(t, r)
	requireOwner(t, r, "shared-tls", "a", "b")
	c := cert(r, "b")
	is := api.FindCondition(c.Status.Conditions, api.CertificateConditionIssuing)
	if is == nil || is.Status != api.ConditionFalse || is.Reason != certificates.ReasonDuplicateSecretName {
		t.Fatalf("b: Issuing = %+v, want False/DuplicateSecretName", is)
	}
	for _, n := range requestNames(t, r) {
		if n == "b-2" {
			t.Fatal("b created a request for the shared secret")
		}
	}
}
