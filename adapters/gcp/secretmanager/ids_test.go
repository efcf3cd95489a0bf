package secretmanager_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/core/errs"
)

var secretIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)

// IDs are valid Secret Manager IDs for every namespace and name certfn
// accepts, reversible when they fit, unique, and share one prefix per
// class and per class and namespace (what IAM conditions test).
func TestSecretIDs(t *testing.T) {
	s, err := secretmanager.New(nil, secretmanager.Options{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 63)
	longName := strings.Repeat("abcdefghi.", 25) + "xyz" // 253 characters
	tests := []struct {
		class    secretmanager.Class
		ns, name string
		want     string // "" : shortened
	}{
		{secretmanager.ClassTLS, "default", "web-tls", "certfn_tls_default_web-tls"},
		{secretmanager.ClassCA, "cert-manager", "my-ca", "certfn_ca_cert-manager_my-ca"},
		{secretmanager.ClassIssuedCA, "cert-manager", "root.ca", "certfn_ica_cert-manager_root_ca"},
		{secretmanager.ClassPrivateKey, "team-a", "web-next-private-key", "certfn_pk_team-a_web-next-private-key"},
		{secretmanager.ClassSolverCredentials, "cert-manager", "tsig", "certfn_sc_cert-manager_tsig"},
		{secretmanager.ClassTLS, "a", "www.example.com", "certfn_tls_a_www_example_com"},
		{secretmanager.ClassTLS, "0", "1", "certfn_tls_0_1"},
		{secretmanager.ClassTLS, long, strings.Repeat("b", 180), "certfn_tls_" + long + "_" + strings.Repeat("b", 180)},
		{secretmanager.ClassTLS, long, strings.Repeat("b", 181), ""},
		{secretmanager.ClassTLS, long, longName, ""},
		{secretmanager.ClassTLS, "x", longName, ""},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		id, err := s.SecretID(tc.class, tc.ns, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if !secretIDRE.MatchString(id) {
			t.Errorf("%s/%s: %q is not a valid secret ID", tc.ns, tc.name, id)
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("%s/%s and %s have the same ID", tc.ns, tc.name, prev)
		}
		seen[id] = tc.ns + "/" + tc.name
		if !strings.HasPrefix(id, "certfn_"+string(tc.class)+"_"+tc.ns+"_") {
			t.Errorf("%s: does not start with the class and namespace prefix", id)
		}
		c, ns, name, ok := s.ParseSecretID(id)
		if tc.want == "" {
			if len(id) != 255 || !strings.Contains(id, "-H") || ok {
				t.Errorf("%s/%s: shortened ID %q (%d), ParseSecretID ok=%v", tc.ns, tc.name, id, len(id), ok)
			}
			continue
		}
		if id != tc.want {
			t.Errorf("SecretID(%s, %s, %s) = %q, want %q", tc.class, tc.ns, tc.name, id, tc.want)
		}
		if !ok || c != tc.class || ns != tc.ns || name != tc.name {
			t.Errorf("ParseSecretID(%q) = %s %s %s %v", id, c, ns, name, ok)
		}
	}
	for _, id := range []string{"other_tls_default_web", "certfn_xx_default_web", "certfn_tls_default", "certfn-tls-default-web", "certfn_tls_Default_web", "certfn_tls_a_b__c"} {
		if _, _, _, ok := s.ParseSecretID(id); ok {
			t.Errorf("ParseSecretID(%q) ok", id)
		}
	}
	// A prefix cannot contain '_', so one deployment's "<prefix>_ca_" is
	// never the start of another's IDs.
	other, err := secretmanager.New(nil, secretmanager.Options{Project: "p", Prefix: "certfn-ca"})
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := other.SecretID(secretmanager.ClassTLS, "default", "x"); strings.HasPrefix(id, "certfn_ca_") {
		t.Errorf("%s starts with another prefix's CA prefix", id)
	}
	if _, err := s.SecretID("zz", "default", "x"); !errs.IsPermanent(err) {
		t.Errorf("unknown class: %v", err)
	}
}

func TestLabelValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"web", "web"},
		{"ClusterIssuer/ca", "clusterissuer_ca"},
		{"2031-03-04T05:06:07Z", "2031-03-04t05_06_07z"},
		{"www.example.com", "www_example_com"},
		{"é-x", "_-x"},
		{"", ""},
		{strings.Repeat("X", 70), strings.Repeat("x", 63)},
	}
	for _, tc := range tests {
		if got := secretmanager.LabelValue(tc.in); got != tc.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
