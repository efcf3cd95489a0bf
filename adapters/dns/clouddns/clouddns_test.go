package clouddns

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"

	"github.com/certfn/certfn/adapters/dns/clouddns/clouddnstest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/ports/porttest"
)

// TestProviderSuite runs certfn's provider contract
// (porttest.DNSProviderSuite) with the managed zone given by
// hostedZoneName and found by name, reading the values back through the
// API.
func TestProviderSuite(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		for _, tc := range []struct {
			name string
			mods []mod
		}{
			{"hostedZoneName", []mod{withZone(b.zone)}},
			{"zone found by name", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				porttest.DNSProviderSuite(t, porttest.DNSEnv{
					Provider: build(t, b.factory(Options{}), b.request(tc.mods...)),
					Zone:     b.base(t),
					Lookup: func(t *testing.T, fqdn string) []string {
						vs, _ := b.txt(t, fqdn)
						return vs
					},
				})
			})
		}
	})
}

// TestMergeKeepsOtherValues: our value is added next to values written by
// someone else (their TTL kept), written only when missing, removed
// alone; the set goes away with our value when it was the last one. Every
// write is one change deleting the set as read and adding the new one.
func TestMergeKeepsOtherValues(t *testing.T) {
	type step struct {
		op         string // "append" or "delete"
		value      string
		want       []string
		wantTTL    int64
		wantChange bool // a changes.create call was made
	}
	cases := []struct {
		name   string
		theirs []string // present before, TTL 300
		steps  []step
	}{
		{"new set gets our TTL and goes away with our value", nil, []step{
			{"append", "ours", []string{"ours"}, 60, true},
			{"append", "ours", []string{"ours"}, 60, false},
			{"delete", "ours", nil, 0, true},
			{"delete", "ours", nil, 0, false},
		}},
		{"other values and their TTL are kept", []string{"theirs-1", "theirs-2"}, []step{
			{"append", "ours", []string{"ours", "theirs-1", "theirs-2"}, 300, true},
			{"append", "ours", []string{"ours", "theirs-1", "theirs-2"}, 300, false},
			{"delete", "never-added", []string{"ours", "theirs-1", "theirs-2"}, 300, false},
			{"delete", "ours", []string{"theirs-1", "theirs-2"}, 300, true},
		}},
		{"wildcard and apex values share the name", nil, []step{
			{"append", "apex", []string{"apex"}, 60, true},
			{"append", "wildcard", []string{"apex", "wildcard"}, 60, true},
			{"delete", "apex", []string{"wildcard"}, 60, true},
			{"delete", "wildcard", nil, 0, true},
		}},
	}
	eachBackend(t, func(t *testing.T, b *backend) {
		zone := b.base(t)
		f := b.factory(Options{})
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				rel := fmt.Sprintf("_acme-challenge.keep%d", i)
				fqdn := rel + "." + zone
				if tc.theirs != nil {
					b.set(t, fqdn, 300, tc.theirs...)
				}
				for j, s := range tc.steps {
					p := build(t, f, b.request()) // a new value per step, as the Solver builds
					var before []string
					if b.double != nil {
						before, _ = b.txt(t, fqdn)
					}
					nChanges := len(b.changes())
					rec := libdns.TXT{Name: rel, Text: s.value}
					var err error
					if s.op == "append" {
						_, err = p.AppendRecords(ctx, zone, []libdns.Record{rec})
					} else {
						_, err = p.DeleteRecords(ctx, zone, []libdns.Record{rec})
					}
					if err != nil {
						t.Fatalf("step %d %s %q: %v", j, s.op, s.value, err)
					}
					got, ttl := b.txt(t, fqdn)
					if !slices.Equal(got, s.want) || ttl != s.wantTTL {
						t.Fatalf("step %d %s %q: TXT = %q (TTL %d), want %q (TTL %d)", j, s.op, s.value, got, ttl, s.want, s.wantTTL)
					}
					if (p.LastChange() != "") != s.wantChange {
						t.Errorf("step %d: LastChange = %q, want a change: %v", j, p.LastChange(), s.wantChange)
					}
					if b.double == nil {
						continue
					}
					changes := b.changes()[nChanges:]
					if made := len(changes) > 0; made != s.wantChange {
						t.Fatalf("step %d %s %q: change submitted = %v, want %v", j, s.op, s.value, made, s.wantChange)
					}
					if !s.wantChange {
						continue
					}
					// One change: the set as it was read goes, the new one comes.
					c := changes[0]
					var dels, adds []string
					for _, d := range c.Deletions {
						dels = append(dels, decodeAll(d.Rrdatas)...)
					}
					for _, a := range c.Additions {
						adds = append(adds, decodeAll(a.Rrdatas)...)
					}
					slices.Sort(dels)
					slices.Sort(adds)
					if len(changes) != 1 || !slices.Equal(dels, before) || !slices.Equal(adds, s.want) {
						t.Fatalf("step %d: changes %+v; want one deleting %q and adding %q", j, changes, before, s.want)
					}
				}
			})
		}
	})
}

