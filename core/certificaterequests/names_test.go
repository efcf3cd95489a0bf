package certificaterequests_test

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
)

func TestCheckNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		want  string // "" valid
	}{
		{"valid", []string{"www.team-a.example.com", "*.team-a.example.com", "xn--bcher-kva.example"}, ""},
		{"NUL", []string{"ok.team-a.example.com", "evil.com\x00.team-a.example.com"},
			`spec.request: DNS name "evil.com\x00.team-a.example.com" (SAN 2): contains a character a DNS name cannot hold (NUL)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crt := ct.Cert(ct.WithDNSNames(tc.names...), func(c *api.Certificate) { c.Spec.CommonName = "" })
			csr, err := pki.ParseCSRPEM(ct.CSR(t, crt, ct.Key(t, nil)))
			if err != nil {
				t.Fatal(err)
			}
			err = certificaterequests.CheckNames(csr)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckNames = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errs.IsPermanent(err) || !strings.HasPrefix(err.Error(), "spec.request: ") {
				t.Fatalf("CheckNames = %v (permanent %v)\nwant the permanent error %s", err, errs.IsPermanent(err), tc.want)
			}
		})
	}
}
