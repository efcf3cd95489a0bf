// Package webhooktest is a TEST RECEIVER of certfn's webhooks: a real HTTP
// server (net/http/httptest) that verifies every delivery with the
// Standard Webhooks project's own Go library, as a user's receiver would,
// records it, and answers as the test programs it (fail the first
// deliveries, answer a status, stay down). Tests of adapters/webhook,
// internal/localmode and cmd/certfn use it.
package webhooktest

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/certfn/certfn/adapters/webhook"
	"github.com/certfn/certfn/core/ports"
)

// Key is the signing key of Secret.
var Key = []byte("certfn-webhooktest-signing-key-32")

// Secret is Key serialized as Standard Webhooks does ("whsec_<base64>"),
// the line a secret file holds.
var Secret = webhook.SecretPrefix + base64.StdEncoding.EncodeToString(Key)

// Delivery is one request the receiver got.
type Delivery struct {
	// ID and Timestamp are the webhook-id and webhook-timestamp headers.
	ID        string
	Timestamp time.Time
	Body      []byte
	// Verified: the signature matched (standardwebhooks.Verify without
	// its tolerance on the wall clock: tests run on fake clocks).
	Verified bool
	// Notification is the body read back (zero when it did not parse).
	Notification ports.Notification
	// Status is what the receiver answered.
	Status int
}

// Receiver is the test server. Its zero answer is 204 to a verified
// delivery and 401 to one that is not.
type Receiver struct {
	*httptest.Server
	t  testing.TB
	wh *standardwebhooks.Webhook

	mu         sync.Mutex
	deliveries []Delivery
	failFirst  int    // answer fail to this many more verified deliveries
	fail       int    // the failing status
	retryAfter string // Retry-After of failing answers
}

// New starts a receiver verifying with Secret, stopped when t ends.
func New(t testing.TB) *Receiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(Secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{t: t, wh: wh}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// FailNext makes the next n verified deliveries answer status (with a
// Retry-After header when retryAfter is set); n < 0: every one until
// FailNext is called again.
func (r *Receiver) FailNext(n, status int, retryAfter string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFirst, r.fail, r.retryAfter = n, status, retryAfter
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d := Delivery{ID: req.Header.Get(webhook.HeaderID), Body: body}
	if s, err := strconv.ParseInt(req.Header.Get(webhook.HeaderTimestamp), 10, 64); err == nil {
		d.Timestamp = time.Unix(s, 0).UTC()
	}
	d.Verified = req.Method == http.MethodPost && req.Header.Get("Content-Type") == "application/json" &&
		r.wh.VerifyIgnoringTimestamp(body, req.Header) == nil
	if n, err := webhook.ParseBody(body); err == nil {
		d.Notification = n
	}
	r.mu.Lock()
	d.Status = http.StatusNoContent
	switch {
	case !d.Verified:
		d.Status = http.StatusUnauthorized
	case r.failFirst != 0:
		if r.failFirst > 0 {
			r.failFirst--
		}
		d.Status = r.fail
		if r.retryAfter != "" {
			w.Header().Set("Retry-After", r.retryAfter)
		}
	}
	r.deliveries = append(r.deliveries, d)
	r.mu.Unlock()
	w.WriteHeader(d.Status)
	if d.Status >= 300 {
		fmt.Fprintf(w, "webhooktest answers %d", d.Status)
	}
}

// Deliveries returns every request received so far, in order.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.deliveries...)
}

// Accepted returns the notifications of the verified deliveries answered
// 2xx, in order. Every delivery must have been verified: one that was
// not fails the test.
func (r *Receiver) Accepted() []ports.Notification {
	r.t.Helper()
	var out []ports.Notification
	for _, d := range r.Deliveries() {
		if !d.Verified {
			r.t.Errorf("webhooktest: delivery %s (%s) did not verify", d.ID, d.Body)
			continue
		}
		if d.Status < 300 {
			out = append(out, d.Notification)
		}
	}
	return out
}
