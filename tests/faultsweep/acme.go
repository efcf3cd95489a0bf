package faultsweep

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/pki"
)

// Pebble is one run's view of Pebble: what its VA asked the http01
// function, what it accepted, and the challenges accepted so far (for
// ACMECall). Safe for concurrent use.
type Pebble struct {
	mu sync.Mutex
	// answered counts the VA's requests the http01 function answered 200,
	// h01Errors its other answers; finalized the finalizes Pebble accepted,
	// accounts the accounts it created.
	answered, h01Errors, finalized, accounts int
	accepted                                 map[string]bool // challenge URLs accepted (Pebble validates once)
}

// Served records the http01 function's answer code to a request with
// userAgent (Pebble's VA's are counted).
func (p *Pebble) Served(userAgent string, code int) {
	if !strings.Contains(userAgent, "Pebble") {
		return // the worker's self-check
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if code == http.StatusOK {
		p.answered++
	} else {
		p.h01Errors++
	}
}

func (p *Pebble) vaAnswered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answered
}

// Check returns what is wrong with a converged run, given how many of its
// Orders are valid: one account created at Pebble, one finalize accepted
// (one certificate issued), one valid Order, the VA answered by the
// http01 function.
func (p *Pebble) Check(validOrders, orders int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var bad []string
	if p.accounts != 1 {
		bad = append(bad, fmt.Sprintf("%d accounts created at Pebble, want 1", p.accounts))
	}
	if p.finalized != 1 {
		bad = append(bad, fmt.Sprintf("%d finalize requests accepted by Pebble (certificates issued), want 1", p.finalized))
	}
	if p.answered == 0 {
		bad = append(bad, fmt.Sprintf("the http01 function never answered Pebble's VA (%d errors)", p.h01Errors))
	}
	if validOrders != 1 {
		bad = append(bad, fmt.Sprintf("%d valid Orders of %d, want 1", validOrders, orders))
	}
	return bad
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
	register bool
	p        *Pebble
	before   int
}

// Call is req's call. Only the first accept of a challenge waits for
// Pebble's VA (a repeated one starts no validation).
func (p *Pebble) Call(req *http.Request) ACMECall {
	seg, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	c := ACMECall{Label: "acme." + req.Method + " /" + seg, p: p,
		accept:   req.Method == http.MethodPost && seg == "chalZ" && jwsPayload(req) != "",
		finalize: req.Method == http.MethodPost && seg == "finalize-order",
		register: req.Method == http.MethodPost && seg == "sign-me-up"}
	if c.accept {
		p.mu.Lock()
		if p.accepted == nil {
			p.accepted = map[string]bool{}
		}
		c.accept = !p.accepted[req.URL.Path]
		p.accepted[req.URL.Path] = true
		p.mu.Unlock()
		c.before = p.vaAnswered()
	}
	return c
}

// Answered records Pebble's answer resp to the call before a fault
// may discard it (a finalize accepted: a certificate issued; an account
// created).
func (c ACMECall) Answered(resp *http.Response) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	switch {
	case c.finalize && resp.StatusCode == http.StatusOK:
		c.p.finalized++
	case c.register && resp.StatusCode == http.StatusCreated:
		c.p.accounts++
	}
}

// Settle normalizes Pebble's answer resp to the call (see ACMECall).
func (c ACMECall) Settle(resp *http.Response) (*http.Response, error) {
	if resp.StatusCode != http.StatusOK || (!c.accept && !c.finalize) {
		return resp, nil
	}
	if c.accept {
		for i := 0; i < 500 && c.p.vaAnswered() == c.before; i++ {
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

// Verify checks that tlsCrt (a PEM chain) verifies for dnsName against
// roots (Pebble's), with the chain's intermediates.
func Verify(tlsCrt []byte, roots *x509.CertPool, dnsName string) error {
	chain, err := pki.ParseChainPEM(tlsCrt)
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err = chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: dnsName})
	return err
}

// ServeHTTP01 serves h on addr (Pebble's VA's HTTP-01 port) until the
// test ends.
func ServeHTTP01(t *testing.T, addr string, h http.HandlerFunc) {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}
