// TEST DOUBLE: NOT CLOUDFLARE.
// Package cloudflaretest holds a hand-written test double of the part of
// Cloudflare's API v4 that a DNS-01 solver uses.
//
// No Cloudflare emulator exists, so the tests of adapters/dns/cloudflare
// (and end-to-end tests that solve DNS-01 challenges through it) run
// against Double: one httptest.Server written from Cloudflare's public API
// reference, speaking its JSON envelope ({"success", "errors": [{"code",
// "message", "error_chain"}], "messages", "result", "result_info"}) for
// the four calls the provider makes:
//
//   - GET /zones?name=…: the zones the credentials may read, in creation
//     order, optionally filtered by exact name and status, in pages of
//     per_page (default 20, at most 50) numbered from 1, with result_info
//     {page, per_page, count, total_count, total_pages};
//   - GET /zones/{zone_id}/dns_records: the zone's records ordered by name
//     then creation, optionally filtered by type, by name (name= or
//     name.exact=, case-insensitive, the full name) and content (content= or
//     content.exact=), in pages of per_page (default 100);
//   - POST /zones/{zone_id}/dns_records: creates one record
//     ({type, name, content, ttl}). The name is the full name, "@" for the
//     apex, or a name relative to the zone (the zone is appended). A record
//     identical to an existing one (type, name and content) is refused with
//     code 81058 "An identical record already exists." (HTTP 400); a TTL
//     other than 1 (automatic) or 60…86400 is refused (1004 with 9021); TXT
//     content longer than 2048 characters, or a quoted character-string
//     longer than 255 octets, is refused (1004 with 9005). Unquoted TXT
//     content is stored as given (Cloudflare splits it into 255-octet
//     strings when it serves it; the API returns it as stored);
//   - DELETE /zones/{zone_id}/dns_records/{id}: deletes one record;
//     an unknown ID is 404 with code 81044 "Record does not exist.".
//
// Authentication follows the reference: "Authorization: Bearer <API
// token>" (AddToken), or "X-Auth-Email" with "X-Auth-Key" (a global API
// key, AddKey). No credentials is 400 code 9106; a malformed Authorization
// header is 400 code 6003 with 6111 in its error_chain; unknown
// credentials are 401 code 10000 "Authentication error"; credentials that
// Deny names get 403 code 10000 on every call. An unknown zone ID is 404
// code 7003. Every call is logged with the credential that made it
// (Calls); Fail injects failures and RateLimit answers 429 code 971 with a
// Retry-After header.
//
// It is not a faithful emulator: no accounts, token scopes beyond Deny,
// proxied records, record types other than those a test writes, or DNS
// service of its own. Error codes other than those named above are not
// modelled. When CERTFN_CLOUDFLARE_TEST_TOKEN and
// CERTFN_CLOUDFLARE_TEST_ZONE are set, the provider's tests also run
// against the real service (see docs/reference/dns01.md).
//
// For end-to-end tests OnTXT receives every TXT name a create or delete
// changed, with its values decoded (e.g. to serve them from Pebble's
// challtestsrv).
package cloudflaretest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Call is one call the double answered.
type Call struct {
	// Op is "zones.list", "dns_records.list", "dns_records.create" or
	// "dns_records.delete".
	Op string
	// Zone is the zone's name ("" for zones.list or an unknown zone).
	Zone string
	// Credential made the call: "token:<name>" or "key:<email>" for known
	// credentials, "" otherwise.
	Credential string
}

// Record is a DNS record the double holds.
type Record struct {
	ID, Zone string
	// Name is the full name, lower case, without a trailing dot.
	Name, Type string
	// Content is as stored (for TXT: as the client sent it).
	Content string
	TTL     int
	Created time.Time
}

// TXTUpdate is what a create or delete did to one TXT name, for OnTXT.
type TXTUpdate struct {
	Zone string
	// Name is the fully qualified name ("_acme-challenge.example.com.").
	Name string
	// Texts are the name's TXT values now, decoded (quotes and escapes
	// resolved, character-strings joined); empty when none is left.
	Texts []string
}

type zone struct {
	id, name, status string
	created          time.Time
}