// changes returns the double's applied changes (nil on the real project).
func (b *backend) changes() []clouddnstest.Change {
	if b.double == nil {
		return nil
	}
	return b.double.Changes()
}

// TestZoneDiscovery (double: it needs several zones): without
// hostedZoneName the zone is the public managed zone of the project whose
// DNS name is the longest suffix of the record's name, among the allowed
// zones, over several pages of managedZones.list; private zones and other
// projects' zones are skipped; none or an ambiguous match is a permanent
// error naming hostedZoneName.
func TestZoneDiscovery(t *testing.T) {
	b := newDoubleBackend(t)
	d := b.double
	d.PageSize = 2
	d.AddZone(doubleProject, "sub-example-test", "sub.example.test", false)
	d.AddZone(doubleProject, "priv-sub", "priv.sub.example.test", true)
	d.AddZone(doubleProject, "dup-a", "dup.example.test", false)
	d.AddZone(doubleProject, "dup-b", "dup.example.test", false)
	d.AddZone("other-project", "deep-other", "deep.sub.example.test", false)

	cases := []struct {
		name     string
		record   string // relative to example.test.
		allowed  []string
		wantZone string
		wantErr  string // permanent error containing
	}{
		{name: "longest suffix wins", record: "_acme-challenge.www.sub", wantZone: "sub-example-test"},
		{name: "name at a zone's apex", record: "_acme-challenge", wantZone: doubleZone},
		{name: "parent zone when no child zone", record: "_acme-challenge.www.other", wantZone: doubleZone},
		{name: "private zone skipped", record: "_acme-challenge.www.priv.sub", wantZone: "sub-example-test"},
		{name: "other projects' zones skipped", record: "_acme-challenge.deep.sub", wantZone: "sub-example-test"},
		{name: "zones outside the allowed list skipped", record: "_acme-challenge.www.sub", allowed: []string{doubleZone}, wantZone: doubleZone},
		{name: "project-qualified allowed entry", record: "_acme-challenge.www.sub", allowed: []string{doubleProject + "/sub-example-test"}, wantZone: "sub-example-test"},
		{name: "another project's entry does not allow it", record: "_acme-challenge.www.sub", allowed: []string{"other-project/sub-example-test", doubleZone}, wantZone: doubleZone},
		{name: "no allowed zone", record: "_acme-challenge.www.sub", allowed: []string{"not-this-one"},
			wantErr: "spec.solver.dns01.cloudDNS.hostedZoneName: no public managed zone this deployment may change of project certfn-test holds _acme-challenge.www.sub.example.test."},
		{name: "two public zones of one name", record: "_acme-challenge.dup",
			wantErr: "spec.solver.dns01.cloudDNS.hostedZoneName: several public managed zones of project certfn-test hold _acme-challenge.dup.example.test. with the same DNS name (dup-a, dup-b)"},
		{name: "ambiguity resolved by the allowed list", record: "_acme-challenge.dup", allowed: []string{"dup-b", doubleZone}, wantZone: "dup-b"},
	}
	zones := []string{doubleZone, "sub-example-test", "priv-sub", "dup-a", "dup-b"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lists := d.Count("managedZones.list")
			p := build(t, b.factory(Options{AllowedZones: tc.allowed}), b.request())
			value := "v-" + tc.name
			_, err := p.AppendRecords(context.Background(), doubleDNSName, []libdns.Record{libdns.TXT{Name: tc.record, Text: value}})
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := d.Count("managedZones.list") - lists; n != 3 {
				t.Errorf("managedZones.list calls = %d, want 3 (every page of 5 zones, 2 per page)", n)
			}
			fqdn := tc.record + "." + doubleDNSName
			for _, z := range zones {
				got, _ := b.txtIn(t, z, fqdn)
				if has := slices.Contains(got, value); has != (z == tc.wantZone) {
					t.Fatalf("zone %s holds %q for %s; want our value only in %s", z, got, fqdn, tc.wantZone)
				}
			}
		})
	}
}

