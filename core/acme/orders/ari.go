package orders

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// issuedWait is how long a valid Order waits for its Certificate to record
// the new revision before copying renewal information to it.
const issuedWait = time.Minute

// afterValid runs on a valid Order: it cleans up and deletes the
// Challenges (docs/design/acme-orders.md), then keeps the certificate's ACME renewal
// information (RFC 9773) fresh and copies it to the Certificate while this
// Order's request is the Certificate's current revision. It is fetched
// first once the Certificate has stored the certificate — never on the
// way to storing it: the window of a certificate issued a moment ago is
// the one the server set at issuance, and the request would delay the
// certificate — then again no earlier than the server's Retry-After and
// at least every ARIInterval otherwise. Once a newer revision is issued
// the Order is not scheduled again.
func (r *run) afterValid(ctx context.Context) error {
	chs, err := r.owned(ctx)
	if err != nil {
		return err
	}
	for _, ch := range chs {
		// A presented Challenge is cleaned up by its controller's
		// BeforeDelete (kernel.Deleter) before the record goes.
		if err := r.e.DeleteObject(ctx, api.KeyOf(ch), 0, api.Key{}); err != nil {
			return fmt.Errorf("order %s: delete challenge %s: %w", r.rec.Key, ch.Name, err)
		}
	}
	cert, certVersion, certNext, current, err := r.currentCertificate(ctx)
	if err != nil || cert == nil {
		return err
	}
	if !current {
		return r.wait(ctx, r.now.Add(issuedWait))
	}
	ri := r.o.Status.RenewalInfo
	if ri == nil || (ri.NextCheck != nil && !r.now.Before(ri.NextCheck.Time)) {
		return r.refreshRenewalInfo(ctx)
	}
	if ri.WindowStart == nil {
		return r.wait(ctx, time.Time{}) // the server has no ARI
	}
	if !sameRenewalInfo(cert.Status.RenewalInfo, ri) {
		cert.Status.RenewalInfo = ri
		if _, err := r.e.UpdateObject(ctx, cert, certVersion, certNext); err != nil {
			return fmt.Errorf("order %s: copy renewal information to certificate %s: %w", r.rec.Key, cert.Name, err)
		}
	}
	var next time.Time
	if ri.NextCheck != nil {
		next = ri.NextCheck.Time
	}
	return r.wait(ctx, next)
}

// currentCertificate loads the Certificate that owns this Order's request
// and reports whether that request's revision is the Certificate's
// current one. A nil Certificate (request or Certificate deleted, or a
// newer revision issued) means there is nothing more to do: the Order
// is left unscheduled.
func (r *run) currentCertificate(ctx context.Context) (*api.Certificate, int64, time.Time, bool, error) {
	crKey := api.OwnerKey(r.o)
	if crKey.Kind != api.KindCertificateRequest {
		// No owner, or a CertificateSigningRequest: its certificate is the
		// requester's, renewed by a new CSR, so nothing here uses ARI.
		return nil, 0, time.Time{}, false, r.wait(ctx, time.Time{})
	}
	crObj, _, err := r.load(ctx, crKey)
	if err != nil || crObj == nil {
		return nil, 0, time.Time{}, false, orStop(ctx, r, err)
	}
	cr := crObj.(*api.CertificateRequest)
	rev, _ := strconv.Atoi(cr.Annotations[api.AnnotationRevision])
	certKey := api.OwnerKey(cr)
	if certKey.IsZero() || rev == 0 {
		return nil, 0, time.Time{}, false, r.wait(ctx, time.Time{})
	}
	certObj, certRec, err := r.load(ctx, certKey)
	if err != nil || certObj == nil {
		return nil, 0, time.Time{}, false, orStop(ctx, r, err)
	}
	cert := certObj.(*api.Certificate)
	cur := 0
	if cert.Status.Revision != nil {
		cur = *cert.Status.Revision
	}
	if cur > rev {
		return nil, 0, time.Time{}, false, r.wait(ctx, time.Time{})
	}
	return cert, certRec.Version, certRec.NextRunAt, cur == rev, nil
}

func orStop(ctx context.Context, r *run, err error) error {
	if err != nil {
		return err
	}
	return r.wait(ctx, time.Time{})
}

