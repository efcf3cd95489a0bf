package challenges

// Challenge leases: the atomic part of docs/design/acme-orders.md's "never two Challenges for
// the same name and type at once". Workers run in parallel, so checking the
// list of Challenges and then marking one processing is a check-then-act
// race; instead a Challenge claims the global ChallengeLease of its
// (type, DNS name) with a conditional write before it is marked processing:
//
//   - no lease yet: Create it (ports.ErrAlreadyExists: another claimer won);
//   - released (no holder): Update it conditionally on its version;
//   - held by this Challenge: a crash or a lost status write came between
//     the claim and the processing write; carry on;
//   - held by a Challenge that no longer exists (or was recreated under its
//     name) or that is final: a crash came between its last write and its
//     release; take it over with a conditional Update;
//   - held by another Challenge that exists and is not final: wait. Whether
//     that holder is processing does not matter: one that is not is either
//     between its claim and its processing write, or waiting for a slot with
//     the lease, and runs next.
//
// The holder releases the lease (conditional Update to no holder) after
// writing its final state, and before it is deleted (Controller.BeforeDelete).
//
// Leases are released, never deleted: a store's Create starts every record
// at version 1, so after a delete and a re-create a write conditional on a
// version read before the delete could land on the new lease (for instance
// a duplicate delivery releasing a lease that another Challenge has just
// claimed). Kept records make versions grow monotonically per name, so
// every conditional lease write above acts on exactly what was read. The
// cost is one small record per (type, DNS name) ever validated.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/kernel"
	"github.com/certfn/certfn/core/ports"
)

// LeaseKey returns the key of the lease ch must hold while processing.
func LeaseKey(ch *api.Challenge) api.Key {
	return api.Key{Kind: api.KindChallengeLease, Name: api.ChallengeLeaseName(ch.Spec.Type, ch.Spec.DNSName)}
}

// holderOf returns ch as a lease holder.
func holderOf(ch *api.Challenge) *api.ChallengeLeaseHolder {
	return &api.ChallengeLeaseHolder{Namespace: ch.Namespace, Name: ch.Name, UID: ch.UID}
}

// heldBy reports whether l is held by ch (same namespace, name and UID).
func heldBy(l *api.ChallengeLease, ch *api.Challenge) bool {
	h := l.Spec.Holder
	return h != nil && h.Namespace == ch.Namespace && h.Name == ch.Name && h.UID == ch.UID
}

// storedLease is a lease as read, with the version its writes depend on.
type storedLease struct {
	rec   ports.Record
	lease *api.ChallengeLease
}

// getLease reads ch's lease; ok is false when there is none.
func getLease(ctx context.Context, e kernel.Objects, ch *api.Challenge) (storedLease, bool, error) {
	key := LeaseKey(ch)
	rec, err := e.Store().Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return storedLease{}, false, nil
	}
	if err != nil {
		return storedLease{}, false, fmt.Errorf("read %s: %w", key, err)
	}
	obj, err := e.Decode(rec)
	if err != nil {
		return storedLease{}, false, err
	}
	l, ok := obj.(*api.ChallengeLease)
	if !ok {
		return storedLease{}, false, fmt.Errorf("record %s is not a ChallengeLease", key)
	}
	return storedLease{rec: rec, lease: l}, true, nil
}

// encodeLease renders l for the store (resourceVersion is the record's).
func encodeLease(l *api.ChallengeLease) ([]byte, error) {
	l.ResourceVersion = ""
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", api.KeyOf(l), err)
	}
	return b, nil
}

// createLease stores a new lease held by ch. ports.ErrAlreadyExists (wrapped)
// means another claimer created it first.
func createLease(ctx context.Context, e kernel.Objects, ch *api.Challenge, now time.Time) error {
	key := LeaseKey(ch)
	l := &api.ChallengeLease{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertfnACMEV1Alpha1, Kind: api.KindChallengeLease},
		ObjectMeta: api.ObjectMeta{Name: key.Name, CreationTimestamp: api.NewTime(now)},
		Spec: api.ChallengeLeaseSpec{Type: ch.Spec.Type, DNSName: leaseDNSName(ch), Holder: holderOf(ch),
			AcquiredAt: api.NewTime(now)},
	}
	data, err := encodeLease(l)
	if err != nil {
		return err
	}
	if _, err := e.Store().Create(ctx, ports.Record{Key: key, Data: data}); err != nil {
		return fmt.Errorf("create %s for challenge %s/%s: %w", key, ch.Namespace, ch.Name, err)
	}
	e.Metrics().Inc("certfn_state_writes_total", "kind", api.KindChallengeLease)
	return nil
}