type failure struct {
	op         string
	n, status  int
	code       int
	retryAfter string
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
	zones   []*zone
	records []*Record
	tokens  map[string]string // token -> name
	keys    map[string]string // email -> global API key
	denied  map[string]bool   // credential
	fail    []failure
	calls   []Call
}

// New starts a double that stops when the test ends.
func New(t testing.TB) *Double {
	d := &Double{tokens: map[string]string{}, keys: map[string]string{}, denied: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(srv.Close)
	d.URL = srv.URL + "/client/v4/"
	return d
}

// AddZone creates an active zone and returns its ID. name may end with a
// dot.
func (d *Double) AddZone(name string) string { return d.AddZoneStatus(name, "active") }

// AddZoneStatus creates a zone with a status ("active", "pending",
// "moved", ...) and returns its ID.
func (d *Double) AddZoneStatus(name, status string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	z := &zone{id: newID(), name: canonical(name), status: status, created: time.Now().UTC()}
	d.zones = append(d.zones, z)
	return z.id
}

// AddToken makes token a valid API token; name identifies it in Calls.
func (d *Double) AddToken(token, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tokens[token] = name
}

// AddKey makes key the global API key of the account of email.
func (d *Double) AddKey(email, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys[email] = key
}

// Deny makes every call of credential ("token:<name>" or "key:<email>")
// fail with 403 code 10000, as for a token without the permissions.
func (d *Double) Deny(credential string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denied[credential] = true
}

// Fail makes the next n authenticated calls of op ("" for any) fail with
// HTTP status and Cloudflare error code; Fail("", 0, 0, 0) clears.
func (d *Double) Fail(op string, n, status, code int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n <= 0 {
		d.fail = nil
		return
	}
	d.fail = append(d.fail, failure{op: op, n: n, status: status, code: code})
}

// RateLimit makes the next n authenticated calls of op ("" for any)
// answer 429 with code 971 and "Retry-After: retryAfter" (seconds; ""
// sends no header).
func (d *Double) RateLimit(op string, n int, retryAfter string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = append(d.fail, failure{op: op, n: n, status: http.StatusTooManyRequests, code: 971, retryAfter: retryAfter})
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

// Records returns the records of the zone named zoneName (any case, with
// or without a trailing dot), in the order the API lists them.
func (d *Double) Records(zoneName string) []Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Record
	for _, r := range d.sorted() {
		if r.Zone == canonical(zoneName) {
			out = append(out, *r)
		}
	}
	return out
}

// TXT returns the decoded TXT values of fqdn, sorted.
func (d *Double) TXT(fqdn string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.texts(canonical(fqdn))
}

// SetRecord adds a record directly (as someone else would, no call
// logged) and returns its ID. The zone is the longest zone name that is a
// suffix of name; it panics if there is none.
func (d *Double) SetRecord(name, typ, content string, ttl int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	name = canonical(name)
	var z *zone
	for _, c := range d.zones {
		if (name == c.name || strings.HasSuffix(name, "."+c.name)) && (z == nil || len(c.name) > len(z.name)) {
			z = c
		}
	}
	if z == nil {
		panic("cloudflaretest: no zone holds " + name)
	}
	r := &Record{ID: newID(), Zone: z.name, Name: name, Type: strings.ToUpper(typ), Content: content, TTL: ttl, Created: time.Now()}
	d.records = append(d.records, r)
	d.notify(r.Zone, r.Name, r.Type)
	return r.ID
}

// --- HTTP ---

// cfError is one entry of the envelope's errors.
type cfError struct {
	Code       int       `json:"code"`
	Message    string    `json:"message"`
	ErrorChain []cfError `json:"error_chain,omitempty"`
}

type apiError struct {
	status int
	errs   []cfError
	header map[string]string
}

func errf(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, errs: []cfError{{Code: code, Message: fmt.Sprintf(format, args...)}}}
}

