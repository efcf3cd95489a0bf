package memory_test

import (
	"context"
	"testing"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

// Mutating what was passed in or handed out never changes what is stored.
func TestSecretsCopies(t *testing.T) {
	ctx := context.Background()
	fresh := func() ports.Secret {
		return ports.Secret{Namespace: "default", Name: "web-tls",
			Data:        map[string][]byte{"tls.crt": []byte("crt")},
			Labels:      map[string]string{"a": "1"},
			Annotations: map[string]string{"x": "1"}}
	}
	mutate := func(s *ports.Secret) {
		s.Data["tls.crt"][0] = 'X'
		s.Data["new"] = []byte("new")
		s.Labels["a"] = "2"
		s.Annotations["y"] = "2"
	}
	tests := []struct {
		name string
		seed func(s *memory.Secrets, sec ports.Secret) error
	}{
		{"NewSecrets", nil},
		{"Create", func(s *memory.Secrets, sec ports.Secret) error { return s.Create(ctx, sec) }},
		{"Put", func(s *memory.Secrets, sec ports.Secret) error { return s.Put(ctx, sec) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := fresh()
			s := memory.NewSecrets()
			if tc.seed == nil {
				s = memory.NewSecrets(in)
			} else if err := tc.seed(s, in); err != nil {
				t.Fatal(err)
			}
			mutate(&in)
			out, err := s.Get(ctx, "default", "web-tls")
			if err != nil {
				t.Fatal(err)
			}
			mutate(&out)
			got, err := s.Get(ctx, "default", "web-tls")
			if err != nil {
				t.Fatal(err)
			}
			want := fresh()
			if string(got.Data["tls.crt"]) != "crt" || len(got.Data) != 1 || got.Labels["a"] != "1" || len(got.Annotations) != len(want.Annotations) {
				t.Errorf("stored %+v, want %+v", got, want)
			}
		})
	}
}

func TestSecretsRejectEmptyName(t *testing.T) {
	ctx := context.Background()
	s := memory.NewSecrets()
	for name, call := range map[string]func() error{
		"Create": func() error { return s.Create(ctx, ports.Secret{Namespace: "default"}) },
		"Put":    func() error { return s.Put(ctx, ports.Secret{Namespace: "default"}) },
	} {
		if err := call(); !errs.IsPermanent(err) {
			t.Errorf("%s without a name: %v, want a permanent error", name, err)
		}
	}
	if s.Len() != 0 {
		t.Errorf("Len = %d after rejected writes", s.Len())
	}
}
