// Package webhook delivers certfn's notifications (ports.Notifier) as
// signed HTTP POSTs to one URL, in the manner of Standard Webhooks
// (https://www.standardwebhooks.com/, spec 1.0), so that a receiver
// verifies them with that project's libraries (or twenty lines of HMAC).
//
// Every delivery is one POST of a JSON body (Content-Type
// application/json):
//
//	{"type": "certificate.issued",          // EventTypes
//	 "timestamp": "2030-03-04T05:06:07Z",   // when certfn noticed
//	 "data": {...}}                         // a certevent.Detail: the
//	                                        // EventBridge detail's schema
//
// with the headers
//
//	webhook-id         MessageID: "msg_" and 32 hex digits, derived from
//	                   the deployment and the notification's ID, so every
//	                   delivery of one event (a retry, a duplicate after a
//	                   crash, another process) carries the same one: a
//	                   receiver drops duplicates by it
//	webhook-timestamp  the attempt's time, Unix seconds (Options.Clock)
//	webhook-signature  "v1,<base64 HMAC-SHA256>" per signing secret,
//	                   space-separated, over "<id>.<timestamp>.<body>"
//
// Delivery and retries: Notify makes one attempt and never sleeps; the
// caller retries (the notification step returns a transient error, the
// kernel backs the message off, the Certificate's state keeps the event
// pending: docs/design/notifications.md). A 2xx answer is success.
// Permanent (core/errs): 3xx (redirects are not followed: configure the
// final URL), 410 Gone and every other 4xx but 408, 425 and 429.
// Transient: 408, 425, 429, 5xx, a timeout or a network error; a
// Retry-After header (seconds or an HTTP date, at most MaxRetryAfter) is
// passed on as the suggested delay (errs.RetryAfter).
//
// Secrets: the signing secrets are never logged, never part of an error,
// and the URL appears in errors as scheme://host only (a URL may carry a
// token in its path or query).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/certfn/certfn/adapters/certevent"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts a serialized signing secret ("whsec_<base64>").
const SecretPrefix = "whsec_"

// Signing secrets hold MinSecretBytes to MaxSecretBytes bytes (Standard
// Webhooks: at least 24 bytes, 512 bits at most).
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// DefaultTimeout bounds one delivery when Options.Timeout is zero (Standard
// Webhooks recommends 15 to 30 s).
const DefaultTimeout = 15 * time.Second

// MaxRetryAfter caps a receiver's Retry-After.
const MaxRetryAfter = time.Hour

// EventTypes are the payload's type of each notification type
// (full-stop delimited, as Standard Webhooks recommends).
var EventTypes = map[ports.NotificationType]string{
	ports.NotificationIssued:   "certificate.issued",
	ports.NotificationRenewed:  "certificate.renewed",
	ports.NotificationFailed:   "certificate.failed",
	ports.NotificationExpiring: "certificate.expiring",
}

// Payload is a delivery's body.
type Payload struct {
	// Type is EventTypes[notification type].
	Type string `json:"type"`
	// Timestamp is when certfn noticed (the detail's time).
	Timestamp string `json:"timestamp"`
	// Data is the notification's detail.
	Data certevent.Detail `json:"data"`
}

// Options configure a Notifier.
type Options struct {
	// URL receives the POSTs (required): https, or http to a loopback
	// host only.
	URL string
	// Secrets are the signing secrets' keys (required, each
	// MinSecretBytes to MaxSecretBytes bytes; ParseSecrets reads them):
	// every delivery is signed with each, so that a receiver keeps
	// verifying while the secret is rotated.
	Secrets [][]byte
	// Deployment names the certfn deployment in every payload and in
	// MessageID (required).
	Deployment string
	// Timeout bounds one delivery, the answer's headers included (default
	// DefaultTimeout).
	Timeout time.Duration
	// Client sends the requests (default: http.DefaultTransport's
	// settings, Timeout, no redirects followed). A given client is used
	// as it is, but redirects are never followed.
	Client *http.Client
	// Clock gives the attempts' webhook-timestamp (default the wall
	// clock).
	Clock ports.Clock
}

// Notifier implements ports.Notifier over HTTP. Safe for concurrent use.
type Notifier struct {
	url     string
	target  string // scheme://host, for errors
	secrets [][]byte
	dep     string
	client  *http.Client
	clock   ports.Clock
}

var _ ports.Notifier = (*Notifier)(nil)

