// Package route53test holds a HAND-WRITTEN TEST DOUBLE of Amazon Route 53
// (and of AWS STS's AssumeRole) for the tests of adapters/dns/route53 and
// for end-to-end tests that solve DNS-01 challenges through the route53
// provider (tests/awse2e).
//
// HAND-WRITTEN TEST DOUBLE — NOT AMAZON ROUTE 53, NOT AWS STS.
//
// No Route 53 or STS emulator can be installed on these machines, so the
// tests run against Double: one httptest.Server that speaks
//
//   - Route 53's REST/XML protocol (paths under /2013-04-01/, XML bodies in
//     the 2013-04-01 namespace, errors as <ErrorResponse> or Route 53's own
//     <InvalidChangeBatch>, HTTP 400/404) for CreateHostedZone,
//     ListHostedZonesByName, ListResourceRecordSets, ChangeResourceRecordSets
//     and GetChange, with the behaviour AWS documents for them: zones listed
//     in reversed-label order from dnsname, record sets in reversed-label
//     then type order from name/type, change batches applied atomically
//     (CREATE of an existing set, DELETE of a missing set or with values
//     or TTL that differ, and names outside the zone are InvalidChangeBatch
//     with Route 53's messages), changes PENDING until the test syncs them
//     (SyncAll, or SyncAfter reads; then INSYNC), NoSuchHostedZone / NoSuchChange for unknown IDs,
//     character-strings longer than 255 octets refused;
//   - STS's query protocol (POST / with Action=AssumeRole) answering
//     temporary credentials per role, or AccessDenied for roles the test
//     refuses.
//
// Every call records the access key ID it was signed with (from the SigV4
// Authorization header), so tests can tell which credentials were used. It
// is not a faithful emulator (no signature checks, no pagination beyond
// maxitems, no alias/weighted records, no VPC checks, no DNS service of its
// own); when AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_ROUTE_53) is set, the
// route53 tests run against that endpoint (LocalStack) instead, and the
// assertions that need the double's bookkeeping are made only on the
// double.
//
// For end-to-end tests it can stand in for Route 53's propagation:
// OnTXT receives every TXT set a change batch wrote or deleted (e.g. to
// serve it from Pebble's challtestsrv, the DNS an ACME server in the test
// asks), and SyncAfter makes changes go from PENDING to INSYNC by
// themselves after they were read PENDING a number of times.
package route53test

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const r53NS = "https://route53.amazonaws.com/doc/2013-04-01/"

// rrset is one record set of the double.
type rrset struct {
	name, typ string
	ttl       int64
	values    []string
}

// hostedZone is one hosted zone of the double.
type hostedZone struct {
	id, name string
	private  bool
	sets     map[string]*rrset // by name + " " + type
}

// Call is one call the double answered: the operation ("GetChange",
// "AssumeRole", ...) and the access key ID that signed it.
type Call struct {
	Op, AccessKey string
}

// Change is one change of an applied change batch.
type Change struct {
	// ID is the batch's change ID (without "/change/").
	ID string
	// ZoneID is the hosted zone's ID (without "/hostedzone/").
	ZoneID string
	// Action is CREATE, UPSERT or DELETE.
	Action string
	// Name (canonical, with the trailing dot), Type, TTL and Values (as
	// sent: TXT values quoted) of the record set.
	Name, Type string
	TTL        int64
	Values     []string
}

// RecordSet is a record set the double holds.
type RecordSet struct {
	Name, Type string
	TTL        int64
	// Values as stored (TXT values quoted, as Route 53 returns them).
	Values []string
}

// TXTUpdate is what a change batch did to one TXT set, for OnTXT.
type TXTUpdate struct {
	ZoneID string
	// Name is the set's canonical name ("_acme-challenge.example.com.").
	Name string
	// Texts are the set's values now, decoded (quotes and escapes
	// resolved, character-strings joined); empty when it was deleted.
	Texts []string
}