// TestHostedZoneName: a configured zone is used without listing zones; one
// outside the allowed list is refused by Build; an unknown zone or a name
// outside the zone is a permanent error naming hostedZoneName.
func TestHostedZoneName(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		zone := b.base(t)
		rec := []libdns.Record{libdns.TXT{Name: "_acme-challenge.given", Text: "v"}}

		t.Run("used directly", func(t *testing.T) {
			lists := b.count("managedZones.list")
			p := build(t, b.factory(Options{AllowedZones: []string{b.project + "/" + b.zone}}), b.request(withZone(b.zone)))
			if _, err := p.AppendRecords(ctx, zone, rec); err != nil {
				t.Fatal(err)
			}
			if got, _ := b.txt(t, "_acme-challenge.given."+zone); !slices.Equal(got, []string{"v"}) {
				t.Fatalf("TXT = %q", got)
			}
			if b.count("managedZones.list") != lists {
				t.Errorf("zones were listed although hostedZoneName was given")
			}
		})
		t.Run("not allowed", func(t *testing.T) {
			_, err := b.factory(Options{AllowedZones: []string{"other-zone", b.project + "-x/" + b.zone}}).Build(ctx, b.request(withZone(b.zone)))
			want := "spec.solver.dns01.cloudDNS.hostedZoneName: " + b.zone + " (project " + b.project + ") is not one of the managed zones this deployment may change"
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want a permanent error containing %q", err, want)
			}
		})
		t.Run("unknown zone", func(t *testing.T) {
			p := build(t, b.factory(Options{}), b.request(withZone("no-such-zone-certfn")))
			_, err := p.AppendRecords(ctx, zone, rec)
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.cloudDNS.hostedZoneName: managed zone not found") {
				t.Fatalf("err = %v", err)
			}
		})
		t.Run("record outside the zone", func(t *testing.T) {
			p := build(t, b.factory(Options{}), b.request(withZone(b.zone)))
			_, err := p.AppendRecords(ctx, "elsewhere.invalid.", []libdns.Record{libdns.TXT{Name: "_acme-challenge", Text: "v"}})
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.cloudDNS.hostedZoneName: Cloud DNS refused the request") {
				t.Fatalf("err = %v", err)
			}
		})
	})
}

// count returns the double's count of op (0 on the real project).
func (b *backend) count(op string) int {
	if b.double == nil {
		return 0
	}
	return b.double.Count(op)
}