func (e *apiError) write(w http.ResponseWriter) {
	for k, v := range e.header {
		w.Header().Set(k, v)
	}
	writeJSON(w, e.status, map[string]any{"success": false, "errors": e.errs, "messages": []any{}, "result": nil})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ok(w http.ResponseWriter, result any, info map[string]int) {
	body := map[string]any{"success": true, "errors": []any{}, "messages": []any{}, "result": result}
	if info != nil {
		body["result_info"] = info
	}
	writeJSON(w, http.StatusOK, body)
}

func (d *Double) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/client/v4")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var op, zoneID, recordID string
	switch {
	case len(parts) == 1 && parts[0] == "zones" && r.Method == http.MethodGet:
		op = "zones.list"
	case len(parts) == 3 && parts[0] == "zones" && parts[2] == "dns_records" && r.Method == http.MethodGet:
		op, zoneID = "dns_records.list", parts[1]
	case len(parts) == 3 && parts[0] == "zones" && parts[2] == "dns_records" && r.Method == http.MethodPost:
		op, zoneID = "dns_records.create", parts[1]
	case len(parts) == 4 && parts[0] == "zones" && parts[2] == "dns_records" && r.Method == http.MethodDelete:
		op, zoneID, recordID = "dns_records.delete", parts[1], parts[3]
	default:
		errf(http.StatusBadRequest, 7000, "No route for that URI").write(w)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		errf(http.StatusBadRequest, 6007, "Malformed JSON in request body").write(w)
		return
	}
	q := r.URL.Query()

	d.mu.Lock()
	defer d.mu.Unlock()
	cred, aerr := d.authenticate(r)
	call := Call{Op: op, Credential: cred}
	z := d.zoneByID(zoneID)
	if z != nil {
		call.Zone = z.name
	}
	d.calls = append(d.calls, call)
	if aerr != nil {
		aerr.write(w)
		return
	}
	if d.denied[cred] {
		errf(http.StatusForbidden, 10000, "Authentication error").write(w)
		return
	}
	if e := d.injected(op); e != nil {
		e.write(w)
		return
	}
	if op != "zones.list" && z == nil {
		errf(http.StatusNotFound, 7003, "Could not route to %s, perhaps your object identifier is invalid?", path).write(w)
		return
	}
	switch op {
	case "zones.list":
		d.listZones(w, q)
	case "dns_records.list":
		d.listRecords(w, z, q)
	case "dns_records.create":
		d.create(w, z, body)
	case "dns_records.delete":
		d.delete(w, z, recordID)
	}
}

// authenticate returns the credential of r, or the error Cloudflare
// answers.
func (d *Double) authenticate(r *http.Request) (string, *apiError) {
	if h := r.Header.Get("Authorization"); h != "" {
		tok, found := strings.CutPrefix(h, "Bearer ")
		if !found || tok == "" || strings.ContainsAny(tok, " \t") {
			return "", &apiError{status: http.StatusBadRequest, errs: []cfError{{Code: 6003, Message: "Invalid request headers",
				ErrorChain: []cfError{{Code: 6111, Message: "Invalid format for Authorization header"}}}}}
		}
		if name, ok := d.tokens[tok]; ok {
			return "token:" + name, nil
		}
		return "", errf(http.StatusUnauthorized, 10000, "Authentication error")
	}
	email, key := r.Header.Get("X-Auth-Email"), r.Header.Get("X-Auth-Key")
	if email == "" && key == "" {
		return "", errf(http.StatusBadRequest, 9106, "Missing X-Auth-Key, X-Auth-Email or Authorization headers")
	}
	if email == "" || key == "" {
		return "", &apiError{status: http.StatusBadRequest, errs: []cfError{{Code: 6003, Message: "Invalid request headers",
			ErrorChain: []cfError{{Code: 6102, Message: "Invalid format for X-Auth-Email header"}}}}}
	}
	if want, ok := d.keys[email]; ok && want == key {
		return "key:" + email, nil
	}
	return "", errf(http.StatusUnauthorized, 10000, "Authentication error")
}

// injected returns the failure to answer op with, if one is armed.
func (d *Double) injected(op string) *apiError {
	for i := range d.fail {
		f := &d.fail[i]
		if f.n > 0 && (f.op == "" || f.op == op) {
			f.n--
			msg := "injected by the test double"
			if f.status == http.StatusTooManyRequests {
				msg = "Please wait and consider throttling your request speed"
			}
			e := errf(f.status, f.code, "%s", msg)
			if f.retryAfter != "" {
				e.header = map[string]string{"Retry-After": f.retryAfter}
			}
			return e
		}
	}
	return nil
}