// Double is a running test double. It is safe for concurrent use.
type Double struct {
	// URL is the endpoint (awscfg.ForEndpoint(d.URL, ...), or
	// AWS_ENDPOINT_URL_ROUTE_53 for clients built from the default chain).
	URL string
	// OnTXT, when set, is called for every TXT set an applied change batch
	// wrote or deleted, in the order of the batches, with the double's
	// lock held (it must not call the double). Set it before any call.
	OnTXT func(TXTUpdate)
	// SyncAfter, when > 0, makes a change INSYNC once GetChange has
	// answered PENDING for it SyncAfter times; 0 keeps changes PENDING
	// until SyncAll. Set it before any call.
	SyncAfter int

	mu      sync.Mutex
	zones   map[string]*hostedZone // by ID
	changes map[string]string      // ID -> PENDING | INSYNC
	pending map[string]int         // ID -> PENDING answers to GetChange
	answers map[string][]string    // ID -> statuses GetChange answered
	applied []Change
	seq     int
	calls   []Call
	// deniedRoles answer AccessDenied to AssumeRole.
	deniedRoles map[string]bool
	// assumed records AssumeRole calls: role ARN + " " + session name.
	assumed []string
	// failNext makes the next n Route 53 calls fail with code (HTTP status).
	failNext   int
	failCode   string
	failStatus int
}

// New starts a double for t (stopped when t ends).
func New(t testing.TB) *Double {
	t.Helper()
	f := &Double{zones: map[string]*hostedZone{}, changes: map[string]string{}, pending: map[string]int{},
		answers: map[string][]string{}, deniedRoles: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// AddZone creates a hosted zone as CreateHostedZone would (private: a
// private zone, which zone discovery must skip) and returns its ID
// without "/hostedzone/".
func (f *Double) AddZone(name string, private bool) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addZone(name, private).id
}

func (f *Double) addZone(name string, private bool) *hostedZone {
	f.seq++
	z := &hostedZone{id: fmt.Sprintf("Z%020d", f.seq), name: canonical(name), private: private, sets: map[string]*rrset{}}
	f.zones[z.id] = z
	for _, typ := range []string{"SOA", "NS"} {
		z.sets[z.name+" "+typ] = &rrset{name: z.name, typ: typ, ttl: 900, values: []string{"ns-1.awsdns.test."}}
	}
	return z
}

// SyncAll makes every change INSYNC.
func (f *Double) SyncAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.changes {
		f.changes[id] = "INSYNC"
	}
}

// FailWith makes the next n Route 53 calls (CreateHostedZone excepted)
// fail with code and HTTP status; n = 0 stops it.
func (f *Double) FailWith(n int, code string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext, f.failCode, f.failStatus = n, code, status
}

// DenyRole makes AssumeRole of role answer AccessDenied.
func (f *Double) DenyRole(role string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deniedRoles[role] = true
}

// Assumed returns the AssumeRole calls so far, as "role-ARN session-name".
func (f *Double) Assumed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.assumed)
}

// Calls returns the calls answered so far.
func (f *Double) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Count returns how many calls of op were answered.
func (f *Double) Count(op string) int {
	n := 0
	for _, c := range f.Calls() {
		if c.Op == op {
			n++
		}
	}
	return n
}

// Changes returns the changes of every applied change batch, in order
// (refused batches are not listed).
func (f *Double) Changes() []Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.applied)
	for i := range out {
		out[i].Values = slices.Clone(out[i].Values)
	}
	return out
}

// StatusAnswers returns, per change ID, the statuses GetChange answered
// for it, in order ("PENDING", ..., "INSYNC").
func (f *Double) StatusAnswers() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for id, a := range f.answers {
		out[id] = slices.Clone(a)
	}
	return out
}

// RecordSets returns the record sets of zone zoneID (nil for an unknown
// zone), sorted by name and type.
func (f *Double) RecordSets(zoneID string) []RecordSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	z := f.zones[zoneID]
	if z == nil {
		return nil
	}
	var out []RecordSet
	for _, s := range z.sets {
		out = append(out, RecordSet{Name: s.name, Type: s.typ, TTL: s.ttl, Values: slices.Clone(s.values)})
	}
	slices.SortFunc(out, func(a, b RecordSet) int {
		return strings.Compare(reversed(a.Name)+" "+a.Type, reversed(b.Name)+" "+b.Type)
	})
	return out
}

