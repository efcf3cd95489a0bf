package pki

import (
	"fmt"
	"strings"
	"time"
	// The IANA time zone database, embedded: renewal windows name zones,
	// and certfn runs where no zoneinfo is installed (scratch images,
	// Lambda), so validation and renewal must not depend on the host.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"github.com/certfn/certfn/core/api"
)

// cronParser reads cert-manager's renewal window schedules: five fields
// (minute hour day-of-month month day-of-week) or a descriptor (@daily,
// @every 1h, ...), as cert-manager's util.CronParse.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseRenewalCron parses a renewal window's cron schedule in timezone (an
// IANA zone; "" is UTC). The error names what is wrong with the schedule.
func ParseRenewalCron(spec, timezone string) (sched cron.Schedule, err error) {
	t := strings.TrimSpace(spec)
	if strings.HasPrefix(t, "CRON_TZ=") || strings.HasPrefix(t, "TZ=") {
		if _, rest, _ := strings.Cut(t, " "); strings.TrimSpace(rest) == "" {
			return nil, fmt.Errorf("failed to parse cron spec %q: expected timezone prefix to be followed by a cron spec", spec)
		}
	}
	// The parser panics on some malformed input; this is user input.
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("failed to parse cron spec %q: malformed", spec)
		}
	}()
	s := spec
	if timezone != "" {
		s = "CRON_TZ=" + timezone + " " + spec
	}
	sched, err = cronParser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("failed to parse cron spec %q: %w", spec, err)
	}
	return sched, nil
}

// RenewalDisabled reports whether spec.renewal.policy is Disabled.
func RenewalDisabled(r *api.CertificateRenewal) bool {
	return r != nil && r.Policy == api.RenewalPolicyDisabled
}

// ApplyRenewalWindows moves desired, the renewal time of a certificate
// valid from notBefore to notAfter, into spec.renewal's windows, as
// cert-manager's applyRenewBeforeWithWindows: desired itself when it
// falls in an open window (a window opens at each time its cron schedule
// names and stays open for windowDuration); otherwise the earliest
// opening of any window after desired, up to notAfter + windowDuration.
// With no windows desired is returned. When no window opens in time the
// result is desired and the error says so; a window that does not parse
// is an error too (validation refuses both before they get here). The
// result is truncated to the second, as status timestamps are.
func ApplyRenewalWindows(notBefore, notAfter, desired time.Time, windows []api.CertificateRenewalWindows) (time.Time, error) {
	desired = desired.Truncate(time.Second)
	if len(windows) == 0 {
		return desired, nil
	}
	var best time.Time
	for i, w := range windows {
		if w.WindowDuration == nil || w.WindowDuration.Duration <= 0 {
			return desired, fmt.Errorf("spec.renewal.windows[%d].windowDuration: must be a positive duration", i)
		}
		if w.Timezone != "" {
			if _, err := time.LoadLocation(w.Timezone); err != nil {
				return desired, fmt.Errorf("spec.renewal.windows[%d].timezone: %w", i, err)
			}
		}
		sched, err := ParseRenewalCron(w.Cron, w.Timezone)
		if err != nil {
			return desired, fmt.Errorf("spec.renewal.windows[%d].cron: %w", i, err)
		}
		d := w.WindowDuration.Duration
		// The latest opening at or before desired is in (desired-d, desired]
		// exactly when desired is inside a window that opened then.
		if open := sched.Next(desired.Add(-d)); !open.After(desired) {
			return desired, nil
		}
		// The first opening at or after desired (Next is strictly after).
		open := sched.Next(desired.Add(-time.Second))
		if open.After(notAfter.Add(d)) || open.Before(notBefore.Add(-d)) {
			continue
		}
		if best.IsZero() || open.Before(best) {
			best = open
		}
	}
	if best.IsZero() {
		return desired, fmt.Errorf("no renewal window opens between %s and the certificate's expiry %s",
			desired.UTC().Format(time.RFC3339), notAfter.UTC().Format(time.RFC3339))
	}
	return best.Truncate(time.Second), nil
}
