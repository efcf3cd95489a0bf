package app

import (
	"encoding/json"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// RetainFinal is how long a final CertificateRequest, Order or Challenge is
// kept before the store's TTL may garbage-collect it. The controllers delete
// superseded ones themselves (revision history, Orders with their request,
// Challenges once the Order is valid); the TTL catches what a crash or an
// abandoned resource leaves behind. It is longer than the renewal interval
// of any usual certificate, so the current revision's request is replaced
// before it expires; if one does expire, the trigger compares the issued
// certificate with the spec instead (docs/design/certificate-controllers.md's fallback).
const RetainFinal = 180 * 24 * time.Hour

// RetainEvents is how long an Event (a recorded failure) is kept after its
// last update.
const RetainEvents = 7 * 24 * time.Hour

// gcKinds are the kinds certfn creates itself and that the TTL may collect.
var gcKinds = map[string]bool{api.KindCertificateRequest: true, "Order": true, "Challenge": true, api.KindChallengeLease: true}

// ExpiresAt is the retention policy of the cloud stores (their TTL: dynamo.Options.ExpiresAt, firestore.Options.ExpiresAt): a
// CertificateRequest, Order or Challenge written in a final state (an
// Order of a CertificateSigningRequest: RetainCSR, as its owner), and a
// ChallengeLease written released (no holder), expire RetainFinal after
// that write; an Event expires RetainEvents after its last update;
// everything else never expires. A released lease is kept so
// that its version only grows while a writer may still hold an older
// version (seconds to minutes: one invocation); after RetainFinal no such
// writer exists, and a lease claimed again is written anew, without TTL.
func ExpiresAt(rec ports.Record, now time.Time) time.Time {
	if rec.Key.Kind == api.KindEvent {
		return now.Add(RetainEvents)
	}
	if rec.Key.Kind == api.KindCertificateSigningRequest {
		return csrExpiresAt(rec)
	}
	if !gcKinds[rec.Key.Kind] {
		return time.Time{}
	}
	info, ok := api.KindInfoFor(rec.Key.Kind)
	if !ok {
		return time.Time{}
	}
	obj := info.New()
	if err := json.Unmarshal(rec.Data, obj); err != nil {
		return time.Time{}
	}
	if f, ok := obj.(interface{ IsFinal() bool }); ok && f.IsFinal() {
		if rec.Owner.Kind == api.KindCertificateSigningRequest {
			// The ACME Order of a CSR goes when the CSR goes (RetainCSR):
			// nothing reads it once the CSR holds its certificate.
			return now.Add(RetainCSR)
		}
		return now.Add(RetainFinal)
	}
	if l, ok := obj.(*api.ChallengeLease); ok && l.Spec.Holder == nil {
		return now.Add(RetainFinal)
	}
	return time.Time{}
}
