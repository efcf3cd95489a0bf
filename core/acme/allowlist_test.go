package acme

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/issuers"
)

func TestParseServerAllowList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []string
		err     string // substring; "" = valid
	}{
		{name: "none", entries: nil},
		{name: "any", entries: []string{"*"}},
		{name: "any with others", entries: []string{"https://ok.example/", "*"}, err: `--acme-server-allow[1]: "*" allows every server and cannot be combined with other entries`},
		{name: "directories and a host", entries: []string{"https://acme-v02.api.letsencrypt.org/directory", " https://ca.internal.example:8443/ ", "http://pebble:14000"}},
		{name: "no scheme", entries: []string{"acme.example/dir"}, err: `--acme-server-allow[0]: "acme.example/dir" is not an absolute http(s) URL`},
		{name: "other scheme", entries: []string{"https://ok.example/", "ftp://acme.example/"}, err: `--acme-server-allow[1]: "ftp://acme.example/" is not an absolute http(s) URL`},
		{name: "no host", entries: []string{"https:///dir"}, err: "has no host"},
		{name: "user information", entries: []string{"https://u:p@acme.example/"}, err: "has user information"},
		{name: "query", entries: []string{"https://acme.example/dir?x=1"}, err: "has a query"},
		{name: "fragment", entries: []string{"https://acme.example/dir#x"}, err: "has a fragment"},
		{name: "dot segments", entries: []string{"https://acme.example/a/../b"}, err: `".." path segments`},
		{name: "unparsable", entries: []string{"https://[::1"}, err: "is not a URL"},
		{name: "every problem", entries: []string{"x", "https://ok.example/", "y"}, err: `--acme-server-allow[0]: "x" is not an absolute http(s) URL: want the http(s) URL of an ACME directory or a prefix of one, e.g. https://acme-v02.api.letsencrypt.org/directory, or "*" for any server; --acme-server-allow[2]: "y"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ParseServerAllowList("--acme-server-allow", tc.entries)
			if tc.err == "" {
				if err != nil || len(l.Prefixes()) != len(tc.entries) || l.Restricts() != (tc.name != "any") {
					t.Fatalf("= %+v, %v", l, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

func TestServerAllowListAllows(t *testing.T) {
	l, err := ParseServerAllowList("CERTFN_ACME_SERVER_ALLOW", []string{
		"https://acme-v02.api.letsencrypt.org/directory", "https://ca.internal.example/acme", "https://host.example/", "http://[::1]:80/x/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		server string
		want   bool
	}{
		{"https://acme-v02.api.letsencrypt.org/directory", true},
		{"HTTPS://ACME-V02.api.letsencrypt.org/directory", true},
		{"https://acme-v02.api.letsencrypt.org:443/directory", true},
		{"https://acme-v02.api.letsencrypt.org/directory/", true},
		{"https://acme-v02.api.letsencrypt.org/directory-evil", false},
		{"https://acme-v02.api.letsencrypt.org/", false},
		{"https://acme-v02.api.letsencrypt.org.evil.example/directory", false},
		{"https://acme-v02.api.letsencrypt.org@evil.example/directory", false},
		{"https://evil.example/?https://acme-v02.api.letsencrypt.org/directory", false},
		{"http://acme-v02.api.letsencrypt.org/directory", false},
		{"https://acme-v02.api.letsencrypt.org:8443/directory", false},
		{"https://ca.internal.example/acme/prov/directory", true},
		{"https://ca.internal.example/acme", true},
		{"https://ca.internal.example/acme-other/directory", false},
		{"https://ca.internal.example/acme/../admin", false},
		{"https://ca.internal.example/acme/%2e%2e/admin", false},
		{"https://host.example", true},
		{"https://host.example/anything/directory", true},
		{"https://host.example:444/directory", false},
		{"http://[::1]/x/dir", true},
		{"http://[::1]:8080/x/dir", false},
		{"", false},
		{"not a url", false},
		{"https://host.example/dir#frag", false},
	} {
		if got := l.Allows(tc.server); got != tc.want {
			t.Errorf("Allows(%q) = %t, want %t", tc.server, got, tc.want)
		}
	}
	if (ServerAllowList{}).Allows("https://acme-v02.api.letsencrypt.org/directory") {
		t.Error("the zero list allows a server: namespaced Issuers must be denied by default")
	}
	if !AllowAnyServer("x").Allows("https://anything.example/") || AllowAnyServer("x").Restricts() {
		t.Error("AllowAnyServer refuses a server")
	}
}

func namespacedACMEIssuer(server string) *api.Issuer {
	return &api.Issuer{TypeMeta: api.TypeMeta{Kind: api.KindIssuer}, ObjectMeta: api.ObjectMeta{Name: "team-le", Namespace: "team-a", UID: "u2"},
		Spec: api.IssuerSpec{ACME: &api.ACMEIssuer{Server: server, Email: "a@example.com",
			PrivateKeySecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "acct"}}}}}
}

// Ready refuses a namespaced Issuer whose server is not on the list before
// anything else: no key is generated, no ACME client dialled. Allowed
// namespaced Issuers and every ClusterIssuer register as usual.
func TestAccountsReadyServerAllowList(t *testing.T) {
	allow, err := ParseServerAllowList("--acme-server-allow", []string{"https://acme.example/"})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := ParseServerAllowList("--acme-server-allow", nil)
	if err != nil {
		t.Fatal(err)
	}
	anyServer, err := ParseServerAllowList("--acme-server-allow", []string{" * "})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		allow  ServerAllowList
		issuer api.GenericIssuer
		ns     string
		wantOK bool
		reason string
		msg    string
	}{
		{name: "namespaced, allowed", allow: allow, issuer: namespacedACMEIssuer("https://acme.example/dir"), ns: "team-a", wantOK: true, reason: ReasonAccountRegistered},
		{name: "namespaced, not allowed", allow: allow, issuer: namespacedACMEIssuer("https://169.254.169.254/latest"), ns: "team-a", reason: ReasonServerNotAllowed,
			msg: `spec.acme.server "https://169.254.169.254/latest" is not allowed for namespaced Issuers: the deployment allows only servers starting with https://acme.example/ (--acme-server-allow)`},
		// Deny by default: the zero list and a list of no entries allow
		// namespaced Issuers no server, and say which setting to change.
		{name: "namespaced, zero list", issuer: namespacedACMEIssuer("https://acme-v02.api.letsencrypt.org/directory"), ns: "team-a", reason: ReasonServerNotAllowed,
			msg: `allows namespaced Issuers no ACME server by default; the operator lists the allowed directory URLs (or "*" for any server) in the ACME server allow-list`},
		{name: "namespaced, empty list", allow: empty, issuer: namespacedACMEIssuer("https://acme-v02.api.letsencrypt.org/directory"), ns: "team-a", reason: ReasonServerNotAllowed,
			msg: `(or "*" for any server) in --acme-server-allow`},
		{name: "namespaced, any server", allow: anyServer, issuer: namespacedACMEIssuer("https://169.254.169.254/latest"), ns: "team-a", wantOK: true, reason: ReasonAccountRegistered},
		{name: "cluster issuer, zero list", issuer: acmeIssuer(func(a *api.ACMEIssuer) { a.Server = "https://private-ca.example/dir" }),
			ns: "cert-manager", wantOK: true, reason: ReasonAccountRegistered},
		{name: "cluster issuer, not on the list", allow: allow, issuer: acmeIssuer(func(a *api.ACMEIssuer) { a.Server = "https://private-ca.example/dir" }),
			ns: "cert-manager", wantOK: true, reason: ReasonAccountRegistered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := certtest.NewMemSecrets()
			fc := &fakeClient{}
			a := NewAccounts(sec, fakeDialer{fc}, tc.allow)
			ok, reason, msg, err := a.Ready(context.Background(), &issuers.State{Issuer: tc.issuer, Now: time.Now(), SecretNamespace: tc.ns})
			if err != nil || ok != tc.wantOK || reason != tc.reason || !strings.Contains(msg, tc.msg) {
				t.Fatalf("Ready = %t %q %q %v, want %t %q containing %q", ok, reason, msg, err, tc.wantOK, tc.reason, tc.msg)
			}
			if ok {
				return
			}
			if fc.dials != 0 || len(fc.registers) != 0 {
				t.Fatalf("a refused issuer dialled %d clients, registered %d times", fc.dials, len(fc.registers))
			}
			if _, found := sec.Lookup(tc.ns, "acct"); found {
				t.Fatal("an account key was generated for a refused issuer")
			}
		})
	}
}

