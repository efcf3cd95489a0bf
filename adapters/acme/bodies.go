package acme

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode"
)

// maxDetail bounds the detail of a problem document (and of each
// subproblem) that reaches certfn's errors, statuses and Events.
const maxDetail = 300

// maxErrorBody is the most of an error response read for a problem document.
const maxErrorBody = 64 << 10

// errorBodies is the transport layer that keeps remote bodies out of
// errors: the body of every error response (status 400 and up) is
// replaced before the ACME client sees it. An RFC 7807 problem document
// (Content-Type application/problem+json that decodes to an object) is
// re-encoded with its type, status, a bounded detail without control
// characters, and its subproblems likewise; any other body (an HTML page,
// text, JSON that is not a problem document) is dropped, so only the
// status code remains. What a namespaced Issuer's URL reached (a metadata
// service, an internal API) never appears in a status a tenant can read.
type errorBodies struct{ next http.RoundTripper }

type problemDoc struct {
	Type        string        `json:"type,omitempty"`
	Detail      string        `json:"detail,omitempty"`
	Status      int           `json:"status,omitempty"`
	Identifier  *problemIdent `json:"identifier,omitempty"`
	Subproblems []problemDoc  `json:"subproblems,omitempty"`
}

type problemIdent struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

func (e errorBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := e.next.RoundTrip(r)
	if err != nil || resp == nil || resp.StatusCode < 400 {
		return resp, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	var body []byte
	ct := "text/plain"
	if mt, _, perr := mime.ParseMediaType(resp.Header.Get("Content-Type")); perr == nil && mt == "application/problem+json" {
		var p problemDoc
		if json.Unmarshal(raw, &p) == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			p = sanitizeProblem(p, 0)
			if b, merr := json.Marshal(p); merr == nil {
				body, ct = b, "application/problem+json"
			}
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", ct)
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// sanitizeProblem keeps a problem's type, status, identifier and detail,
// each bounded and without control characters, and at most 10
// subproblems (one level).
func sanitizeProblem(p problemDoc, depth int) problemDoc {
	out := problemDoc{Type: sanitizeText(p.Type, 200), Detail: sanitizeText(p.Detail, maxDetail), Status: p.Status}
	if p.Identifier != nil {
		out.Identifier = &problemIdent{Type: sanitizeText(p.Identifier.Type, 20), Value: sanitizeText(p.Identifier.Value, 253)}
	}
	if depth == 0 {
		for i, sp := range p.Subproblems {
			if i == 10 {
				break
			}
			out.Subproblems = append(out.Subproblems, sanitizeProblem(sp, 1))
		}
	}
	return out
}

// sanitizeText replaces control and other non-printable characters with
// spaces and clips s to n bytes.
func sanitizeText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	return clip(s, n)
}
