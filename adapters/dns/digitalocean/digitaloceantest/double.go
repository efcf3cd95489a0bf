// TEST DOUBLE: NOT DIGITALOCEAN.
// Package digitaloceantest holds a hand-written test double of the part of
// DigitalOcean's API v2 that a DNS-01 solver uses.
//
// No DigitalOcean emulator exists, so the tests of adapters/dns/digitalocean
// (and end-to-end tests that solve DNS-01 challenges through it) run
// against Double: one httptest.Server written from DigitalOcean's public
// API reference ("Domains" and "Domain Records"), speaking its JSON:
//
//   - GET /v2/domains: the account's domains in creation order
//     ({"domains": [{name, ttl, zone_file}], "links": {"pages": {first,
//     prev, next, last}}, "meta": {"total"}}), in pages of per_page (default
//     20, at most 200) numbered from 1; "links.pages.next" is absent on the
//     last page;
//   - GET /v2/domains/{domain}/records: the domain's records ordered by
//     name then creation ({"domain_records": [{id, type, name, data, ttl,
//     ...}]}, names relative to the domain, "@" for the apex), optionally
//     filtered by type and by name (the fully qualified name), paged the
//     same way;
//   - POST /v2/domains/{domain}/records: creates one record ({type, name,
//     data, ttl}) and answers 201 {"domain_record": {...}}. The name is
//     relative to the domain, "@" for the apex, or fully qualified with a
//     trailing dot (inside the domain); a TTL below 30, a missing type or
//     data, or TXT data longer than 512 characters is 422
//     unprocessable_entity. DigitalOcean keeps identical records, and so
//     does the double;
//   - DELETE /v2/domains/{domain}/records/{id}: 204; an unknown ID or
//     domain is 404 not_found.
//
// Errors are {"id", "message"} with the status the reference gives.
// Authentication is "Authorization: Bearer <token>" (AddToken): none or
// an unknown token is 401 "Unauthorized"; a token Deny names gets 403
// "Forbidden" (a scoped token without domain:create or domain:delete).
// Every response carries ratelimit-limit, ratelimit-remaining and
// ratelimit-reset (Unix seconds); RateLimit answers 429
// "too_many_requests"; Fail injects other failures. Every call is logged
// with the token's name (Calls).
//
// It is not a faithful emulator: no record types' own validation beyond
// the above, no zone files, no projects, no DNS service of its own. When
// CERTFN_DIGITALOCEAN_TEST_TOKEN and CERTFN_DIGITALOCEAN_TEST_ZONE are set,
// the provider's tests also run against the real service (see
// docs/reference/dns01.md).
//
// For end-to-end tests OnTXT receives every TXT name a create or delete
// changed, with its values (e.g. to serve them from Pebble's challtestsrv).
package digitaloceantest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RateLimitPerHour is the ratelimit-limit every response carries.
const RateLimitPerHour = 5000

// Call is one call the double answered.
type Call struct {
	// Op is "domains.list", "records.list", "records.create" or
	// "records.delete".
	Op string
	// Domain the call addressed ("" for domains.list).
	Domain string
	// Token is the name of the token that made it ("" when unknown).
	Token string
}

// Record is a domain record the double holds.
type Record struct {
	ID     int
	Domain string
	// Name is relative to the domain, "@" for the apex.
	Name, Type, Data string
	TTL              int
}

// TXTUpdate is what a create or delete did to one TXT name, for OnTXT.
type TXTUpdate struct {
	Domain string
	// Name is the fully qualified name ("_acme-challenge.example.com.").
	Name string
	// Texts are the name's TXT values now, sorted; empty when none is left.
	Texts []string
}

type failure struct {
	op        string
	n, status int
	id        string
	resetIn   time.Duration
}

// Double is a running test double. It is safe for concurrent use.
type Double struct {
	// URL is the API's base URL (what the provider's BaseURL option takes).
	URL string
	// PageSize, when > 0, caps every list page (to exercise paging). Set
	// it before any call.
	PageSize int
	// OnTXT, when set, is called for every TXT name a create or delete
	// changed, with the double's lock held (it must not call the double).
	// Set it before any call.
	OnTXT func(TXTUpdate)

	mu      sync.Mutex
	domains []string
	records []*Record
	tokens  map[string]string // token -> name
	denied  map[string]bool   // token name
	fail    []failure
	calls   []Call
	nextID  int
	used    int // requests in the current rate-limit window
}

