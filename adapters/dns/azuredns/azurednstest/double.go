// TEST DOUBLE: NOT AZURE DNS, NOT AZURE RESOURCE MANAGER, NOT MICROSOFT
// ENTRA ID, NOT THE AZURE INSTANCE METADATA SERVICE.
// Package azurednstest holds a hand-written test double of the parts of
// Azure the azureDNS provider (adapters/dns/azuredns) talks to.
//
// No emulator of Azure DNS exists, so the provider's tests (and end-to-end
// tests that solve DNS-01 challenges through it) run against Double: one
// TLS httptest.Server written from Azure's REST API reference, answering:
//
//   - Azure Resource Manager, Azure DNS (api-version 2018-05-01): list the
//     DNS zones of a resource group (GET .../providers/Microsoft.Network/
//     dnsZones, pages with nextLink), and GET, PUT and DELETE of a TXT
//     record set (.../dnsZones/{zone}/TXT/{relativeRecordSetName}, "@" for
//     the apex; JSON properties "TTL" and "TXTRecords": [{"value":
//     ["..."]}]);
//   - Azure Resource Manager, Azure Private DNS (api-version 2024-06-01):
//     the same under .../privateDnsZones (JSON properties "ttl" and
//     "txtRecords");
//   - Microsoft Entra ID: the tenant's OpenID configuration
//     (/{tenant}/v2.0/.well-known/openid-configuration) and the token
//     endpoint's client-credentials grant (/{tenant}/oauth2/v2.0/token),
//     with client_id and client_secret for a service principal, or with a
//     client_assertion (jwt-bearer) for Workload Identity's federated
//     credential;
//   - the Instance Metadata Service's managed-identity token endpoint
//     (/metadata/identity/oauth2/token, "Metadata: true", client_id or
//     msi_res_id for a user-assigned identity). Client() reaches it for
//     requests to IMDS's own address (169.254.169.254).
//
// Semantics, as documented: every record set has an ETag that changes on
// each write; a PUT with If-Match that is not the current ETag, or with
// If-None-Match "*" when the set exists, is 412 PreconditionFailed; PUT
// answers 201 when it created the set, 200 when it replaced it; DELETE
// answers 200, or 204 when there was nothing; GET of a missing set is 404
// NotFound. Errors have ARM's {"error": {"code", "message"}} form: 401
// AuthenticationFailed / InvalidAuthenticationToken without a valid
// bearer token, 403 AuthorizationFailed for a denied identity, 404
// SubscriptionNotFound, ResourceGroupNotFound, ParentResourceNotFound (no
// such zone) and NotFound, 400 BadRequest for invalid input, 400
// NoRegisteredProviderFound for another api-version; Entra ID errors have
// OAuth's {"error", "error_description", "error_codes"} form (AADSTS90002
// unknown tenant, AADSTS700016 unknown application, AADSTS7000215 wrong
// secret). Fail injects failures (429 with Retry-After, 5xx).
//
// TXT strings: Azure's documentation asks REST callers to split TXT
// values into strings of at most 254 characters; the double stores the
// strings as sent and refuses only strings over 1024 characters (the
// per-string maximum of Azure's own tools), so the tests check the
// provider's splitting on what the double stored (RecordSet).
//
// It is not a faithful emulator: no RBAC beyond Deny, no other record
// types, no zone management, no name servers, no throttling of its own,
// no tokens that expire. When CERTFN_AZURE_TEST_SUBSCRIPTION and the other
// CERTFN_AZURE_TEST_* variables are set, the azuredns tests also run
// against real Azure (see docs/reference/dns01.md), and the assertions that need the
// double's bookkeeping are made only on the double.
//
// For end-to-end tests OnTXT receives every TXT set a write left (e.g. to
// serve it from Pebble's challtestsrv).
package azurednstest

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
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

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
)

// API versions the double serves, as the Azure SDK modules certfn uses
// send them (armdns v1.2.0, armprivatedns v1.3.0).
const (
	PublicAPIVersion  = "2018-05-01"
	PrivateAPIVersion = "2024-06-01"
)