// load reads and decodes key; nil when it does not exist.
func (r *run) load(ctx context.Context, key api.Key) (api.Object, ports.Record, error) {
	rec, err := r.e.Store().Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, ports.Record{}, nil
	}
	if err != nil {
		return nil, ports.Record{}, fmt.Errorf("read %s: %w", key, err)
	}
	obj, err := r.e.Decode(rec)
	return obj, rec, err
}

// refreshRenewalInfo fetches ARI for the issued certificate and records
// it on the Order (the next invocation copies it to the Certificate).
func (r *run) refreshRenewalInfo(ctx context.Context) error {
	iss, _, err := r.issuer(ctx)
	if err != nil {
		return err
	}
	if iss == nil || iss.GetSpec().ACME == nil {
		return r.wait(ctx, time.Time{})
	}
	chain, err := pki.ParseChainPEM(r.o.Status.Certificate)
	if err != nil {
		return r.wait(ctx, time.Time{})
	}
	client, err := r.h.cfg.Accounts.Client(iss)
	if errors.Is(err, acme.ErrServerNotAllowed) {
		// The issuer's server is no longer allowed: no request; the
		// Certificate renews on its own schedule.
		return r.wait(ctx, time.Time{})
	}
	if err != nil {
		return err
	}
	got, err := client.RenewalInfo(ctx, chain[0])
	r.e.Metrics().Inc("certfn_acme_requests_total", "op", "renewal_info")
	switch {
	case errors.Is(err, acme.ErrARIUnsupported) || errs.IsPermanent(err):
		// No ARI for this certificate: remember the attempt, never retry.
		r.o.Status.RenewalInfo = &api.RenewalInfo{LastChecked: api.NewTime(r.now)}
		return r.write(ctx, time.Time{}, "record that the server has no renewal information")
	case err != nil:
		return fmt.Errorf("order %s: %w", r.rec.Key, err)
	}
	r.o.Status.RenewalInfo = renewalInfo(got, r.o.Status.RenewalInfo, r.now, r.h.cfg.ARIInterval)
	return r.write(ctx, r.o.Status.RenewalInfo.NextCheck.Time, "record renewal information")
}

// renewalInfo converts an ARI answer. The selected time is a uniformly
// random moment inside the window (RFC 9773 §4.2), kept from old while
// the window is unchanged. The next check is after the server's
// Retry-After, or after interval when it gave none.
func renewalInfo(got acme.RenewalInfo, old *api.RenewalInfo, now time.Time, interval time.Duration) *api.RenewalInfo {
	next := interval
	if got.RetryAfter > 0 {
		next = got.RetryAfter
	}
	out := &api.RenewalInfo{
		WindowStart: api.NewTime(got.WindowStart), WindowEnd: api.NewTime(got.WindowEnd),
		LastChecked: api.NewTime(now), NextCheck: api.NewTime(now.Add(next)),
		ExplanationURL: got.ExplanationURL, CertificateID: got.CertificateID,
	}
	if old != nil && old.SelectedTime != nil && old.WindowStart != nil && old.WindowEnd != nil &&
		old.WindowStart.Equal(got.WindowStart) && old.WindowEnd.Equal(got.WindowEnd) {
		out.SelectedTime = old.SelectedTime
	} else {
		out.SelectedTime = api.NewTime(selectTime(got.WindowStart, got.WindowEnd))
	}
	return out
}

func selectTime(start, end time.Time) time.Time {
	if !end.After(start) {
		return start
	}
	return start.Add(time.Duration(rand.Int64N(int64(end.Sub(start)))))
}

func sameRenewalInfo(a, b *api.RenewalInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	eq := func(x, y *api.Time) bool {
		if x == nil || y == nil {
			return x == y
		}
		return x.Equal(y.Time)
	}
	return eq(a.WindowStart, b.WindowStart) && eq(a.WindowEnd, b.WindowEnd) && eq(a.SelectedTime, b.SelectedTime) &&
		eq(a.LastChecked, b.LastChecked) && eq(a.NextCheck, b.NextCheck) && a.ExplanationURL == b.ExplanationURL &&
		a.CertificateID == b.CertificateID
}
