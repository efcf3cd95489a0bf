package porttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// listAll pages through opts' listing with ListPage, checking each page's
// size, and returns the records in page order. It fails the test after
// more pages than records could need.
func listAll(t *testing.T, s ports.Store, opts ports.ListOptions, maxRecords int) []ports.Record {
	t.Helper()
	var out []ports.Record
	for pages := 0; ; pages++ {
		if pages > maxRecords+2 {
			t.Fatalf("ListPage(%+v): more than %d pages for at most %d records", opts, pages, maxRecords)
		}
		p, err := s.ListPage(context.Background(), opts)
		if err != nil {
			t.Fatalf("ListPage(%+v): %v", opts, err)
		}
		if opts.Limit > 0 && len(p.Records) > opts.Limit {
			t.Fatalf("ListPage(%+v): %d records, more than the limit", opts, len(p.Records))
		}
		out = append(out, p.Records...)
		if p.Continue == "" {
			return out
		}
		opts.Continue = p.Continue
	}
}

// storeListPage: paging returns every record of the listing once, whatever
// the page size, with the filters of List; changes between pages neither
// repeat nor skip records that exist throughout; bad tokens are refused.
func storeListPage(t *testing.T, s ports.Store) {
	ctx := context.Background()
	byKey := map[api.Key]ports.Record{}
	// Namespaces whose names sort differently with and without the
	// separator ("a" < "a-b" but "a-b/" < "a/").
	for _, ns := range []string{"a", "a-b", "b"} {
		for i := range 7 {
			k := certKey(ns, fmt.Sprintf("c%02d", i))
			byKey[k] = mustCreate(t, s, newRec(k))
		}
	}
	owner := certKey("a", "c00")
	for i := range 5 {
		k := reqKey("a", fmt.Sprintf("c00-%d", i))
		byKey[k] = mustCreate(t, s, newRec(k, ownedBy(owner)))
	}
	other := reqKey("a", "other")
	byKey[other] = mustCreate(t, s, newRec(other, ownedBy(certKey("a", "c01"))))
	ci := clusterIssuerKey("ca")
	byKey[ci] = mustCreate(t, s, newRec(ci))

	listings := []ports.ListOptions{
		{Kind: api.KindCertificate},
		{Kind: api.KindCertificate, Namespace: "a-b"},
		{Kind: api.KindCertificateRequest, Owner: owner},
		{Kind: api.KindCertificateRequest, Namespace: "a", Owner: owner},
		{Kind: api.KindClusterIssuer},
		{Kind: api.KindCertificate, Namespace: "none"},
	}
	for _, base := range listings {
		want, err := s.List(ctx, base)
		if err != nil {
			t.Fatalf("List(%+v): %v", base, err)
		}
		for _, limit := range []int{0, 1, 2, 5, 7, 100} {
			t.Run(fmt.Sprintf("%s ns=%q owner=%q limit=%d", base.Kind, base.Namespace, base.Owner, limit), func(t *testing.T) {
				opts := base
				opts.Limit = limit
				got := listAll(t, s, opts, len(want))
				if g, w := keysOf(got), keysOf(want); !slices.Equal(g, w) {
					t.Fatalf("pages hold %v, List %v", g, w)
				}
				for _, r := range got {
					checkRecord(t, "paged "+r.Key.String(), r, byKey[r.Key])
				}
			})
		}
	}

	t.Run("same order on every listing", func(t *testing.T) {
		opts := ports.ListOptions{Kind: api.KindCertificate}
		one := listAll(t, s, ports.ListOptions{Kind: api.KindCertificate, Limit: 1}, len(byKey))
		opts.Limit = 4
		four := listAll(t, s, opts, len(byKey))
		if a, b := keyList(one), keyList(four); !slices.Equal(a, b) {
			t.Fatalf("pages of 1 in order %v, pages of 4 in order %v", a, b)
		}
	})

	t.Run("changes between pages", func(t *testing.T) {
		opts := ports.ListOptions{Kind: api.KindCertificate, Limit: 4}
		order := keyList(listAll(t, s, opts, len(byKey)))
		first, err := s.ListPage(ctx, opts)
		if err != nil || first.Continue == "" || len(first.Records) == 0 {
			t.Fatalf("first page: %d records, continue %q, %v", len(first.Records), first.Continue, err)
		}
		seen := map[string]int{}
		for _, r := range first.Records {
			seen[r.Key.String()]++
		}
		// Delete one record not read yet, create one before the cursor
		// and one after everything.
		gone := certKey("b", "c06")
		if err := s.Delete(ctx, gone, 0); err != nil {
			t.Fatalf("Delete(%s): %v", gone, err)
		}
		defer mustCreate(t, s, newRec(gone))
		early, late := certKey("0", "early"), certKey("zzz", "late")
		mustCreate(t, s, newRec(early))
		mustCreate(t, s, newRec(late))
		defer func() {
			for _, k := range []api.Key{early, late} {
				if err := s.Delete(ctx, k, 0); err != nil {
					t.Errorf("Delete(%s): %v", k, err)
				}
			}
		}()
		opts.Continue = first.Continue
		for _, r := range listAll(t, s, opts, len(byKey)+2) {
			seen[r.Key.String()]++
		}
		for _, k := range order {
			if n := seen[k]; k != gone.String() && n != 1 {
				t.Errorf("%s, present throughout, returned %d times", k, n)
			}
		}
		if seen[gone.String()] > 0 {
			t.Errorf("%s, deleted before its page, was returned", gone)
		}
		for k, n := range seen {
			if n > 1 {
				t.Errorf("%s returned %d times", k, n)
			}
		}
	})

	t.Run("invalid continue tokens", func(t *testing.T) {
		p, err := s.ListPage(ctx, ports.ListOptions{Kind: api.KindCertificate, Limit: 1})
		if err != nil || p.Continue == "" {
			t.Fatalf("first page: continue %q, %v", p.Continue, err)
		}
		for _, tc := range []struct {
			name string
			opts ports.ListOptions
		}{
			{"not base64", ports.ListOptions{Kind: api.KindCertificate, Continue: "!!not a token!!"}},
			{"not JSON", ports.ListOptions{Kind: api.KindCertificate, Continue: "bm90IGpzb24"}},
			{"another kind", ports.ListOptions{Kind: api.KindCertificateRequest, Continue: p.Continue}},
			{"another namespace", ports.ListOptions{Kind: api.KindCertificate, Namespace: "a", Continue: p.Continue}},
			{"another owner", ports.ListOptions{Kind: api.KindCertificate, Owner: owner, Continue: p.Continue}},
		} {
			_, err := s.ListPage(ctx, tc.opts)
			if !errors.Is(err, ports.ErrInvalidContinue) || !errs.IsPermanent(err) {
				t.Errorf("%s: error = %v, want a permanent ErrInvalidContinue", tc.name, err)
			}
		}
		if _, err := s.ListPage(ctx, ports.ListOptions{Kind: api.KindCertificate, Limit: -1}); err == nil || !errs.IsPermanent(err) {
			t.Errorf("limit -1: error = %v, want a permanent error", err)
		}
		if _, err := s.ListPage(ctx, ports.ListOptions{Limit: 1}); err == nil {
			t.Error("ListPage without Kind: want an error")
		}
	})
}

// keyList renders the keys of recs in their order.
func keyList(recs []ports.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Key.String()
	}
	return out
}