// TestCredentials: with serviceAccountSecretRef the calls are made as that
// service account (its key exchanged once at the token endpoint and the
// client cached across steps); without, as the function's own identity.
// A key the token endpoint refuses, or an identity Cloud DNS denies, is a
// permanent error naming the credentials.
func TestCredentials(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		zone := b.base(t)
		t.Run("service account key", func(t *testing.T) {
			if b.saKey == nil {
				t.Skipf("real Cloud DNS variant: set %s to a service account key file with rights on the zone to run it", envKeyFile)
			}
			f := b.factory(Options{})
			n := len(b.calls())
			for i := range 2 { // two steps: one token exchange
				p := build(t, f, b.request(withKey))
				if p.Config.ServiceAccount == nil {
					t.Fatal("no service account parsed")
				}
				if _, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.sa", Text: fmt.Sprint("v", i)}}); err != nil {
					t.Fatal(err)
				}
			}
			calls := b.calls() // before the test's own read
			if got, _ := b.txt(t, "_acme-challenge.sa."+zone); !slices.Equal(got, []string{"v0", "v1"}) {
				t.Fatalf("TXT = %q", got)
			}
			if b.double == nil {
				return
			}
			tokens := 0
			for _, c := range calls[n:] {
				if c.Op == "token" {
					tokens++
				}
				if c.Identity != testSAEmail {
					t.Errorf("%s made as %q, want %s", c.Op, c.Identity, testSAEmail)
				}
			}
			if tokens != 1 {
				t.Errorf("token exchanges = %d, want 1 (the client is cached)", tokens)
			}
		})
		t.Run("ambient", func(t *testing.T) {
			n := len(b.calls())
			p := build(t, b.factory(Options{}), b.request())
			if _, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.ambient", Text: "v"}}); err != nil {
				t.Fatal(err)
			}
			for _, c := range b.calls()[n:] {
				if c.Identity != ambientID {
					t.Errorf("%s made as %q, want the ambient %s", c.Op, c.Identity, ambientID)
				}
			}
		})
		if b.double == nil {
			return
		}
		t.Run("revoked key", func(t *testing.T) {
			key := b.double.ServiceAccount(t, doubleProject, "revoked@certfn-test.iam.gserviceaccount.com")
			b.double.RevokeKeys("revoked@certfn-test.iam.gserviceaccount.com")
			p := build(t, b.factory(Options{}), request(b.project, key, withKey))
			_, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.revoked", Text: "v"}})
			want := "spec.solver.dns01.cloudDNS.serviceAccountSecretRef: the token endpoint refused the credentials"
			if !errs.IsPermanent(err) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want a permanent error containing %q", err, want)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatalf("error shows the key: %v", err)
			}
		})
		t.Run("token endpoint unavailable is transient", func(t *testing.T) {
			key := b.double.ServiceAccount(t, doubleProject, "flaky@certfn-test.iam.gserviceaccount.com")
			b.double.FailToken(1, http.StatusServiceUnavailable)
			p := build(t, b.factory(Options{}), request(b.project, key, withKey))
			_, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.flaky", Text: "v"}})
			if err == nil || errs.IsPermanent(err) {
				t.Fatalf("err = %v, want a transient error", err)
			}
			if _, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.flaky", Text: "v"}}); err != nil {
				t.Fatalf("retry: %v", err)
			}
		})
		t.Run("denied", func(t *testing.T) {
			for _, tc := range []struct {
				name, identity, want string
				mods                 []mod
			}{
				{"service account", testSAEmail, "spec.solver.dns01.cloudDNS.serviceAccountSecretRef: " + testSAEmail + " may not use Cloud DNS in project certfn-test", []mod{withKey}},
				{"ambient", ambientID, "spec.solver.dns01.cloudDNS (ambient credentials): the function's own service account may not use Cloud DNS in project certfn-test", nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					d := newDoubleBackend(t)
					d.double.Deny(tc.identity, doubleProject)
					p := build(t, d.factory(Options{}), d.request(append(tc.mods, withZone(doubleZone))...))
					_, err := p.AppendRecords(ctx, doubleDNSName, []libdns.Record{libdns.TXT{Name: "_acme-challenge.denied", Text: "v"}})
					if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("err = %v, want a permanent error containing %q", err, tc.want)
					}
				})
			}
		})
	})
}

// calls returns the double's call log (nil on the real project).
func (b *backend) calls() []clouddnstest.Call {
	if b.double == nil {
		return nil
	}
	return b.double.Calls()
}

