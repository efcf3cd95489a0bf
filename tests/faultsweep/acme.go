package faultsweep

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Pebble is one run's view of Pebble for its ACMECalls.
type Pebble struct {
	// Answered counts the validation requests of Pebble's VA the http01
	// function answered so far.
	Answered func() int

	mu       sync.Mutex
	accepted map[string]bool // challenge URLs accepted (Pebble validates once)
}

// ACMECall is one ACME request of the worker to Pebble, as the function
// harnesses count and normalize it. Pebble validates a challenge and
// issues a certificate asynchronously, on the wall clock; so that every
// run makes the same calls, Settle waits (real time, no request) after a
// challenge is accepted until the http01 function has answered Pebble's
// VA once more, and after a finalize until Pebble has issued, and reports
// a "valid" answer to either as "processing" (what a slower server
// answers: the worker then polls once), as tests/faults does on the
// acme.Client port.
type ACMECall struct {
	// Label names the request "acme.<method> /<first path segment>".
	Label    string
	accept   bool
	finalize bool
	answered func() int
	before   int
}

// Call is req's call. Only the first accept of a challenge waits for
// Pebble's VA (a repeated one starts no validation).
func (p *Pebble) Call(req *http.Request) ACMECall {
	seg, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	c := ACMECall{Label: "acme." + req.Method + " /" + seg, answered: p.Answered,
		accept:   req.Method == http.MethodPost && seg == "chalZ" && jwsPayload(req) != "",
		finalize: req.Method == http.MethodPost && seg == "finalize-order"}
	if c.accept {
		p.mu.Lock()
		if p.accepted == nil {
			p.accepted = map[string]bool{}
		}
		c.accept = !p.accepted[req.URL.Path]
		p.accepted[req.URL.Path] = true
		p.mu.Unlock()
		c.before = p.Answered()
	}
	return c
}

// Finalized says whether resp is Pebble accepting a finalize (a
// certificate issued).
func (c ACMECall) Finalized(resp *http.Response) bool {
	return c.finalize && resp != nil && resp.StatusCode == http.StatusOK
}

// Settle normalizes Pebble's answer resp to the call (see ACMECall).
func (c ACMECall) Settle(resp *http.Response) (*http.Response, error) {
	if resp.StatusCode != http.StatusOK || (!c.accept && !c.finalize) {
		return resp, nil
	}
	if c.accept && c.answered != nil {
		for i := 0; i < 500 && c.answered() == c.before; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(30 * time.Millisecond) // Pebble records the validation, or issues
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil && m["status"] == "valid" {
		m["status"] = "processing"
		raw, _ = json.Marshal(m)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	resp.ContentLength = int64(len(raw))
	resp.Header.Set("Content-Length", strconv.Itoa(len(raw)))
	return resp, nil
}

// jwsPayload is the payload of a JWS request body ("": POST-as-GET).
func jwsPayload(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	b, err := req.GetBody()
	if err != nil {
		return ""
	}
	var jws struct {
		Payload string `json:"payload"`
	}
	raw, _ := io.ReadAll(b)
	_ = json.Unmarshal(raw, &jws)
	return jws.Payload
}
