// TEST DOUBLE: NOT GOOGLE CLOUD DNS, NOT GOOGLE'S OAUTH 2.0 TOKEN ENDPOINT.
// Package clouddnstest holds a hand-written test double of Google Cloud DNS
// and of Google's token endpoint.
//
// No Cloud DNS emulator exists on these machines, so the tests of
// adapters/dns/clouddns (and end-to-end tests that solve DNS-01 challenges
// through it) run against Double: one httptest.Server that speaks the
// Cloud DNS v1 REST protocol (JSON, paths under /dns/v1/projects/, errors
// in Google's {"error": {"code", "message", "errors": [{"reason"}]}} form)
// for the four calls the provider makes, with the semantics Google
// documents for them:
//
//   - managedZones.list: the project's zones in creation order, optional
//     dnsName filter, pages of maxResults (or PageSize) with nextPageToken;
//   - resourceRecordSets.list: the zone's record sets ordered by name then
//     type, optional name and type filters (type needs name), pages; a new
//     zone holds its apex SOA and NS sets;
//   - changes.create: additions and deletions of whole record sets,
//     applied atomically or not at all. A deletion must match the current
//     set exactly (ttl and rrdatas, in any order) or the change fails with
//     412 conditionNotMet; deleting a set that does not exist is 404
//     notFound; adding a set that exists (and is not deleted by the same
//     change) is 409 alreadyExists; names outside the zone, missing fields
//     and TXT character-strings longer than 255 octets are 400 invalid.
//     TXT rrdatas are stored in canonical zone-file form (every
//     character-string quoted), as Cloud DNS returns them;
//   - changes.get: a change is "pending" until the test syncs it (SyncAll,
//     or SyncAfter reads), then "done"; unknown IDs are 404 notFound.
//
// Unknown projects and zones are 404 notFound (the real service may answer
// 403 for a project the caller cannot see).
//
// Every API call needs a bearer token: static ones the test registers
// (AddToken, e.g. for the function's own identity), or ones the double's
// token endpoint (TokenURL) issues for a service-account key made by
// ServiceAccount. The token endpoint checks the JWT-bearer assertion's
// RS256 signature against the key, its issuer, audience, scope and expiry,
// and answers invalid_grant for revoked or unknown keys, as Google does.
// Every call is logged with the identity that made it (Calls). Deny makes
// an identity's calls on a project fail with 403 forbidden; Fail injects
// failures.
//
// It is not a faithful emulator: no IAM beyond Deny, no DNSSEC, routing
// policies, private zone networks, quotas, operations or DNS service of its
// own. When CERTFN_GCP_TEST_PROJECT and CERTFN_GCP_TEST_ZONE are set, the
// clouddns tests also run against that real project (see
// docs/reference/dns01.md), and the assertions that need the double's bookkeeping
// are made only on the double.
//
// For end-to-end tests it can stand in for Cloud DNS's propagation: OnTXT
// receives every TXT set a change wrote or deleted (e.g. to serve it from
// Pebble's challtestsrv), and SyncAfter makes changes go from pending to
// done by themselves after they were read pending a number of times.
package clouddnstest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
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
)

// Scopes the token endpoint accepts: one of them must be asked for.
var Scopes = []string{
	"https://www.googleapis.com/auth/ndev.clouddns.readwrite",
	"https://www.googleapis.com/auth/cloud-platform",
}

// Call is one call the double answered.
type Call struct {
	// Op is "managedZones.list", "resourceRecordSets.list",
	// "changes.create", "changes.get" or "token".
	Op string
	// Project and Zone the call addressed ("" when none).
	Project, Zone string
	// Identity that made the call: the service account's email, the
	// identity of a static token, or "" when unauthenticated.
	Identity string
}

// RecordSet is a record set the double holds.
type RecordSet struct {
	Name, Type string
	TTL        int64
	// Rrdatas as stored (TXT in canonical quoted form).
	Rrdatas []string
}

// Change is one applied change.
type Change struct {
	Project, Zone, ID string
	Additions         []RecordSet
	Deletions         []RecordSet
}

// TXTUpdate is what a change did to one TXT set, for OnTXT.
type TXTUpdate struct {
	Project, Zone string
	// Name is the set's name ("_acme-challenge.example.test.").
	Name string
	// Texts are the set's values now, decoded (quotes and escapes
	// resolved, character-strings joined); empty when it was deleted.
	Texts []string
}