// Audience is the double's Resource Manager audience: tokens are issued
// for scope Audience + "/.default" (see scopeOK).
const Audience = "https://management.azure.test/"

// IMDSHost is the address of the Instance Metadata Service that Client
// sends to the double.
const IMDSHost = "169.254.169.254"

// Call is one request the double answered.
type Call struct {
	// Op is "openid", "token", "imds", "zones.list", "recordsets.get",
	// "recordsets.put" or "recordsets.delete".
	Op string
	// Private is true for a call on Private DNS.
	Private bool
	// Zone and Name are the zone and relative record set name ("" if none).
	Zone, Name string
	// Identity made the call: "sp:<clientID>", "wi:<clientID>",
	// "mi:<clientID>" or "" when unauthenticated.
	Identity string
	// Status is the HTTP status of the answer.
	Status int
}

// TXTUpdate is what a write left of one TXT set, for OnTXT.
type TXTUpdate struct {
	Private bool
	Zone    string
	// Name is the set's FQDN ("_acme-challenge.example.test.").
	Name string
	// Texts are the set's values (strings of a record joined), empty when
	// the set was deleted.
	Texts []string
}

// RecordSet is a TXT record set the double holds.
type RecordSet struct {
	Name string // relative name, "@" for the apex
	TTL  int64
	// Records hold each TXT record's strings, as sent.
	Records [][]string
	ETag    string
}

// Texts returns each record's strings joined, sorted.
func (s *RecordSet) Texts() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.Records))
	for _, r := range s.Records {
		out = append(out, strings.Join(r, ""))
	}
	slices.Sort(out)
	return out
}

type zone struct {
	sub, rg, name string
	private       bool
	sets          map[string]*RecordSet // by lower-case relative name
}

type principal struct{ tenant, secret string }

type failure struct {
	op, code   string
	n, status  int
	retryAfter string
}

// Double is a running test double. It is safe for concurrent use.
type Double struct {
	// URL is the server's base URL: the Resource Manager endpoint and the
	// Entra ID authority host.
	URL string
	// PageSize, when > 0, caps every zone list page (to exercise paging).
	// Set it before any call.
	PageSize int
	// OnTXT, when set, is called for every TXT set a PUT or DELETE wrote
	// or deleted, with the double's lock held (it must not call the
	// double). Set it before any call.
	OnTXT func(TXTUpdate)
	// BeforeWrite, when set, is called (without the lock) before a PUT or
	// DELETE of a record set is handled: a test may change the set there
	// (SetTXT) to race the caller. Set it before any call.
	BeforeWrite func(zone, name string)

	srv *httptest.Server

	mu       sync.Mutex
	subs     map[string]map[string]bool // subscription -> resource groups (lower case)
	zones    []*zone
	sps      map[string]principal // client ID -> tenant and secret
	feds     map[string]principal // client ID -> tenant and the assertion it federates
	mis      map[string]string    // managed identity: client ID or resource ID (lower case) -> identity
	system   string               // the system-assigned identity ("" none)
	tokens   map[string]string    // bearer token -> identity
	denied   map[string]bool
	fail     []failure
	calls    []Call
	etagSeq  int
	tenantOK map[string]bool
}

// New starts a double that stops when the test ends.
func New(t testing.TB) *Double {
	d := &Double{
		subs: map[string]map[string]bool{}, sps: map[string]principal{}, feds: map[string]principal{}, mis: map[string]string{},
		tokens: map[string]string{}, denied: map[string]bool{}, tenantOK: map[string]bool{},
	}
	d.srv = httptest.NewTLSServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	d.URL = d.srv.URL
	return d
}

// Cloud is the cloud configuration that reaches the double: its URL is
// the Entra ID authority host and the Resource Manager endpoint.
func (d *Double) Cloud() cloud.Configuration {
	return cloud.Configuration{
		ActiveDirectoryAuthorityHost: d.URL + "/",
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Audience: Audience, Endpoint: d.URL},
		},
	}
}

