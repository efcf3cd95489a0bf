package app_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

var caller = apptest.Caller

func TestApply(t *testing.T) {
	r := apptest.NewRig(t)
	res := r.Apply(strings.Replace(apptest.SelfSignedYAML, "spec:", `status: {conditions: [{type: Ready, status: "True"}]}
spec:`, 1))
	k := api.Key{Kind: api.KindClusterIssuer, Name: "selfsigned"}
	if !res.Created || !res.Changed || res.Key != k {
		t.Fatalf("create result %+v", res)
	}
	iss := r.Get(k).(*api.ClusterIssuer)
	if iss.UID == "" || iss.Generation != 1 || iss.CreationTimestamp == nil || !iss.CreationTimestamp.Equal(ct.T0) {
		t.Fatalf("metadata not set on create: %+v", iss.ObjectMeta)
	}
	if len(iss.Status.Conditions) != 0 {
		t.Fatalf("status from the manifest was stored: %+v", iss.Status)
	}
	if got := r.Visible(); strings.Join(got, ",") != "ClusterIssuer/selfsigned" {
		t.Fatalf("create enqueued %v", got)
	}
	r.ClearQueue()
	r.Reconcile(k) // status written: Ready
	v := r.Rec(k).Version

	// Unchanged re-apply: no write.
	res = r.Apply(apptest.SelfSignedYAML)
	if res.Created || res.Changed || r.Rec(k).Version != v {
		t.Fatalf("unchanged re-apply: %+v version %d → %d", res, v, r.Rec(k).Version)
	}
	// Labels change: written, generation kept.
	res = r.Apply(strings.Replace(apptest.SelfSignedYAML, "{name: selfsigned}", "{name: selfsigned, labels: {team: a}}", 1))
	iss = r.Get(k).(*api.ClusterIssuer)
	if !res.Changed || iss.Generation != 1 || iss.Labels["team"] != "a" || r.Rec(k).Version != v+1 {
		t.Fatalf("label change: %+v generation %d labels %v", res, iss.Generation, iss.Labels)
	}
	// Spec change: generation +1, status and identity kept.
	uid := iss.UID
	res = r.Apply(strings.Replace(strings.Replace(apptest.SelfSignedYAML, "{selfSigned: {}}", "{selfSigned: {crlDistributionPoints: [\"http://crl\"]}}", 1),
		"{name: selfsigned}", "{name: selfsigned, labels: {team: a}}", 1))
	iss = r.Get(k).(*api.ClusterIssuer)
	if !res.Changed || iss.Generation != 2 || iss.UID != uid || !api.IsTrue(iss.Status.Conditions, "Ready") {
		t.Fatalf("spec change: %+v generation %d uid %s status %+v", res, iss.Generation, iss.UID, iss.Status)
	}

	// Invalid input: a permanent error naming the field, nothing stored.
	objs, err := api.Decode([]byte(strings.Replace(apptest.CertYAML, "[web.example.com]", "[web.example.com, a..b]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Service.Apply(r.Ctx, caller, objs[:1])
	if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.dnsNames[1]") {
		t.Fatalf("invalid certificate: %v", err)
	}
	if _, err := r.Store.Store.Get(r.Ctx, apptest.CertKey); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("invalid certificate stored: %v", err)
	}
}

func TestApplyCertificateRecordsIgnoredFields(t *testing.T) {
	r := apptest.NewRig(t)
	res := r.Apply(strings.Replace(apptest.CertYAML, "{name: web, namespace: default}", "{name: web, namespace: default, finalizers: [x]}", 1))
	c := r.Get(apptest.CertKey).(*api.Certificate)
	if strings.Join(res.Ignored, ",") != "metadata.finalizers" || strings.Join(c.Status.IgnoredFields, ",") != "metadata.finalizers" {
		t.Fatalf("ignored fields: result %v, status %v; want [metadata.finalizers]", res.Ignored, c.Status.IgnoredFields)
	}
	// Dropping the field is a change of status.ignoredFields only.
	v := r.Rec(apptest.CertKey).Version
	res = r.Apply(apptest.CertYAML)
	c = r.Get(apptest.CertKey).(*api.Certificate)
	if !res.Changed || len(c.Status.IgnoredFields) != 0 || c.Generation != 1 || r.Rec(apptest.CertKey).Version != v+1 {
		t.Fatalf("after dropping the field: %+v ignored %v generation %d", res, c.Status.IgnoredFields, c.Generation)
	}
}

func TestApplyCertificateRequest(t *testing.T) {
	r := apptest.NewRig(t)
	manifest := apptest.CSRRequestYAML(t, "720h")
	r.Apply(manifest)
	k := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}
	cr := r.Get(k).(*api.CertificateRequest)
	if cr.Spec.Username != caller.Username || cr.Spec.UID != caller.UID || strings.Join(cr.Spec.Groups, ",") != strings.Join(caller.Groups, ",") || cr.Spec.Extra != nil {
		t.Fatalf("identity taken from the body: %q %q %v %v", cr.Spec.Username, cr.Spec.UID, cr.Spec.Groups, cr.Spec.Extra)
	}
	v := r.Rec(k).Version

	// Re-applied by someone else, unchanged: the creator's identity stays.
	objs, _ := api.Decode([]byte(manifest))
	res, err := r.Service.Apply(r.Ctx, app.Caller{Username: "bob", Groups: []string{app.SuperuserGroup}}, objs[:1])
	if err != nil || res[0].Changed || r.Rec(k).Version != v {
		t.Fatalf("re-apply: %+v %v", res, err)
	}
	if got := r.Get(k).(*api.CertificateRequest).Spec.Username; got != caller.Username {
		t.Fatalf("identity changed to %q", got)
	}

	// The spec is immutable: refused with the field path, nothing written.
	objs, _ = api.Decode([]byte(apptest.CSRRequestYAML(t, "720h")))
	for _, tc := range []struct {
		name string
		obj  api.Object
		path string
	}{
		{"duration", apptest.MustDecode(t, strings.Replace(manifest, "duration: 720h", "duration: 1440h", 1)), "spec.duration: field is immutable"},
		{"request", objs[0], "spec.request: field is immutable"},
		{"issuerRef", apptest.MustDecode(t, strings.Replace(manifest, "{name: ca}", "{name: other}", 1)), "spec.issuerRef.name: field is immutable"},
	} {
		_, err := r.Service.Apply(r.Ctx, caller, []api.Object{tc.obj})
		if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s change: err = %v, want %q", tc.name, err, tc.path)
		}
	}
	if r.Rec(k).Version != v {
		t.Fatal("a refused change was written")
	}
}

