package porttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/ports"
)

// Marker bytes inside every secret value the suite writes: no error may
// contain them.
const leakMarker = "S3CRET-MATERIAL"

// secretOpt modifies a secret built by newSecret.
type secretOpt func(*ports.Secret)

func withKey(k, v string) secretOpt {
	return func(s *ports.Secret) { s.Data[k] = []byte(v) }
}
func withoutKey(k string) secretOpt { return func(s *ports.Secret) { delete(s.Data, k) } }
func withLabel(k, v string) secretOpt {
	return func(s *ports.Secret) {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = v
	}
}
func withAnnotation(k, v string) secretOpt {
	return func(s *ports.Secret) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

// newSecret builds a TLS secret whose values carry leakMarker and tag.
func newSecret(ns, name, tag string, opts ...secretOpt) ports.Secret {
	s := ports.Secret{Namespace: ns, Name: name, Data: map[string][]byte{
		"tls.crt": []byte("-----BEGIN CERTIFICATE-----\n" + leakMarker + " crt " + tag + "\n-----END CERTIFICATE-----\n"),
		// Not key material: the store treats values as opaque bytes.
		"tls.key": []byte("fake private key " + leakMarker + " key " + tag + "\n"),
		"ca.crt":  []byte("-----BEGIN CERTIFICATE-----\n" + leakMarker + " ca " + tag + "\n-----END CERTIFICATE-----\n"),
	}}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// SecretSuite runs the ports.SecretStore contract against stores made by
// newSecrets, which must return an empty store for every call.
func SecretSuite(t *testing.T, newSecrets func(t *testing.T) ports.SecretStore) {
	t.Run("GetMissing", func(t *testing.T) { secretGetMissing(t, newSecrets(t)) })
	t.Run("CreateGet", func(t *testing.T) { secretCreateGet(t, newSecrets(t)) })
	t.Run("CreateExisting", func(t *testing.T) { secretCreateExisting(t, newSecrets(t)) })
	t.Run("ConcurrentCreate", func(t *testing.T) { secretConcurrentCreate(t, newSecrets(t)) })
	t.Run("Put", func(t *testing.T) { secretPut(t, newSecrets) })
	t.Run("Delete", func(t *testing.T) { secretDelete(t, newSecrets(t)) })
	t.Run("Isolation", func(t *testing.T) { secretIsolation(t, newSecrets(t)) })
	t.Run("List", func(t *testing.T) { secretList(t, newSecrets(t)) })
}

// noLeak fails if err's message contains secret material.
func noLeak(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), leakMarker) {
		t.Errorf("%s: error contains secret data: %v", what, err)
	}
}

// dataKeys lists d's keys sorted.
func dataKeys(d map[string][]byte) []string { return slices.Sorted(maps.Keys(d)) }

// checkSecret compares got with want (maps.Equal treats nil and empty alike). Values are
// never printed: only key names and lengths.
func checkSecret(t *testing.T, what string, got, want ports.Secret) {
	t.Helper()
	if got.Namespace != want.Namespace || got.Name != want.Name {
		t.Errorf("%s: secret %s/%s, want %s/%s", what, got.Namespace, got.Name, want.Namespace, want.Name)
	}
	if g, w := dataKeys(got.Data), dataKeys(want.Data); !slices.Equal(g, w) {
		t.Errorf("%s: data keys %v, want %v", what, g, w)
	}
	for k, w := range want.Data {
		if g, ok := got.Data[k]; ok && !bytes.Equal(g, w) {
			t.Errorf("%s: data[%s] differs (%d bytes, want %d)", what, k, len(g), len(w))
		}
	}
	if !maps.Equal(got.Labels, want.Labels) {
		t.Errorf("%s: labels %v, want %v", what, got.Labels, want.Labels)
	}
	if !maps.Equal(got.Annotations, want.Annotations) {
		t.Errorf("%s: annotations %v, want %v", what, got.Annotations, want.Annotations)
	}
}

func mustGetSecret(t *testing.T, s ports.SecretStore, ns, name string) ports.Secret {
	t.Helper()
	got, err := s.Get(context.Background(), ns, name)
	noLeak(t, "Get", err)
	if err != nil {
		t.Fatalf("Get(%s/%s): %v", ns, name, err)
	}
	return got
}