// New starts a double that stops when the test ends.
func New(t testing.TB) *Double {
	d := &Double{tokens: map[string]string{}, denied: map[string]bool{}, nextID: 3352892}
	srv := httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(srv.Close)
	d.URL = srv.URL + "/"
	return d
}

// AddDomain adds a domain (name without a trailing dot).
func (d *Double) AddDomain(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.domains = append(d.domains, canonical(name))
}

// AddToken makes token valid; name identifies it in Calls and Deny.
func (d *Double) AddToken(token, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tokens[token] = name
}

// Deny makes every call of the token named name fail with 403.
func (d *Double) Deny(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denied[name] = true
}

// Fail makes the next n authenticated calls of op ("" for any) fail with
// HTTP status and error id; Fail("", 0, 0, "") clears.
func (d *Double) Fail(op string, n, status int, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n <= 0 {
		d.fail = nil
		return
	}
	d.fail = append(d.fail, failure{op: op, n: n, status: status, id: id})
}

// RateLimit makes the next n authenticated calls of op ("" for any)
// answer 429 too_many_requests with ratelimit-remaining 0 and
// ratelimit-reset resetIn from now.
func (d *Double) RateLimit(op string, n int, resetIn time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = append(d.fail, failure{op: op, n: n, status: http.StatusTooManyRequests, id: "too_many_requests", resetIn: resetIn})
}

// Calls returns every call answered so far, in order.
func (d *Double) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// Count returns how many calls of op were answered.
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

// Records returns the records of domain in the order the API lists them.
func (d *Double) Records(domain string) []Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Record
	for _, r := range d.sorted() {
		if r.Domain == canonical(domain) {
			out = append(out, *r)
		}
	}
	return out
}

// TXT returns the TXT values of fqdn, sorted.
func (d *Double) TXT(fqdn string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.texts(canonical(fqdn))
}

// SetRecord adds a record directly (as someone else would, no call
// logged) under the longest domain that holds fqdn, and returns its ID;
// it panics if no domain holds it.
func (d *Double) SetRecord(fqdn, typ, data string, ttl int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := canonical(fqdn)
	dom := ""
	for _, c := range d.domains {
		if (name == c || strings.HasSuffix(name, "."+c)) && len(c) > len(dom) {
			dom = c
		}
	}
	if dom == "" {
		panic("digitaloceantest: no domain holds " + fqdn)
	}
	r := d.add(dom, relative(name, dom), strings.ToUpper(typ), data, ttl)
	return r.ID
}

// --- HTTP ---

type apiError struct {
	status  int
	id, msg string
}