// TestSynced: the change an append submitted is pending until Cloud DNS
// serves it, then done; each Synced is one changes.get call and never
// waits. A change Cloud DNS does not know, or a name that is not one of
// ours, is reported synced (the DNS round decides).
func TestSynced(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		zone := b.base(t)
		p := build(t, b.factory(Options{}), b.request())
		if _, err := p.AppendRecords(ctx, zone, []libdns.Record{libdns.TXT{Name: "_acme-challenge.sync", Text: "v"}}); err != nil {
			t.Fatal(err)
		}
		change := p.LastChange()
		prefix := "projects/" + b.project + "/managedZones/" + b.zone + "/changes/"
		if !strings.HasPrefix(change, prefix) || len(change) == len(prefix) {
			t.Fatalf("LastChange = %q, want %s<id>", change, prefix)
		}
		// A fresh provider value asks (the name travels through status.dns01).
		q := build(t, b.factory(Options{}), b.request())
		if b.double != nil {
			before := b.double.Count("changes.get")
			start := time.Now()
			ok, err := q.Synced(ctx, zone, change)
			if err != nil || ok {
				t.Fatalf("Synced of a pending change = %v, %v; want false", ok, err)
			}
			if time.Since(start) > time.Second || b.double.Count("changes.get") != before+1 {
				t.Fatalf("Synced took %s and %d changes.get calls; want one quick call", time.Since(start), b.double.Count("changes.get")-before)
			}
			b.double.SyncAll()
		}
		synced := false
		for i := 0; i < 120 && !synced; i++ { // the real service takes a few seconds
			ok, err := q.Synced(ctx, zone, change)
			if err != nil {
				t.Fatal(err)
			}
			if synced = ok; !ok {
				time.Sleep(500 * time.Millisecond)
			}
		}
		if !synced {
			t.Fatalf("change %s never done", change)
		}
		for _, other := range []string{prefix + "999999999", "/change/C0123456789", ""} {
			if ok, err := q.Synced(ctx, zone, other); err != nil || !ok {
				t.Fatalf("Synced(%q) = %v, %v; want true (the DNS round decides)", other, ok, err)
			}
		}
	})
}

