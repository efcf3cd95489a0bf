package gcpe2e

import (
	"slices"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// A service killed between its write and its publish (docs/design/one-step.md):
// the publish is lost, the request's context is canceled at that moment
// (nothing more is written) and its answer never reaches Pub/Sub, which
// pushes the message again after the acknowledgement deadline. When the
// write made the handled object final (the signer's signed request), that
// redelivery finds it final and wakes its owner again (a final
// object reconciled again wakes its owner), so the certificate is Ready
// without a sweep. Otherwise the redelivery finds the write done and has
// nothing to publish, and without a sweep the certificate is not Ready;
// the state written before the death carries a nextRunAt (a request is
// due at once, a Certificate's own write a follow-up grace ahead), so
// Cloud Scheduler's sweeps, a minute apart, find the key that lost its
// message due. Either way the certificate is Ready at revision 1 with one
// certificate for it, nothing left due, no dead letter. Every message is
// delivered twice and reordered throughout.
func TestKilledBetweenWriteAndPublish(t *testing.T) {
	for _, tc := range []struct {
		name string
		// topic (of d) and the publish that is lost there.
		topic func(d *deployment) *topic
		drop  func(publisher string, k api.Key) bool
		// swept is the key the sweep must find due ("": the redelivery
		// carries the lost wake-up, no sweep is needed).
		swept string
	}{
		{"api after storing the Certificate", func(d *deployment) *topic { return d.workerQ },
			func(p string, k api.Key) bool { return p == "api" && k.Kind == api.KindCertificate && k.Name == "web" }, "Certificate/default/web"},
		{"worker after creating the request, before handing it to the signer", func(d *deployment) *topic { return d.signerQ },
			func(p string, k api.Key) bool {
				return p == "worker" && k.Kind == api.KindCertificateRequest && k.Name == "web-1"
			}, "CertificateRequest/default/web-1"},
		{"signer after signing, before waking the Certificate", func(d *deployment) *topic { return d.workerQ },
			func(p string, k api.Key) bool {
				return p == "signer" && k.Kind == api.KindCertificate && k.Name == "web"
			}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := deploy(t, nil)
			d.apply(caIssuers)
			d.settle()
			d.requireReady("cert-manager", "root", 1)

			dropped := false
			tc.topic(d).mu.Lock()
			tc.topic(d).drop = func(p string, k api.Key, _ time.Duration) bool {
				dropped = tc.drop(p, k)
				return dropped
			}
			tc.topic(d).mu.Unlock()
			// The api's caller gets no answer (or an error) and does not retry.
			d.call("POST", "/v1/apply", leafYAML("web", "ca"))
			d.drain()
			if !dropped {
				t.Fatal("the publish to lose was never made")
			}
			if tc.swept == "" {
				if c := d.cert("default", "web"); !ready(c) {
					t.Fatalf("not Ready after the redelivery: %+v", c.Status.Conditions)
				}
				d.requireReady("default", "web", 1)
				d.requireOnePerRevision("default", "web")
				d.requireClean()
				return
			}
			if c := d.cert("default", "web"); ready(c) {
				t.Fatalf("Ready without the sweep: the lost publish did not matter (revision %d)", revision(c))
			}

			// Cloud Scheduler's minutes: the sweep finds the key due.
			var swept []string
			d.workerQ.mu.Lock()
			d.workerQ.drop = func(p string, k api.Key, _ time.Duration) bool {
				if p == "scheduler" {
					swept = append(swept, k.String())
				}
				return false
			}
			d.workerQ.mu.Unlock()
			sweeps, found := 0, 0
			for !ready(d.cert("default", "web")) {
				if sweeps++; sweeps > 15 {
					t.Fatalf("not Ready after %d sweeps a minute apart: %+v", sweeps-1, d.cert("default", "web").Status.Conditions)
				}
				d.clk.Advance(time.Minute)
				found += d.sweep().Due
				d.drain()
			}
			if found == 0 || !slices.Contains(swept, tc.swept) {
				t.Fatalf("Ready, but the sweeps found %q due, not %s", swept, tc.swept)
			}
			d.requireReady("default", "web", 1)
			d.requireOnePerRevision("default", "web")
			d.requireClean()
			t.Logf("Ready after %d sweeps a minute apart, which found %q due", sweeps, swept)
		})
	}
}