// Client returns an HTTP client (an azcore policy.Transporter) that trusts
// the double's TLS certificate and sends requests for the Instance
// Metadata Service (http://169.254.169.254) to the double.
func (d *Double) Client() *http.Client {
	base := d.srv.Client().Transport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{RootCAs: base.TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12}
	u, _ := url.Parse(d.URL)
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Hostname() == IMDSHost {
			r = r.Clone(r.Context())
			r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
		}
		return base.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// AddZone creates a DNS zone (private: a Private DNS zone) in resource
// group rg of subscription sub, creating both if needed.
func (d *Double) AddZone(sub, rg, name string, private bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addGroup(sub, rg)
	d.zones = append(d.zones, &zone{sub: strings.ToLower(sub), rg: strings.ToLower(rg), name: strings.ToLower(strings.TrimSuffix(name, ".")), private: private, sets: map[string]*RecordSet{}})
}

// AddResourceGroup creates resource group rg of subscription sub.
func (d *Double) AddResourceGroup(sub, rg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addGroup(sub, rg)
}

func (d *Double) addGroup(sub, rg string) {
	sub, rg = strings.ToLower(sub), strings.ToLower(rg)
	if d.subs[sub] == nil {
		d.subs[sub] = map[string]bool{}
	}
	d.subs[sub][rg] = true
}

// AddServicePrincipal registers an application of tenant with a client
// secret; its tokens act as "sp:<clientID>".
func (d *Double) AddServicePrincipal(tenant, clientID, secret string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tenantOK[strings.ToLower(tenant)] = true
	d.sps[strings.ToLower(clientID)] = principal{tenant: strings.ToLower(tenant), secret: secret}
}

// AddFederatedIdentity registers an application of tenant that trusts
// assertion (the token a workload's federated token file holds); its
// tokens act as "wi:<clientID>".
func (d *Double) AddFederatedIdentity(tenant, clientID, assertion string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tenantOK[strings.ToLower(tenant)] = true
	d.feds[strings.ToLower(clientID)] = principal{tenant: strings.ToLower(tenant), secret: assertion}
}

// AddManagedIdentity assigns a user-assigned managed identity, known by
// its client ID and resource ID, to the machine IMDS serves; its tokens
// act as "mi:<clientID>".
func (d *Double) AddManagedIdentity(clientID, resourceID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mis[strings.ToLower(clientID)] = "mi:" + clientID
	d.mis[strings.ToLower(resourceID)] = "mi:" + clientID
}

// SetSystemIdentity gives the machine IMDS serves a system-assigned
// identity, whose tokens act as "mi:<clientID>".
func (d *Double) SetSystemIdentity(clientID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.system = "mi:" + clientID
}

// Deny makes Resource Manager refuse every call of identity (403
// AuthorizationFailed).
func (d *Double) Deny(identity string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.denied[identity] = true
}

// Fail makes the next n requests of op (a Call.Op) fail with status and
// error code; retryAfter, when not empty, is sent as Retry-After.
func (d *Double) Fail(op string, n, status int, code, retryAfter string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail = append(d.fail, failure{op: op, n: n, status: status, code: code, retryAfter: retryAfter})
}

// SetTXT replaces the TXT set fqdn of a zone with texts (one single-string
// record each) and ttl, as someone else would; no texts deletes it.
func (d *Double) SetTXT(zoneName string, private bool, fqdn string, ttl int64, texts ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	z := d.zone(zoneName, private)
	if z == nil {
		panic("azurednstest: no zone " + zoneName)
	}
	rel := relative(fqdn, z.name)
	if len(texts) == 0 {
		delete(z.sets, strings.ToLower(rel))
		return
	}
	s := &RecordSet{Name: rel, TTL: ttl, ETag: d.etag()}
	for _, t := range texts {
		s.Records = append(s.Records, []string{t})
	}
	z.sets[strings.ToLower(rel)] = s
}

// RecordSet returns a copy of the TXT set fqdn of a zone (nil if none).
func (d *Double) RecordSet(zoneName string, private bool, fqdn string) *RecordSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	z := d.zone(zoneName, private)
	if z == nil {
		return nil
	}
	s := z.sets[strings.ToLower(relative(fqdn, z.name))]
	if s == nil {
		return nil
	}
	c := *s
	c.Records = nil
	for _, r := range s.Records {
		c.Records = append(c.Records, slices.Clone(r))
	}
	return &c
}

