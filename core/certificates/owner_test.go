package certificates_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

// cert-manager's CertificateOwnsSecret (PR #6406): the secret's
// certificate-name annotation, when it names a Certificate sharing the
// secret, else the oldest Certificate, then the first by name.
func TestSecretOwner(t *testing.T) {
	older, younger := ct.T0.Add(-2*time.Hour), ct.T0.Add(-time.Hour)
	annotated := func(name string) *ports.Secret {
		return &ports.Secret{Namespace: ct.Namespace, Name: ct.SecretName, Annotations: map[string]string{api.AnnotationCertificateName: name}}
	}
	for _, tc := range []struct {
		name      string
		crt       *api.Certificate
		sharers   []*api.Certificate
		secret    *ports.Secret
		wantOwner string
		wantNames string
	}{
		{"alone", ct.Cert(), nil, nil, "web", ""},
		{"alone, the secret names another Certificate", ct.Cert(), nil, annotated("gone"), "web", ""},
		{"same creation time: the first by name", ct.Cert(), []*api.Certificate{ct.Cert(ct.Named("api"))}, nil, "api", "api,web"},
		{"the oldest before the name", ct.Cert(ct.CreatedAt(older)), []*api.Certificate{ct.Cert(ct.Named("api"), ct.CreatedAt(younger))}, nil, "web", "web,api"},
		{"the secret names a sharer", ct.Cert(), []*api.Certificate{ct.Cert(ct.Named("api")), ct.Cert(ct.Named("zzz"))}, annotated("zzz"), "zzz", "api,web,zzz"},
		{"the secret names this Certificate", ct.Cert(), []*api.Certificate{ct.Cert(ct.Named("api"))}, annotated("web"), "web", "api,web"},
		{"the secret names a Certificate that does not share it", ct.Cert(), []*api.Certificate{ct.Cert(ct.Named("api"))}, annotated("gone"), "api", "api,web"},
		{"a listed Certificate with another secretName is no sharer", ct.Cert(),
			[]*api.Certificate{ct.Cert(ct.Named("api"), func(c *api.Certificate) { c.Spec.SecretName = "api-tls" })}, nil, "web", ""},
		{"no creationTimestamp counts as oldest", ct.Cert(), []*api.Certificate{ct.Cert(ct.Named("zzz"), func(c *api.Certificate) { c.CreationTimestamp = nil })}, nil, "zzz", "zzz,web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := certificates.SecretOwner(tc.crt, tc.sharers, tc.secret)
			if o.Owner != tc.wantOwner || strings.Join(o.Names, ",") != tc.wantNames || o.Secret != ct.SecretName {
				t.Fatalf("SecretOwner = %+v, want owner %s, names %q", o, tc.wantOwner, tc.wantNames)
			}
			if o.Owns(tc.crt.Name) != (tc.wantOwner == tc.crt.Name) {
				t.Fatalf("Owns(%s) = %v", tc.crt.Name, o.Owns(tc.crt.Name))
			}
		})
	}
	o := certificates.SecretOwner(ct.Cert(ct.Named("b")), []*api.Certificate{ct.Cert(ct.Named("a"))}, nil)
	if want := `Secret "web-tls" is owned by Certificate "a" (the Certificates "a", "b" share spec.secretName)`; o.Message() != want {
		t.Fatalf("Message = %q, want %q", o.Message(), want)
	}
}

// State.Ownership lists the namespace's Certificates only when the secret
// names another Certificate (evidence of sharing), once per reconcile.
func TestStateOwnershipListsOnlyWhenNeeded(t *testing.T) {
	issued := ct.NewCA(t).IssueSecret(t, ct.Cert(), nil, ct.Leaf{}).Secret // names "web"
	other := *ct.Cert(ct.Named("api"))
	for _, tc := range []struct {
		name      string
		secret    *ports.Secret
		wantLists int
		wantOwner string
	}{
		{"the secret names this Certificate: nothing listed", &issued, 0, "web"},
		{"no secret yet: nothing listed, owner until another's write says otherwise", nil, 0, "web"},
		{"the secret names another Certificate: listed", claimedBy(issued, "api"), 1, "api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := ct.State(ct.Cert(), tc.secret)
			lists := 0
			st.SharersLoader = func(context.Context) ([]*api.Certificate, error) {
				lists++
				return []*api.Certificate{&other}, nil
			}
			for i := 0; i < 3; i++ {
				o, err := st.Ownership(context.Background())
				if err != nil || o.Owner != tc.wantOwner {
					t.Fatalf("Ownership = %+v, %v; want owner %s", o, err, tc.wantOwner)
				}
			}
			if lists != tc.wantLists {
				t.Fatalf("listed %d times, want %d", lists, tc.wantLists)
			}
			if _, notOwner := st.NotOwner(); notOwner != (tc.wantOwner != "web") {
				t.Fatalf("NotOwner = %v", notOwner)
			}
		})
	}

	st := ct.State(ct.Cert(), claimedBy(issued, "api"))
	if _, notOwner := st.NotOwner(); notOwner {
		t.Fatal("NotOwner before anyone asked")
	}
	boom := errors.New("store unavailable")
	st.SharersLoader = func(context.Context) ([]*api.Certificate, error) { return nil, boom }
	if _, err := st.Ownership(context.Background()); !errors.Is(err, boom) || !strings.Contains(err.Error(), "list the Certificates sharing secret default/web-tls") {
		t.Fatalf("err = %v, want the list error wrapped", err)
	}
}