type zone struct {
	project, name, dnsName string
	id                     uint64
	private                bool
	created                time.Time
	sets                   []*RecordSet // sorted by name, then type
	changes                map[string]*change
	seq                    int
}

type change struct {
	id, status, start string
	pending           int
	add, del          []RecordSet
}

type saKey struct {
	email, project string
	pub            *rsa.PublicKey
	revoked        bool
}

type failure struct {
	op, reason string
	n, status  int
}

// Double is a running test double. It is safe for concurrent use.
type Double struct {
	// URL is the server's base URL; Endpoint is what clients take
	// (option.WithEndpoint).
	URL string
	// TokenURL is the OAuth 2.0 token endpoint (a service-account key's
	// token_uri).
	TokenURL string
	// SyncAfter, when > 0, makes a change done once changes.get has
	// answered pending for it SyncAfter times; 0 keeps changes pending
	// until SyncAll. Set it before any call.
	SyncAfter int
	// PageSize, when > 0, caps every list page (to exercise paging). Set
	// it before any call.
	PageSize int
	// OnTXT, when set, is called for every TXT set an applied change
	// wrote or deleted, with the double's lock held (it must not call the
	// double). Set it before any call.
	OnTXT func(TXTUpdate)
	// BeforeChange, when set, is called (without the lock) before a
	// changes.create is handled: a test may change record sets there
	// (SetRecordSet) to race the caller. Set it before any call.
	BeforeChange func(project, zone string)

	mu     sync.Mutex
	zones  []*zone
	tokens map[string]string // bearer token -> identity
	keys   map[string]*saKey // private_key_id -> key
	denied map[string]bool   // identity + " " + project
	fail   []failure
	// failToken makes the next failTokenN token requests fail with
	// failToken (HTTP status).
	failToken, failTokenN int
	calls                 []Call
	applied               []Change
	nextID                uint64
	seq                   int
}

// New starts a double that stops when the test ends.
func New(t testing.TB) *Double {
	d := &Double{tokens: map[string]string{}, keys: map[string]*saKey{}, denied: map[string]bool{}, nextID: 1000}
	srv := httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(srv.Close)
	d.URL = srv.URL
	d.TokenURL = srv.URL + "/token"
	return d
}

// Endpoint is the base URL a Cloud DNS client takes (option.WithEndpoint):
// the server's URL with a trailing slash.
func (d *Double) Endpoint() string { return d.URL + "/" }

// AddZone creates a managed zone (with its apex SOA and NS sets) and
// returns its numeric ID. dnsName gets a trailing dot if it lacks one.
func (d *Double) AddZone(project, name, dnsName string, private bool) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	dnsName = canonical(dnsName)
	d.nextID++
	z := &zone{project: project, name: name, dnsName: dnsName, id: d.nextID, private: private,
		created: time.Now().UTC(), changes: map[string]*change{}}
	ns := []string{"ns-cloud-a1.googledomains.com.", "ns-cloud-a2.googledomains.com.", "ns-cloud-a3.googledomains.com.", "ns-cloud-a4.googledomains.com."}
	z.put(&RecordSet{Name: dnsName, Type: "NS", TTL: 21600, Rrdatas: ns})
	z.put(&RecordSet{Name: dnsName, Type: "SOA", TTL: 21600, Rrdatas: []string{ns[0] + " cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"}})
	z.changes["0"] = &change{id: "0", status: "done", start: z.created.Format(time.RFC3339Nano)}
	d.zones = append(d.zones, z)
	return z.id
}

// AddToken makes token a valid bearer token of identity (the function's
// own identity, an admin client, ...).
func (d *Double) AddToken(token, identity string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tokens[token] = identity
}