// TXT returns the sorted values of the TXT set fqdn of a zone and its TTL
// (0 when there is none).
func (d *Double) TXT(zoneName string, private bool, fqdn string) ([]string, int64) {
	s := d.RecordSet(zoneName, private, fqdn)
	if s == nil {
		return nil, 0
	}
	return s.Texts(), s.TTL
}

// Calls returns the requests answered so far.
func (d *Double) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// Count returns how many requests of op were answered.
func (d *Double) Count(op string) int {
	n := 0
	for _, c := range d.Calls() {
		if c.Op == op {
			n++
		}
	}
	return n
}

// zone finds a zone by name; d.mu is held. Names are unique per kind in
// the double (tests do not put one zone name in two groups).
func (d *Double) zone(name string, private bool) *zone {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, z := range d.zones {
		if z.name == name && z.private == private {
			return z
		}
	}
	return nil
}

// relative returns fqdn relative to zone ("@" at the apex).
func relative(fqdn, zone string) string {
	fqdn = strings.TrimSuffix(fqdn, ".")
	if strings.EqualFold(fqdn, zone) {
		return "@"
	}
	if len(fqdn) > len(zone)+1 && strings.EqualFold(fqdn[len(fqdn)-len(zone)-1:], "."+zone) {
		return fqdn[:len(fqdn)-len(zone)-1]
	}
	return fqdn
}

func (d *Double) etag() string {
	d.etagSeq++
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%08d-%s", d.etagSeq, hex.EncodeToString(b[:]))
}

func (d *Double) newToken(identity string) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	tok := "tok-" + hex.EncodeToString(b[:])
	d.tokens[tok] = identity
	return tok
}

// injected pops an injected failure for op; d.mu is held.
func (d *Double) injected(op string) (failure, bool) {
	for i := range d.fail {
		f := &d.fail[i]
		if f.op != op {
			continue
		}
		got := *f
		f.n--
		if f.n <= 0 {
			d.fail = slices.Delete(d.fail, i, i+1)
		}
		return got, true
	}
	return failure{}, false
}

// reply is one answer of the double.
type reply struct {
	status int
	body   any
	header map[string]string
}

func armError(status int, code, msg string) reply {
	return reply{status: status, body: map[string]any{"error": map[string]string{"code": code, "message": msg}}}
}

func oauthError(status int, code string, aadsts int, msg string) reply {
	return reply{status: status, body: map[string]any{
		"error": code, "error_description": fmt.Sprintf("AADSTS%d: %s", aadsts, msg), "error_codes": []int{aadsts},
	}}
}

func (d *Double) serve(w http.ResponseWriter, r *http.Request) {
	call := Call{}
	rep := d.route(r, &call)
	call.Status = rep.status
	d.mu.Lock()
	d.calls = append(d.calls, call)
	d.mu.Unlock()
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.body == nil {
		w.WriteHeader(rep.status)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(rep.status)
	_ = json.NewEncoder(w).Encode(rep.body)
}

// route dispatches r and fills call.
func (d *Double) route(r *http.Request, call *Call) reply {
	path := r.URL.Path
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && path == "/metadata/identity/oauth2/token":
		call.Op = "imds"
		return d.withFailure(call.Op, func() reply { return d.imds(r, call) })
	case r.Method == http.MethodGet && len(parts) == 4 && parts[1] == "v2.0" && parts[2] == ".well-known" && parts[3] == "openid-configuration":
		call.Op = "openid"
		return d.openID(parts[0])
	case r.Method == http.MethodPost && len(parts) == 4 && parts[1] == "oauth2" && parts[2] == "v2.0" && parts[3] == "token":
		call.Op = "token"
		return d.withFailure(call.Op, func() reply { return d.token(r, parts[0], call) })
	case len(parts) >= 6 && parts[0] == "subscriptions" && strings.EqualFold(parts[2], "resourceGroups") &&
		strings.EqualFold(parts[4], "providers") && strings.EqualFold(parts[5], "Microsoft.Network"):
		return d.arm(r, parts, call)
	}
	call.Op = r.Method + " " + path
	return armError(http.StatusNotFound, "NotFound", "no such route in the test double")
}