// setHolder writes sl's lease with holder h (nil releases it),
// conditionally on the version read. ports.ErrConflict (wrapped) means it
// changed since.
func setHolder(ctx context.Context, e kernel.Objects, sl storedLease, h *api.ChallengeLeaseHolder, now time.Time) error {
	l := sl.lease
	l.Spec.Holder = h
	if h != nil {
		l.Spec.AcquiredAt = api.NewTime(now)
	} else {
		l.Spec.ReleasedAt = api.NewTime(now)
	}
	data, err := encodeLease(l)
	if err != nil {
		return err
	}
	if _, err := e.Store().Update(ctx, ports.Record{Key: sl.rec.Key, Version: sl.rec.Version, Data: data}); err != nil {
		return fmt.Errorf("write %s: %w", sl.rec.Key, err)
	}
	e.Metrics().Inc("certfn_state_writes_total", "kind", api.KindChallengeLease)
	return nil
}

func leaseDNSName(ch *api.Challenge) string {
	return strings.ToLower(strings.TrimSuffix(ch.Spec.DNSName, "."))
}

// holderLive reports whether h still names a Challenge that exists with
// h's UID and is not final, i.e. whether it will use or release the lease
// by itself.
func holderLive(ctx context.Context, e kernel.Objects, h *api.ChallengeLeaseHolder) (bool, error) {
	key := api.Key{Kind: api.KindChallenge, Namespace: h.Namespace, Name: h.Name}
	rec, err := e.Store().Get(ctx, key)
	if errors.Is(err, ports.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read lease holder %s: %w", key, err)
	}
	obj, err := e.Decode(rec)
	if err != nil {
		return false, err
	}
	ch, ok := obj.(*api.Challenge)
	return ok && ch.UID == h.UID && !ch.IsFinal(), nil
}

// claim makes ch the holder of its lease if it is free, stale or already
// ch's, and reports whether ch holds it. false with a nil error means
// another Challenge holds it (or won a concurrent claim): wait.
func claim(ctx context.Context, e kernel.Objects, ch *api.Challenge, now time.Time) (bool, error) {
	sl, ok, err := getLease(ctx, e, ch)
	if err != nil {
		return false, err
	}
	return claimRead(ctx, e, ch, sl, ok, now)
}

// claimRead is claim on what getLease returned.
func claimRead(ctx context.Context, e kernel.Objects, ch *api.Challenge, sl storedLease, exists bool, now time.Time) (bool, error) {
	if !exists {
		err := createLease(ctx, e, ch, now)
		if errors.Is(err, ports.ErrAlreadyExists) {
			return false, nil
		}
		return err == nil, err
	}
	return claimStored(ctx, e, ch, sl, now)
}

// claimStored is claim on a lease already read.
func claimStored(ctx context.Context, e kernel.Objects, ch *api.Challenge, sl storedLease, now time.Time) (bool, error) {
	switch h := sl.lease.Spec.Holder; {
	case heldBy(sl.lease, ch):
		return true, nil
	case h != nil:
		live, err := holderLive(ctx, e, h)
		if err != nil || live {
			return false, err
		}
		e.Metrics().Inc("certfn_acme_challenge_lease_takeovers_total")
	}
	err := setHolder(ctx, e, sl, holderOf(ch), now)
	if errors.Is(err, ports.ErrConflict) || errors.Is(err, ports.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// release frees ch's lease if ch holds it. A lease changed since it was
// read is no longer ch's to release (ch is final or being deleted, so
// nothing makes it ch's again): that is not an error.
func release(ctx context.Context, e kernel.Objects, ch *api.Challenge, now time.Time) error {
	sl, ok, err := getLease(ctx, e, ch)
	if err != nil || !ok || !heldBy(sl.lease, ch) {
		return err
	}
	err = setHolder(ctx, e, sl, nil, now)
	if errors.Is(err, ports.ErrConflict) || errors.Is(err, ports.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release the lease of challenge %s/%s: %w", ch.Namespace, ch.Name, err)
	}
	return nil
}
