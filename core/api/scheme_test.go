package api

import "testing"

// TestKindTable checks the kind table without any registration call: each
// kind's New fills in its own TypeMeta, and each kind is found by its name,
// plural and short names.
func TestKindTable(t *testing.T) {
	ks := Kinds()
	if len(ks) == 0 {
		t.Fatal("no kinds")
	}
	for _, k := range ks {
		o := k.New()
		if tm := o.GetTypeMeta(); tm.Kind != k.Kind || tm.APIVersion != k.APIVersion {
			t.Errorf("%s: New() has TypeMeta %+v", k.Kind, *tm)
		}
		if got, ok := KindInfoFor(k.Kind); !ok || got.Kind != k.Kind {
			t.Errorf("KindInfoFor(%q) = %q, %v", k.Kind, got.Kind, ok)
		}
		for _, n := range append([]string{k.Kind, k.Plural}, k.Short...) {
			if got, ok := KindForName(n); !ok || got.Kind != k.Kind {
				t.Errorf("KindForName(%q) = %q, %v; want %s", n, got.Kind, ok, k.Kind)
			}
		}
	}
}
