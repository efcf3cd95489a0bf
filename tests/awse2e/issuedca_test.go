package awse2e

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/internal/awsmode/awstest"
	"github.com/certfn/certfn/tests/emulators"
)

// Without worker_manages_ca_certificates the worker may not write a CA key
// pair it issued itself (certfn-role issued-ca): the examples' CA
// Certificate is refused by IAM (AccessDenied on CreateSecret).
func TestIssuedCAWithoutPermission(t *testing.T) {
	d := deployEnv(t, func(e *awstest.Env) { e.ExpectIAMDenials = true }, nil)
	d.applyFiles("../../examples/0[12]*.yaml")
	d.run()
	c := d.cert("cert-manager", "demo-ca")
	if api.IsTrue(c.Status.Conditions, "Ready") {
		t.Fatal("demo-ca Ready without worker_manages_ca_certificates")
	}
	denied := d.IAMDenied()
	if len(denied) == 0 || !strings.Contains(strings.Join(denied, "\n"), `request certfn-role "issued-ca"`) {
		t.Fatalf("IAM denials %v, want the issued-ca secret refused", denied)
	}
	// An AWS refusal is retried like any AWS error (a policy can be fixed
	// while the message waits); if it persists, the message ends in the
	// dead-letter queue, whose CloudWatch alarm tells the operator.
	if d.Metrics.Sum("certfn_transient_errors_total") == 0 {
		t.Error("the refusal was not retried")
	}
	// And it is visible to the user: a Warning Event on the Certificate
	// (`certfn status` shows it), written through the api's view.
	ev := lastWarning(t, d, api.Key{Kind: api.KindCertificate, Namespace: "cert-manager", Name: "demo-ca"})
	if ev.Type != api.EventTypeWarning || !strings.Contains(ev.Message, "AccessDenied") {
		t.Fatalf("event %+v", ev)
	}
}

// The same on Parameter Store (secret_store = "ssm"): the worker's
// classes (CERTFN_SECRET_CLASSES, from the same list as its IAM paths)
// lack ica, so the store refuses the issued CA key pair before any call
// (no IAM refusal needed) with a permanent error naming the class, and the
// Certificate's Warning Event says so.
func TestIssuedCAWithoutPermissionSSM(t *testing.T) {
	ep := emulators.Moto(t)
	d := deployEnv(t, func(e *awstest.Env) { e.UseSSM(ep) }, nil)
	d.applyFiles("../../examples/0[12]*.yaml")
	d.run()
	c := d.cert("cert-manager", "demo-ca")
	if api.IsTrue(c.Status.Conditions, "Ready") {
		t.Fatal("demo-ca Ready without worker_manages_ca_certificates")
	}
	if denied := d.IAMDenied(); len(denied) != 0 {
		t.Fatalf("IAM denials %v: the store should not have tried", denied)
	}
	ev := lastWarning(t, d, api.Key{Kind: api.KindCertificate, Namespace: "cert-manager", Name: "demo-ca"})
	if ev.Type != api.EventTypeWarning || ev.Reason != "FailedPermanently" || !strings.Contains(ev.Message, "class ica") {
		t.Fatalf("event %+v", ev)
	}
}

// lastWarning is the last Warning Event about key, read through the api's
// view (the test fails when there is none).
func lastWarning(t *testing.T, d *deployment, key api.Key) *api.Event {
	t.Helper()
	evs, err := d.api.Repo.EventsOf(d.Ctx, key)
	if err != nil {
		t.Fatalf("Events of %s: %v", key, err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == api.EventTypeWarning {
			return &evs[i]
		}
	}
	t.Fatalf("no Warning Event about %s: %+v", key, evs)
	return nil
}
