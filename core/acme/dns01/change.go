package dns01

import "context"

// ChangeTracker is implemented by providers whose API applies a change
// asynchronously and names it (Route53's change ID, INSYNC once every
// authoritative server has it). The Solver uses it without blocking:
//
//   - after AppendRecords, Present asks LastChange and keeps the ID on
//     status.dns01.change (PresentResult.Change);
//   - Check calls Synced once for that ID before its DNS round: not synced
//     is a not-ok check ("waiting for the provider to apply change ..."),
//     and the caller looks again later; synced goes on to the DNS round.
//
// A provider value is built per call (ProviderFactory), so the ID must
// travel through the status: Synced receives it, never reads it from the
// provider's memory.
type ChangeTracker interface {
	// LastChange returns the ID of the change the last AppendRecords call
	// of this value submitted; "" when it submitted none (the value was
	// already there).
	LastChange() string
	// Synced reports, with one API call, whether change (a LastChange ID)
	// has been applied to every authoritative server of zone. A change
	// the provider no longer knows is reported synced (the DNS round
	// decides). Errors follow core/errs: permanent for configuration
	// problems, transient otherwise.
	Synced(ctx context.Context, zone, change string) (bool, error)
}