// ZoneIDs returns the IDs of every hosted zone, sorted.
func (f *Double) ZoneIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.zones {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

var credentialRe = regexp.MustCompile(`Credential=([^/]+)/`)

func (f *Double) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := ""
	if m := credentialRe.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		key = m[1]
	}
	if r.Method == http.MethodPost && r.URL.Path == "/" {
		f.serveSTS(w, r, key)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/2013-04-01/")
	if !ok {
		http.Error(w, "not a Route 53 or STS call", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	var op string
	switch {
	case r.Method == http.MethodPost && len(parts) == 1 && parts[0] == "hostedzone":
		op = "CreateHostedZone"
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "hostedzonesbyname":
		op = "ListHostedZonesByName"
	case len(parts) == 3 && parts[0] == "hostedzone" && parts[2] == "rrset" && r.Method == http.MethodGet:
		op = "ListResourceRecordSets"
	case len(parts) == 3 && parts[0] == "hostedzone" && parts[2] == "rrset" && r.Method == http.MethodPost:
		op = "ChangeResourceRecordSets"
	case len(parts) == 2 && parts[0] == "change" && r.Method == http.MethodGet:
		op = "GetChange"
	default:
		writeR53Error(w, http.StatusBadRequest, "InvalidInput", "the test double does not implement "+r.Method+" "+r.URL.Path)
		return
	}
	f.calls = append(f.calls, Call{Op: op, AccessKey: key})
	if f.failNext > 0 && op != "CreateHostedZone" {
		f.failNext--
		writeR53Error(w, f.failStatus, f.failCode, "injected by the test double")
		return
	}
	q := r.URL.Query()
	switch op {
	case "CreateHostedZone":
		f.createHostedZone(w, r)
	case "ListHostedZonesByName":
		f.listHostedZonesByName(w, q)
	case "ListResourceRecordSets":
		f.listResourceRecordSets(w, parts[1], q)
	case "ChangeResourceRecordSets":
		f.changeResourceRecordSets(w, r, parts[1])
	case "GetChange":
		f.getChange(w, parts[1])
	}
}

// reversed is a name's sort key: labels reversed ("com.example.www").
func reversed(name string) string {
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(name), "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}

func canonical(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

type xmlZone struct {
	ID                     string `xml:"Id"`
	Name                   string `xml:"Name"`
	CallerReference        string `xml:"CallerReference"`
	PrivateZone            bool   `xml:"Config>PrivateZone"`
	ResourceRecordSetCount int    `xml:"ResourceRecordSetCount"`
}

func (z *hostedZone) xml() xmlZone {
	return xmlZone{ID: "/hostedzone/" + z.id, Name: z.name, CallerReference: "ref-" + z.id, PrivateZone: z.private, ResourceRecordSetCount: len(z.sets)}
}

func (f *Double) createHostedZone(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name string `xml:"Name"`
		VPC  *struct {
			VPCId string `xml:"VPCId"`
		} `xml:"VPC"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" {
		writeR53Error(w, http.StatusBadRequest, "InvalidInput", fmt.Sprintf("bad CreateHostedZoneRequest: %v", err))
		return
	}
	z := f.addZone(in.Name, in.VPC != nil)
	changeID := f.newChange()
	writeXML(w, http.StatusCreated, struct {
		XMLName    xml.Name `xml:"CreateHostedZoneResponse"`
		NS         string   `xml:"xmlns,attr"`
		HostedZone xmlZone  `xml:"HostedZone"`
		ChangeInfo xmlChangeInfo
		NameServer []string `xml:"DelegationSet>NameServers>NameServer"`
	}{NS: r53NS, HostedZone: z.xml(), ChangeInfo: f.changeInfo(changeID), NameServer: []string{"ns-1.awsdns.test"}})
}

func (f *Double) listHostedZonesByName(w http.ResponseWriter, q url.Values) {
	var zones []*hostedZone
	for _, z := range f.zones {
		zones = append(zones, z)
	}
	slices.SortFunc(zones, func(a, b *hostedZone) int {
		if c := strings.Compare(reversed(a.name), reversed(b.name)); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	maxItems := 100
	if v, err := strconv.Atoi(q.Get("maxitems")); err == nil && v > 0 {
		maxItems = v
	}
	start := ""
	if n := q.Get("dnsname"); n != "" {
		start = reversed(n)
	}
	var out []xmlZone
	truncated := false
	for _, z := range zones {
		if reversed(z.name) < start {
			continue
		}
		if len(out) == maxItems {
			truncated = true
			break
		}
		out = append(out, z.xml())
	}
	writeXML(w, http.StatusOK, struct {
		XMLName     xml.Name  `xml:"ListHostedZonesByNameResponse"`
		NS          string    `xml:"xmlns,attr"`
		HostedZones []xmlZone `xml:"HostedZones>HostedZone"`
		DNSName     string    `xml:"DNSName,omitempty"`
		IsTruncated bool      `xml:"IsTruncated"`
		MaxItems    int       `xml:"MaxItems"`
	}{NS: r53NS, HostedZones: out, DNSName: q.Get("dnsname"), IsTruncated: truncated, MaxItems: maxItems})
}

type xmlRRSet struct {
	Name    string  `xml:"Name"`
	Type    string  `xml:"Type"`
	TTL     int64   `xml:"TTL"`
	Records []xmlRR `xml:"ResourceRecords>ResourceRecord"`
}

type xmlRR struct {
	Value string `xml:"Value"`
}

func (s xmlRRSet) values() []string {
	out := make([]string, 0, len(s.Records))
	for _, r := range s.Records {
		out = append(out, r.Value)
	}
	return out
}

func toXMLRRs(values []string) []xmlRR {
	out := make([]xmlRR, 0, len(values))
	for _, v := range values {
		out = append(out, xmlRR{Value: v})
	}
	return out
}

func setKey(s *rrset) string { return reversed(s.name) + " " + s.typ }

func (f *Double) listResourceRecordSets(w http.ResponseWriter, zoneID string, q url.Values) {
	z := f.zones[zoneID]
	if z == nil {
		writeR53Error(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+zoneID)
		return
	}
	var sets []*rrset
	for _, s := range z.sets {
		sets = append(sets, s)
	}
	slices.SortFunc(sets, func(a, b *rrset) int { return strings.Compare(setKey(a), setKey(b)) })
	maxItems := 300
	if v, err := strconv.Atoi(q.Get("maxitems")); err == nil && v > 0 {
		maxItems = v
	}
	start := ""
	if n := q.Get("name"); n != "" {
		start = reversed(n) + " " + q.Get("type")
	}
	var out []xmlRRSet
	truncated := false
	for _, s := range sets {
		if setKey(s) < start {
			continue
		}
		if len(out) == maxItems {
			truncated = true
			break
		}
		out = append(out, xmlRRSet{Name: s.name, Type: s.typ, TTL: s.ttl, Records: toXMLRRs(s.values)})
	}
	writeXML(w, http.StatusOK, struct {
		XMLName     xml.Name   `xml:"ListResourceRecordSetsResponse"`
		NS          string     `xml:"xmlns,attr"`
		Sets        []xmlRRSet `xml:"ResourceRecordSets>ResourceRecordSet"`
		IsTruncated bool       `xml:"IsTruncated"`
		MaxItems    int        `xml:"MaxItems"`
	}{NS: r53NS, Sets: out, IsTruncated: truncated, MaxItems: maxItems})
}

// txtStringRe matches one quoted character-string of a TXT value.
var txtStringRe = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

func (f *Double) changeResourceRecordSets(w http.ResponseWriter, r *http.Request, zoneID string) {
	z := f.zones[zoneID]
	if z == nil {
		writeR53Error(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+zoneID)
		return
	}
	var in struct {
		Changes []struct {
			Action string   `xml:"Action"`
			Set    xmlRRSet `xml:"ResourceRecordSet"`
		} `xml:"ChangeBatch>Changes>Change"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Changes) == 0 {
		writeR53Error(w, http.StatusBadRequest, "InvalidInput", fmt.Sprintf("bad ChangeResourceRecordSetsRequest: %v", err))
		return
	}
	// Validate the whole batch on a copy, then apply it (atomic).
	next := map[string]*rrset{}
	for k, v := range z.sets {
		next[k] = v
	}
	var problems []string
	for _, c := range in.Changes {
		s := c.Set
		name := canonical(s.Name)
		desc := fmt.Sprintf("[name='%s', type='%s']", name, s.Type)
		if name != z.name && !strings.HasSuffix(name, "."+z.name) {
			problems = append(problems, fmt.Sprintf("RRSet with DNS name %s is not permitted in zone %s", name, z.name))
			continue
		}
		values := s.values()
		if len(values) == 0 {
			writeR53Error(w, http.StatusBadRequest, "InvalidInput", "Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], but found none in Change with "+desc)
			return
		}
		if s.Type == "TXT" {
			for _, v := range values {
				for _, m := range txtStringRe.FindAllStringSubmatch(v, -1) {
					if len(decodeTXT(`"`+m[1]+`"`)) > 255 {
						problems = append(problems, fmt.Sprintf("Invalid Resource Record: 'FATAL problem: TXTRDATATooLong (Value is too long) encountered with '%s''", v))
					}
				}
				if !strings.HasPrefix(v, `"`) {
					problems = append(problems, fmt.Sprintf("Invalid Resource Record: 'FATAL problem: InvalidCharacterString (Value should be enclosed in quotation marks) encountered with '%s''", v))
				}
			}
		}
		k := name + " " + s.Type
		cur := next[k]
		set := &rrset{name: name, typ: s.Type, ttl: s.TTL, values: values}
		switch c.Action {
		case "CREATE":
			if cur != nil {
				problems = append(problems, fmt.Sprintf("Tried to create resource record set %s but it already exists", desc))
				continue
			}
			next[k] = set
		case "UPSERT":
			next[k] = set
		case "DELETE":
			switch {
			case cur == nil:
				problems = append(problems, fmt.Sprintf("Tried to delete resource record set %s but it was not found", desc))
			case cur.ttl != s.TTL || !sameValues(cur.values, values):
				problems = append(problems, fmt.Sprintf("Tried to delete resource record set %s but the values provided do not match the current values", desc))
			default:
				delete(next, k)
			}
		default:
			writeR53Error(w, http.StatusBadRequest, "InvalidInput", "unknown action "+c.Action)
			return
		}
	}
	if len(problems) > 0 {
		writeXML(w, http.StatusBadRequest, struct {
			XMLName  xml.Name `xml:"InvalidChangeBatch"`
			NS       string   `xml:"xmlns,attr"`
			Messages []string `xml:"Messages>Message"`
		}{NS: r53NS, Messages: problems})
		return
	}
	z.sets = next
	id := f.newChange()
	for _, c := range in.Changes {
		f.applied = append(f.applied, Change{ID: id, ZoneID: z.id, Action: c.Action, Name: canonical(c.Set.Name),
			Type: c.Set.Type, TTL: c.Set.TTL, Values: c.Set.values()})
	}
	if f.OnTXT != nil {
		for _, c := range in.Changes {
			if c.Set.Type != "TXT" {
				continue
			}
			u := TXTUpdate{ZoneID: z.id, Name: canonical(c.Set.Name)}
			if s := next[u.Name+" TXT"]; s != nil {
				for _, v := range s.values {
					u.Texts = append(u.Texts, decodeTXT(v))
				}
			}
			f.OnTXT(u)
		}
	}
	writeXML(w, http.StatusOK, struct {
		XMLName    xml.Name `xml:"ChangeResourceRecordSetsResponse"`
		NS         string   `xml:"xmlns,attr"`
		ChangeInfo xmlChangeInfo
	}{NS: r53NS, ChangeInfo: f.changeInfo(id)})
}

func sameValues(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

type xmlChangeInfo struct {
	XMLName     xml.Name `xml:"ChangeInfo"`
	ID          string   `xml:"Id"`
	Status      string   `xml:"Status"`
	SubmittedAt string   `xml:"SubmittedAt"`
}

func (f *Double) newChange() string {
	f.seq++
	id := fmt.Sprintf("C%020d", f.seq)
	f.changes[id] = "PENDING"
	return id
}

func (f *Double) changeInfo(id string) xmlChangeInfo {
	return xmlChangeInfo{ID: "/change/" + id, Status: f.changes[id], SubmittedAt: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).Format(time.RFC3339)}
}

func (f *Double) getChange(w http.ResponseWriter, id string) {
	status, ok := f.changes[id]
	if !ok {
		writeR53Error(w, http.StatusNotFound, "NoSuchChange", "Could not find resource with ID: "+id)
		return
	}
	if status == "PENDING" && f.SyncAfter > 0 {
		// This answer is PENDING; the change is INSYNC once SyncAfter
		// answers said so.
		f.pending[id]++
		defer func() {
			if f.pending[id] >= f.SyncAfter {
				f.changes[id] = "INSYNC"
			}
		}()
	}
	f.answers[id] = append(f.answers[id], status)
	writeXML(w, http.StatusOK, struct {
		XMLName    xml.Name `xml:"GetChangeResponse"`
		NS         string   `xml:"xmlns,attr"`
		ChangeInfo xmlChangeInfo
	}{NS: r53NS, ChangeInfo: f.changeInfo(id)})
}

// serveSTS answers STS's query protocol (AssumeRole only).
func (f *Double) serveSTS(w http.ResponseWriter, r *http.Request, key string) {
	if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "AssumeRole" {
		writeSTSError(w, http.StatusBadRequest, "InvalidAction", "the test double implements only AssumeRole")
		return
	}
	role, session := r.Form.Get("RoleArn"), r.Form.Get("RoleSessionName")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Op: "AssumeRole", AccessKey: key})
	f.assumed = append(f.assumed, role+" "+session)
	if f.deniedRoles[role] {
		writeSTSError(w, http.StatusForbidden, "AccessDenied", fmt.Sprintf("User: arn:aws:iam::000000000000:user/%s is not authorized to perform: sts:AssumeRole on resource: %s", key, role))
		return
	}
	f.seq++
	writeXML(w, http.StatusOK, struct {
		XMLName     xml.Name `xml:"AssumeRoleResponse"`
		NS          string   `xml:"xmlns,attr"`
		AccessKeyID string   `xml:"AssumeRoleResult>Credentials>AccessKeyId"`
		Secret      string   `xml:"AssumeRoleResult>Credentials>SecretAccessKey"`
		Token       string   `xml:"AssumeRoleResult>Credentials>SessionToken"`
		Expiration  string   `xml:"AssumeRoleResult>Credentials>Expiration"`
		ARN         string   `xml:"AssumeRoleResult>AssumedRoleUser>Arn"`
		RoleID      string   `xml:"AssumeRoleResult>AssumedRoleUser>AssumedRoleId"`
		RequestID   string   `xml:"ResponseMetadata>RequestId"`
	}{
		NS: "https://sts.amazonaws.com/doc/2011-06-15/", AccessKeyID: fmt.Sprintf("ASIAASSUMED%05d", f.seq), Secret: "assumed-secret",
		Token: "assumed-token", Expiration: time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		ARN: role + "/" + session, RoleID: "AROAFAKE:" + session, RequestID: "req-" + strconv.Itoa(f.seq),
	})
}

func writeXML(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(v)
}

func writeR53Error(w http.ResponseWriter, status int, code, msg string) {
	writeXML(w, status, struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		NS        string   `xml:"xmlns,attr"`
		Type      string   `xml:"Error>Type"`
		Code      string   `xml:"Error>Code"`
		Message   string   `xml:"Error>Message"`
		RequestID string   `xml:"RequestId"`
	}{NS: r53NS, Type: "Sender", Code: code, Message: msg, RequestID: "fake-request"})
}

