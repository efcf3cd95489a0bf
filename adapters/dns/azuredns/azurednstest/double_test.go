package azurednstest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

const (
	sub    = "00000000-0000-4000-8000-0000000000aa"
	tenant = "11111111-1111-4111-8111-111111111111"
	client = "22222222-2222-4222-8222-222222222222"
)

// do sends one request to the double and decodes its JSON answer.
func do(t *testing.T, d *Double, method, u string, hdr map[string]string, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := d.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

// The record set API's preconditions and answers, the token endpoint and
// IMDS, and OnTXT, as the double documents them.
func TestDoubleSemantics(t *testing.T) {
	d := New(t)
	d.AddZone(sub, "rg", "example.test", false)
	d.AddServicePrincipal(tenant, client, "s3cret")
	d.SetSystemIdentity("44444444-4444-4444-8444-444444444444")
	var seen []TXTUpdate
	d.OnTXT = func(u TXTUpdate) { seen = append(seen, u) }

	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {client}, "client_secret": {"s3cret"}, "scope": {Audience + "/.default"}}
	code, _, tok := do(t, d, http.MethodPost, d.URL+"/"+tenant+"/oauth2/v2.0/token", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, form.Encode())
	if code != http.StatusOK || tok["access_token"] == nil {
		t.Fatalf("token = %d %v", code, tok)
	}
	auth := "Bearer " + tok["access_token"].(string)
	form.Set("client_secret", "wrong")
	if code, _, out := do(t, d, http.MethodPost, d.URL+"/"+tenant+"/oauth2/v2.0/token", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, form.Encode()); code != http.StatusUnauthorized || out["error"] != "invalid_client" {
		t.Errorf("wrong secret: %d %v", code, out)
	}
	if code, _, out := do(t, d, http.MethodGet, "http://"+IMDSHost+"/metadata/identity/oauth2/token?api-version=2018-02-01&resource="+url.QueryEscape(Audience), map[string]string{"Metadata": "true"}, ""); code != http.StatusOK || out["access_token"] == nil {
		t.Errorf("IMDS = %d %v", code, out)
	}
	if code, _, _ := do(t, d, http.MethodGet, "http://"+IMDSHost+"/metadata/identity/oauth2/token?api-version=2018-02-01&resource="+url.QueryEscape(Audience), nil, ""); code != http.StatusBadRequest {
		t.Errorf("IMDS without Metadata header = %d, want 400", code)
	}

	set := d.URL + "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/dnsZones/example.test/TXT/_acme-challenge?api-version=" + PublicAPIVersion
	body := `{"properties": {"TTL": 60, "TXTRecords": [{"value": ["v1"]}]}}`
	steps := []struct {
		name, method string
		hdr          map[string]string
		body         string
		want         int
		code         string
	}{
		{"unauthenticated", http.MethodGet, nil, "", 401, "AuthenticationFailed"},
		{"another api-version", http.MethodGet, map[string]string{"Authorization": auth}, "", 400, "NoRegisteredProviderFound"},
		{"missing set", http.MethodGet, map[string]string{"Authorization": auth}, "", 404, "NotFound"},
		{"If-Match on a missing set", http.MethodPut, map[string]string{"Authorization": auth, "If-Match": "x"}, body, 412, "PreconditionFailed"},
		{"create", http.MethodPut, map[string]string{"Authorization": auth, "If-None-Match": "*"}, body, 201, ""},
		{"If-None-Match on an existing set", http.MethodPut, map[string]string{"Authorization": auth, "If-None-Match": "*"}, body, 412, "PreconditionFailed"},
		{"stale ETag", http.MethodDelete, map[string]string{"Authorization": auth, "If-Match": "stale"}, "", 412, "PreconditionFailed"},
	}
	for _, s := range steps {
		u := set
		if s.name == "another api-version" {
			u = strings.Replace(set, PublicAPIVersion, "2017-09-01", 1)
		}
		code, _, out := do(t, d, s.method, u, s.hdr, s.body)
		got := ""
		if e, ok := out["error"].(map[string]any); ok {
			got, _ = e["code"].(string)
		}
		if code != s.want || got != s.code {
			t.Fatalf("%s: %d %q, want %d %q", s.name, code, got, s.want, s.code)
		}
	}
	_, hdr, out := do(t, d, http.MethodGet, set, map[string]string{"Authorization": auth}, "")
	if hdr.Get("ETag") == "" || out["etag"] != hdr.Get("ETag") || out["properties"].(map[string]any)["fqdn"] != "_acme-challenge.example.test." {
		t.Fatalf("GET = %v (ETag %q)", out, hdr.Get("ETag"))
	}
	if code, _, _ := do(t, d, http.MethodDelete, set, map[string]string{"Authorization": auth, "If-Match": hdr.Get("ETag")}, ""); code != http.StatusOK {
		t.Fatalf("DELETE = %d, want 200", code)
	}
	if code, _, _ := do(t, d, http.MethodDelete, set, map[string]string{"Authorization": auth}, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE of nothing = %d, want 204", code)
	}
	want := []TXTUpdate{{Zone: "example.test", Name: "_acme-challenge.example.test.", Texts: []string{"v1"}}, {Zone: "example.test", Name: "_acme-challenge.example.test."}}
	if len(seen) != 2 || !slices.Equal(seen[0].Texts, want[0].Texts) || seen[0].Name != want[0].Name || len(seen[1].Texts) != 0 {
		t.Fatalf("OnTXT saw %+v, want %+v", seen, want)
	}
}