func (d *Double) zoneByID(id string) *zone {
	for _, z := range d.zones {
		if z.id == id {
			return z
		}
	}
	return nil
}

// page cuts total items to one page; per_page defaults to def, at most
// max (and PageSize).
func (d *Double) page(total int, q map[string][]string, def, max int) (start, end int, info map[string]int, e *apiError) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	page, per := 1, def
	if v := get("page"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 1 || n != float64(int(n)) {
			return 0, 0, nil, errf(http.StatusBadRequest, 1001, "page must be a positive integer")
		}
		page = int(n)
	}
	if v := get("per_page"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 1 || n != float64(int(n)) {
			return 0, 0, nil, errf(http.StatusBadRequest, 1001, "per_page must be a positive integer")
		}
		per = min(int(n), max)
	}
	if d.PageSize > 0 {
		per = min(per, d.PageSize)
	}
	pages := (total + per - 1) / per
	start = min(total, (page-1)*per)
	end = min(total, start+per)
	return start, end, map[string]int{"page": page, "per_page": per, "count": end - start, "total_count": total, "total_pages": pages}, nil
}

func (d *Double) listZones(w http.ResponseWriter, q map[string][]string) {
	name, status := first(q, "name"), first(q, "status")
	var zs []*zone
	for _, z := range d.zones {
		if (name == "" || z.name == canonical(name)) && (status == "" || z.status == status) {
			zs = append(zs, z)
		}
	}
	start, end, info, e := d.page(len(zs), q, 20, 50)
	if e != nil {
		e.write(w)
		return
	}
	items := []map[string]any{}
	for _, z := range zs[start:end] {
		items = append(items, map[string]any{
			"id": z.id, "name": z.name, "status": z.status, "paused": false, "type": "full",
			"development_mode": 0, "name_servers": []string{"ada.ns.cloudflare.com", "bob.ns.cloudflare.com"},
			"created_on": z.created.Format(time.RFC3339Nano), "modified_on": z.created.Format(time.RFC3339Nano),
			"account": map[string]string{"id": "0123456789abcdef0123456789abcdef", "name": "certfn test account"},
		})
	}
	ok(w, items, info)
}