// claimedBy is sec with its certificate-name annotation naming name.
func claimedBy(sec ports.Secret, name string) *ports.Secret {
	ann := map[string]string{}
	for k, v := range sec.Annotations {
		ann[k] = v
	}
	ann[api.AnnotationCertificateName] = name
	sec.Annotations = ann
	return &sec
}

// State.Ownership refuses every Certificate a secret it may not write:
// data no Certificate wrote (unless handed over), a secret an issuer or
// a keystore password uses (even handed over), another Certificate's next
// private key, file permissions beyond the deployment's bounds. A secret
// the Certificate wrote stays its own, an issuer's use notwithstanding
// (a CA bootstrapped from a Certificate), and nothing is listed for it.
func TestStateOwnershipRefusesSecretsNoCertificateWrote(t *testing.T) {
	issued := ct.NewCA(t).IssueSecret(t, ct.Cert(), nil, ct.Leaf{}).Secret // names "web"
	foreign := ports.Secret{Namespace: ct.Namespace, Name: ct.SecretName, Data: map[string][]byte{"tls.key": []byte("k")}}
	handedOver := foreign
	handedOver.Annotations = map[string]string{api.AnnotationAdoptByCertificate: ct.CertName}
	empty := ports.Secret{Namespace: ct.Namespace, Name: ct.SecretName}
	nextKey := *claimedBy(foreign, "other")
	nextKey.Labels = map[string]string{api.LabelNextPrivateKey: "true"}
	caUse := api.SecretUse{Kind: api.KindIssuer, Name: "ca", Field: "spec.ca.secretName", Secret: ct.SecretName}
	acmeUse := api.SecretUse{Kind: api.KindIssuer, Name: "le", Field: "spec.acme.privateKeySecretRef", Secret: ct.SecretName}
	mode := func(m string) func(*api.Certificate) {
		return func(c *api.Certificate) {
			c.Spec.SecretTemplate = &api.CertificateSecretTemplate{Annotations: map[string]string{api.AnnotationSecretFileMode: m}}
		}
	}
	for _, tc := range []struct {
		name       string
		crt        *api.Certificate
		secret     *ports.Secret
		uses       []api.SecretUse
		bounds     *api.SecretFileBounds
		wantReason string // "": owned
		wantLoads  int
	}{
		{"its own secret", ct.Cert(), &issued, nil, nil, "", 0},
		{"its own secret, used by a CA Issuer", ct.Cert(), &issued, []api.SecretUse{caUse}, nil, "", 0},
		{"no secret yet", ct.Cert(), nil, nil, nil, "", 1},
		{"an empty secret", ct.Cert(), &empty, nil, nil, "", 1},
		{"a CA Issuer's secret not created yet, by a CA Certificate", ct.Cert(func(c *api.Certificate) { c.Spec.IsCA = true }), nil, []api.SecretUse{caUse}, nil, "", 1},
		{"a CA Issuer's secret not created yet (or not visible here), by a leaf Certificate", ct.Cert(), nil, []api.SecretUse{caUse}, nil, certificates.ReasonSecretInUse, 1},
		{"an ACME account key not created yet", ct.Cert(), nil, []api.SecretUse{acmeUse}, nil, certificates.ReasonSecretInUse, 1},
		{"data no Certificate wrote", ct.Cert(), &foreign, nil, nil, certificates.ReasonSecretNotOwned, 1},
		{"data handed over to it", ct.Cert(), &handedOver, nil, nil, "", 1},
		{"data handed over, used by a CA Issuer", ct.Cert(), &handedOver, []api.SecretUse{caUse}, nil, certificates.ReasonSecretInUse, 1},
		{"another Certificate's next private key", ct.Cert(), &nextKey, nil, nil, certificates.ReasonSecretNotOwned, 1},
		{"a mode within the bounds", ct.Cert(mode("0640")), &issued, nil, &api.SecretFileBounds{}, "", 0},
		{"a mode beyond the bounds", ct.Cert(mode("0644")), &issued, nil, &api.SecretFileBounds{}, certificates.ReasonSecretFilePermsNotAllowed, 0},
		{"a mode the operator allows", ct.Cert(mode("0644")), &issued, nil, &api.SecretFileBounds{MaxMode: 0o644}, "", 0},
		{"unbounded (a cloud secret store)", ct.Cert(mode("0644")), &issued, nil, nil, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := ct.State(tc.crt, tc.secret)
			st.FileBounds = tc.bounds
			loads := 0
			st.SecretUsesLoader = func(_ context.Context, certs bool) ([]api.SecretUse, error) {
				loads++
				if certs != (tc.secret != nil && len(tc.secret.Data) > 0) {
					t.Errorf("uses loaded with certificates %v for a secret with data %v", certs, tc.secret != nil)
				}
				return tc.uses, nil
			}
			o, err := st.Ownership(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if o.Owns(ct.CertName) != (tc.wantReason == "") {
				t.Fatalf("Ownership = %+v, want refused %q", o, tc.wantReason)
			}
			if tc.wantReason != "" && (o.Reason() != tc.wantReason || o.Message() == "") {
				t.Fatalf("Reason %q (%s), want %s", o.Reason(), o.Message(), tc.wantReason)
			}
			if _, notOwner := st.NotOwner(); notOwner != (tc.wantReason != "") {
				t.Fatalf("NotOwner = %v", notOwner)
			}
			if loads != tc.wantLoads {
				t.Fatalf("uses loaded %d times, want %d", loads, tc.wantLoads)
			}
		})
	}
}
