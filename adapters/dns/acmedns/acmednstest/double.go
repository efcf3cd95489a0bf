// TEST DOUBLE: NOT ACME-DNS.
// Package acmednstest holds a hand-written test double of an acme-dns
// server's HTTP API (github.com/joohoi/acme-dns), for the tests of
// adapters/dns/acmedns and the end-to-end tests that solve DNS-01
// challenges through it.
//
// acme-dns is a program, not a library, and the module proxy here does not
// serve it, so the tests run against Double: one httptest.Server written
// from acme-dns's README (its API reference) with the semantics that
// document gives and that its source shows:
//
//   - POST /register with an optional JSON body {"allowfrom": [CIDR...]}
//     answers 201 with {"username", "password", "fulldomain",
//     "subdomain", "allowfrom"}: username and subdomain are random UUIDs,
//     password 40 characters of the base64url alphabet, fulldomain
//     "<subdomain>.<Domain>". A body that is not JSON is 400
//     {"error": "malformed_json_payload"}, a bad CIDR 400
//     {"error": "invalid_allowfrom_cidr"}. Each registration has two TXT
//     slots, both empty;
//   - POST /update with headers X-Api-User (the username) and X-Api-Key
//     (the password) and the body {"subdomain", "txt"}: a username that is
//     not a UUID, a key that is not 40 base64url characters, an unknown
//     user, a wrong password, a request from outside the registration's
//     allowfrom ranges or a subdomain that is not the registration's is
//     401 {"error": "forbidden"}; a txt that is not exactly 43 base64url
//     characters is 400 {"error": "bad_txt"}. Otherwise the value replaces
//     the least recently updated of the two slots (acme-dns keeps the two
//     latest values and has no delete) and the answer is 200
//     {"txt": "<value>"};
//   - GET /health answers 200.
//
// TXT returns what acme-dns's own DNS server would answer for a
// registration's fulldomain: the non-empty slot values. acme-dns orders
// slots by the second of their last update, so two updates in one second
// may replace slots in either order; the double orders them by a counter
// (exactly the least recent one is replaced). Fail injects failures
// (429 with Retry-After, 5xx) that acme-dns itself does not send but a
// proxy in front of it may. It is not a DNS server, keeps no database and
// ignores acme-dns's configuration (header-based client addresses,
// disabled registration). When CERTFN_ACMEDNS_TEST_URL is set, the tests of
// adapters/dns/acmedns also run against that real acme-dns (see
// docs/reference/dns01.md).
//
// For end-to-end tests OnTXT receives every registration's values after
// each update (e.g. to serve them from Pebble's challtestsrv at the
// fulldomain).
package acmednstest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// DefaultDomain is the domain the double's registrations live under.
const DefaultDomain = "auth.acme-dns.test"

// Account is a registration as /register returns it and as cert-manager's
// acmeDNS solver keeps it (one entry of the accountSecretRef JSON).
type Account struct {
	Username   string   `json:"username"`
	Password   string   `json:"password"`
	FullDomain string   `json:"fulldomain"`
	SubDomain  string   `json:"subdomain"`
	AllowFrom  []string `json:"allowfrom"`
}

// TXTUpdate is what one update left on a registration, for OnTXT.
type TXTUpdate struct {
	// SubDomain and FullDomain name the registration.
	SubDomain, FullDomain string
	// Texts are the values acme-dns serves now (the non-empty slots,
	// sorted).
	Texts []string
}

// Call is one request the double answered.
type Call struct {
	// Op is "register", "update" or "health".
	Op string
	// User is the X-Api-User header of an update.
	User string
	// SubDomain and TXT are the update's body fields.
	SubDomain, TXT string
	// Status is the HTTP status of the answer.
	Status int
}

type slot struct {
	value string
	seq   int // when it was last written; 0 never
}

type registration struct {
	acct  Account
	slots [2]slot
	nets  []*net.IPNet
}

type failure struct {
	n, status  int
	retryAfter string
}

// Double is a running acme-dns test double. It is safe for concurrent use.
type Double struct {
	// URL is the API's base URL (the acmeDNS solver's host).
	URL string
	// Domain is the domain registrations live under (DefaultDomain).
	Domain string
	// OnTXT, when set, is called after every successful update with the
	// registration's values, with the double's lock held (it must not
	// call the double). Set it before any call.
	OnTXT func(TXTUpdate)

	mu    sync.Mutex
	regs  map[string]*registration // by username
	subs  map[string]*registration // by subdomain
	seq   int
	fail  []failure
	calls []Call
}

// New starts a double that stops when the test ends.
func New(t testing.TB) *Double {
	d := &Double{Domain: DefaultDomain, regs: map[string]*registration{}, subs: map[string]*registration{}}
	srv := httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(srv.Close)
	d.URL = srv.URL
	return d
}

// Register creates a registration directly (as POST /register would) and
// returns it. allowFrom are CIDR ranges updates must come from (none: any).
func (d *Double) Register(t testing.TB, allowFrom ...string) Account {
	t.Helper()
	a, err := d.register(allowFrom)
	if err != nil {
		t.Fatalf("acmednstest: register: %v", err)
	}
	return a
}

// TXT returns the values acme-dns would serve for name (a registration's
// fulldomain or subdomain, with or without the trailing dot): the
// non-empty slots, sorted; nil for an unknown name.
func (d *Double) TXT(name string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.lookup(name)
	if r == nil {
		return nil
	}
	return r.texts()
}

// Calls returns the requests answered so far.
func (d *Double) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// Count returns how many requests of op were answered.
func (d *Double) Count(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.calls {
		if c.Op == op {
			n++
		}
	}
	return n
}

