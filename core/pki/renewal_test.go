package pki

import (
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

func TestApplyRenewalWindows(t *testing.T) {
	nb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na := nb.Add(90 * 24 * time.Hour)
	desired := nb.Add(60*24*time.Hour + 10*time.Hour + 30*time.Minute) // 2 Mar 10:30 UTC
	w := func(cron, tz string, d time.Duration) api.CertificateRenewalWindows {
		return api.CertificateRenewalWindows{Cron: cron, Timezone: tz, WindowDuration: api.NewDuration(d)}
	}
	for _, tc := range []struct {
		name    string
		windows []api.CertificateRenewalWindows
		want    time.Time
		wantErr string
	}{
		{"no windows", nil, desired, ""},
		{"inside a window: unchanged", []api.CertificateRenewalWindows{w("0 10 * * *", "", time.Hour)}, desired, ""},
		{"before today's window: its opening", []api.CertificateRenewalWindows{w("0 22 * * *", "", time.Hour)},
			time.Date(2026, 3, 2, 22, 0, 0, 0, time.UTC), ""},
		{"after today's window: tomorrow's", []api.CertificateRenewalWindows{w("0 9 * * *", "", time.Hour)},
			time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC), ""},
		{"the earliest of several windows", []api.CertificateRenewalWindows{w("0 22 * * *", "", time.Hour), w("0 12 * * *", "", 30*time.Minute)},
			time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC), ""},
		{"one window open is enough", []api.CertificateRenewalWindows{w("0 22 * * *", "", time.Hour), w("0 10 * * *", "", time.Hour)}, desired, ""},
		{"time zone", []api.CertificateRenewalWindows{w("0 3 * * *", "Europe/Paris", time.Hour)},
			time.Date(2026, 3, 3, 2, 0, 0, 0, time.UTC), ""}, // 03:00 CET
		{"descriptor", []api.CertificateRenewalWindows{w("@monthly", "", 24*time.Hour)},
			time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), ""},
		{"no window before expiry", []api.CertificateRenewalWindows{w("0 0 1 1 *", "", time.Hour)}, desired, "no renewal window opens"},
		{"bad cron", []api.CertificateRenewalWindows{w("61 * * * *", "", time.Hour)}, desired, "cron"},
		{"no duration", []api.CertificateRenewalWindows{{Cron: "* * * * *"}}, desired, "windowDuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyRenewalWindows(nb, na, desired, tc.windows)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if !got.Equal(tc.want) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseRenewalCron(t *testing.T) {
	if _, err := ParseRenewalCron("CRON_TZ=UTC", ""); err == nil {
		t.Error("a time zone prefix without a schedule parsed")
	}
	if _, err := ParseRenewalCron("0 12 * * *", "America/Denver"); err != nil {
		t.Errorf("valid schedule: %v", err)
	}
}

// FuzzParseRenewalCron: user input never panics the parser.
func FuzzParseRenewalCron(f *testing.F) {
	for _, s := range []string{"CRON_TZ=UTC", "TZ=", "0 12 * * *", "@every 1h", "CRON_TZ=Europe/Paris 0 3 * * *", "* * * * * *", ""} {
		f.Add(s, "")
		f.Add(s, "UTC")
	}
	f.Fuzz(func(t *testing.T, spec, tz string) {
		_, _ = ParseRenewalCron(spec, tz)
	})
}