func TestRenew(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.CertYAML)
	v := r.Rec(apptest.CertKey).Version
	if _, err := r.Service.Renew(r.Ctx, caller, apptest.CertKey); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	c := r.Get(apptest.CertKey).(*api.Certificate)
	ic := api.FindCondition(c.Status.Conditions, api.CertificateConditionIssuing)
	if ic == nil || ic.Status != api.ConditionTrue || ic.Reason != "ManuallyTriggered" || r.Rec(apptest.CertKey).Version != v+1 {
		t.Fatalf("Issuing = %+v, version %d", ic, r.Rec(apptest.CertKey).Version)
	}
	// Already being issued: nothing is written, the issuance in flight is
	// woken instead (it used to be refused, which left a lost wake-up to
	// its safety net).
	r.ClearQueue()
	res, err := r.Service.Renew(r.Ctx, caller, apptest.CertKey)
	if err != nil || !res.InFlight || r.Rec(apptest.CertKey).Version != v+1 {
		t.Fatalf("second Renew: %+v, %v, version %d", res, err, r.Rec(apptest.CertKey).Version)
	}
	if want := []string{apptest.CertKey.String()}; !slices.Equal(res.Woken, want) || !slices.Equal(r.Visible(), want) {
		t.Fatalf("woken %q, queued %q, want %q", res.Woken, r.Visible(), want)
	}
	if _, err := r.Service.Renew(r.Ctx, caller, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "nope"}); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("Renew of a missing certificate: %v", err)
	}
}

