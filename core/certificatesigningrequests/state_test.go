package certificatesigningrequests

import (
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

func csrWith(signer string, fns ...func(*api.CertificateSigningRequest)) *api.CertificateSigningRequest {
	c := &api.CertificateSigningRequest{ObjectMeta: api.ObjectMeta{Name: "web", UID: "u"},
		Spec: api.CertificateSigningRequestSpec{Request: []byte("pem"), SignerName: signer, Usages: []api.KeyUsage{"server auth"},
			Username: "bob", Groups: []string{"g"}}}
	for _, f := range fns {
		f(c)
	}
	return c
}

func i32(v int32) *int32 { return &v }

// Request reads a CSR as cert-manager's CSR signers do.
func TestRequest(t *testing.T) {
	ann := func(kv ...string) func(*api.CertificateSigningRequest) {
		return func(c *api.CertificateSigningRequest) {
			c.Annotations = map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				c.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	cases := []struct {
		name    string
		c       *api.CertificateSigningRequest
		ours    bool
		check   func(*api.CertificateRequest) string
		wantErr string
	}{
		{"foreign signer", csrWith("example.com/x"), false, nil, ""},
		{"Issuer: its namespace", csrWith("issuers.cert-manager.io/team-a.ca"), true, func(cr *api.CertificateRequest) string {
			if cr.Namespace != "team-a" || cr.Spec.IssuerRef != (api.IssuerReference{Name: "ca", Kind: api.KindIssuer, Group: api.CertManagerGroup}) {
				return "issuer"
			}
			if cr.Spec.Username != "bob" || cr.Spec.Groups[0] != "g" || string(cr.Spec.Request) != "pem" || cr.Spec.Usages[0] != "server auth" {
				return "copied fields"
			}
			if _, ok := cr.Spec.RequestedDuration(); ok || cr.Spec.IsCA {
				return "defaults"
			}
			return ""
		}, ""},
		{"ClusterIssuer: the cluster resource namespace", csrWith("clusterissuers.cert-manager.io/ca"), true, func(cr *api.CertificateRequest) string {
			if cr.Namespace != "cert-manager" || cr.Spec.IssuerRef.Kind != api.KindClusterIssuer {
				return "issuer"
			}
			return ""
		}, ""},
		{"expirationSeconds wins over request-duration", csrWith("clusterissuers.cert-manager.io/ca", ann(api.AnnotationCSRDuration, "2h"),
			func(c *api.CertificateSigningRequest) { c.Spec.ExpirationSeconds = i32(900) }), true, func(cr *api.CertificateRequest) string {
			if d, _ := cr.Spec.RequestedDuration(); d != 15*time.Minute {
				return "duration " + d.String()
			}
			return ""
		}, ""},
		{"request-duration", csrWith("clusterissuers.cert-manager.io/ca", ann(api.AnnotationCSRDuration, "2h")), true, func(cr *api.CertificateRequest) string {
			if d, _ := cr.Spec.RequestedDuration(); d != 2*time.Hour {
				return "duration " + d.String()
			}
			return ""
		}, ""},
		{"request-duration that does not parse", csrWith("clusterissuers.cert-manager.io/ca", ann(api.AnnotationCSRDuration, "soon")), true, nil, "is not a positive duration"},
		{"is-ca and the selfSigned key", csrWith("clusterissuers.cert-manager.io/ss", ann(api.AnnotationCSRIsCA, "true", api.AnnotationCSRPrivateKeySecretName, "k")), true,
			func(cr *api.CertificateRequest) string {
				if !cr.Spec.IsCA || cr.Annotations[api.AnnotationPrivateKeySecretName] != "k" {
					return "annotations"
				}
				return ""
			}, ""},
		{"cert-manager's own key annotation on a CSR is not honoured", csrWith("clusterissuers.cert-manager.io/ss", ann(api.AnnotationPrivateKeySecretName, "other")), true,
			func(cr *api.CertificateRequest) string {
				if _, ok := cr.Annotations[api.AnnotationPrivateKeySecretName]; ok {
					return "cert-manager.io/private-key-secret-name passed through"
				}
				return ""
			}, ""},
		{"decisions carried", csrWith("clusterissuers.cert-manager.io/ca", func(c *api.CertificateSigningRequest) {
			c.Status.AddCondition(api.CSRConditionApproved, "r", "m", time.Unix(0, 0))
		}), true, func(cr *api.CertificateRequest) string {
			if !api.IsTrue(cr.Status.Conditions, api.CertificateRequestConditionApproved) {
				return "Approved not carried"
			}
			return ""
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cr, ours, err := Request(tc.c, "cert-manager")
			if ours != tc.ours {
				t.Fatalf("ours = %v", ours)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errs.IsPermanent(err) {
					t.Fatalf("err = %v; want a permanent error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				if msg := tc.check(cr); msg != "" {
					t.Fatalf("%s: %+v", msg, cr)
				}
			}
		})
	}
}

func TestSignerLabel(t *testing.T) {
	for in, want := range map[string]string{
		"issuers.cert-manager.io/a.b": "issuers.cert-manager.io", "clusterissuers.cert-manager.io/b": "clusterissuers.cert-manager.io",
		"example.com/secret-team-signer": "other", "issuers.cert-manager.io/nodot": "other",
	} {
		if got := SignerLabel(in); got != want {
			t.Errorf("SignerLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
