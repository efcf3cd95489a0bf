package challenges

import "time"

// MaxCheckInterval caps the wait between two failing self-checks.
const MaxCheckInterval = 5 * time.Minute

// checkAfter is the wait after a failing self-check: CheckInterval while
// the Challenge is young, then a quarter of the time since it was
// presented, up to MaxCheckInterval (or CheckInterval, if that is
// longer). A record that never becomes visible (a DNS provider that
// accepted the change and never served it) is not checked every
// CheckInterval for as long as the Order lives — 720 rounds an hour at 5 s,
// each a DNS query round and, on the clouds, a function invocation — but
// 32 in the first hour and 12 an hour after that (the bound
// TestSelfCheckBacksOff measures). A record that shows up in the first
// seconds is seen as soon as before; cert-manager checks every 10 s for
// ever.
func (r *run) checkAfter() time.Duration {
	d := r.h.cfg.CheckInterval
	if p := r.c.Status.PresentedAt; p != nil {
		d = max(d, r.now.Sub(p.Time)/4)
	}
	return max(min(d, MaxCheckInterval), r.h.cfg.CheckInterval)
}