// withFailure answers an injected failure of op, or f.
func (d *Double) withFailure(op string, f func() reply) reply {
	d.mu.Lock()
	fl, ok := d.injected(op)
	d.mu.Unlock()
	if !ok {
		return f()
	}
	rep := armError(fl.status, fl.code, "injected by the test")
	if fl.retryAfter != "" {
		rep.header = map[string]string{"Retry-After": fl.retryAfter}
	}
	return rep
}

func (d *Double) openID(tenant string) reply {
	d.mu.Lock()
	ok := d.tenantOK[strings.ToLower(tenant)]
	d.mu.Unlock()
	if !ok {
		return oauthError(http.StatusBadRequest, "invalid_tenant", 90002, fmt.Sprintf("Tenant '%s' not found.", tenant))
	}
	base := d.URL + "/" + tenant
	return reply{status: http.StatusOK, body: map[string]any{
		"token_endpoint":                        base + "/oauth2/v2.0/token",
		"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
		"issuer":                                base + "/v2.0",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
	}}
}

// scopeOK reports whether scope asks for the Resource Manager audience:
// "<audience>/.default", which Entra ID takes with or without the
// audience's own trailing slash (the SDKs send "https://management.core.windows.net//.default").
func scopeOK(scope string) bool {
	base := strings.TrimSuffix(Audience, "/")
	for _, s := range strings.Fields(scope) {
		if s == base+"/.default" || s == base+"//.default" {
			return true
		}
	}
	return false
}

