package acme

import (
	"testing"
	"time"
)

func TestPollingDelay(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		p     Polling
		polls int
		ra    time.Duration
		want  time.Duration
	}{
		{name: "defaults first", polls: 0, want: 150 * ms},
		{name: "defaults doubles", polls: 1, want: 300 * ms},
		{name: "defaults third", polls: 2, want: 600 * ms},
		{name: "defaults capped", polls: 4, want: 2 * time.Second},
		{name: "many polls stay capped", polls: 1000, want: 2 * time.Second},
		{name: "retry-after wins over a shorter backoff", polls: 0, ra: 3 * time.Second, want: 3 * time.Second},
		{name: "retry-after wins over a longer backoff", polls: 9, ra: 500 * ms, want: 500 * ms},
		{name: "custom", p: Polling{First: time.Second, Max: 10 * time.Second}, polls: 3, want: 8 * time.Second},
		{name: "max below first", p: Polling{First: time.Second, Max: 100 * ms}, polls: 2, want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.polls, tt.ra); got != tt.want {
				t.Fatalf("Delay(%d, %s) = %s, want %s", tt.polls, tt.ra, got, tt.want)
			}
		})
	}
}

func TestParsePolling(t *testing.T) {
	tests := []struct {
		name, first, max string
		want             Polling
		err              string
	}{
		{name: "defaults"},
		{name: "both", first: "250ms", max: "5s", want: Polling{First: 250 * time.Millisecond, Max: 5 * time.Second}},
		{name: "first only", first: "1s", want: Polling{First: time.Second}},
		{name: "not a duration", first: "fast", err: `--first: "fast" is not a duration (e.g. 150ms, 2s)`},
		{name: "too short", max: "1ms", err: "--max: 1ms is outside 10ms..1h0m0s"},
		{name: "too long", first: "2h", err: "--first: 2h0m0s is outside 10ms..1h0m0s"},
		{name: "max below first", first: "3s", max: "2s", err: "--max: 2s is below --first (3s)"},
		{name: "max below the default first", max: "100ms", err: "--max: 100ms is below --first (150ms)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePolling("--first", tt.first, "--max", tt.max)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