// New checks opts and returns a Notifier; a bad option is a permanent
// error naming it (never quoting a secret or the URL's path and query).
func New(opts Options) (*Notifier, error) {
	u, err := CheckURL(opts.URL)
	if err != nil {
		return nil, errs.Permanent(fmt.Errorf("webhook: url: %w", err))
	}
	if len(opts.Secrets) == 0 {
		return nil, errs.Permanentf("webhook: secrets: at least one signing secret is required")
	}
	for i, s := range opts.Secrets {
		if len(s) < MinSecretBytes || len(s) > MaxSecretBytes {
			return nil, errs.Permanentf("webhook: secrets[%d]: %d bytes, want %d to %d", i, len(s), MinSecretBytes, MaxSecretBytes)
		}
	}
	if opts.Timeout, err = certevent.CheckPublisher(opts.Deployment, opts.Timeout, DefaultTimeout); err != nil {
		return nil, errs.Permanent(fmt.Errorf("webhook: %w", err))
	}
	c := http.Client{Timeout: opts.Timeout}
	if opts.Client != nil {
		c = *opts.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	secrets := make([][]byte, len(opts.Secrets))
	for i, s := range opts.Secrets {
		secrets[i] = bytes.Clone(s)
	}
	return &Notifier{url: u.String(), target: u.Scheme + "://" + u.Host, secrets: secrets, dep: opts.Deployment, client: &c, clock: opts.Clock}, nil
}

// Target is the receiver as errors and logs name it: scheme://host.
func (n *Notifier) Target() string { return n.target }

// CheckURL parses a receiver URL: absolute, https, or http to a loopback
// host (localhost, 127.0.0.0/8, ::1). Its errors never quote the URL's
// path or query.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("want an absolute http(s) URL with a host")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback(u.Hostname()) {
			return nil, fmt.Errorf("http:// is allowed to a loopback host only (%s is not): use https://", u.Hostname())
		}
	default:
		return nil, fmt.Errorf("scheme %q: want https (or http to a loopback host)", u.Scheme)
	}
	u.Fragment = ""
	return u, nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseSecrets reads signing secrets, one a line (blank lines and lines
// starting with '#' are skipped): "whsec_<base64>", as Standard Webhooks
// serializes them, or the base64 alone; each key MinSecretBytes to
// MaxSecretBytes bytes. Errors name the line, never its content.
func ParseSecrets(text string) ([][]byte, error) {
	var out [][]byte
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(line, SecretPrefix))
		if err != nil {
			return nil, fmt.Errorf("line %d: not a signing secret (want %s<base64>, e.g. from `openssl rand -base64 32`)", i+1, SecretPrefix)
		}
		if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
			return nil, fmt.Errorf("line %d: a key of %d bytes, want %d to %d", i+1, len(key), MinSecretBytes, MaxSecretBytes)
		}
		out = append(out, key)
	}
	if len(out) == 0 {
		return nil, errors.New("no signing secret (want one " + SecretPrefix + "<base64> a line)")
	}
	return out, nil
}

// MessageID is the webhook-id of every delivery of n by deployment: "msg_"
// and 32 hex digits of SHA-256 over the two, so it holds no '.' and does
// not depend on the attempt, the process or the time.
func MessageID(deployment string, n ports.Notification) string {
	sum := sha256.Sum256([]byte(deployment + "\n" + n.ID()))
	return "msg_" + hex.EncodeToString(sum[:16])
}

// Sign returns the webhook-signature of one attempt: "v1,<base64>" of
// HMAC-SHA256 over "<id>.<timestamp>.<body>" for each key,
// space-separated.
func Sign(keys [][]byte, id string, timestamp int64, body []byte) string {
	sigs := make([]string, len(keys))
	for i, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
		m.Write(body)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	return strings.Join(sigs, " ")
}

// Body returns the body Notify posts for n.
func Body(deployment string, n ports.Notification) ([]byte, error) {
	return json.Marshal(Payload{Type: EventTypes[n.Type], Timestamp: certevent.Stamp(n.Time), Data: certevent.New(deployment, n)})
}

// ParseBody reads a delivery's body back into its notification (after its
// signature was verified). It refuses a type that does not match the
// detail and details of another version.
func ParseBody(body []byte) (ports.Notification, error) {
	var p Payload
	if err := json.Unmarshal(body, &p); err != nil {
		return ports.Notification{}, fmt.Errorf("webhook: body: %w", err)
	}
	n, err := p.Data.Notification()
	if err != nil {
		return ports.Notification{}, fmt.Errorf("webhook: data: %w", err)
	}
	if p.Type != EventTypes[n.Type] {
		return ports.Notification{}, fmt.Errorf("webhook: type %q with data.type %q", p.Type, n.Type)
	}
	return n, nil
}

// Notify implements ports.Notifier: one signed POST.
func (n *Notifier) Notify(ctx context.Context, note ports.Notification) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("webhook: notify %s: %w", note, err)
	}
	if err := note.Validate(); err != nil {
		return errs.Permanent(fmt.Errorf("webhook: %w", err))
	}
	body, err := Body(n.dep, note)
	if err != nil {
		return errs.Permanent(fmt.Errorf("webhook: encode %s: %w", note, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return errs.Permanent(fmt.Errorf("webhook: post %s to %s: %w", note, n.target, redact(err)))
	}
	id, ts := MessageID(n.dep, note), n.clock.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "certfn")
	req.Header.Set(HeaderID, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(n.secrets, id, ts, body))
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: post %s to %s: %w", note, n.target, redact(err))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err = &StatusError{Code: resp.StatusCode, Body: oneLine(snippet)}
	wrapped := fmt.Errorf("webhook: post %s to %s: %w", note, n.target, err)
	switch c := resp.StatusCode; {
	case c >= 300 && c < 400:
		return errs.Permanent(fmt.Errorf("%w (redirects are not followed: configure the final URL)", wrapped))
	case c == http.StatusRequestTimeout, c == http.StatusTooEarly, c == http.StatusTooManyRequests, c >= 500:
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), n.clock.Now()); ok {
			return errs.RetryAfter(wrapped, d)
		}
		return wrapped
	case c >= 400:
		return errs.Permanent(wrapped)
	}
	return wrapped
}

// StatusError is a non-2xx answer.
type StatusError struct {
	Code int
	// Body is the start of the answer's body, on one line.
	Body string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("%d %s", e.Code, http.StatusText(e.Code))
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// redact drops the URL from a client error (it may carry a token).
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// oneLine makes a body snippet printable on one log line.
func oneLine(b []byte) string {
	s := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(b), "?"))
	return strings.TrimSpace(s)
}

// retryAfter reads a Retry-After header (seconds or an HTTP date) as a
// delay from now, capped at MaxRetryAfter.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0, false
	}
	if d < 0 {
		d = 0
	}
	return min(d, MaxRetryAfter), true
}
