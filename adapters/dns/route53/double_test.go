package route53

// HAND-WRITTEN TEST DOUBLE — NOT AMAZON ROUTE 53, NOT AWS STS.
//
// No Route 53 or STS emulator can be installed on these machines, so the
// tests run against fakeAWS: one httptest.Server that speaks
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
//     (then INSYNC), NoSuchHostedZone / NoSuchChange for unknown IDs,
//     character-strings longer than 255 octets refused;
//   - STS's query protocol (POST / with Action=AssumeRole) answering
//     temporary credentials per role, or AccessDenied for roles the test
//     refuses.
//
// Every call records the access key ID it was signed with (from the SigV4
// Authorization header), so tests can tell which credentials were used. It
// is not a faithful emulator (no signature checks, no pagination beyond
// maxitems, no alias/weighted records, no VPC checks); when
// AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_ROUTE_53) is set, the tests run
// against that endpoint (LocalStack) instead, and the assertions that need
// the double's bookkeeping are made only on the double.

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

// fakeRRSet is one record set of the double.
type fakeRRSet struct {
	name, typ string
	ttl       int64
	values    []string
}

// fakeZone is one hosted zone of the double.
type fakeZone struct {
	id, name string
	private  bool
	sets     map[string]*fakeRRSet // by name + " " + type
}

// fakeCall is one call the double answered.
type fakeCall struct {
	op, accessKey string
}

// fakeAWS is the double's state.
type fakeAWS struct {
	mu      sync.Mutex
	zones   map[string]*fakeZone // by ID
	changes map[string]string    // ID -> PENDING | INSYNC
	seq     int
	calls   []fakeCall
	// deniedRoles answer AccessDenied to AssumeRole.
	deniedRoles map[string]bool
	// assumed records AssumeRole calls: role ARN + " " + session name.
	assumed []string
	// failNext makes the next n Route 53 calls fail with code (HTTP status).
	failNext   int
	failCode   string
	failStatus int
}

// newFakeAWS starts the double for t and returns it with its endpoint.
func newFakeAWS(t *testing.T) (*fakeAWS, string) {
	t.Helper()
	f := &fakeAWS{zones: map[string]*fakeZone{}, changes: map[string]string{}, deniedRoles: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// syncAll makes every change INSYNC.
func (f *fakeAWS) syncAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.changes {
		f.changes[id] = "INSYNC"
	}
}

// failWith makes the next n Route 53 calls fail with code and HTTP status.
func (f *fakeAWS) failWith(n int, code string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext, f.failCode, f.failStatus = n, code, status
}

// callLog returns the calls answered so far.
func (f *fakeAWS) callLog() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// count returns how many calls of op were answered.
func (f *fakeAWS) count(op string) int {
	n := 0
	for _, c := range f.callLog() {
		if c.op == op {
			n++
		}
	}
	return n
}

var credentialRe = regexp.MustCompile(`Credential=([^/]+)/`)

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	f.calls = append(f.calls, fakeCall{op: op, accessKey: key})
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

func (z *fakeZone) xml() xmlZone {
	return xmlZone{ID: "/hostedzone/" + z.id, Name: z.name, CallerReference: "ref-" + z.id, PrivateZone: z.private, ResourceRecordSetCount: len(z.sets)}
}

func (f *fakeAWS) createHostedZone(w http.ResponseWriter, r *http.Request) {
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
	f.seq++
	z := &fakeZone{id: fmt.Sprintf("Z%020d", f.seq), name: canonical(in.Name), private: in.VPC != nil, sets: map[string]*fakeRRSet{}}
	f.zones[z.id] = z
	for _, typ := range []string{"SOA", "NS"} {
		z.sets[z.name+" "+typ] = &fakeRRSet{name: z.name, typ: typ, ttl: 900, values: []string{"ns-1.awsdns.test."}}
	}
	changeID := f.newChange()
	writeXML(w, http.StatusCreated, struct {
		XMLName    xml.Name `xml:"CreateHostedZoneResponse"`
		NS         string   `xml:"xmlns,attr"`
		HostedZone xmlZone  `xml:"HostedZone"`
		ChangeInfo xmlChangeInfo
		NameServer []string `xml:"DelegationSet>NameServers>NameServer"`
	}{NS: r53NS, HostedZone: z.xml(), ChangeInfo: f.changeInfo(changeID), NameServer: []string{"ns-1.awsdns.test"}})
}

func (f *fakeAWS) listHostedZonesByName(w http.ResponseWriter, q url.Values) {
	var zones []*fakeZone
	for _, z := range f.zones {
		zones = append(zones, z)
	}
	slices.SortFunc(zones, func(a, b *fakeZone) int {
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

func setKey(s *fakeRRSet) string { return reversed(s.name) + " " + s.typ }

func (f *fakeAWS) listResourceRecordSets(w http.ResponseWriter, zoneID string, q url.Values) {
	z := f.zones[zoneID]
	if z == nil {
		writeR53Error(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+zoneID)
		return
	}
	var sets []*fakeRRSet
	for _, s := range z.sets {
		sets = append(sets, s)
	}
	slices.SortFunc(sets, func(a, b *fakeRRSet) int { return strings.Compare(setKey(a), setKey(b)) })
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

func (f *fakeAWS) changeResourceRecordSets(w http.ResponseWriter, r *http.Request, zoneID string) {
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
	next := map[string]*fakeRRSet{}
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
					if len(DecodeTXT(`"`+m[1]+`"`)) > 255 {
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
		set := &fakeRRSet{name: name, typ: s.Type, ttl: s.TTL, values: values}
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

func (f *fakeAWS) newChange() string {
	f.seq++
	id := fmt.Sprintf("C%020d", f.seq)
	f.changes[id] = "PENDING"
	return id
}

func (f *fakeAWS) changeInfo(id string) xmlChangeInfo {
	return xmlChangeInfo{ID: "/change/" + id, Status: f.changes[id], SubmittedAt: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).Format(time.RFC3339)}
}

func (f *fakeAWS) getChange(w http.ResponseWriter, id string) {
	if _, ok := f.changes[id]; !ok {
		writeR53Error(w, http.StatusNotFound, "NoSuchChange", "Could not find resource with ID: "+id)
		return
	}
	writeXML(w, http.StatusOK, struct {
		XMLName    xml.Name `xml:"GetChangeResponse"`
		NS         string   `xml:"xmlns,attr"`
		ChangeInfo xmlChangeInfo
	}{NS: r53NS, ChangeInfo: f.changeInfo(id)})
}

// serveSTS answers STS's query protocol (AssumeRole only).
func (f *fakeAWS) serveSTS(w http.ResponseWriter, r *http.Request, key string) {
	if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "AssumeRole" {
		writeSTSError(w, http.StatusBadRequest, "InvalidAction", "the test double implements only AssumeRole")
		return
	}
	role, session := r.Form.Get("RoleArn"), r.Form.Get("RoleSessionName")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{op: "AssumeRole", accessKey: key})
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
