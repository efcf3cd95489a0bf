package acme

import (
	"fmt"
	"time"
)

// Default polling of a resource the ACME server is working on.
const (
	// DefaultPollFirst is the wait before the first poll after the request
	// that started the server's work (a challenge accepted, an order
	// finalized). A server that validates or issues at once (Pebble, a
	// private CA) answers within it; a slower one is asked again later.
	DefaultPollFirst = 150 * time.Millisecond
	// DefaultPollMax caps the wait between two polls (the fixed interval
	// certfn used before backing off).
	DefaultPollMax = 2 * time.Second
)

// Polling says when the Order and Challenge steps poll a resource the ACME
// server is working on: an authorization after its challenge was
// accepted, an order after it was finalized. The first poll comes First
// after the request that started the work; each following wait doubles,
// up to Max. A Retry-After from the server always wins: the next poll is
// then exactly that far away, longer or shorter than the backoff (RFC 8555
// §8.2 asks clients to follow it). Every poll is one ACME request, so the
// number of polls for a resource that takes T to complete is about
// log2(T/First)+1 while T < Max, then one per Max.
type Polling struct {
	// First is the wait before the first poll (default DefaultPollFirst).
	First time.Duration
	// Max caps the wait between polls (default DefaultPollMax; raised to
	// First when smaller).
	Max time.Duration
}

// WithDefaults fills the zero fields.
func (p Polling) WithDefaults() Polling {
	if p.First <= 0 {
		p.First = DefaultPollFirst
	}
	if p.Max <= 0 {
		p.Max = DefaultPollMax
	}
	if p.Max < p.First {
		p.Max = p.First
	}
	return p
}

// Delay is the wait before poll number polls+1, given the polls already
// made since the work started (0 right after accept or finalize) and the
// server's Retry-After (zero when absent).
func (p Polling) Delay(polls int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	p = p.WithDefaults()
	d := p.First
	for i := 0; i < polls && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Bounds of a configured polling wait.
const (
	minPollWait = 10 * time.Millisecond
	maxPollWait = time.Hour
)

// ParsePolling reads a Polling from its two settings, each a Go duration
// ("150ms", "2s") or empty for the default; errors name the setting
// (firstName, maxName: a flag or an environment variable) and the rule.
func ParsePolling(firstName, first, maxName, max string) (Polling, error) {
	var p Polling
	parse := func(name, v string) (time.Duration, error) {
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a duration (e.g. 150ms, 2s)", name, v)
		}
		if d < minPollWait || d > maxPollWait {
			return 0, fmt.Errorf("%s: %s is outside %s..%s", name, d, minPollWait, maxPollWait)
		}
		return d, nil
	}
	var err error
	if p.First, err = parse(firstName, first); err != nil {
		return Polling{}, err
	}
	if p.Max, err = parse(maxName, max); err != nil {
		return Polling{}, err
	}
	if got := p.WithDefaults(); p.Max > 0 && p.Max < got.First {
		return Polling{}, fmt.Errorf("%s: %s is below %s (%s)", maxName, p.Max, firstName, got.First)
	}
	return p, nil
}
