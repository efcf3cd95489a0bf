package api

import "testing"

// InvolvedKeyFor undoes EventKeyFor, and refuses what EventKeyFor never
// returns.
func TestInvolvedKeyFor(t *testing.T) {
	for _, k := range []Key{
		{Kind: KindCertificateSigningRequest, Name: "csr-1"},
		{Kind: KindCertificate, Namespace: "team-a", Name: "web.example.com"},
		{Kind: KindClusterIssuer, Name: "ca"},
	} {
		if got, ok := InvolvedKeyFor(EventKeyFor(k)); !ok || got != k {
			t.Errorf("InvolvedKeyFor(EventKeyFor(%v)) = %v, %v", k, got, ok)
		}
	}
	for _, ek := range []Key{
		{Kind: KindCertificate, Namespace: "default", Name: "certificate.web"},
		{Kind: KindEvent, Namespace: "default", Name: "web"},
		{Kind: KindEvent, Namespace: "default", Name: "certificate."},
		{Kind: KindEvent, Namespace: "default", Name: "widget.web"},
		{Kind: KindEvent, Namespace: "default", Name: "event.x"},
		{Kind: KindEvent, Namespace: "team-a", Name: "certificatesigningrequest.csr-1"},
	} {
		if got, ok := InvolvedKeyFor(ek); ok {
			t.Errorf("InvolvedKeyFor(%v) = %v, want none", ek, got)
		}
	}
}
