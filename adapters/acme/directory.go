package acme

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// ariDirectory keeps renewal information out of certificate downloads.
// acmez's GetCertificateChain fetches ARI with every chain it downloads
// whenever the directory names a renewalInfo resource; certfn fetches ARI
// itself, when the Order step decides (core/acme/orders/ari.go: once the
// certificate is stored, then no earlier than the server's Retry-After).
// So the directory acmez decodes has no renewalInfo member: this
// transport takes it out of the server's answer to GET <directory> and
// keeps its value for Client.RenewalInfo. Nothing else is changed, and no
// request is added.
type ariDirectory struct {
	next http.RoundTripper
	dir  string // the directory URL, as configured

	mu   sync.Mutex
	seen bool   // a directory was read
	ari  string // its renewalInfo URL ("" when it has none)
}

func (a *ariDirectory) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || resp.StatusCode != http.StatusOK || !sameURL(r, a.dir) {
		return resp, err
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	var dir map[string]json.RawMessage
	if json.Unmarshal(body, &dir) == nil {
		var ari string
		if raw, ok := dir["renewalInfo"]; ok {
			_ = json.Unmarshal(raw, &ari)
			delete(dir, "renewalInfo")
			if b, err := json.Marshal(dir); err == nil {
				body = b
			}
		}
		a.mu.Lock()
		a.seen, a.ari = true, ari
		a.mu.Unlock()
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// renewalInfoURL is the directory's renewalInfo URL; known is false until
// a directory was read through this transport.
func (a *ariDirectory) renewalInfoURL() (url string, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ari, a.seen
}

// sameURL reports whether r asks for dir (the fragment, never sent, aside).
func sameURL(r *http.Request, dir string) bool {
	u := *r.URL
	u.Fragment, u.RawFragment = "", ""
	return u.String() == trimFragment(dir)
}

func trimFragment(s string) string {
	if i := bytes.IndexByte([]byte(s), '#'); i >= 0 {
		return s[:i]
	}
	return s
}