func secretGetMissing(t *testing.T, s ports.SecretStore) {
	_, err := s.Get(context.Background(), "default", "web-tls")
	wantErr(t, "Get of a missing secret", err, ports.ErrNotFound)
}

func secretCreateGet(t *testing.T, s ports.SecretStore) {
	ctx := context.Background()
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	tests := []struct {
		name   string
		secret ports.Secret
	}{
		{"tls triple", newSecret("default", "web-tls", "1")},
		{"with metadata", newSecret("default", "meta-tls", "1",
			withLabel("app", "web"), withLabel("cert-manager.io/next-private-key", "false"),
			withAnnotation("cert-manager.io/certificate-name", "web"),
			withAnnotation("cert-manager.io/alt-names", "a.example.com,b.example.com"))},
		{"binary keystore", newSecret("default", "bin-tls", "1",
			withKey("keystore.p12", string(binary)), withKey("truststore.jks", "\x00\xfe\xed\xfe\xed"))},
		{"empty ca.crt", newSecret("default", "acme-tls", "1", withKey("ca.crt", ""))},
		{"no data", ports.Secret{Namespace: "default", Name: "empty", Data: map[string][]byte{}}},
		{"other namespace", newSecret("team-a", "web-tls", "2")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Create(ctx, tc.secret)
			noLeak(t, "Create", err)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			checkSecret(t, "Get", mustGetSecret(t, s, tc.secret.Namespace, tc.secret.Name), tc.secret)
		})
	}
}

func secretCreateExisting(t *testing.T, s ports.SecretStore) {
	ctx := context.Background()
	first := newSecret("default", "web-tls", "first", withLabel("gen", "1"))
	if err := s.Create(ctx, first); err != nil {
		t.Fatalf("Create: %v", err)
	}
	err := s.Create(ctx, newSecret("default", "web-tls", "second", withLabel("gen", "2")))
	noLeak(t, "second Create", err)
	wantErr(t, "second Create", err, ports.ErrAlreadyExists)
	checkSecret(t, "Get after failed Create", mustGetSecret(t, s, "default", "web-tls"), first)
}

func secretConcurrentCreate(t *testing.T, s ports.SecretStore) {
	ctx := context.Background()
	errs := race(racers, func(i int) error {
		return s.Create(ctx, newSecret("default", "web-tls", fmt.Sprint(i)))
	})
	for i, err := range errs {
		noLeak(t, fmt.Sprintf("racer %d", i), err)
	}
	w := oneWinner(t, "concurrent Create", errs, ports.ErrAlreadyExists)
	if w >= 0 {
		checkSecret(t, "Get", mustGetSecret(t, s, "default", "web-tls"), newSecret("default", "web-tls", fmt.Sprint(w)))
	}
}