// An issuer that was Ready before its server was refused (the list
// changed) gets no client from Get or Client: transient, not-ready and
// not-allowed, with the reason.
func TestAccountsGetServerNotAllowed(t *testing.T) {
	fc := &fakeClient{}
	open := NewAccounts(certtest.NewMemSecrets(), fakeDialer{fc}, AllowAnyServer(""))
	iss := namespacedACMEIssuer("https://old.example/dir")
	st := &issuers.State{Issuer: iss, Now: time.Now(), SecretNamespace: "team-a"}
	if ok, _, msg, err := open.Ready(context.Background(), st); !ok || err != nil {
		t.Fatalf("Ready without a list: %s %v", msg, err)
	}
	api.SetCondition(&iss.Status.Conditions, api.Condition{Type: "Ready", Status: api.ConditionTrue}, time.Now())
	allow, err := ParseServerAllowList("CERTFN_ACME_SERVER_ALLOW", []string{"https://acme.example/"})
	if err != nil {
		t.Fatal(err)
	}
	restricted := NewAccounts(certtest.NewMemSecrets(), fakeDialer{fc}, allow)
	dials := fc.dials
	_, cl, err := restricted.Get(context.Background(), iss, "team-a")
	if !errors.Is(err, ErrServerNotAllowed) || !errors.Is(err, ErrAccountNotReady) || errs.IsPermanent(err) || cl != nil ||
		!strings.Contains(err.Error(), "issuer team-a/team-le") || !strings.Contains(err.Error(), "CERTFN_ACME_SERVER_ALLOW") {
		t.Fatalf("Get = %v, %v", cl, err)
	}
	if cl, err := restricted.Client(iss); !errors.Is(err, ErrServerNotAllowed) || cl != nil {
		t.Fatalf("Client = %v, %v", cl, err)
	}
	if fc.dials != dials {
		t.Fatal("a client was dialled for a refused server")
	}
	// A ClusterIssuer on the same server is not restricted.
	if _, err := restricted.Client(acmeIssuer(func(a *api.ACMEIssuer) { a.Server = "https://old.example/dir" })); err != nil {
		t.Fatalf("ClusterIssuer: %v", err)
	}
}
