package acmednstest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func post(t *testing.T, url string, hdr map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The double's /register and /update answer as acme-dns documents, the
// two slots rotate, and OnTXT sees every update.
func TestRegisterAndUpdate(t *testing.T) {
	d := New(t)
	var seen []TXTUpdate
	d.OnTXT = func(u TXTUpdate) { seen = append(seen, u) }

	code, reg := post(t, d.URL+"/register", nil, `{"allowfrom": ["127.0.0.0/8"]}`)
	if code != http.StatusCreated || reg["username"] == "" || len(reg["password"].(string)) != 40 ||
		reg["fulldomain"] != reg["subdomain"].(string)+"."+DefaultDomain {
		t.Fatalf("register = %d %v", code, reg)
	}
	for _, tc := range []struct {
		body string
		want string
	}{{`{`, "malformed_json_payload"}, {`{"allowfrom": ["not-a-cidr"]}`, "invalid_allowfrom_cidr"}} {
		if code, out := post(t, d.URL+"/register", nil, tc.body); code != http.StatusBadRequest || out["error"] != tc.want {
			t.Errorf("register %s = %d %v, want 400 %s", tc.body, code, out, tc.want)
		}
	}

	auth := map[string]string{"X-Api-User": reg["username"].(string), "X-Api-Key": reg["password"].(string)}
	sub := reg["subdomain"].(string)
	vals := []string{strings.Repeat("a", 43), strings.Repeat("b", 43), strings.Repeat("c", 43)}
	for _, v := range vals {
		if code, out := post(t, d.URL+"/update", auth, `{"subdomain": "`+sub+`", "txt": "`+v+`"}`); code != http.StatusOK || out["txt"] != v {
			t.Fatalf("update %s = %d %v", v, code, out)
		}
	}
	if got := d.TXT(reg["fulldomain"].(string) + "."); !slices.Equal(got, vals[1:]) {
		t.Fatalf("TXT = %q, want the two latest %q", got, vals[1:])
	}
	if len(seen) != 3 || !slices.Equal(seen[2].Texts, vals[1:]) || seen[2].SubDomain != sub {
		t.Fatalf("OnTXT saw %+v", seen)
	}

	wrong := map[string]string{"X-Api-User": auth["X-Api-User"], "X-Api-Key": strings.Repeat("x", 40)}
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		body string
		code int
		want string
	}{
		{"wrong key", wrong, `{"subdomain": "` + sub + `", "txt": "` + vals[0] + `"}`, 401, "forbidden"},
		{"no credentials", nil, `{"subdomain": "` + sub + `", "txt": "` + vals[0] + `"}`, 401, "forbidden"},
		{"other subdomain", auth, `{"subdomain": "x` + sub[1:] + `", "txt": "` + vals[0] + `"}`, 401, "forbidden"},
		{"not JSON", auth, `{`, 401, "forbidden"},
		{"short txt", auth, `{"subdomain": "` + sub + `", "txt": "abc"}`, 400, "bad_txt"},
	} {
		if code, out := post(t, d.URL+"/update", tc.hdr, tc.body); code != tc.code || out["error"] != tc.want {
			t.Errorf("%s: update = %d %v, want %d %s", tc.name, code, out, tc.code, tc.want)
		}
	}
	if got := d.TXT(sub); !slices.Equal(got, vals[1:]) {
		t.Fatalf("refused updates changed TXT: %q", got)
	}
}