// sorted returns the records ordered by name, then creation.
func (d *Double) sorted() []*Record {
	out := slices.Clone(d.records)
	slices.SortStableFunc(out, func(a, b *Record) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (d *Double) listRecords(w http.ResponseWriter, z *zone, q map[string][]string) {
	typ := strings.ToUpper(first(q, "type"))
	name := first(q, "name.exact")
	if name == "" {
		name = first(q, "name")
	}
	content := first(q, "content.exact")
	if content == "" {
		content = first(q, "content")
	}
	var recs []*Record
	for _, r := range d.sorted() {
		if r.Zone == z.name && (typ == "" || r.Type == typ) && (name == "" || r.Name == canonical(name)) && (content == "" || r.Content == content) {
			recs = append(recs, r)
		}
	}
	start, end, info, e := d.page(len(recs), q, 100, 5000)
	if e != nil {
		e.write(w)
		return
	}
	items := []map[string]any{}
	for _, r := range recs[start:end] {
		items = append(items, r.json())
	}
	ok(w, items, info)
}

func (r *Record) json() map[string]any {
	return map[string]any{
		"id": r.ID, "name": r.Name, "type": r.Type, "content": r.Content, "ttl": r.TTL,
		"proxiable": false, "proxied": false, "comment": nil, "tags": []string{}, "settings": map[string]any{}, "meta": map[string]any{},
		"created_on": r.Created.UTC().Format(time.RFC3339Nano), "modified_on": r.Created.UTC().Format(time.RFC3339Nano),
	}
}

func validation(code int, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, errs: []cfError{{Code: 1004, Message: "DNS Validation Error",
		ErrorChain: []cfError{{Code: code, Message: msg}}}}}
}

func (d *Double) create(w http.ResponseWriter, z *zone, body []byte) {
	var in struct {
		Type    string `json:"type"`
		Name    string `json:"name"`
		Content string `json:"content"`
		TTL     *int   `json:"ttl"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		errf(http.StatusBadRequest, 9207, "Request body is invalid.").write(w)
		return
	}
	typ := strings.ToUpper(in.Type)
	switch {
	case typ == "":
		validation(9000, "DNS record type is invalid.").write(w)
		return
	case in.Name == "":
		validation(9007, "DNS record name is required.").write(w)
		return
	}
	name := canonical(in.Name)
	switch {
	case in.Name == "@":
		name = z.name
	case name != z.name && !strings.HasSuffix(name, "."+z.name):
		name = name + "." + z.name
	}
	if _, ok := dns.IsDomainName(name); !ok {
		validation(9007, "DNS record name is invalid.").write(w)
		return
	}
	ttl := 1
	if in.TTL != nil {
		ttl = *in.TTL
	}
	if ttl != 1 && (ttl < 60 || ttl > 86400) {
		validation(9021, "Invalid TTL. Must be between 60 and 86400 seconds, or 1 for Automatic.").write(w)
		return
	}
	if typ == "TXT" {
		if _, valid := decodeTXT(in.Content); !valid || len(in.Content) > 2048 {
			validation(9005, "Content for TXT record is invalid.").write(w)
			return
		}
	}
	for _, r := range d.records {
		if r.Zone == z.name && r.Name == name && r.Type == typ && r.Content == in.Content {
			errf(http.StatusBadRequest, 81058, "An identical record already exists.").write(w)
			return
		}
	}
	r := &Record{ID: newID(), Zone: z.name, Name: name, Type: typ, Content: in.Content, TTL: ttl, Created: time.Now()}
	d.records = append(d.records, r)
	d.notify(z.name, name, typ)
	ok(w, r.json(), nil)
}

func (d *Double) delete(w http.ResponseWriter, z *zone, id string) {
	i := slices.IndexFunc(d.records, func(r *Record) bool { return r.ID == id && r.Zone == z.name })
	if i < 0 {
		errf(http.StatusNotFound, 81044, "Record does not exist.").write(w)
		return
	}
	r := d.records[i]
	d.records = slices.Delete(d.records, i, i+1)
	d.notify(z.name, r.Name, r.Type)
	ok(w, map[string]string{"id": id}, nil)
}

// notify calls OnTXT for a TXT name.
func (d *Double) notify(zone, name, typ string) {
	if d.OnTXT == nil || typ != "TXT" {
		return
	}
	d.OnTXT(TXTUpdate{Zone: zone, Name: name + ".", Texts: d.texts(name)})
}

// texts returns the decoded TXT values of name, sorted.
func (d *Double) texts(name string) []string {
	var out []string
	for _, r := range d.records {
		if r.Name == name && r.Type == "TXT" {
			t, _ := decodeTXT(r.Content)
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// decodeTXT returns the text of TXT content: quoted content is read as
// zone-file character-strings (RFC 1035 §5.1: quoted or bare, escapes \X
// and decimal \DDD), each at most 255 octets, joined; unquoted content is
// the text itself. false: invalid quoted content.
func decodeTXT(content string) (string, bool) {
	if !strings.HasPrefix(content, `"`) {
		return content, true
	}
	var all strings.Builder
	i := 0
	for i < len(content) {
		if content[i] == ' ' || content[i] == '\t' {
			i++
			continue
		}
		quoted := content[i] == '"'
		if quoted {
			i++
		}
		var b strings.Builder
		closed := !quoted
		for i < len(content) {
			c := content[i]
			if quoted && c == '"' {
				i++
				closed = true
				break
			}
			if !quoted && (c == ' ' || c == '\t') {
				break
			}
			switch {
			case c == '\\' && i+3 < len(content) && isDigit(content[i+1]) && isDigit(content[i+2]) && isDigit(content[i+3]):
				n, _ := strconv.Atoi(content[i+1 : i+4])
				if n > 255 {
					return "", false
				}
				b.WriteByte(byte(n))
				i += 4
			case c == '\\' && i+1 < len(content):
				b.WriteByte(content[i+1])
				i += 2
			default:
				b.WriteByte(c)
				i++
			}
		}
		if !closed || b.Len() > 255 {
			return "", false
		}
		all.WriteString(b.String())
	}
	return all.String(), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func first(q map[string][]string, k string) string {
	if v := q[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// canonical lower-cases a name and drops its trailing dot (Cloudflare's
// form).
func canonical(name string) string { return strings.TrimSuffix(strings.ToLower(name), ".") }

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