func writeSTSError(w http.ResponseWriter, status int, code, msg string) {
	writeXML(w, status, struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		NS        string   `xml:"xmlns,attr"`
		Type      string   `xml:"Error>Type"`
		Code      string   `xml:"Error>Code"`
		Message   string   `xml:"Error>Message"`
		RequestID string   `xml:"RequestId"`
	}{NS: "https://sts.amazonaws.com/doc/2011-06-15/", Type: "Sender", Code: code, Message: msg, RequestID: "fake-request"})
}

// decodeTXT returns the text of a Route 53 TXT value: its character-strings
// (quoted or not) concatenated, escapes (\X, \DDD) resolved. It is the
// double's own reading of the format (the provider's EncodeTXT is what is
// under test).
func decodeTXT(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); {
		c := v[i]
		if c == ' ' || c == '\t' {
			i++
			continue
		}
		quoted := c == '"'
		if quoted {
			i++
		}
		for i < len(v) {
			c = v[i]
			if quoted && c == '"' {
				i++
				break
			}
			if !quoted && (c == ' ' || c == '\t') {
				break
			}
			switch {
			case c == '\\' && i+3 < len(v) && isDigit(v[i+1]) && isDigit(v[i+2]) && isDigit(v[i+3]):
				b.WriteByte((v[i+1]-'0')*64 + (v[i+2]-'0')*8 + (v[i+3] - '0'))
				i += 4
			case c == '\\' && i+1 < len(v):
				b.WriteByte(v[i+1])
				i += 2
			default:
				b.WriteByte(c)
				i++
			}
		}
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
