package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// TestApplyRefusesObjectsNoStoreCanHold: one size limit in every mode —
// annotations over 256 KiB in total, or an object whose JSON encoding is
// over api.MaxObjectBytes — refused with the object and the limit named,
// nothing stored.
func TestApplyRefusesObjectsNoStoreCanHold(t *testing.T) {
	cert := func(f func(*api.Certificate)) *api.Certificate {
		objs, err := api.Decode([]byte(apptest.CertYAML))
		if err != nil {
			t.Fatal(err)
		}
		c := objs[0].(*api.Certificate)
		f(c)
		return c
	}
	for _, tc := range []struct {
		name string
		obj  api.Object
		want []string // substrings of the error; none: accepted
	}{
		{"annotations over 256 KiB", cert(func(c *api.Certificate) {
			c.Annotations = map[string]string{"a": strings.Repeat("x", 200<<10), "b": strings.Repeat("y", 60<<10)}
		}), []string{"Certificate/default/web", "metadata.annotations", "at most 262144"}},
		{"object over the limit", cert(func(c *api.Certificate) {
			for i := 0; len(c.Spec.DNSNames) < 30000; i++ {
				c.Spec.DNSNames = append(c.Spec.DNSNames, "host"+strings.Repeat("x", 5)+string(rune('a'+i%26))+".example.com")
			}
		}), []string{"Certificate/default/web is too large", "350000 bytes"}},
		{"annotations just under the limit", cert(func(c *api.Certificate) {
			c.Annotations = map[string]string{"a": strings.Repeat("x", 100<<10)}
		}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := apptest.NewRig(t)
			_, err := r.Service.Apply(r.Ctx, apptest.Caller, []api.Object{tc.obj})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("want accepted, got %v", err)
				}
				return
			}
			if !errs.IsPermanent(err) {
				t.Fatalf("want a permanent error, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", api.Truncate(err.Error(), 400), w)
				}
			}
			if _, err := r.Store.Store.Get(r.Ctx, apptest.CertKey); !errors.Is(err, ports.ErrNotFound) {
				t.Fatalf("refused object stored: %v", err)
			}
		})
	}
}
