package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// Mutating what was passed in or handed out never changes what is stored.
func TestStoreCopies(t *testing.T) {
	ctx := context.Background()
	k := key("web")
	get := func(t *testing.T, s *memory.Store) ports.Record {
		t.Helper()
		rec, err := s.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	tests := []struct {
		name string
		// mutate gets the record given to Create and the one it returned.
		mutate func(t *testing.T, s *memory.Store, in, created ports.Record)
		want   string
	}{
		{"input of Create", func(t *testing.T, s *memory.Store, in, _ ports.Record) { in.Data[0] = 'X' }, `{"v":1}`},
		{"result of Create", func(t *testing.T, s *memory.Store, _, created ports.Record) { created.Data[0] = 'X' }, `{"v":1}`},
		{"result of Get", func(t *testing.T, s *memory.Store, _, _ ports.Record) { get(t, s).Data[0] = 'X' }, `{"v":1}`},
		{"result of List", func(t *testing.T, s *memory.Store, _, _ ports.Record) {
			recs, err := s.List(ctx, ports.ListOptions{Kind: api.KindCertificate})
			if err != nil || len(recs) != 1 {
				t.Fatalf("List = %v, %v", recs, err)
			}
			recs[0].Data[0] = 'X'
		}, `{"v":1}`},
		{"input and result of Update", func(t *testing.T, s *memory.Store, _, created ports.Record) {
			upd := created
			upd.Data = []byte(`{"v":2}`)
			res, err := s.Update(ctx, upd)
			if err != nil {
				t.Fatal(err)
			}
			upd.Data[0], res.Data[0] = 'X', 'X'
		}, `{"v":2}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := memory.NewStore()
			in := ports.Record{Key: k, Data: []byte(`{"v":1}`)}
			created, err := s.Create(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			tc.mutate(t, s, in, created)
			if got := get(t, s); string(got.Data) != tc.want {
				t.Errorf("stored data %q, want %q", got.Data, tc.want)
			}
		})
	}
}

// Times come back in UTC, without a monotonic reading, as from a database.
func TestStoreNormalisesTimes(t *testing.T) {
	ctx := context.Background()
	s := memory.NewStore()
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))
	rec, err := s.Create(ctx, ports.Record{Key: key("web"), NextRunAt: at, Data: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, key("web"))
	if err != nil {
		t.Fatal(err)
	}
	due, err := s.Due(ctx, at, 1)
	if err != nil || len(due) != 1 {
		t.Fatalf("Due = %v, %v", due, err)
	}
	for what, tm := range map[string]time.Time{"Create": rec.NextRunAt, "Get": got.NextRunAt, "Due": due[0].NextRunAt} {
		if tm != at.UTC() {
			t.Errorf("%s: NextRunAt %#v, want %v", what, tm, at.UTC())
		}
	}
}

// Invalid input is a permanent error and writes nothing.
func TestStoreRejects(t *testing.T) {
	ctx := context.Background()
	good := ports.Record{Key: key("web"), Data: []byte("{}")}
	tests := []struct {
		name string
		call func(s *memory.Store) error
	}{
		{"create without a name", func(s *memory.Store) error {
			_, err := s.Create(ctx, ports.Record{Key: api.Key{Kind: api.KindCertificate, Namespace: "default"}})
			return err
		}},
		{"create without a kind", func(s *memory.Store) error {
			_, err := s.Create(ctx, ports.Record{Key: api.Key{Namespace: "default", Name: "web"}})
			return err
		}},
		{"create with a slash in the name", func(s *memory.Store) error {
			_, err := s.Create(ctx, ports.Record{Key: key("a/b")})
			return err
		}},
		{"create with an invalid owner", func(s *memory.Store) error {
			_, err := s.Create(ctx, ports.Record{Key: key("other"), Owner: api.Key{Kind: api.KindCertificate}})
			return err
		}},
		{"update with a slash in the namespace", func(s *memory.Store) error {
			_, err := s.Update(ctx, ports.Record{Key: api.Key{Kind: api.KindCertificate, Namespace: "a/b", Name: "web"}, Version: 1})
			return err
		}},
		{"delete at a negative version", func(s *memory.Store) error { return s.Delete(ctx, good.Key, -1) }},
		{"list without a kind", func(s *memory.Store) error {
			_, err := s.List(ctx, ports.ListOptions{Namespace: "default"})
			return err
		}},
		{"due with limit 0", func(s *memory.Store) error {
			_, err := s.Due(ctx, qt0, 0)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := memory.NewStore()
			stored, err := s.Create(ctx, good)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.call(s); !errs.IsPermanent(err) {
				t.Fatalf("error %v, want a permanent one", err)
			}
			got, err := s.Get(ctx, good.Key)
			if err != nil || got.Version != stored.Version || s.Len() != 1 {
				t.Errorf("after a rejected call: %+v, %v, Len %d; want %+v alone", got, err, s.Len(), stored)
			}
		})
	}
}

// Update at version 0 is a conflict, never an unconditional write.
func TestStoreUpdateVersionZero(t *testing.T) {
	ctx := context.Background()
	s := memory.NewStore()
	if _, err := s.Create(ctx, ports.Record{Key: key("web"), Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, ports.Record{Key: key("web"), Data: []byte("{}")}); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("Update at version 0: %v, want ErrConflict", err)
	}
}

// The feed compacts to the newest ports.FeedRetention changes once it holds twice as
// many, and a read from before them names where it may resume.
func TestFeedCompaction(t *testing.T) {
	ctx := context.Background()
	s := memory.NewStore()
	const keep = ports.FeedRetention // memory keeps exactly what every feed must
	r, err := s.Create(ctx, ports.Record{Key: api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2*keep - 1 {
		if r, err = s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Changes(ctx, 0, 1)
	var ce *ports.CompactedError
	if !errors.As(err, &ce) || ce.Compacted != keep {
		t.Fatalf("Changes(after 0) after %d writes: %v, want compacted at %d", 2*keep, err, keep)
	}
	cs, err := s.Changes(ctx, keep, 2*keep)
	if err != nil || len(cs) != keep || cs[0].Revision != keep+1 || cs[len(cs)-1].Revision != 2*keep {
		t.Fatalf("Changes(after %d): %d changes, %v", keep, len(cs), err)
	}
}