// TestConflictIsTransient (double: it races the provider between its read
// and its change): a set that changed (412), appeared (409) or went away
// (404 on the deletion) in between makes one failed changes.create and a
// transient error; the retry reads again and keeps the other value.
func TestConflictIsTransient(t *testing.T) {
	cases := []struct {
		name    string
		initial []string // before the step
		racer   []string // what someone else writes between read and change (nil: deletes the set)
		op      string
		value   string
		reason  string
		want    []string // after the retry
	}{
		{"set changed before an append", []string{"theirs"}, []string{"theirs", "racer"}, "append", "ours", "conditionNotMet", []string{"ours", "racer", "theirs"}},
		{"set created before an append", nil, []string{"racer"}, "append", "ours", "alreadyExists", []string{"ours", "racer"}},
		{"set changed before a delete", []string{"theirs", "ours"}, []string{"theirs", "ours", "racer"}, "delete", "ours", "conditionNotMet", []string{"racer", "theirs"}},
		{"set deleted before a delete", []string{"ours"}, nil, "delete", "ours", "", nil},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			d := b.double
			rel := fmt.Sprintf("_acme-challenge.race%d", i)
			fqdn := rel + "." + doubleDNSName
			if tc.initial != nil {
				b.set(t, fqdn, 120, tc.initial...)
			}
			var once sync.Once
			d.BeforeChange = func(project, zone string) {
				once.Do(func() {
					var rr []string
					for _, v := range tc.racer {
						rr = append(rr, EncodeTXT(v))
					}
					d.SetRecordSet(project, zone, fqdn, "TXT", 120, rr...)
				})
			}
			run := func() error {
				p := build(t, b.factory(Options{}), b.request())
				rec := []libdns.Record{libdns.TXT{Name: rel, Text: tc.value}}
				var err error
				if tc.op == "append" {
					_, err = p.AppendRecords(context.Background(), doubleDNSName, rec)
				} else {
					_, err = p.DeleteRecords(context.Background(), doubleDNSName, rec)
				}
				return err
			}
			creates := d.Count("changes.create")
			err := run()
			if tc.reason == "" {
				// The set went away: its deletion is 404, a race.
				if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "the record set changed while it was being updated") {
					t.Fatalf("err = %v, want a transient race error", err)
				}
			} else if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "the record set changed while it was being updated ("+tc.reason+")") {
				t.Fatalf("err = %v, want a transient error naming %s", err, tc.reason)
			}
			if n := d.Count("changes.create") - creates; n != 1 {
				t.Fatalf("changes.create calls = %d, want 1 (no retry loop inside the provider)", n)
			}
			if err := run(); err != nil { // the queue's retry
				t.Fatalf("retry: %v", err)
			}
			if got, _ := b.txt(t, fqdn); !slices.Equal(got, tc.want) {
				t.Fatalf("TXT after the retry = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestErrorsAreClassified (double: it injects failures): failures that
// retrying cannot fix are permanent and name the field to fix; the rest
// stay transient.
func TestErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name      string
		op        string
		status    int
		reason    string
		project   string
		permanent bool
		want      string
	}{
		{name: "rate limited", status: 429, reason: "rateLimitExceeded", want: "429"},
		{name: "rate limit as 403", status: 403, reason: "rateLimitExceeded", want: "rateLimitExceeded"},
		{name: "user rate limit as 403", status: 403, reason: "userRateLimitExceeded", want: "userRateLimitExceeded"},
		{name: "server error", status: 500, reason: "backendError", want: "500"},
		{name: "unavailable", status: 503, reason: "backendError", want: "503"},
		{name: "forbidden", status: 403, reason: "forbidden", permanent: true, want: "spec.solver.dns01.cloudDNS (ambient credentials): the function's own service account may not use Cloud DNS in project certfn-test"},
		{name: "API not enabled", status: 403, reason: "accessNotConfigured", permanent: true, want: "spec.solver.dns01.cloudDNS.project: the Cloud DNS API is not enabled in project certfn-test"},
		{name: "unauthenticated", status: 401, reason: "authError", permanent: true, want: "spec.solver.dns01.cloudDNS (ambient credentials): credentials refused"},
		{name: "invalid change", op: "changes.create", status: 400, reason: "invalid", permanent: true, want: "spec.solver.dns01.cloudDNS: Cloud DNS refused the request"},
		{name: "unknown project", project: "no-such-project", permanent: true, want: "spec.solver.dns01.cloudDNS.project: project no-such-project not found"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newDoubleBackend(t)
			project := b.project
			if tc.project != "" {
				project = tc.project
			}
			p := build(t, b.factory(Options{}), request(project, nil))
			if tc.status != 0 {
				b.double.Fail(tc.op, 1, tc.status, tc.reason)
			}
			_, err := p.AppendRecords(context.Background(), doubleDNSName, []libdns.Record{libdns.TXT{Name: fmt.Sprintf("_acme-challenge.err%d", i), Text: "v"}})
			if err == nil || errs.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want permanent=%v containing %q", err, tc.permanent, tc.want)
			}
		})
	}
	t.Run("network errors are transient", func(t *testing.T) {
		p := &Provider{Config: Config{Path: "spec.solver.dns01.cloudDNS"}}
		err := p.classify(errors.New("network down"), opRead)
		if err == nil || errs.IsPermanent(err) {
			t.Fatalf("a network error = %v, want transient", err)
		}
	})
}

// testKeyPEM is one RSA key for the Parse tests.
var testKeyPEM = sync.OnceValue(func() string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
})

