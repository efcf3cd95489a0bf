package repo_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
)

// CertificatesNaming finds exactly the Certificates naming the secret
// (not one naming a longer name that starts with it, nor another
// namespace's), whichever it skips undecoded.
func TestCertificatesNaming(t *testing.T) {
	r := apptest.NewRig(t)
	cert := func(ns, name, secret string) string {
		return "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: " + name + ", namespace: " + ns + "}\n" +
			"spec: {secretName: " + secret + ", dnsNames: [" + name + ".example.com], issuerRef: {name: ss}}\n---\n"
	}
	r.Apply(cert("default", "a", "shared") + cert("default", "b", "shared") + cert("default", "c", "shared-2") +
		cert("default", "d", "other") + cert("team", "e", "shared"))
	certs, err := r.Repo.CertificatesNaming(context.Background(), "default", "shared", "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range certs {
		got = append(got, api.KeyOf(c).String())
	}
	sort.Strings(got)
	want := []string{api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "a"}.String(),
		api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "b"}.String()}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("found %v, want %v", got, want)
	}
}