func TestSetApprovalIsPermanent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  bool
		second bool
		want   string
	}{
		{"approve then deny", true, false, "already Approved"},
		{"deny then approve", false, true, "already Denied"},
		{"approve twice", true, true, "already Approved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := apptest.NewRig(t)
			r.Apply(apptest.CSRRequestYAML(t, "720h"))
			k := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}
			if _, err := r.Service.Approve(r.Ctx, caller, k, tc.first, "", "by a test", ""); err != nil {
				t.Fatalf("first: %v", err)
			}
			v := r.Rec(k).Version
			_, err := r.Service.Approve(r.Ctx, caller, k, tc.second, "", "again", "")
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("second: %v, want %q", err, tc.want)
			}
			cr := r.Get(k).(*api.CertificateRequest)
			a, d := api.FindCondition(cr.Status.Conditions, "Approved"), api.FindCondition(cr.Status.Conditions, "Denied")
			if (a != nil) == (d != nil) || r.Rec(k).Version != v {
				t.Fatalf("conditions %+v after a refused change (version %d → %d)", cr.Status.Conditions, v, r.Rec(k).Version)
			}
			c := a
			if c == nil {
				c = d
			}
			if c.Status != api.ConditionTrue || c.Reason != "certfn" || c.Message != "by a test" {
				t.Fatalf("decision recorded as %+v", c)
			}
		})
	}
}

func TestDeleteCascades(t *testing.T) {
	r := apptest.NewRig(t)
	r.Apply(apptest.SelfSignedYAML)
	r.Apply(apptest.CertYAML)
	r.Drain() // issues web-1
	c := r.Get(apptest.CertKey).(*api.Certificate)
	if c.Status.Revision == nil || *c.Status.Revision != 1 {
		t.Fatalf("not issued: %+v", c.Status)
	}
	r.Apply(apptest.CSRRequestYAML(t, "720h")) // a request nobody owns
	// A leftover next-private-key secret.
	if err := r.Secrets.Put(r.Ctx, ports.Secret{Namespace: "default", Name: "web-next-private-key", Data: map[string][]byte{"tls.key": []byte("k")}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Service.Delete(r.Ctx, caller, apptest.CertKey, app.DeleteOptions{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, k := range []api.Key{apptest.CertKey, {Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"}} {
		if _, err := r.Store.Store.Get(r.Ctx, k); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("%s survived the delete: %v", k, err)
		}
	}
	if _, err := r.Store.Store.Get(r.Ctx, api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}); err != nil {
		t.Errorf("an unrelated request was deleted: %v", err)
	}
	if _, err := r.Secrets.Get(r.Ctx, "default", "web-next-private-key"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("next private key survived: %v", err)
	}
	if _, err := r.Secrets.Get(r.Ctx, "default", "web-tls"); err != nil {
		t.Errorf("the issued secret must be kept: %v", err)
	}
	// Deleting again is not an error for the kernel; the service reports
	// the missing object.
	if err := r.Objects.DeleteObject(r.Ctx, apptest.CertKey, 0, api.Key{}); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if err := r.Service.Delete(r.Ctx, caller, apptest.CertKey, app.DeleteOptions{}); !errors.Is(err, app.ErrNotFound) {
		t.Fatalf("second Delete through the service: %v, want not found", err)
	}
}

func TestApplyReportsEveryInvalidObject(t *testing.T) {
	r := apptest.NewRig(t)
	objs, err := api.Decode([]byte(strings.Replace(apptest.CertYAML, "[web.example.com]", "[a..b]", 1) + "---\n" +
		apptest.SelfSignedYAML + "---\n" + strings.Replace(strings.Replace(apptest.CertYAML, "name: web,", "name: two,", 1), "size: 256", "size: 100", 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Service.Apply(r.Ctx, caller, objs)
	var verr *app.ValidationError
	if !errs.IsPermanent(err) || !errors.As(err, &verr) || len(verr.Details) != 2 || verr.Details[0].Field != "spec.dnsNames[0]" {
		t.Fatalf("Apply = %v, want a permanent validation error with one detail per invalid object", err)
	}
	for _, want := range []string{"Certificate/default/web", "spec.dnsNames[0]", "Certificate/default/two", "spec.privateKey.size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "selfsigned") {
		t.Errorf("the valid object is reported: %v", err)
	}
	if _, err := r.Service.Apply(r.Ctx, caller, objs[1:2]); err != nil {
		t.Fatalf("valid object refused: %v", err)
	}
}