// keyJSON is a service account key file with fields overridden.
func keyJSON(over map[string]any) []byte {
	m := map[string]any{
		"type": "service_account", "project_id": "certfn-test", "private_key_id": "abc123",
		"private_key": testKeyPEM(), "client_email": testSAEmail, "client_id": "1234",
		"token_uri": DefaultTokenURL, "universe_domain": "googleapis.com",
	}
	for k, v := range over {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// TestParse: every rule of Parse, with the field it names.
func TestParse(t *testing.T) {
	spec := func(f func(*api.ACMEIssuerDNS01ProviderCloudDNS)) mod {
		return func(s *api.ACMEIssuerDNS01ProviderCloudDNS, _ *dns01.ProviderRequest) { f(s) }
	}
	issuer := func(_ *api.ACMEIssuerDNS01ProviderCloudDNS, r *dns01.ProviderRequest) {
		r.IssuerKind, r.SecretNamespace = api.KindIssuer, "team-a"
	}
	refKey := func(key string) mod {
		return spec(func(s *api.ACMEIssuerDNS01ProviderCloudDNS) {
			s.ServiceAccount = &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: secretName}, Key: key}
		})
	}
	const p = "spec.solver.dns01.cloudDNS"
	cases := []struct {
		name      string
		project   string
		key       []byte
		mods      []mod
		ambient   bool
		wantZone  string
		wantEmail string
		wantErr   string
	}{
		{name: "ambient for a ClusterIssuer", project: "certfn-test"},
		{name: "every field", project: "certfn-test", key: keyJSON(nil), mods: []mod{withKey, withZone("example-com")}, wantZone: "example-com", wantEmail: testSAEmail},
		{name: "domain-scoped project", project: "example.com:certfn-test"},
		{name: "numeric zone ID", project: "certfn-test", mods: []mod{withZone("1234567890")}, wantZone: "1234567890"},
		{name: "key without token_uri", project: "certfn-test", key: keyJSON(map[string]any{"token_uri": nil, "universe_domain": nil}), mods: []mod{withKey}, wantEmail: testSAEmail},
		{name: "project missing", wantErr: p + ".project: required"},
		{name: "bad project", project: "Certfn_Test", wantErr: p + `.project: "Certfn_Test" is not a Google Cloud project ID`},
		{name: "bad zone name", project: "certfn-test", mods: []mod{withZone("example.com")}, wantErr: p + `.hostedZoneName: "example.com" is not a managed zone name`},
		{name: "secret missing", project: "certfn-test", key: keyJSON(nil), mods: []mod{refKey("nope")}, wantErr: p + `.serviceAccountSecretRef: secret cert-manager/gcp has no usable key "nope"`},
		{name: "secret name missing", project: "certfn-test", mods: []mod{spec(func(s *api.ACMEIssuerDNS01ProviderCloudDNS) {
			s.ServiceAccount = &api.SecretKeySelector{Key: "key.json"}
		})}, wantErr: p + ".serviceAccountSecretRef.name: required"},
		{name: "not JSON", project: "certfn-test", mods: []mod{refKey("not-json")}, wantErr: p + `.serviceAccountSecretRef: secret cert-manager/gcp key "not-json": not a service account key: not a JSON object`},
		{name: "external account", project: "certfn-test", key: keyJSON(map[string]any{"type": "external_account"}), mods: []mod{withKey},
			wantErr: p + `.serviceAccountSecretRef: secret cert-manager/gcp key "key.json": credentials of type "external_account": only service account keys`},
		{name: "no email", project: "certfn-test", key: keyJSON(map[string]any{"client_email": nil}), mods: []mod{withKey}, wantErr: "client_email is missing"},
		{name: "no private key", project: "certfn-test", key: keyJSON(map[string]any{"private_key": nil}), mods: []mod{withKey}, wantErr: "private_key is missing"},
		{name: "private key not PEM", project: "certfn-test", key: keyJSON(map[string]any{"private_key": "secret-bytes"}), mods: []mod{withKey}, wantErr: "private_key is not PEM"},
		{name: "foreign token endpoint", project: "certfn-test", key: keyJSON(map[string]any{"token_uri": "http://169.254.169.254/token"}), mods: []mod{withKey},
			wantErr: p + `.serviceAccountSecretRef: secret cert-manager/gcp key "key.json": token_uri "http://169.254.169.254/token" is not https://oauth2.googleapis.com/token`},
		{name: "other universe", project: "certfn-test", key: keyJSON(map[string]any{"universe_domain": "example.net"}), mods: []mod{withKey}, wantErr: `universe_domain "example.net"`},
		{name: "Issuer without a key", project: "certfn-test", mods: []mod{issuer}, wantErr: p + ": an Issuer's cloudDNS solver must give serviceAccountSecretRef"},
		{name: "Issuer with ambient credentials allowed", project: "certfn-test", mods: []mod{issuer}, ambient: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(context.Background(), request(tc.project, tc.key, tc.mods...), "", tc.ambient)
			if tc.wantErr != "" {
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a permanent error containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "secret-bytes") {
					t.Fatalf("error shows the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Project != tc.project || got.HostedZoneName != tc.wantZone || got.Path != p {
				t.Fatalf("Parse = %v", got)
			}
			email := ""
			if got.ServiceAccount != nil {
				email = got.ServiceAccount.ClientEmail
				var rebuilt map[string]string
				if err := json.Unmarshal(got.ServiceAccount.json, &rebuilt); err != nil || rebuilt["token_uri"] != DefaultTokenURL || rebuilt["type"] != "service_account" {
					t.Fatalf("rebuilt key %v (%v): want type service_account and Google's token_uri", rebuilt, err)
				}
			}
			if email != tc.wantEmail {
				t.Fatalf("service account = %q, want %q", email, tc.wantEmail)
			}
			for _, s := range []string{got.String(), fmt.Sprintf("%v %+v %#v", got, got, got)} {
				if strings.Contains(s, "PRIVATE KEY") {
					t.Fatalf("Config prints its key: %s", s)
				}
			}
		})
	}
}

