package certificates_test

import (
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
)

// An issuer that shortens the lifetime below what the Certificate's
// renewal asks for (certfn.io/max-duration, as an ACME server's
// short-lived certificates or a CA that expires soon do) does not make
// certfn re-issue in a loop: over a simulated hour, at most one issuance
// every certificates.MinReissueInterval (5 minutes here), and the
// Certificate says its renewal is held.
func TestShortenedLifetimeDoesNotReissueInALoop(t *testing.T) {
	for _, tc := range []struct {
		name, maxDuration, renewBefore string
		// at most one issuance at T0 and one per 5 minutes after it
		wantMax int
	}{
		{name: "10m certificates renewed 9m59s before expiry", maxDuration: "10m", renewBefore: "  renewBefore: 9m59s\n", wantMax: 13},
		{name: "1m certificates (expired before the next look)", maxDuration: "1m", wantMax: 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := apptest.NewRig(t)
			r.Apply(strings.Replace(apptest.SelfSignedYAML, "metadata: {name: selfsigned}",
				"metadata: {name: selfsigned, annotations: {certfn.io/max-duration: "+tc.maxDuration+"}}", 1))
			r.Apply(apptest.CertYAML + tc.renewBefore)
			end := r.Clock.Now().Add(time.Hour)
			for r.Clock.Now().Before(end) {
				if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
					t.Fatal(err)
				}
				r.Drain()
				r.Clock.Advance(10 * time.Second)
			}
			c := r.Get(apptest.CertKey).(*api.Certificate)
			if c.Status.Revision == nil {
				t.Fatalf("never issued: %+v", c.Status)
			}
			if n := *c.Status.Revision; n > tc.wantMax || n < tc.wantMax-2 {
				t.Fatalf("%d issuances in an hour, want at most %d (one per 5 minutes) and still renewing", n, tc.wantMax)
			}
			if tc.renewBefore != "" {
				rc := api.FindCondition(c.Status.Conditions, api.CertificateConditionReady)
				if rc == nil || !strings.Contains(rc.Message, "renewal held until") {
					t.Errorf("Ready = %+v, want it to say the renewal is held", rc)
				}
			}
		})
	}
}
