package certificates_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

func TestOutputsStep(t *testing.T) {
	combined := func(c *api.Certificate) {
		c.Spec.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: api.CertificateOutputFormatCombinedPEM}}
	}
	for _, tc := range []struct {
		name string
		// stored is the spec the secret was written for; want the current one.
		stored, want []func(*api.Certificate)
		// tweak edits the stored secret.
		tweak     func(s *ports.Secret)
		wantStale string // "" = current: nothing happens
		check     func(t *testing.T, s ports.Secret)
	}{
		{name: "current", stored: []func(*api.Certificate){combined}, want: []func(*api.Certificate){combined}},
		{name: "current with defaults", stored: nil, want: nil},
		{name: "a new additional output format", want: []func(*api.Certificate){combined}, wantStale: "tls-combined.pem",
			check: func(t *testing.T, s ports.Secret) {
				if !bytes.HasPrefix(s.Data["tls-combined.pem"], s.Data["tls.key"]) {
					t.Error("tls-combined.pem does not start with tls.key")
				}
			}},
		{name: "an output no longer asked for", stored: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: api.CertificateOutputFormatDER}}
		}}, wantStale: "key.der", check: func(t *testing.T, s ports.Secret) {
			if _, ok := s.Data["key.der"]; ok {
				t.Error("key.der still present")
			}
		}},
		{name: "a new keystore", want: []func(*api.Certificate){func(c *api.Certificate) {
			pw := "pw"
			c.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true, Password: &pw}}
		}}, wantStale: "keystore.p12"},
		{name: "key encoding changed to PKCS8", want: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.PrivateKey.Encoding = api.PKCS8
		}}, wantStale: "encoding", check: func(t *testing.T, s ports.Secret) {
			if b, _ := pem.Decode(s.Data["tls.key"]); b == nil || b.Type != "PRIVATE KEY" {
				t.Error("tls.key not rewritten as PKCS#8")
			}
		}},
		{name: "secretTemplate label added", want: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Labels: map[string]string{"team": "a"}}
		}}, wantStale: "label team", check: func(t *testing.T, s ports.Secret) {
			if s.Labels["team"] != "a" {
				t.Error("label not written")
			}
		}},
		{name: "secretTemplate annotation changed", stored: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{"owner": "ops"}}
		}}, want: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{"owner": "dev"}}
		}}, wantStale: "annotation owner", check: func(t *testing.T, s ports.Secret) {
			if s.Annotations["owner"] != "dev" {
				t.Error("annotation not rewritten")
			}
		}},
		{name: "secretTemplate label removed", stored: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Labels: map[string]string{"team": "a", "tier": "web"}}
		}}, want: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Labels: map[string]string{"team": "a"}}
		}}, wantStale: "label tier is no longer", check: func(t *testing.T, s ports.Secret) {
			if _, ok := s.Labels["tier"]; ok || s.Labels["team"] != "a" {
				t.Errorf("labels %v, want only team=a", s.Labels)
			}
		}},
		{name: "secretTemplate removed", stored: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{"owner": "ops"}}
		}}, wantStale: "annotation owner is no longer", check: func(t *testing.T, s ports.Secret) {
			if _, ok := s.Annotations["owner"]; ok || s.Annotations[api.AnnotationCertificateName] == "" {
				t.Errorf("annotations %v, want cert-manager's only", s.Annotations)
			}
		}},
		{name: "a template annotation certfn writes itself is not a change", stored: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{api.AnnotationIssuerName: "someone-else"}}
		}}, want: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{api.AnnotationIssuerName: "someone-else"}}
		}}},
		{name: "written by a Certificate that owned the secret before", tweak: func(s *ports.Secret) {
			s.Annotations[api.AnnotationCertificateName] = "former"
		}, wantStale: "names Certificate former", check: func(t *testing.T, s ports.Secret) {
			if s.Annotations[api.AnnotationCertificateName] != ct.CertName {
				t.Errorf("certificate-name = %q, want the owner %q", s.Annotations[api.AnnotationCertificateName], ct.CertName)
			}
		}},
		{name: "current with a template", stored: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"owner": "ops"}}
		}}, want: []func(*api.Certificate){func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"owner": "ops"}}
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := ct.NewCA(t)
			storedSpec := ct.Cert(tc.stored...)
			issued := ca.IssueSecret(t, storedSpec, nil, ct.Leaf{})
			sec := issued.Secret
			// The stored certificate's issuer annotations are kept on a rewrite.
			sec.Annotations[api.AnnotationIssuerGroup] = "cert-manager.io"
			if tc.tweak != nil {
				tc.tweak(&sec)
			}
			crt := ct.Cert(tc.want...)
			st := ct.State(crt, &sec)
			stale := certificates.OutputsStale(st)
			if (stale == "") != (tc.wantStale == "") || !strings.Contains(stale, tc.wantStale) {
				t.Fatalf("OutputsStale = %q, want %q", stale, tc.wantStale)
			}
			secrets := ct.NewMemSecrets(sec)
			w := &ct.Writer{}
			env, _, _ := ct.Env(secrets, w)
			out, err := certificates.OutputsStep(context.Background(), env, st)
			if err != nil {
				t.Fatalf("OutputsStep: %v", err)
			}
			if tc.wantStale == "" {
				if out.Wrote || len(w.Calls) != 0 || len(secrets.Writes()) != 0 {
					t.Fatalf("rewrote a current secret: %v %v", w.Ops(), secrets.Writes())
				}
				return
			}
			if !out.Wrote || strings.Join(secrets.Writes(), ",") != "put default/web-tls" {
				t.Fatalf("outcome %+v, secret writes %v; want one put", out, secrets.Writes())
			}
			if len(w.Calls) != 1 || w.Calls[0].Op != "Enqueue" || w.Calls[0].Key != st.Key() || w.Calls[0].Delay != 0 {
				t.Fatalf("calls %+v; want Enqueue of the certificate at once", w.Calls)
			}
			got, _ := secrets.Lookup(ct.Namespace, ct.SecretName)
			if !bytes.Equal(got.Data["tls.crt"], sec.Data["tls.crt"]) || !bytes.Equal(got.Data["ca.crt"], sec.Data["ca.crt"]) {
				t.Error("certificate changed: outputs are rewritten from the stored pair, not reissued")
			}
			k, err := pki.DecodePrivateKeyPEM(got.Data["tls.key"])
			if err != nil || !pki.PublicKeysEqual(k.Public(), issued.Key.Public()) {
				t.Error("tls.key is not the stored key")
			}
			if got.Annotations[api.AnnotationIssuerGroup] != "cert-manager.io" {
				t.Errorf("issuer annotations of the stored certificate not kept: %v", got.Annotations)
			}
			// After the rewrite the outputs are current.
			st.Secret = &got
			if s := certificates.OutputsStale(st); s != "" {
				t.Errorf("still stale after the rewrite: %s", s)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestOutputsStepSkips(t *testing.T) {
	combined := func(c *api.Certificate) {
		c.Spec.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: api.CertificateOutputFormatCombinedPEM}}
	}
	ca := ct.NewCA(t)
	valid := ca.IssueSecret(t, ct.Cert(), nil, ct.Leaf{}).Secret
	broken := ca.IssueSecret(t, ct.Cert(), nil, ct.Leaf{}).Secret
	broken.Data["tls.key"] = []byte("garbage")
	other := ct.Cert(ct.Named("api"))
	othersSecret := ca.IssueSecret(t, other, nil, ct.Leaf{}).Secret // names "api"
	for _, tc := range []struct {
		name    string
		crt     *api.Certificate
		secret  *ports.Secret
		sharers []*api.Certificate
	}{
		{"issuing", ct.Cert(combined, ct.WithIssuing("Renewing", ct.T0)), &valid, nil},
		{"no secret", ct.Cert(combined), nil, nil},
		{"invalid secret (the trigger re-issues)", ct.Cert(combined), &broken, nil},
		{"another Certificate owns the secret (DuplicateSecretName)", ct.Cert(combined), &othersSecret, []*api.Certificate{other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := ct.NewMemSecrets()
			w := &ct.Writer{}
			env, _, _ := ct.Env(secrets, w)
			out, err := certificates.OutputsStep(context.Background(), env, ct.Sharing(ct.State(tc.crt, tc.secret), tc.sharers...))
			if err != nil || out.Wrote || len(w.Calls) != 0 || len(secrets.Writes()) != 0 {
				t.Fatalf("outcome %+v err %v calls %v secrets %v; want nothing", out, err, w.Ops(), secrets.Writes())
			}
		})
	}
}

func TestOutputsStepPutError(t *testing.T) {
	sec := ct.NewCA(t).IssueSecret(t, ct.Cert(), nil, ct.Leaf{NotBefore: ct.T0.Add(-time.Hour)}).Secret
	crt := ct.Cert(func(c *api.Certificate) { c.Spec.PrivateKey.Encoding = api.PKCS8 })
	boom := errors.New("unavailable")
	secrets := ct.NewMemSecrets()
	secrets.PutErr = boom
	w := &ct.Writer{}
	env, _, _ := ct.Env(secrets, w)
	out, err := certificates.OutputsStep(context.Background(), env, ct.State(crt, &sec))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "rewrite secret default/web-tls") || out.Wrote || len(w.Calls) != 0 {
		t.Fatalf("OutputsStep = %+v, %v, calls %v", out, err, w.Ops())
	}
}