func (e *apiError) write(w http.ResponseWriter) {
	writeJSON(w, e.status, map[string]string{"id": e.id, "message": e.msg, "request_id": "double-request"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

var (
	errNotFound = &apiError{http.StatusNotFound, "not_found", "The resource you were accessing could not be found."}
	errAuth     = &apiError{http.StatusUnauthorized, "Unauthorized", "Unable to authenticate you"}
	errDenied   = &apiError{http.StatusForbidden, "Forbidden", "You are not authorized to perform this operation"}
)

func (d *Double) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var op, domain string
	id := -1
	switch {
	case len(parts) == 2 && parts[0] == "v2" && parts[1] == "domains" && r.Method == http.MethodGet:
		op = "domains.list"
	case len(parts) == 4 && parts[0] == "v2" && parts[1] == "domains" && parts[3] == "records" && r.Method == http.MethodGet:
		op, domain = "records.list", parts[2]
	case len(parts) == 4 && parts[0] == "v2" && parts[1] == "domains" && parts[3] == "records" && r.Method == http.MethodPost:
		op, domain = "records.create", parts[2]
	case len(parts) == 5 && parts[0] == "v2" && parts[1] == "domains" && parts[3] == "records" && r.Method == http.MethodDelete:
		op, domain = "records.delete", parts[2]
		n, err := strconv.Atoi(parts[4])
		if err != nil {
			errNotFound.write(w)
			return
		}
		id = n
	default:
		errNotFound.write(w)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		(&apiError{http.StatusBadRequest, "bad_request", "unreadable body"}).write(w)
		return
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	d.used++
	tok, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	name, known := d.tokens[tok]
	d.calls = append(d.calls, Call{Op: op, Domain: domain, Token: name})
	reset := time.Now().Add(time.Hour)
	remaining := max(0, RateLimitPerHour-d.used)
	var inj *failure
	if bearer && known && !d.denied[name] {
		inj = d.injected(op)
	}
	if inj != nil && inj.status == http.StatusTooManyRequests {
		reset, remaining = time.Now().Add(inj.resetIn), 0
	}
	w.Header().Set("ratelimit-limit", strconv.Itoa(RateLimitPerHour))
	w.Header().Set("ratelimit-remaining", strconv.Itoa(remaining))
	w.Header().Set("ratelimit-reset", strconv.FormatInt(reset.Unix(), 10))
	switch {
	case !bearer || !known:
		errAuth.write(w)
		return
	case d.denied[name]:
		errDenied.write(w)
		return
	case inj != nil:
		msg := "injected by the test double"
		if inj.status == http.StatusTooManyRequests {
			msg = "API Rate limit exceeded."
		}
		(&apiError{inj.status, inj.id, msg}).write(w)
		return
	}
	if domain != "" && !slices.Contains(d.domains, canonical(domain)) {
		errNotFound.write(w)
		return
	}
	domain = canonical(domain)
	q := r.URL.Query()
	switch op {
	case "domains.list":
		d.listDomains(w, r, q)
	case "records.list":
		d.listRecords(w, r, domain, q)
	case "records.create":
		d.create(w, domain, body)
	case "records.delete":
		d.delete(w, domain, id)
	}
}

// injected returns the failure to answer op with, if one is armed. Only
// authenticated calls use them up.
func (d *Double) injected(op string) *failure {
	for i := range d.fail {
		f := &d.fail[i]
		if f.n > 0 && (f.op == "" || f.op == op) {
			f.n--
			c := *f
			return &c
		}
	}
	return nil
}

// page cuts total items to one page and returns the links and meta
// objects.
func (d *Double) page(r *http.Request, total int, q url.Values) (start, end int, links map[string]any, e *apiError) {
	page, per := 1, 20
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, 0, nil, &apiError{http.StatusBadRequest, "bad_request", "page must be a positive integer"}
		}
		page = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, 0, nil, &apiError{http.StatusBadRequest, "bad_request", "per_page must be a positive integer"}
		}
		per = min(n, 200)
	}
	if d.PageSize > 0 {
		per = min(per, d.PageSize)
	}
	last := max(1, (total+per-1)/per)
	start = min(total, (page-1)*per)
	end = min(total, start+per)
	link := func(p int) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		u.RawQuery = v.Encode()
		return u.String()
	}
	pages := map[string]string{}
	if page > 1 {
		pages["first"], pages["prev"] = link(1), link(page-1)
	}
	if page < last {
		pages["next"], pages["last"] = link(page+1), link(last)
	}
	links = map[string]any{}
	if len(pages) > 0 {
		links["pages"] = pages
	}
	return start, end, links, nil
}

func (d *Double) listDomains(w http.ResponseWriter, r *http.Request, q url.Values) {
	start, end, links, e := d.page(r, len(d.domains), q)
	if e != nil {
		e.write(w)
		return
	}
	items := []map[string]any{}
	for _, name := range d.domains[start:end] {
		items = append(items, map[string]any{"name": name, "ttl": 1800, "zone_file": ""})
	}
	writeJSON(w, http.StatusOK, map[string]any{"domains": items, "links": links, "meta": map[string]int{"total": len(d.domains)}})
}

