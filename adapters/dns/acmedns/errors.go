package acmedns

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/certfn/certfn/core/errs"
)

// classify turns an answer of /update other than 200 into certfn's
// classes (core/errs), naming the field to fix for permanent ones:
//
//   - 401 (acme-dns's {"error": "forbidden"}: unknown user, wrong password,
//     a subdomain that is not the user's, or an address outside the
//     registration's allowfrom ranges) is permanent on accountSecretRef;
//   - 400 bad_subdomain is permanent on accountSecretRef; bad_txt (the
//     value is not 43 base64url characters) and any other 400 are
//     permanent on the solver;
//   - a redirect, 404, 405 or another 4xx is permanent on host (no acme-dns
//     API there, or not at that path);
//   - 429 and 5xx stay transient, with the Retry-After delay when given.
//
// The error shows the status, acme-dns's error word and the registration
// (fulldomain and user), never the password or the request.
func (p *Provider) classify(resp *http.Response, body []byte, fqdn string, a Account) error {
	path := p.Config.Path
	code := resp.StatusCode
	word := errorWord(body)
	what := fmt.Sprintf("update TXT %s with %s: acme-dns answered %d %s", fqdn, a, code, word)
	switch {
	case code == http.StatusTooManyRequests || code >= 500:
		err := fmt.Errorf("%s: %s", path, what)
		if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
			return errs.RetryAfter(err, d)
		}
		return err
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return errs.Permanentf("%s.accountSecretRef: %s (the username, password or subdomain of the %s entry is wrong, or this address is outside its allowfrom ranges)",
			path, what, p.Config.Secret)
	case code == http.StatusBadRequest && word == "bad_subdomain":
		return errs.Permanentf("%s.accountSecretRef: %s (the registration's subdomain in %s is invalid)", path, what, p.Config.Secret)
	case code == http.StatusBadRequest && word == "bad_txt":
		return errs.Permanentf("%s: %s (acme-dns takes only values of 43 base64url characters)", path, what)
	case code == http.StatusBadRequest:
		return errs.Permanentf("%s: %s", path, what)
	case code >= 300 && code < 400:
		return errs.Permanentf("%s.host: %s redirects to %q; set host to the acme-dns API's own URL (the API key is not sent elsewhere)", path, p.Config.Host, resp.Header.Get("Location"))
	default:
		return errs.Permanentf("%s.host: %s (is %s the acme-dns API?)", path, what, p.Config.Host)
	}
}

// errorWord returns acme-dns's {"error": "..."} word from an answer, or
// "" (answers that are not acme-dns's are not echoed).
func errorWord(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) > 32 {
		return ""
	}
	for _, c := range e.Error {
		if !(c >= 'a' && c <= 'z' || c == '_') { // acme-dns's words: forbidden, bad_txt, ...
			return ""
		}
	}
	return e.Error
}

// retryAfter parses a Retry-After header (seconds or an HTTP date; the
// date is read relative to the response, so only seconds are honoured).
func retryAfter(h string) (time.Duration, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}
