package clouddnstest

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	gdns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

// client returns a Cloud DNS client on d with a static token.
func client(t *testing.T, d *Double, token string) *gdns.Service {
	t.Helper()
	svc, err := gdns.NewService(context.Background(), option.WithEndpoint(d.Endpoint()),
		option.WithAuthCredentials(auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken(token)})))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// apiErr returns err's HTTP status and first reason.
func apiErr(t *testing.T, err error) (int, string) {
	t.Helper()
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		t.Fatalf("err = %v, want a googleapi.Error", err)
	}
	reason := ""
	if len(ge.Errors) > 0 {
		reason = ge.Errors[0].Reason
	}
	return ge.Code, reason
}

func txt(name string, ttl int64, rrdatas ...string) *gdns.ResourceRecordSet {
	return &gdns.ResourceRecordSet{Name: name, Type: "TXT", Ttl: ttl, Rrdatas: rrdatas}
}

// The change semantics the provider relies on: atomic changes, deletions
// that must match exactly (412), missing sets (404), existing sets (409),
// names outside the zone and over-long strings (400); TXT stored quoted.
func TestChangeSemantics(t *testing.T) {
	d := New(t)
	d.AddToken("tok", "admin")
	d.AddZone("p-test", "example-test", "example.test", false)
	c := client(t, d, "tok")
	ctx := context.Background()
	create := func(ch *gdns.Change) (*gdns.Change, error) {
		return c.Changes.Create("p-test", "example-test", ch).Context(ctx).Do()
	}
	const name = "_acme-challenge.example.test."
	out, err := create(&gdns.Change{Additions: []*gdns.ResourceRecordSet{txt(name, 60, "a", `"b" "c"`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "pending" || out.Id == "" {
		t.Fatalf("change = %+v, want pending with an ID", out)
	}
	list, err := c.ResourceRecordSets.List("p-test", "example-test").Name(name).Type("TXT").Context(ctx).Do()
	if err != nil || len(list.Rrsets) != 1 || !slices.Equal(list.Rrsets[0].Rrdatas, []string{`"a"`, `"b" "c"`}) {
		t.Fatalf("rrsets = %+v, %v; want the canonical quoted rrdatas", list, err)
	}
	for _, tc := range []struct {
		name   string
		change *gdns.Change
		status int
		reason string
	}{
		{"deletion with another TTL", &gdns.Change{Deletions: []*gdns.ResourceRecordSet{txt(name, 300, `"a"`, `"b" "c"`)}}, 412, "conditionNotMet"},
		{"deletion with fewer values", &gdns.Change{Deletions: []*gdns.ResourceRecordSet{txt(name, 60, `"a"`)}}, 412, "conditionNotMet"},
		{"deletion of a missing set", &gdns.Change{Deletions: []*gdns.ResourceRecordSet{txt("_acme-challenge.www.example.test.", 60, `"a"`)}}, 404, "notFound"},
		{"addition of an existing set", &gdns.Change{Additions: []*gdns.ResourceRecordSet{txt(name, 60, "z")}}, 409, "alreadyExists"},
		{"name outside the zone", &gdns.Change{Additions: []*gdns.ResourceRecordSet{txt("_acme-challenge.other.test.", 60, "z")}}, 400, "invalid"},
		{"relative name", &gdns.Change{Additions: []*gdns.ResourceRecordSet{txt("_acme-challenge", 60, "z")}}, 400, "invalid"},
		{"character-string over 255 octets", &gdns.Change{Additions: []*gdns.ResourceRecordSet{txt("long.example.test.", 60, `"`+strings.Repeat("x", 256)+`"`)}}, 400, "invalid"},
		{"empty change", &gdns.Change{}, 400, "required"},
		{"good addition with a bad deletion", &gdns.Change{
			Additions: []*gdns.ResourceRecordSet{txt("new.example.test.", 60, "n")},
			Deletions: []*gdns.ResourceRecordSet{txt(name, 60, `"a"`)}}, 412, "conditionNotMet"},
	} {
		_, err := create(tc.change)
		if status, reason := apiErr(t, err); status != tc.status || reason != tc.reason {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, reason, tc.status, tc.reason)
		}
	}
	if sets := d.RecordSets("p-test", "example-test"); slices.ContainsFunc(sets, func(s RecordSet) bool { return s.Name == "new.example.test." }) {
		t.Fatal("a refused change was applied in part")
	}
	// The exact set, values in another order, replaces it.
	if _, err := create(&gdns.Change{
		Deletions: []*gdns.ResourceRecordSet{txt(name, 60, `"b" "c"`, `"a"`)},
		Additions: []*gdns.ResourceRecordSet{txt(name, 60, `"a"`)},
	}); err != nil {
		t.Fatal(err)
	}
	if got := d.Changes(); len(got) != 2 || len(got[1].Deletions) != 1 || len(got[1].Additions) != 1 {
		t.Fatalf("Changes = %+v", got)
	}
	// Unknown zone, project, change.
	_, err = c.Changes.Create("p-test", "nope", &gdns.Change{Additions: []*gdns.ResourceRecordSet{txt(name, 60, "a")}}).Context(ctx).Do()
	if status, _ := apiErr(t, err); status != 404 || !strings.Contains(err.Error(), "parameters.managedZone") {
		t.Fatalf("unknown zone: %v", err)
	}
	_, err = c.ManagedZones.List("nope-project").Context(ctx).Do()
	if status, _ := apiErr(t, err); status != 404 || !strings.Contains(err.Error(), "parameters.project") {
		t.Fatalf("unknown project: %v", err)
	}
	_, err = c.Changes.Get("p-test", "example-test", "99").Context(ctx).Do()
	if status, _ := apiErr(t, err); status != 404 {
		t.Fatalf("unknown change: %v", err)
	}
}

// Paging of both lists, and the filters.
func TestPaging(t *testing.T) {
	d := New(t)
	d.PageSize = 2
	d.AddToken("tok", "admin")
	for _, z := range []string{"a-test", "b-test", "c-test"} {
		d.AddZone("p-test", z, strings.TrimSuffix(z, "-test")+".test", false)
	}
	d.AddZone("other-p", "x-test", "x.test", true)
	c := client(t, d, "tok")
	ctx := context.Background()
	var names []string
	pages := 0
	err := c.ManagedZones.List("p-test").Context(ctx).Pages(ctx, func(p *gdns.ManagedZonesListResponse) error {
		pages++
		for _, z := range p.ManagedZones {
			names = append(names, z.Name+" "+z.DnsName+" "+z.Visibility)
		}
		return nil
	})
	if err != nil || pages != 2 || !slices.Equal(names, []string{"a-test a.test. public", "b-test b.test. public", "c-test c.test. public"}) {
		t.Fatalf("zones = %q in %d pages, %v", names, pages, err)
	}
	filtered, err := c.ManagedZones.List("p-test").DnsName("b.test.").Context(ctx).Do()
	if err != nil || len(filtered.ManagedZones) != 1 || filtered.ManagedZones[0].Name != "b-test" {
		t.Fatalf("dnsName filter: %+v, %v", filtered, err)
	}
	var sets []string
	err = c.ResourceRecordSets.List("p-test", "a-test").Context(ctx).Pages(ctx, func(p *gdns.ResourceRecordSetsListResponse) error {
		for _, s := range p.Rrsets {
			sets = append(sets, s.Name+" "+s.Type)
		}
		return nil
	})
	if err != nil || !slices.Equal(sets, []string{"a.test. NS", "a.test. SOA"}) {
		t.Fatalf("apex sets = %q, %v", sets, err)
	}
	_, err = c.ResourceRecordSets.List("p-test", "a-test").Type("TXT").Context(ctx).Do()
	if status, _ := apiErr(t, err); status != 400 {
		t.Fatalf("type without name: %v", err)
	}
}

// Authentication and authorization: unknown tokens are 401, denied
// identities 403, and calls are logged with their identity.
func TestAuth(t *testing.T) {
	d := New(t)
	d.AddToken("good", "alice")
	d.AddToken("denied", "bob")
	d.Deny("bob", "p-test")
	d.AddZone("p-test", "z-test", "z.test", false)
	ctx := context.Background()
	if _, err := client(t, d, "good").ManagedZones.List("p-test").Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	_, err := client(t, d, "forged").ManagedZones.List("p-test").Context(ctx).Do()
	if status, reason := apiErr(t, err); status != 401 || reason != "authError" {
		t.Fatalf("unknown token: %v", err)
	}
	_, err = client(t, d, "denied").ManagedZones.List("p-test").Context(ctx).Do()
	if status, reason := apiErr(t, err); status != 403 || reason != "forbidden" {
		t.Fatalf("denied: %v", err)
	}
	d.Fail("managedZones.list", 1, 503, "backendError")
	_, err = client(t, d, "good").ManagedZones.List("p-test").Context(ctx).Do()
	if status, reason := apiErr(t, err); status != 503 || reason != "backendError" {
		t.Fatalf("injected: %v", err)
	}
	var ids []string
	for _, c := range d.Calls() {
		ids = append(ids, c.Op+" "+c.Identity)
	}
	want := []string{"managedZones.list alice", "managedZones.list ", "managedZones.list bob", "managedZones.list alice"}
	if !slices.Equal(ids, want) {
		t.Fatalf("calls = %q, want %q", ids, want)
	}
}

// The token endpoint: a key the double made is exchanged by Google's own
// client library; a forged signature, a foreign audience or a revoked key
// is invalid_grant.
func TestTokenEndpoint(t *testing.T) {
	d := New(t)
	d.AddZone("p-test", "z-test", "z.test", false)
	key := d.ServiceAccount(t, "p-test", "sa@p-test.iam.gserviceaccount.com")
	ctx := context.Background()
	svc, err := gdns.NewService(ctx, option.WithEndpoint(d.Endpoint()), option.WithAuthCredentialsJSON(option.ServiceAccount, key))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ManagedZones.List("p-test").Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	calls := d.Calls()
	if len(calls) != 2 || calls[0].Op != "token" || calls[1].Identity != "sa@p-test.iam.gserviceaccount.com" {
		t.Fatalf("calls = %+v", calls)
	}

	var f struct {
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
	}
	if err := json.Unmarshal(key, &f); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(f.PrivateKey))
	good, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := rsa.GenerateKey(rand.Reader, 2048)
	now := time.Now().Unix()
	assertion := func(k *rsa.PrivateKey, aud string) string {
		seg := func(v any) string {
			b, _ := json.Marshal(v)
			return base64.RawURLEncoding.EncodeToString(b)
		}
		s := seg(map[string]string{"alg": "RS256", "typ": "JWT", "kid": f.PrivateKeyID}) + "." +
			seg(map[string]any{"iss": "sa@p-test.iam.gserviceaccount.com", "aud": aud, "scope": Scopes[0], "iat": now, "exp": now + 3600})
		sum := sha256.Sum256([]byte(s))
		sig, _ := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		return s + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	exchange := func(a string) (int, string) {
		resp, err := http.PostForm(d.TokenURL, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {a}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		code, _ := body["error"].(string)
		return resp.StatusCode, code
	}
	if status, code := exchange(assertion(good.(*rsa.PrivateKey), d.TokenURL)); status != 200 {
		t.Fatalf("good assertion: %d %s", status, code)
	}
	if status, code := exchange(assertion(forged, d.TokenURL)); status != 400 || code != "invalid_grant" {
		t.Fatalf("forged signature: %d %s", status, code)
	}
	if status, code := exchange(assertion(good.(*rsa.PrivateKey), "https://elsewhere.example/token")); status != 400 || code != "invalid_grant" {
		t.Fatalf("foreign audience: %d %s", status, code)
	}
	d.RevokeKeys("sa@p-test.iam.gserviceaccount.com")
	if status, code := exchange(assertion(good.(*rsa.PrivateKey), d.TokenURL)); status != 400 || code != "invalid_grant" {
		t.Fatalf("revoked key: %d %s", status, code)
	}
}

// The end-to-end hooks: OnTXT sees each TXT set written or deleted, its
// values decoded; with SyncAfter a change is read pending that many
// times, then done; BeforeChange may race the caller.
func TestOnTXTAndSyncAfter(t *testing.T) {
	d := New(t)
	d.SyncAfter = 2
	var got []TXTUpdate
	d.OnTXT = func(u TXTUpdate) { got = append(got, u) }
	d.AddToken("tok", "admin")
	d.AddZone("p-test", "z-test", "example.test", false)
	c := client(t, d, "tok")
	ctx := context.Background()
	const name = "_acme-challenge.www.example.test."
	out, err := c.Changes.Create("p-test", "z-test", &gdns.Change{Additions: []*gdns.ResourceRecordSet{txt(name, 60, `"a\"b"`, `"long" "er"`, `"\195\169"`)}}).Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for range 3 {
		ch, err := c.Changes.Get("p-test", "z-test", out.Id).Context(ctx).Do()
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, ch.Status)
	}
	if want := []string{"pending", "pending", "done"}; !slices.Equal(statuses, want) {
		t.Fatalf("changes.get statuses %q, want %q", statuses, want)
	}
	if _, err := c.Changes.Create("p-test", "z-test", &gdns.Change{Deletions: []*gdns.ResourceRecordSet{txt(name, 60, `"a\"b"`, `"long" "er"`, `"\195\169"`)}}).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
	want := []TXTUpdate{
		{Project: "p-test", Zone: "z-test", Name: name, Texts: []string{`a"b`, "longer", "é"}},
		{Project: "p-test", Zone: "z-test", Name: name},
	}
	if len(got) != len(want) {
		t.Fatalf("OnTXT got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Project != want[i].Project || got[i].Zone != want[i].Zone || got[i].Name != want[i].Name || !slices.Equal(got[i].Texts, want[i].Texts) {
			t.Fatalf("OnTXT[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}

	d.BeforeChange = func(project, zone string) { d.SetRecordSet(project, zone, name, "TXT", 60, "racer") }
	_, err = c.Changes.Create("p-test", "z-test", &gdns.Change{Additions: []*gdns.ResourceRecordSet{txt(name, 60, "ours")}}).Context(ctx).Do()
	if status, reason := apiErr(t, err); status != 409 || reason != "alreadyExists" {
		t.Fatalf("raced addition: %v", err)
	}
}
