package engine

import (
	"context"
	"fmt"
	"strconv"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// WakeUnfinished enqueues, for an immediate reconcile, every object whose
// work may have been in flight when a process stopped, so that a restart
// picks it up at once instead of at a safety net (an Order's WaitPoll, a
// Certificate's FollowUpGrace): a wake-up a crashed process had not
// delivered yet (it lived in its in-memory queue) is then never waited for.
// `certfn serve` calls it when it starts, with and without --until-idle.
//
// Woken, for one List per kind and no secret read:
//   - Certificates that are issuing or not Ready, and Ready ones that
//     still name a next-private-key secret (its deletion after the
//     issuance was interrupted) or whose steps after the issuance may not
//     have run (followUpPending: an ACM import, a notification);
//   - CertificateRequests that are not final;
//   - Orders that are not final, and valid Orders that still own
//     Challenges (their clean-up was interrupted);
//   - Challenges that are not final, and final ones still presented or
//     processing (their clean-up was interrupted);
//   - Issuers and ClusterIssuers that are not Ready;
//   - CertificateSigningRequests that are not final.
//
// Certificates whose next revision's request is already issued go first:
// that is the one state in which the secret may hold the next revision's
// certificate while status.revision still names the previous one (a crash
// between the issuing step's secret write and its status write), so the
// status catches up with the secret before anything else runs.
//
// Final objects are left alone (they wake nothing), and so are objects
// that wait for a later time of their own (nextRunAt and the sweep keep
// them). It returns how many keys it enqueued.
func (e *Engine) WakeUnfinished(ctx context.Context) (int, error) {
	lists := map[string][]ports.Record{}
	for _, kind := range []string{api.KindCertificate, api.KindCertificateRequest, api.KindOrder, api.KindChallenge,
		api.KindIssuer, api.KindClusterIssuer, api.KindCertificateSigningRequest} {
		recs, err := e.cfg.Store.List(ctx, ports.ListOptions{Kind: kind})
		if err != nil {
			return 0, fmt.Errorf("wake unfinished work: list %s: %w", kind, err)
		}
		lists[kind] = recs
	}
	var first, rest []api.Key
	// issuedFor: the owner's revisions whose request is issued.
	issuedFor := map[api.Key]map[int]bool{}
	for _, rec := range lists[api.KindCertificateRequest] {
		o, err := decode(rec)
		if err != nil {
			return 0, err
		}
		cr := o.(*api.CertificateRequest)
		if !cr.IsFinal() {
			rest = append(rest, rec.Key)
			continue
		}
		if rev, err := strconv.Atoi(cr.Annotations[api.AnnotationRevision]); err == nil && cr.IsIssued() && !rec.Owner.IsZero() {
			if issuedFor[rec.Owner] == nil {
				issuedFor[rec.Owner] = map[int]bool{}
			}
			issuedFor[rec.Owner][rev] = true
		}
	}
	var certs []api.Key
	for _, rec := range lists[api.KindCertificate] {
		o, err := decode(rec)
		if err != nil {
			return 0, err
		}
		c := o.(*api.Certificate)
		issuing := api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing)
		if !issuing && api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) && c.Status.NextPrivateKeySecretName == nil &&
			!e.followUpPending(c) {
			continue
		}
		next := 1
		if c.Status.Revision != nil {
			next = *c.Status.Revision + 1
		}
		if issuing && issuedFor[rec.Key][next] {
			first = append(first, rec.Key)
			continue
		}
		certs = append(certs, rec.Key)
	}
	// Certificates before their requests: a Certificate looks at its
	// requests, not the other way round.
	rest = append(certs, rest...)
	owning := map[api.Key]bool{} // Orders that own a Challenge
	var challenges []api.Key
	for _, rec := range lists[api.KindChallenge] {
		owning[rec.Owner] = true
		o, err := decode(rec)
		if err != nil {
			return 0, err
		}
		ch := o.(*api.Challenge)
		if !ch.IsFinal() || ch.Status.Presented || ch.Status.Processing {
			challenges = append(challenges, rec.Key)
		}
	}
	for _, rec := range lists[api.KindOrder] {
		o, err := decode(rec)
		if err != nil {
			return 0, err
		}
		ord := o.(*api.Order)
		if !ord.IsFinal() || (ord.Status.State == api.StateValid && owning[rec.Key]) {
			rest = append(rest, rec.Key)
		}
	}
	rest = append(rest, challenges...)
	for _, rec := range lists[api.KindCertificateSigningRequest] {
		o, err := decode(rec)
		if err != nil {
			return 0, err
		}
		if !o.(*api.CertificateSigningRequest).IsFinal() {
			rest = append(rest, rec.Key)
		}
	}
	for _, kind := range []string{api.KindIssuer, api.KindClusterIssuer} {
		for _, rec := range lists[kind] {
			o, err := decode(rec)
			if err != nil {
				return 0, err
			}
			if !api.IsTrue(o.(api.GenericIssuer).GetStatus().Conditions, api.IssuerConditionReady) {
				rest = append(rest, rec.Key)
			}
		}
	}
	r := e.direct()
	for _, k := range append(first, rest...) {
		if err := r.enqueue(ctx, k, 0); err != nil {
			return 0, fmt.Errorf("wake unfinished work: %w", err)
		}
	}
	return len(first) + len(rest), nil
}

// followUpPending says whether a Ready Certificate may still owe a step
// that runs after its issuance completed: the import of an annotated
// Certificate (whether the stored certificate is the imported one takes a
// secret read, so every annotated one is woken: its step compares serials
// and imports nothing when they match), or, with notifications on, the
// announcement of its current revision. The completion write schedules the
// renewal, not these steps, so a crash right after it would leave them to
// the resync (an hour) without this.
func (e *Engine) followUpPending(c *api.Certificate) bool {
	if c.Annotations[api.AnnotationACMImport] == "true" {
		return true
	}
	if e.cfg.Notifier == nil || c.Status.Revision == nil {
		return false
	}
	return c.Status.NotifiedRevision == nil || *c.Status.NotifiedRevision != *c.Status.Revision
}