func secretPut(t *testing.T, newSecrets func(t *testing.T) ports.SecretStore) {
	tests := []struct {
		name    string
		initial *ports.Secret // nil: Put on a missing secret
		put     ports.Secret
	}{
		{"creates a missing secret", nil, newSecret("default", "web-tls", "1")},
		{"replaces every value", ptr(newSecret("default", "web-tls", "1")), newSecret("default", "web-tls", "2")},
		{"drops keys absent from the new data", ptr(newSecret("default", "web-tls", "1", withKey("key.der", "der"))),
			newSecret("default", "web-tls", "2", withoutKey("ca.crt"))},
		{"adds new keys", ptr(newSecret("default", "web-tls", "1")),
			newSecret("default", "web-tls", "2", withKey("tls-combined.pem", "combined"))},
		{"replaces metadata", ptr(newSecret("default", "web-tls", "1", withLabel("a", "1"), withAnnotation("x", "1"))),
			newSecret("default", "web-tls", "2", withLabel("b", "2"))},
		{"clears metadata", ptr(newSecret("default", "web-tls", "1", withLabel("a", "1"), withAnnotation("x", "1"))),
			newSecret("default", "web-tls", "2")},
		{"to no data", ptr(newSecret("default", "web-tls", "1")),
			ports.Secret{Namespace: "default", Name: "web-tls", Data: map[string][]byte{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := newSecrets(t)
			if tc.initial != nil {
				if err := s.Create(ctx, *tc.initial); err != nil {
					t.Fatalf("Create: %v", err)
				}
			}
			err := s.Put(ctx, tc.put)
			noLeak(t, "Put", err)
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			checkSecret(t, "Get after Put", mustGetSecret(t, s, tc.put.Namespace, tc.put.Name), tc.put)
			// Put twice is the same as once.
			if err := s.Put(ctx, tc.put); err != nil {
				t.Fatalf("second Put: %v", err)
			}
			checkSecret(t, "Get after second Put", mustGetSecret(t, s, tc.put.Namespace, tc.put.Name), tc.put)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func secretDelete(t *testing.T, s ports.SecretStore) {
	ctx := context.Background()
	keep := newSecret("default", "keep-tls", "1")
	for _, sec := range []ports.Secret{newSecret("default", "web-tls", "1"), keep} {
		if err := s.Create(ctx, sec); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	if err := s.Delete(ctx, "default", "web-tls"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err := s.Get(ctx, "default", "web-tls")
	wantErr(t, "Get after Delete", err, ports.ErrNotFound)
	checkSecret(t, "other secret after Delete", mustGetSecret(t, s, "default", "keep-tls"), keep)

	for _, missing := range [][2]string{{"default", "web-tls"}, {"default", "never"}, {"nowhere", "never"}} {
		if err := s.Delete(ctx, missing[0], missing[1]); err != nil {
			t.Errorf("Delete of missing %s/%s: %v, want nil", missing[0], missing[1], err)
		}
	}
	again := newSecret("default", "web-tls", "again")
	if err := s.Create(ctx, again); err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	checkSecret(t, "Get after re-Create", mustGetSecret(t, s, "default", "web-tls"), again)
}

func secretIsolation(t *testing.T, s ports.SecretStore) {
	ctx := context.Background()
	a := newSecret("team-a", "web-tls", "a")
	b := newSecret("team-b", "web-tls", "b")
	c := newSecret("team-a", "web-tls-2", "c")
	for _, sec := range []ports.Secret{a, b, c} {
		if err := s.Create(ctx, sec); err != nil {
			t.Fatalf("Create %s/%s: %v", sec.Namespace, sec.Name, err)
		}
	}
	if err := s.Put(ctx, newSecret("team-a", "web-tls", "a2")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := s.Delete(ctx, "team-a", "web-tls-2"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkSecret(t, "team-a/web-tls", mustGetSecret(t, s, "team-a", "web-tls"), newSecret("team-a", "web-tls", "a2"))
	checkSecret(t, "team-b/web-tls", mustGetSecret(t, s, "team-b", "web-tls"), b)
	if _, err := s.Get(ctx, "team-a", "web-tls-2"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Get of deleted team-a/web-tls-2: %v, want ErrNotFound", err)
	}
}

// secretList: a store that implements ports.SecretLister lists exactly the
// secrets it holds, sorted, per namespace or all, and no deleted one.
// Stores that do not list (the cloud ones) are not asked.
func secretList(t *testing.T, s ports.SecretStore) {
	l, ok := s.(ports.SecretLister)
	if !ok {
		t.Logf("%T does not implement ports.SecretLister: nothing to check", s)
		return
	}
	ctx := context.Background()
	if got, err := l.ListSecrets(ctx, ""); err != nil || len(got) != 0 {
		t.Fatalf("ListSecrets of an empty store = %v, %v", got, err)
	}
	for _, r := range []ports.SecretRef{{Namespace: "b-ns", Name: "one"}, {Namespace: "a-ns", Name: "two"}, {Namespace: "a-ns", Name: "one"}, {Namespace: "b-ns", Name: "gone"}} {
		sec := newSecret(r.Namespace, r.Name, "list")
		if err := s.Put(ctx, sec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "b-ns", "gone"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns   string
		want []ports.SecretRef
	}{
		{"", []ports.SecretRef{{Namespace: "a-ns", Name: "one"}, {Namespace: "a-ns", Name: "two"}, {Namespace: "b-ns", Name: "one"}}},
		{"a-ns", []ports.SecretRef{{Namespace: "a-ns", Name: "one"}, {Namespace: "a-ns", Name: "two"}}},
		{"c-ns", nil},
	} {
		got, err := l.ListSecrets(ctx, tc.ns)
		if err != nil {
			t.Fatalf("ListSecrets(%q): %v", tc.ns, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ListSecrets(%q) = %v, want %v", tc.ns, got, tc.want)
		}
	}
}