// sorted returns the records ordered by domain and name, then creation.
func (d *Double) sorted() []*Record {
	out := slices.Clone(d.records)
	slices.SortStableFunc(out, func(a, b *Record) int {
		if c := strings.Compare(a.Domain, b.Domain); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func (d *Double) listRecords(w http.ResponseWriter, r *http.Request, domain string, q url.Values) {
	typ, name := strings.ToUpper(q.Get("type")), q.Get("name")
	var recs []*Record
	for _, rec := range d.sorted() {
		if rec.Domain == domain && (typ == "" || rec.Type == typ) && (name == "" || fqdn(rec) == canonical(name)) {
			recs = append(recs, rec)
		}
	}
	start, end, links, e := d.page(r, len(recs), q)
	if e != nil {
		e.write(w)
		return
	}
	items := []map[string]any{}
	for _, rec := range recs[start:end] {
		items = append(items, rec.json())
	}
	writeJSON(w, http.StatusOK, map[string]any{"domain_records": items, "links": links, "meta": map[string]int{"total": len(recs)}})
}

func (r *Record) json() map[string]any {
	return map[string]any{"id": r.ID, "type": r.Type, "name": r.Name, "data": r.Data, "ttl": r.TTL,
		"priority": nil, "port": nil, "weight": nil, "flags": nil, "tag": nil}
}

func unprocessable(format string, args ...any) *apiError {
	return &apiError{http.StatusUnprocessableEntity, "unprocessable_entity", fmt.Sprintf(format, args...)}
}

func (d *Double) create(w http.ResponseWriter, domain string, body []byte) {
	var in struct {
		Type string `json:"type"`
		Name string `json:"name"`
		Data string `json:"data"`
		TTL  int    `json:"ttl"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		(&apiError{http.StatusBadRequest, "bad_request", "invalid JSON"}).write(w)
		return
	}
	typ := strings.ToUpper(in.Type)
	name := strings.ToLower(in.Name)
	if strings.HasSuffix(name, ".") {
		abs := strings.TrimSuffix(name, ".")
		if abs != domain && !strings.HasSuffix(abs, "."+domain) {
			unprocessable("Name is not within the domain %s.", domain).write(w)
			return
		}
		name = relative(abs, domain)
	}
	switch {
	case typ == "":
		unprocessable("Type can't be blank.").write(w)
	case name == "":
		unprocessable("Name can't be blank.").write(w)
	case in.Data == "":
		unprocessable("Data needs to be present.").write(w)
	case in.TTL != 0 && in.TTL < 30:
		unprocessable("TTL must be at least 30 seconds.").write(w)
	case typ == "TXT" && len(in.Data) > 512:
		unprocessable("Data is too long (maximum is 512 characters).").write(w)
	default:
		ttl := in.TTL
		if ttl == 0 {
			ttl = 1800
		}
		rec := d.add(domain, name, typ, in.Data, ttl)
		writeJSON(w, http.StatusCreated, map[string]any{"domain_record": rec.json()})
	}
}

func (d *Double) add(domain, name, typ, data string, ttl int) *Record {
	d.nextID++
	rec := &Record{ID: d.nextID, Domain: domain, Name: name, Type: typ, Data: data, TTL: ttl}
	d.records = append(d.records, rec)
	d.notify(rec)
	return rec
}

func (d *Double) delete(w http.ResponseWriter, domain string, id int) {
	i := slices.IndexFunc(d.records, func(r *Record) bool { return r.ID == id && r.Domain == domain })
	if i < 0 {
		errNotFound.write(w)
		return
	}
	rec := d.records[i]
	d.records = slices.Delete(d.records, i, i+1)
	d.notify(rec)
	writeJSON(w, http.StatusNoContent, nil)
}

// notify calls OnTXT for a TXT record's name.
func (d *Double) notify(rec *Record) {
	if d.OnTXT == nil || rec.Type != "TXT" {
		return
	}
	name := fqdn(rec)
	d.OnTXT(TXTUpdate{Domain: rec.Domain, Name: name + ".", Texts: d.texts(name)})
}

// texts returns the TXT values of name, sorted.
func (d *Double) texts(name string) []string {
	var out []string
	for _, r := range d.records {
		if r.Type == "TXT" && fqdn(r) == name {
			out = append(out, r.Data)
		}
	}
	slices.Sort(out)
	return out
}

// fqdn is a record's full name, without a trailing dot.
func fqdn(r *Record) string {
	if r.Name == "@" {
		return r.Domain
	}
	return r.Name + "." + r.Domain
}

// relative is name relative to domain ("@" for the apex).
func relative(name, domain string) string {
	if name == domain {
		return "@"
	}
	return strings.TrimSuffix(name, "."+domain)
}

// canonical lower-cases a name and drops its trailing dot.
func canonical(name string) string { return strings.TrimSuffix(strings.ToLower(name), ".") }
