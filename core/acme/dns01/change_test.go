package dns01

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// trackingProvider is a memProvider that names its changes (as Route53
// does) and reports them synced only once told to.
type trackingProvider struct {
	*memProvider

	mu        sync.Mutex
	seq       int
	last      string
	synced    map[string]bool
	syncCalls []string // "zone change" per Synced call
	syncErr   error
}

func (p *trackingProvider) AppendRecords(ctx context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	out, err := p.memProvider.AppendRecords(ctx, zone, recs)
	if err == nil {
		p.mu.Lock()
		p.seq++
		p.last = "C" + string(rune('0'+p.seq))
		p.mu.Unlock()
	}
	return out, err
}

func (p *trackingProvider) LastChange() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *trackingProvider) Synced(_ context.Context, zone, change string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncCalls = append(p.syncCalls, zone+" "+change)
	if p.syncErr != nil {
		return false, p.syncErr
	}
	return p.synced[change], nil
}

func (p *trackingProvider) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.syncCalls...)
}

// TestChangeTracker: Present keeps the provider's change ID on the status;
// Check asks for its state once per round and waits for it before asking
// the DNS servers; failures keep their class; without an ID (or for a
// provider that does not track changes) Check goes straight to DNS.
func TestChangeTracker(t *testing.T) {
	cases := []struct {
		name      string
		synced    bool
		syncErr   error
		noChange  bool // status.dns01 without a change ID
		wantOK    bool
		wantErr   bool
		permanent bool
		why       string
		wantCalls int
		wantDNS   bool // the TXT servers were asked
	}{
		{name: "change pending", why: "waiting for the webhook/mem provider to apply change C1 to zone example.test. (presented 7s ago)", wantCalls: 1},
		{name: "change in sync", synced: true, wantOK: true, why: "on all 2 servers", wantCalls: 1, wantDNS: true},
		{name: "no change recorded", noChange: true, wantOK: true, why: "on all 2 servers", wantDNS: true},
		{name: "transient failure", syncErr: errors.New("throttled"), wantErr: true, wantCalls: 1},
		{name: "permanent failure", syncErr: errs.Permanentf("access denied"), wantErr: true, permanent: true, wantCalls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tp *trackingProvider
			e := newEnv(t, false, func(d *Deps) {
				mem := d.Providers[WebhookKey("mem")]
				d.Providers[WebhookKey("mem")] = func(ctx context.Context, r ProviderRequest) (Provider, error) {
					p, err := mem(ctx, r)
					if err != nil {
						return nil, err
					}
					if tp == nil {
						tp = &trackingProvider{memProvider: p.(*memProvider), synced: map[string]bool{}}
					}
					return tp, nil
				}
			})
			ctx := context.Background()
			ch := challenge("tracked.example.test")
			res, err := e.solver.Present(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			if res.Change != "C1" || res.Status().Change != "C1" {
				t.Fatalf("Present = %+v, want change C1 on the result and its status", res)
			}
			tp.synced["C1"], tp.syncErr = tc.synced, tc.syncErr
			ch.Status.DNS01, ch.Status.PresentedAt = res.Status(), api.NewTime(t0)
			if tc.noChange {
				ch.Status.DNS01.Change = ""
			}
			e.clk.Advance(7 * time.Second)
			before := len(e.dns.ns1.Queries())
			ok, why, err := e.solver.Check(ctx, ch)
			if ok != tc.wantOK || (err != nil) != tc.wantErr || errs.IsPermanent(err) != tc.permanent {
				t.Fatalf("Check = %v, %q, %v; want ok=%v err=%v permanent=%v", ok, why, err, tc.wantOK, tc.wantErr, tc.permanent)
			}
			if err != nil && !strings.Contains(err.Error(), "spec.solver.dns01.webhook/mem: state of change C1") {
				t.Errorf("error %q does not name the field and the change", err)
			}
			if !strings.Contains(why, tc.why) {
				t.Errorf("why = %q, want it to contain %q", why, tc.why)
			}
			if calls := tp.calls(); len(calls) != tc.wantCalls || (tc.wantCalls > 0 && calls[0] != "example.test. C1") {
				t.Errorf("Synced calls = %q, want %d for \"example.test. C1\"", calls, tc.wantCalls)
			}
			asked := countPrefix(e.dns.ns1.Queries()[before:], "TXT ") > 0
			if asked != tc.wantDNS {
				t.Errorf("DNS servers asked = %v, want %v", asked, tc.wantDNS)
			}
		})
	}
}

// Presenting a value that is already there (a getter provider) records
// no change: Check then relies on the DNS round alone.
func TestChangeTrackerNoChangeWhenPresent(t *testing.T) {
	f := startFakeDNS(t)
	mem := &memProvider{targets: []*zoneData{f.ns1.data, f.ns2.data}}
	tp := &trackingGetter{trackingProvider: &trackingProvider{memProvider: mem, synced: map[string]bool{}}}
	s := NewSolver(Deps{
		Providers: map[string]ProviderFactory{WebhookKey("mem"): func(context.Context, ProviderRequest) (Provider, error) {
			// A fresh value per call, as a real factory builds.
			return &trackingGetter{trackingProvider: &trackingProvider{memProvider: mem, synced: tp.synced}}, nil
		}},
		Resolver: f.resolver(),
	})
	ch := challenge("again.example.test")
	first, err := s.Present(context.Background(), ch)
	if err != nil || first.Change != "C1" {
		t.Fatalf("first Present = %+v, %v; want change C1", first, err)
	}
	second, err := s.Present(context.Background(), ch)
	if err != nil || second.Change != "" {
		t.Fatalf("second Present = %+v, %v; want no change (value already there)", second, err)
	}
}

type trackingGetter struct{ *trackingProvider }

func (p *trackingGetter) GetRecords(ctx context.Context, zone string) ([]libdns.Record, error) {
	return memGetter{p.memProvider}.GetRecords(ctx, zone)
}
