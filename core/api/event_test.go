package api

import "testing"

// InvolvedKeyFor undoes EventKey, and refuses what EventKey never
// returns.
func TestInvolvedKeyFor(t *testing.T) {
	for _, k := range []Key{
		{Kind: KindCertificateSigningRequest, Name: "csr-1"},
		{Kind: KindCertificate, Namespace: "team-a", Name: "web.example.com"},
		{Kind: KindClusterIssuer, Name: "ca"},
	} {
		if got, ok := InvolvedKeyFor(EventKey(k, EventTypeNormal, "Issuing", "m")); !ok || got != k {
			t.Errorf("InvolvedKeyFor(EventKey(%v)) = %v, %v", k, got, ok)
		}
	}
	for _, ek := range []Key{
		{Kind: KindCertificate, Namespace: "default", Name: "certificate.web.0123456789abcdef"},
		{Kind: KindEvent, Namespace: "default", Name: "web"},
		{Kind: KindEvent, Namespace: "default", Name: "certificate.web"},
		{Kind: KindEvent, Namespace: "default", Name: "certificate.0123456789abcdef"},
		{Kind: KindEvent, Namespace: "default", Name: "certificate.web.0123456789ABCDEF"},
		{Kind: KindEvent, Namespace: "default", Name: "widget.web.0123456789abcdef"},
		{Kind: KindEvent, Namespace: "default", Name: "event.x.0123456789abcdef"},
		{Kind: KindEvent, Namespace: "team-a", Name: "certificatesigningrequest.csr-1.0123456789abcdef"},
	} {
		if got, ok := InvolvedKeyFor(ek); ok {
			t.Errorf("InvolvedKeyFor(%v) = %v, want none", ek, got)
		}
	}
}

// EventKey is the aggregation key: the same note, the same Event; a
// different type, reason or message, another one.
func TestEventKeyAggregates(t *testing.T) {
	k := Key{Kind: KindCertificate, Namespace: "d", Name: "web"}
	base := EventKey(k, EventTypeNormal, "Issuing", "m")
	if base != EventKey(k, EventTypeNormal, "Issuing", "m") {
		t.Fatal("the same note gave two keys")
	}
	for _, other := range []Key{
		EventKey(k, EventTypeWarning, "Issuing", "m"),
		EventKey(k, EventTypeNormal, "Issued", "m"),
		EventKey(k, EventTypeNormal, "Issuing", "m2"),
		EventKey(Key{Kind: KindCertificate, Namespace: "d", Name: "web2"}, EventTypeNormal, "Issuing", "m"),
	} {
		if other == base {
			t.Errorf("%v: a different note shares the key", other)
		}
	}
}