// ServiceAccount creates a service account key for email in project and
// returns it as the JSON key file Google hands out, with token_uri set to
// the double's TokenURL.
func (d *Double) ServiceAccount(t testing.TB, project, email string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.seq++
	n := d.seq
	kid := fmt.Sprintf("%040x", n)
	d.keys[kid] = &saKey{email: email, project: project, pub: &key.PublicKey}
	d.mu.Unlock()
	out, err := json.MarshalIndent(map[string]string{
		"type":                        "service_account",
		"project_id":                  project,
		"private_key_id":              kid,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                email,
		"client_id":                   "1" + strconv.Itoa(100000000+n),
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   d.TokenURL,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RevokeKeys makes the token endpoint refuse every key of email (as when
// the keys are deleted) and forgets the tokens it issued for them.
func (d *Double) RevokeKeys(email string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range d.keys {
		if k.email == email {
			k.revoked = true
		}
	}
	for tok, id := range d.tokens {
		if id == email && strings.HasPrefix(tok, "ya29.double-") {
			delete(d.tokens, tok)
		}
	}
}

// Deny makes every call of identity on project fail with 403 forbidden.
func (d *Double) Deny(identity, project string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denied[identity+" "+project] = true
}

// Fail makes the next n API calls of op ("" for any; token calls are not
// counted) fail with HTTP status and reason; Fail("", 0, 0, "") clears.
func (d *Double) Fail(op string, n, status int, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n <= 0 {
		d.fail = nil
		return
	}
	d.fail = append(d.fail, failure{op: op, n: n, status: status, reason: reason})
}

// FailToken makes the next n token requests fail with HTTP status (e.g.
// 503), before the assertion is looked at.
func (d *Double) FailToken(n, status int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failToken, d.failTokenN = status, n
}

// SyncAll makes every pending change done.
func (d *Double) SyncAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, z := range d.zones {
		for _, c := range z.changes {
			c.status = "done"
		}
	}
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

// Changes returns every applied change, in order.
func (d *Double) Changes() []Change {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.applied)
}

// RecordSets returns the record sets of a zone (by name), nil if unknown.
func (d *Double) RecordSets(project, zoneName string) []RecordSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	z := d.zone(project, zoneName)
	if z == nil {
		return nil
	}
	var out []RecordSet
	for _, s := range z.sets {
		out = append(out, s.clone())
	}
	return out
}

// SetRecordSet writes a record set directly (no change is recorded, as if
// someone else had changed it); no rrdatas deletes it. TXT rrdatas are
// canonicalized.
func (d *Double) SetRecordSet(project, zoneName, name, typ string, ttl int64, rrdatas ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	z := d.zone(project, zoneName)
	if z == nil {
		panic("clouddnstest: no zone " + project + "/" + zoneName)
	}
	name, typ = canonical(name), strings.ToUpper(typ)
	if len(rrdatas) == 0 {
		z.remove(name, typ)
		return
	}
	s := &RecordSet{Name: name, Type: typ, TTL: ttl, Rrdatas: slices.Clone(rrdatas)}
	if typ == "TXT" {
		for i, r := range s.Rrdatas {
			s.Rrdatas[i], _ = canonicalTXT(r)
		}
	}
	z.remove(name, typ)
	z.put(s)
}

// --- HTTP ---

type apiError struct {
	status          int
	reason, message string
}

func (e *apiError) write(w http.ResponseWriter) {
	body := map[string]any{"error": map[string]any{
		"code": e.status, "message": e.message,
		"errors": []map[string]string{{"message": e.message, "domain": "global", "reason": e.reason}},
	}}
	writeJSON(w, e.status, body)
}

func errf(status int, reason, format string, args ...any) *apiError {
	return &apiError{status: status, reason: reason, message: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (d *Double) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		d.serveToken(w, r)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// dns/v1/projects/{p}/managedZones[/{z}/rrsets | /{z}/changes[/{id}]]
	if len(parts) < 5 || parts[0] != "dns" || parts[1] != "v1" || parts[2] != "projects" || parts[4] != "managedZones" {
		errf(http.StatusNotFound, "notFound", "no such method: %s %s", r.Method, r.URL.Path).write(w)
		return
	}
	project := parts[3]
	var op, zoneName, changeID string
	switch {
	case len(parts) == 5 && r.Method == http.MethodGet:
		op = "managedZones.list"
	case len(parts) == 7 && parts[6] == "rrsets" && r.Method == http.MethodGet:
		op, zoneName = "resourceRecordSets.list", parts[5]
	case len(parts) == 7 && parts[6] == "changes" && r.Method == http.MethodPost:
		op, zoneName = "changes.create", parts[5]
	case len(parts) == 8 && parts[6] == "changes" && r.Method == http.MethodGet:
		op, zoneName, changeID = "changes.get", parts[5], parts[7]
	default:
		errf(http.StatusNotFound, "notFound", "no such method: %s %s", r.Method, r.URL.Path).write(w)
		return
	}
	if op == "changes.create" && d.BeforeChange != nil {
		d.BeforeChange(project, zoneName)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		errf(http.StatusBadRequest, "parseError", "read body: %v", err).write(w)
		return
	}
	q := r.URL.Query()

	d.mu.Lock()
	defer d.mu.Unlock()
	identity, known := d.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	d.calls = append(d.calls, Call{Op: op, Project: project, Zone: zoneName, Identity: identity})
	if !known || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		(&apiError{status: http.StatusUnauthorized, reason: "authError",
			message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."}).write(w)
		return
	}
	if e := d.injected(op); e != nil {
		e.write(w)
		return
	}
	if d.denied[identity+" "+project] {
		errf(http.StatusForbidden, "forbidden", "Forbidden").write(w)
		return
	}
	if !slices.ContainsFunc(d.zones, func(z *zone) bool { return z.project == project }) {
		errf(http.StatusNotFound, "notFound", "The 'parameters.project' resource named '%s' does not exist.", project).write(w)
		return
	}
	var z *zone
	if zoneName != "" {
		if z = d.zone(project, zoneName); z == nil {
			errf(http.StatusNotFound, "notFound", "The 'parameters.managedZone' resource named '%s' does not exist.", zoneName).write(w)
			return
		}
	}
	var out any
	var e *apiError
	switch op {
	case "managedZones.list":
		out, e = d.listZones(project, q.Get("dnsName"), q.Get("maxResults"), q.Get("pageToken"))
	case "resourceRecordSets.list":
		out, e = d.listSets(z, q.Get("name"), q.Get("type"), q.Get("maxResults"), q.Get("pageToken"))
	case "changes.create":
		out, e = d.createChange(z, body)
	case "changes.get":
		out, e = d.getChange(z, changeID)
	}
	if e != nil {
		e.write(w)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// injected returns the failure to answer op with, if one is armed.
func (d *Double) injected(op string) *apiError {
	for i := range d.fail {
		f := &d.fail[i]
		if f.n > 0 && (f.op == "" || f.op == op) {
			f.n--
			msg := http.StatusText(f.status)
			if msg == "" {
				msg = "injected failure"
			}
			return errf(f.status, f.reason, "%s (injected by the test double)", msg)
		}
	}
	return nil
}

func (d *Double) zone(project, name string) *zone {
	for _, z := range d.zones {
		if z.project == project && (z.name == name || strconv.FormatUint(z.id, 10) == name) {
			return z
		}
	}
	return nil
}

// page cuts items to one page: offset from token, size from maxResults
// and PageSize.
func (d *Double) page(total int, maxResults, token string) (start, end int, next string, e *apiError) {
	if token != "" {
		n, err := strconv.Atoi(token)
		if err != nil || n < 0 || n > total {
			return 0, 0, "", errf(http.StatusBadRequest, "invalid", "Invalid value for 'parameters.pageToken': '%s'", token)
		}
		start = n
	}
	size := total
	if maxResults != "" {
		n, err := strconv.Atoi(maxResults)
		if err != nil || n <= 0 {
			return 0, 0, "", errf(http.StatusBadRequest, "invalid", "Invalid value for 'parameters.maxResults': '%s'", maxResults)
		}
		size = n
	}
	if d.PageSize > 0 && d.PageSize < size {
		size = d.PageSize
	}
	end = min(total, start+size)
	if end < total {
		next = strconv.Itoa(end)
	}
	return start, end, next, nil
}

func (d *Double) listZones(project, dnsName, maxResults, token string) (any, *apiError) {
	var zs []*zone
	for _, z := range d.zones {
		if z.project == project && (dnsName == "" || z.dnsName == canonical(dnsName)) {
			zs = append(zs, z)
		}
	}
	start, end, next, e := d.page(len(zs), maxResults, token)
	if e != nil {
		return nil, e
	}
	items := []map[string]any{}
	for _, z := range zs[start:end] {
		vis := "public"
		if z.private {
			vis = "private"
		}
		items = append(items, map[string]any{
			"kind": "dns#managedZone", "name": z.name, "dnsName": z.dnsName, "id": strconv.FormatUint(z.id, 10),
			"visibility": vis, "creationTime": z.created.Format(time.RFC3339Nano), "description": "",
			"nameServers": z.find(z.dnsName, "NS").Rrdatas,
		})
	}
	out := map[string]any{"kind": "dns#managedZonesListResponse", "managedZones": items}
	if next != "" {
		out["nextPageToken"] = next
	}
	return out, nil
}

func (d *Double) listSets(z *zone, name, typ, maxResults, token string) (any, *apiError) {
	if typ != "" && name == "" {
		return nil, errf(http.StatusBadRequest, "invalid", "Invalid value for 'parameters.type': a type filter needs a name filter")
	}
	var sets []*RecordSet
	for _, s := range z.sets {
		if (name == "" || s.Name == canonical(name)) && (typ == "" || s.Type == strings.ToUpper(typ)) {
			sets = append(sets, s)
		}
	}
	start, end, next, e := d.page(len(sets), maxResults, token)
	if e != nil {
		return nil, e
	}
	items := []map[string]any{}
	for _, s := range sets[start:end] {
		items = append(items, s.json())
	}
	out := map[string]any{"kind": "dns#resourceRecordSetsListResponse", "rrsets": items}
	if next != "" {
		out["nextPageToken"] = next
	}
	return out, nil
}

// wireSet is a record set in a change request.
type wireSet struct {
	Name          string          `json:"name"`
	Type          string          `json:"type"`
	TTL           int64           `json:"ttl"`
	Rrdatas       []string        `json:"rrdatas"`
	RoutingPolicy json.RawMessage `json:"routingPolicy"`
}

func (d *Double) createChange(z *zone, body []byte) (any, *apiError) {
	var req struct {
		Additions []wireSet `json:"additions"`
		Deletions []wireSet `json:"deletions"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errf(http.StatusBadRequest, "parseError", "Parse Error: %v", err)
	}
	if len(req.Additions) == 0 && len(req.Deletions) == 0 {
		return nil, errf(http.StatusBadRequest, "required", "The 'entity.change' resource is required but was missing or empty.")
	}
	check := func(kind string, i int, w wireSet) (RecordSet, *apiError) {
		field := fmt.Sprintf("entity.change.%s[%d]", kind, i)
		if w.Name == "" {
			return RecordSet{}, errf(http.StatusBadRequest, "required", "Required field '%s.name' not specified", field)
		}
		if !strings.HasSuffix(w.Name, ".") {
			return RecordSet{}, errf(http.StatusBadRequest, "invalid", "Invalid value for '%s.name': '%s'", field, w.Name)
		}
		name := canonical(w.Name)
		if name != z.dnsName && !strings.HasSuffix(name, "."+z.dnsName) {
			return RecordSet{}, errf(http.StatusBadRequest, "invalid", "The resource record set '%s' is invalid because the DNS name '%s' is not within the zone '%s'.", field, w.Name, z.dnsName)
		}
		if w.Type == "" {
			return RecordSet{}, errf(http.StatusBadRequest, "required", "Required field '%s.type' not specified", field)
		}
		if len(w.RoutingPolicy) > 0 && string(w.RoutingPolicy) != "null" {
			return RecordSet{}, errf(http.StatusBadRequest, "invalid", "routing policies are not supported by the test double ('%s')", field)
		}
		if len(w.Rrdatas) == 0 {
			return RecordSet{}, errf(http.StatusBadRequest, "required", "Required field '%s.rrdata' not specified", field)
		}
		if w.TTL < 0 {
			return RecordSet{}, errf(http.StatusBadRequest, "invalid", "Invalid value for '%s.ttl': '%d'", field, w.TTL)
		}
		s := RecordSet{Name: name, Type: strings.ToUpper(w.Type), TTL: w.TTL, Rrdatas: slices.Clone(w.Rrdatas)}
		if s.Type == "TXT" {
			for j, r := range s.Rrdatas {
				c, ok := canonicalTXT(r)
				if !ok {
					return RecordSet{}, errf(http.StatusBadRequest, "invalid", "Invalid value for '%s.rrdata[%d]': '%s'", field, j, r)
				}
				s.Rrdatas[j] = c
			}
		}
		return s, nil
	}
	var adds, dels []RecordSet
	for i, w := range req.Deletions {
		s, e := check("deletions", i, w)
		if e != nil {
			return nil, e
		}
		cur := z.find(s.Name, s.Type)
		if cur == nil {
			return nil, errf(http.StatusNotFound, "notFound", "The 'entity.change.deletions[%d]' resource named '%s (%s)' does not exist.", i, w.Name, s.Type)
		}
		if cur.TTL != s.TTL || !sameData(cur.Rrdatas, s.Rrdatas) {
			return nil, errf(http.StatusPreconditionFailed, "conditionNotMet", "Precondition not met for 'entity.change.deletions[%d]'", i)
		}
		dels = append(dels, s)
	}
	for i, w := range req.Additions {
		s, e := check("additions", i, w)
		if e != nil {
			return nil, e
		}
		deleted := slices.ContainsFunc(dels, func(x RecordSet) bool { return x.Name == s.Name && x.Type == s.Type })
		dup := slices.ContainsFunc(adds, func(x RecordSet) bool { return x.Name == s.Name && x.Type == s.Type })
		if (z.find(s.Name, s.Type) != nil && !deleted) || dup {
			return nil, errf(http.StatusConflict, "alreadyExists", "The resource 'entity.change.additions[%d]' named '%s (%s)' already exists", i, w.Name, s.Type)
		}
		adds = append(adds, s)
	}
	// Apply: all checks passed.
	touched := map[string]bool{}
	for _, s := range dels {
		z.remove(s.Name, s.Type)
		if s.Type == "TXT" {
			touched[s.Name] = true
		}
	}
	for _, s := range adds {
		c := s.clone()
		z.put(&c)
		if s.Type == "TXT" {
			touched[s.Name] = true
		}
	}
	z.seq++
	c := &change{id: strconv.Itoa(z.seq), status: "pending", start: time.Now().UTC().Format(time.RFC3339Nano), add: adds, del: dels}
	z.changes[c.id] = c
	d.applied = append(d.applied, Change{Project: z.project, Zone: z.name, ID: c.id, Additions: adds, Deletions: dels})
	if d.OnTXT != nil {
		names := make([]string, 0, len(touched))
		for n := range touched {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			u := TXTUpdate{Project: z.project, Zone: z.name, Name: n}
			if s := z.find(n, "TXT"); s != nil {
				for _, r := range s.Rrdatas {
					u.Texts = append(u.Texts, strings.Join(splitTXT(r), ""))
				}
			}
			d.OnTXT(u)
		}
	}
	return c.json(), nil
}

func (d *Double) getChange(z *zone, id string) (any, *apiError) {
	c := z.changes[id]
	if c == nil {
		return nil, errf(http.StatusNotFound, "notFound", "The 'parameters.changeId' resource named '%s' does not exist.", id)
	}
	out := c.json()
	if c.status == "pending" {
		c.pending++
		if d.SyncAfter > 0 && c.pending >= d.SyncAfter {
			c.status = "done"
		}
	}
	return out, nil
}

func (c *change) json() map[string]any {
	out := map[string]any{"kind": "dns#change", "id": c.id, "status": c.status, "startTime": c.start}
	if len(c.add) > 0 {
		var a []map[string]any
		for _, s := range c.add {
			a = append(a, s.json())
		}
		out["additions"] = a
	}
	if len(c.del) > 0 {
		var a []map[string]any
		for _, s := range c.del {
			a = append(a, s.json())
		}
		out["deletions"] = a
	}
	return out
}

// --- the OAuth 2.0 token endpoint (JWT bearer grant) ---

func (d *Double) serveToken(w http.ResponseWriter, r *http.Request) {
	grantErr := func(code, desc string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
	}
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "invalid_request"})
		return
	}
	if err := r.ParseForm(); err != nil {
		grantErr("invalid_request", err.Error())
		return
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		grantErr("unsupported_grant_type", "Invalid grant_type: "+r.PostForm.Get("grant_type"))
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		grantErr("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
		return
	}
	var hdr struct{ Alg, Kid string }
	var claims struct {
		Iss, Scope, Aud string
		Exp, Iat        int64
	}
	if decodeSeg(parts[0], &hdr) != nil || decodeSeg(parts[1], &claims) != nil {
		grantErr("invalid_grant", "Invalid JWT.")
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k := d.keys[hdr.Kid]
	identity := ""
	if k != nil {
		identity = k.email
	}
	d.calls = append(d.calls, Call{Op: "token", Identity: identity})
	if d.failTokenN > 0 {
		d.failTokenN--
		writeJSON(w, d.failToken, map[string]string{"error": "internal_failure", "error_description": "injected by the test double"})
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if k == nil || hdr.Alg != "RS256" || err != nil || rsa.VerifyPKCS1v15(k.pub, crypto.SHA256, sum[:], sig) != nil {
		grantErr("invalid_grant", "Invalid JWT Signature.")
		return
	}
	if k.revoked {
		grantErr("invalid_grant", "Invalid grant: account not found")
		return
	}
	now := time.Now().Unix()
	if claims.Iss != k.email || claims.Aud != d.TokenURL || claims.Exp < now || claims.Iat > now+300 {
		grantErr("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
		return
	}
	if !slices.ContainsFunc(strings.Fields(claims.Scope), func(s string) bool { return slices.Contains(Scopes, s) }) {
		grantErr("invalid_scope", "Cloud DNS needs one of "+strings.Join(Scopes, ", "))
		return
	}
	d.seq++
	tok := fmt.Sprintf("ya29.double-%d", d.seq)
	d.tokens[tok] = k.email
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "expires_in": 3599, "token_type": "Bearer"})
}

func decodeSeg(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// --- record sets ---

func (z *zone) find(name, typ string) *RecordSet {
	for _, s := range z.sets {
		if s.Name == name && s.Type == typ {
			return s
		}
	}
	return nil
}

func (z *zone) remove(name, typ string) {
	z.sets = slices.DeleteFunc(z.sets, func(s *RecordSet) bool { return s.Name == name && s.Type == typ })
}

func (z *zone) put(s *RecordSet) {
	z.sets = append(z.sets, s)
	slices.SortFunc(z.sets, func(a, b *RecordSet) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
}

func (s RecordSet) clone() RecordSet {
	s.Rrdatas = slices.Clone(s.Rrdatas)
	return s
}

func (s RecordSet) json() map[string]any {
	return map[string]any{"kind": "dns#resourceRecordSet", "name": s.Name, "type": s.Type, "ttl": s.TTL, "rrdatas": slices.Clone(s.Rrdatas)}
}

// sameData compares rrdatas in any order.
func sameData(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// canonical lower-cases a DNS name and gives it a trailing dot.
func canonical(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

// canonicalTXT returns a TXT rrdata with every character-string quoted
// (escapes kept in zone-file form); false when a character-string is
// longer than 255 octets.
func canonicalTXT(v string) (string, bool) {
	strs := splitTXT(v)
	if len(strs) == 0 {
		strs = []string{""}
	}
	var b strings.Builder
	for i, s := range strs {
		if len(s) > 255 {
			return "", false
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		for j := 0; j < len(s); j++ {
			c := s[j]
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c > 0x7e:
				fmt.Fprintf(&b, "\\%03d", c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	return b.String(), true
}

// splitTXT returns the character-strings of a TXT rrdata, escapes (\X,
// \DDD decimal) resolved.
func splitTXT(v string) []string {
	var out []string
	i := 0
	for i < len(v) {
		if v[i] == ' ' || v[i] == '\t' {
			i++
			continue
		}
		quoted := v[i] == '"'
		if quoted {
			i++
		}
		var b strings.Builder
		for i < len(v) {
			c := v[i]
			if quoted && c == '"' {
				i++
				break
			}
			if !quoted && (c == ' ' || c == '\t') {
				break
			}
			if c == '\\' && i+3 < len(v) && isDigit(v[i+1]) && isDigit(v[i+2]) && isDigit(v[i+3]) {
				n, _ := strconv.Atoi(v[i+1 : i+4])
				b.WriteByte(byte(n))
				i += 4
				continue
			}
			if c == '\\' && i+1 < len(v) {
				b.WriteByte(v[i+1])
				i += 2
				continue
			}
			b.WriteByte(c)
			i++
		}
		out = append(out, b.String())
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