// Fail makes the next n requests fail with status (a JSON error body);
// retryAfter, when not empty, is sent as the Retry-After header.
func (d *Double) Fail(n, status int, retryAfter string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = append(d.fail, failure{n: n, status: status, retryAfter: retryAfter})
}

// lookup finds a registration by subdomain or fulldomain; d.mu is held.
func (d *Double) lookup(name string) *registration {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if r := d.subs[name]; r != nil {
		return r
	}
	if sub, ok := strings.CutSuffix(name, "."+strings.ToLower(d.Domain)); ok {
		return d.subs[sub]
	}
	return nil
}

func (r *registration) texts() []string {
	var out []string
	for _, s := range r.slots {
		if s.value != "" {
			out = append(out, s.value)
		}
	}
	slices.Sort(out)
	return out
}

// allowed reports whether an update from ip may use r.
func (r *registration) allowed(ip net.IP) bool {
	if len(r.nets) == 0 {
		return true
	}
	for _, n := range r.nets {
		if ip != nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

func (d *Double) register(allowFrom []string) (Account, error) {
	var nets []*net.IPNet
	for _, c := range allowFrom {
		_, n, err := net.ParseCIDR(strings.Trim(c, "[]"))
		if err != nil {
			return Account{}, fmt.Errorf("allowfrom %q: %w", c, err)
		}
		nets = append(nets, n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sub := uuid()
	a := Account{Username: uuid(), Password: password(), SubDomain: sub, FullDomain: sub + "." + d.Domain, AllowFrom: []string{}}
	for _, n := range nets {
		a.AllowFrom = append(a.AllowFrom, n.String())
	}
	r := &registration{acct: a, nets: nets}
	d.regs[a.Username] = r
	d.subs[sub] = r
	return a, nil
}

var (
	uuidRe      = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	keyRe       = regexp.MustCompile(`^[A-Za-z0-9_-]{40}$`)
	subdomainRe = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
	txtRe       = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
)

func (d *Double) serve(w http.ResponseWriter, r *http.Request) {
	call := Call{}
	status := func(code int) { call.Status = code }
	defer func() {
		d.mu.Lock()
		d.calls = append(d.calls, call)
		d.mu.Unlock()
	}()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/register":
		call.Op = "register"
	case r.Method == http.MethodPost && r.URL.Path == "/update":
		call.Op = "update"
	case r.Method == http.MethodGet && r.URL.Path == "/health":
		call.Op = "health"
		status(http.StatusOK)
		w.WriteHeader(http.StatusOK)
		return
	default:
		call.Op = r.Method + " " + r.URL.Path
		status(http.StatusNotFound)
		http.NotFound(w, r)
		return
	}
	if code, after, ok := d.injected(); ok {
		status(code)
		if after != "" {
			w.Header().Set("Retry-After", after)
		}
		writeJSON(w, code, map[string]string{"error": "injected " + strconv.Itoa(code)})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		status(http.StatusBadRequest)
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "malformed_json_payload"})
		return
	}
	if call.Op == "register" {
		code, out := d.handleRegister(body)
		status(code)
		writeJSON(w, code, out)
		return
	}
	call.User = r.Header.Get("X-Api-User")
	var in struct {
		SubDomain string `json:"subdomain"`
		TXT       string `json:"txt"`
	}
	decodeErr := json.Unmarshal(body, &in)
	call.SubDomain, call.TXT = in.SubDomain, in.TXT
	code, out := d.handleUpdate(r, decodeErr == nil, in.SubDomain, in.TXT)
	status(code)
	writeJSON(w, code, out)
}

// injected pops an injected failure.
func (d *Double) injected() (int, string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.fail) == 0 {
		return 0, "", false
	}
	f := &d.fail[0]
	f.n--
	code, after := f.status, f.retryAfter
	if f.n <= 0 {
		d.fail = d.fail[1:]
	}
	return code, after, true
}

func (d *Double) handleRegister(body []byte) (int, any) {
	var in struct {
		AllowFrom []string `json:"allowfrom"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return http.StatusBadRequest, map[string]string{"error": "malformed_json_payload"}
		}
	}
	a, err := d.register(in.AllowFrom)
	if err != nil {
		return http.StatusBadRequest, map[string]string{"error": "invalid_allowfrom_cidr"}
	}
	return http.StatusCreated, a
}

func (d *Double) handleUpdate(r *http.Request, decoded bool, sub, txt string) (int, any) {
	forbidden := map[string]string{"error": "forbidden"}
	user, key := r.Header.Get("X-Api-User"), r.Header.Get("X-Api-Key")
	if !uuidRe.MatchString(user) || !keyRe.MatchString(key) {
		return http.StatusUnauthorized, forbidden
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	d.mu.Lock()
	defer d.mu.Unlock()
	reg := d.regs[strings.ToLower(user)]
	if reg == nil || reg.acct.Password != key || !reg.allowed(net.ParseIP(host)) || !decoded || reg.acct.SubDomain != sub {
		return http.StatusUnauthorized, forbidden
	}
	if !subdomainRe.MatchString(sub) {
		return http.StatusBadRequest, map[string]string{"error": "bad_subdomain"}
	}
	if !txtRe.MatchString(txt) {
		return http.StatusBadRequest, map[string]string{"error": "bad_txt"}
	}
	i := 0
	if reg.slots[1].seq < reg.slots[0].seq {
		i = 1
	}
	d.seq++
	reg.slots[i] = slot{value: txt, seq: d.seq}
	if d.OnTXT != nil {
		d.OnTXT(TXTUpdate{SubDomain: reg.acct.SubDomain, FullDomain: reg.acct.FullDomain, Texts: reg.texts()})
	}
	return http.StatusOK, map[string]string{"txt": txt}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// uuid returns a random version 4 UUID.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// password returns 40 random characters of the base64url alphabet.
func password() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var b [40]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}