// A secret store that fails is transient, and names the field.
func TestParseSecretStoreFailure(t *testing.T) {
	req := request("certfn-test", nil, withKey)
	req.Secrets = failingSecrets{}
	_, err := Parse(context.Background(), req, "", false)
	if err == nil || errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.solver.dns01.cloudDNS.serviceAccountSecretRef") {
		t.Fatalf("err = %v, want a transient error naming serviceAccountSecretRef", err)
	}
}

type failingSecrets struct{ ports.SecretStore }

func (failingSecrets) Get(context.Context, string, string) (ports.Secret, error) {
	return ports.Secret{}, errors.New("secret store unavailable")
}

// TestSolverKey: core/acme/dns01 selects this provider for cert-manager's
// cloudDNS field.
func TestSolverKey(t *testing.T) {
	var d api.ACMEChallengeSolverDNS01
	if err := json.Unmarshal([]byte(`{"cloudDNS":{"project":"certfn-test","hostedZoneName":"example-com","serviceAccountSecretRef":{"name":"gcp","key":"key.json"}}}`), &d); err != nil {
		t.Fatal(err)
	}
	if d.CloudDNS == nil || d.CloudDNS.Project != "certfn-test" || d.CloudDNS.HostedZoneName != "example-com" || d.CloudDNS.ServiceAccount.Key != "key.json" {
		t.Fatalf("decoded %+v", d.CloudDNS)
	}
	if dns01.KeyCloudDNS != "cloudDNS" {
		t.Fatalf("dns01.KeyCloudDNS = %q", dns01.KeyCloudDNS)
	}
}

// TestTXTEncoding: values round-trip; long values are split into
// 255-octet strings; quotes, backslashes and other octets are escaped
// (decimal, zone-file syntax); rrdatas written by other tools decode.
func TestTXTEncoding(t *testing.T) {
	long := strings.Repeat("L", 300)
	cases := []struct {
		text, encoded string
	}{
		{"v", `"v"`},
		{"", `""`},
		{long, `"` + long[:255] + `" "` + long[255:] + `"`},
		{`say "hi" \o/`, `"say \"hi\" \\o/"`},
		{"tab\there é", `"tab\009here \195\169"`},
	}
	for _, tc := range cases {
		if got := EncodeTXT(tc.text); got != tc.encoded {
			t.Errorf("EncodeTXT(%q) = %s, want %s", tc.text, got, tc.encoded)
		}
		if got := DecodeTXT(tc.encoded); got != tc.text {
			t.Errorf("DecodeTXT(%s) = %q, want %q", tc.encoded, got, tc.text)
		}
	}
	for raw, want := range map[string]string{
		`"v=spf1 " "-all"`: "v=spf1 -all",
		`unquoted`:         "unquoted",
		`"a\"b"`:           `a"b`,
	} {
		if got := DecodeTXT(raw); got != want {
			t.Errorf("DecodeTXT(%s) = %q, want %q", raw, got, want)
		}
	}
}