func (d *Double) token(r *http.Request, tenant string, call *Call) reply {
	if err := r.ParseForm(); err != nil {
		return oauthError(http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'grant_type'.")
	}
	f := r.PostForm
	if f.Get("grant_type") != "client_credentials" {
		return oauthError(http.StatusBadRequest, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.")
	}
	clientID := f.Get("client_id")
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.tenantOK[strings.ToLower(tenant)] {
		return oauthError(http.StatusBadRequest, "invalid_request", 90002, fmt.Sprintf("Tenant '%s' not found.", tenant))
	}
	if f.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		p, ok := d.feds[strings.ToLower(clientID)]
		switch {
		case !ok || p.tenant != strings.ToLower(tenant):
			return oauthError(http.StatusBadRequest, "unauthorized_client", 700016, fmt.Sprintf("Application with identifier '%s' was not found in the directory '%s'.", clientID, tenant))
		case f.Get("client_assertion") != p.secret:
			return oauthError(http.StatusBadRequest, "invalid_client", 700211, "No matching federated identity record found for presented assertion issuer.")
		case !scopeOK(f.Get("scope")):
			return oauthError(http.StatusBadRequest, "invalid_scope", 70011, fmt.Sprintf("The provided value for the input parameter 'scope' is not valid: %q.", f.Get("scope")))
		}
		call.Identity = "wi:" + clientID
		return reply{status: http.StatusOK, body: map[string]any{
			"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": d.newToken(call.Identity),
		}}
	}
	p, ok := d.sps[strings.ToLower(clientID)]
	if !ok || p.tenant != strings.ToLower(tenant) {
		return oauthError(http.StatusBadRequest, "unauthorized_client", 700016, fmt.Sprintf("Application with identifier '%s' was not found in the directory '%s'.", clientID, tenant))
	}
	if f.Get("client_secret") != p.secret {
		return oauthError(http.StatusUnauthorized, "invalid_client", 7000215, "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.")
	}
	if !scopeOK(f.Get("scope")) {
		return oauthError(http.StatusBadRequest, "invalid_scope", 70011, fmt.Sprintf("The provided value for the input parameter 'scope' is not valid: %q.", f.Get("scope")))
	}
	call.Identity = "sp:" + clientID
	return reply{status: http.StatusOK, body: map[string]any{
		"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": d.newToken(call.Identity),
	}}
}

func (d *Double) imds(r *http.Request, call *Call) reply {
	q := r.URL.Query()
	if r.Header.Get("Metadata") != "true" {
		return reply{status: http.StatusBadRequest, body: map[string]string{"error": "invalid_request", "error_description": "Required metadata header not specified"}}
	}
	if q.Get("api-version") == "" || !scopeOK(strings.TrimSuffix(q.Get("resource"), "/")+"/.default") {
		return reply{status: http.StatusBadRequest, body: map[string]string{"error": "invalid_request", "error_description": "Invalid resource or api-version"}}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	identity := d.system
	for _, k := range []string{"client_id", "msi_res_id", "mi_res_id", "object_id"} {
		if v := q.Get(k); v != "" {
			identity = d.mis[strings.ToLower(v)]
		}
	}
	if identity == "" {
		return reply{status: http.StatusBadRequest, body: map[string]string{"error": "invalid_request", "error_description": "Identity not found"}}
	}
	call.Identity = identity
	body := map[string]string{
		"access_token": d.newToken(identity), "expires_in": "3599", "expires_on": "4102444800",
		"resource": q.Get("resource"), "token_type": "Bearer",
	}
	if v := q.Get("client_id"); v != "" {
		body["client_id"] = v
	}
	return reply{status: http.StatusOK, body: body}
}

// arm serves Resource Manager paths: parts are the path's segments,
// starting with "subscriptions".
func (d *Double) arm(r *http.Request, parts []string, call *Call) reply {
	sub, rg := strings.ToLower(parts[1]), strings.ToLower(parts[3])
	rest := parts[6:]
	private := false
	switch {
	case len(rest) >= 1 && strings.EqualFold(rest[0], "dnsZones"):
	case len(rest) >= 1 && strings.EqualFold(rest[0], "privateDnsZones"):
		private = true
	default:
		call.Op = r.Method + " " + r.URL.Path
		return armError(http.StatusBadRequest, "InvalidResourceType", "The resource type could not be found in the namespace 'Microsoft.Network'.")
	}
	call.Private = private
	switch {
	case len(rest) == 1 && r.Method == http.MethodGet:
		call.Op = "zones.list"
	case len(rest) == 4 && strings.EqualFold(rest[2], "TXT"):
		call.Zone, call.Name = strings.ToLower(rest[1]), rest[3]
		switch r.Method {
		case http.MethodGet:
			call.Op = "recordsets.get"
		case http.MethodPut:
			call.Op = "recordsets.put"
		case http.MethodDelete:
			call.Op = "recordsets.delete"
		}
	}
	if call.Op == "" {
		call.Op = r.Method + " " + r.URL.Path
		return armError(http.StatusBadRequest, "BadRequest", "The test double serves only zone lists and TXT record sets.")
	}
	want := PublicAPIVersion
	if private {
		want = PrivateAPIVersion
	}
	if v := r.URL.Query().Get("api-version"); v != want {
		return armError(http.StatusBadRequest, "NoRegisteredProviderFound", fmt.Sprintf("No registered resource provider found for location 'global' and API version '%s'. The supported api-versions are '%s'.", v, want))
	}
	d.mu.Lock()
	identity, ok := d.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	d.mu.Unlock()
	switch {
	case r.Header.Get("Authorization") == "":
		return armError(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing.")
	case !ok:
		return armError(http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid.")
	}
	call.Identity = identity
	if f := d.withFailure(call.Op, func() reply { return reply{} }); f.status != 0 {
		return f
	}
	if (call.Op == "recordsets.put" || call.Op == "recordsets.delete") && d.BeforeWrite != nil {
		d.BeforeWrite(call.Zone, call.Name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	scope := "/" + strings.Join(parts, "/")
	if d.denied[identity] {
		return armError(http.StatusForbidden, "AuthorizationFailed", fmt.Sprintf("The client '%s' does not have authorization to perform action 'Microsoft.Network/%s/TXT/%s' over scope '%s' or the scope is invalid.", identity, rest[0], strings.ToLower(r.Method), scope))
	}
	groups, ok := d.subs[sub]
	if !ok {
		return armError(http.StatusNotFound, "SubscriptionNotFound", fmt.Sprintf("The subscription '%s' could not be found.", parts[1]))
	}
	if !groups[rg] {
		return armError(http.StatusNotFound, "ResourceGroupNotFound", fmt.Sprintf("Resource group '%s' could not be found.", parts[3]))
	}
	if call.Op == "zones.list" {
		return d.listZones(r, sub, rg, private)
	}
	var z *zone
	for _, c := range d.zones {
		if c.sub == sub && c.rg == rg && c.name == call.Zone && c.private == private {
			z = c
		}
	}
	if z == nil {
		return armError(http.StatusNotFound, "ParentResourceNotFound", fmt.Sprintf("Can not perform requested operation on nested resource. Parent resource '%s' not found.", rest[1]))
	}
	switch call.Op {
	case "recordsets.get":
		s := z.sets[strings.ToLower(call.Name)]
		if s == nil {
			return armError(http.StatusNotFound, "NotFound", fmt.Sprintf("The resource record '%s' does not exist in resource group '%s' of subscription '%s'.", call.Name, parts[3], parts[1]))
		}
		return reply{status: http.StatusOK, body: d.setJSON(z, s, parts), header: map[string]string{"ETag": s.ETag}}
	case "recordsets.put":
		return d.put(r, z, call.Name, parts)
	default:
		return d.delete(r, z, call.Name)
	}
}

func (d *Double) listZones(r *http.Request, sub, rg string, private bool) reply {
	var all []*zone
	for _, z := range d.zones {
		if z.sub == sub && z.rg == rg && z.private == private {
			all = append(all, z)
		}
	}
	start := 0
	if s := r.URL.Query().Get("$skiptoken"); s != "" {
		start, _ = strconv.Atoi(s)
	}
	end := len(all)
	if d.PageSize > 0 && start+d.PageSize < end {
		end = start + d.PageSize
	}
	var items []any
	for _, z := range all[min(start, len(all)):end] {
		typ, props := "Microsoft.Network/dnszones", map[string]any{
			"maxNumberOfRecordSets": 10000, "numberOfRecordSets": len(z.sets) + 2, "zoneType": "Public",
			"nameServers": []string{"ns1-01.azure-dns.test.", "ns2-01.azure-dns.test."},
		}
		if private {
			typ, props = "Microsoft.Network/privateDnsZones", map[string]any{
				"maxNumberOfRecordSets": 25000, "numberOfRecordSets": len(z.sets) + 1, "provisioningState": "Succeeded",
			}
		}
		items = append(items, map[string]any{
			"id":   fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/%s/%s", sub, rg, typ, z.name),
			"name": z.name, "type": typ, "location": "global", "etag": "zone-etag", "properties": props,
		})
	}
	body := map[string]any{"value": items}
	if end < len(all) {
		u := *r.URL
		q := u.Query()
		q.Set("$skiptoken", strconv.Itoa(end))
		u.RawQuery = q.Encode()
		body["nextLink"] = d.URL + u.RequestURI()
	}
	return reply{status: http.StatusOK, body: body}
}

// setJSON renders a record set as the API does.
func (d *Double) setJSON(z *zone, s *RecordSet, parts []string) map[string]any {
	fqdn := z.name + "."
	if s.Name != "@" {
		fqdn = s.Name + "." + fqdn
	}
	var recs []map[string]any
	for _, r := range s.Records {
		recs = append(recs, map[string]any{"value": r})
	}
	id := "/" + strings.Join(parts[:7], "/") + "/" + z.name + "/TXT/" + s.Name
	if z.private {
		return map[string]any{"id": id, "name": s.Name, "type": "Microsoft.Network/privateDnsZones/TXT", "etag": s.ETag,
			"properties": map[string]any{"fqdn": fqdn, "ttl": s.TTL, "txtRecords": recs, "isAutoRegistered": false}}
	}
	return map[string]any{"id": id, "name": s.Name, "type": "Microsoft.Network/dnszones/TXT", "etag": s.ETag,
		"properties": map[string]any{"fqdn": fqdn, "TTL": s.TTL, "TXTRecords": recs, "provisioningState": "Succeeded"}}
}

// precondition checks If-Match and If-None-Match against cur (nil: no
// set); d.mu is held.
func precondition(r *http.Request, cur *RecordSet) (reply, bool) {
	fail := func(h, v string) (reply, bool) {
		etag := ""
		if cur != nil {
			etag = cur.ETag
		}
		return armError(http.StatusPreconditionFailed, "PreconditionFailed", fmt.Sprintf("The condition '%s' in the %s header was not satisfied. The current was '%s'.", v, h, etag)), false
	}
	if v := r.Header.Get("If-Match"); v != "" && v != "*" && (cur == nil || v != cur.ETag) {
		return fail("If-Match", v)
	}
	if v := r.Header.Get("If-Match"); v == "*" && cur == nil {
		return fail("If-Match", v)
	}
	if v := r.Header.Get("If-None-Match"); v == "*" && cur != nil {
		return fail("If-None-Match", v)
	}
	return reply{}, true
}

// maxTXTString is the longest TXT string the double stores.
const maxTXTString = 1024

// validName reports whether a relative record set name is acceptable.
func validName(name string) bool {
	if name == "@" {
		return true
	}
	if name == "" || len(name) > 253 {
		return false
	}
	for _, l := range strings.Split(name, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
	}
	return true
}

func (d *Double) put(r *http.Request, z *zone, name string, parts []string) reply {
	if !validName(name) {
		return armError(http.StatusBadRequest, "BadRequest", fmt.Sprintf("The record set name '%s' is invalid.", name))
	}
	var in struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &in); err != nil || in.Properties == nil {
		return armError(http.StatusBadRequest, "BadRequest", "The request body is not a record set.")
	}
	ttlKey, recKey := "TTL", "TXTRecords"
	if z.private {
		ttlKey, recKey = "ttl", "txtRecords"
	}
	var ttl int64
	if raw, ok := in.Properties[ttlKey]; ok {
		if err := json.Unmarshal(raw, &ttl); err != nil || ttl < 0 || ttl > 2147483647 {
			return armError(http.StatusBadRequest, "BadRequest", "The TTL is invalid.")
		}
	} else {
		return armError(http.StatusBadRequest, "BadRequest", fmt.Sprintf("The property '%s' is required.", ttlKey))
	}
	var recs []struct {
		Value []string `json:"value"`
	}
	if err := json.Unmarshal(in.Properties[recKey], &recs); err != nil || len(recs) == 0 {
		return armError(http.StatusBadRequest, "BadRequest", fmt.Sprintf("A TXT record set needs records in '%s'.", recKey))
	}
	s := &RecordSet{Name: name, TTL: ttl}
	for _, rec := range recs {
		if len(rec.Value) == 0 {
			return armError(http.StatusBadRequest, "BadRequest", "A TXT record needs at least one string.")
		}
		for _, v := range rec.Value {
			if len(v) > maxTXTString {
				return armError(http.StatusBadRequest, "BadRequest", fmt.Sprintf("A TXT string is longer than %d characters.", maxTXTString))
			}
		}
		s.Records = append(s.Records, slices.Clone(rec.Value))
	}
	key := strings.ToLower(name)
	cur := z.sets[key]
	if rep, ok := precondition(r, cur); !ok {
		return rep
	}
	s.ETag = d.etag()
	z.sets[key] = s
	d.notify(z, s.Name, s.Texts())
	code := http.StatusOK
	if cur == nil {
		code = http.StatusCreated
	}
	return reply{status: code, body: d.setJSON(z, s, parts), header: map[string]string{"ETag": s.ETag}}
}

func (d *Double) delete(r *http.Request, z *zone, name string) reply {
	key := strings.ToLower(name)
	cur := z.sets[key]
	if rep, ok := precondition(r, cur); !ok {
		return rep
	}
	if cur == nil {
		return reply{status: http.StatusNoContent}
	}
	delete(z.sets, key)
	d.notify(z, cur.Name, nil)
	return reply{status: http.StatusOK}
}

// notify calls OnTXT; d.mu is held.
func (d *Double) notify(z *zone, name string, texts []string) {
	if d.OnTXT == nil {
		return
	}
	fqdn := z.name + "."
	if name != "@" {
		fqdn = strings.ToLower(name) + "." + fqdn
	}
	d.OnTXT(TXTUpdate{Private: z.private, Zone: z.name, Name: fqdn, Texts: texts})
}
