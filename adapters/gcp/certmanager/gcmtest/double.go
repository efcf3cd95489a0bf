// TEST DOUBLE: NOT GOOGLE CLOUD CERTIFICATE MANAGER.
// Package gcmtest holds a hand-written, in-process test double of Google
// Cloud Certificate Manager's certificates for the tests of
// adapters/gcp/certmanager (and for end-to-end tests that import
// certificates on Google Cloud).
//
// No Certificate Manager emulator exists, so Double is a gRPC server on a
// loopback port that serves google.cloud.certificatemanager.v1's
// CertificateManager (GetCertificate, ListCertificates, CreateCertificate,
// UpdateCertificate, DeleteCertificate) and google.longrunning.Operations
// (GetOperation) to the real client (cloud.google.com/go/certificatemanager,
// through ClientOptions), with the semantics Google documents for them:
//
//   - names: parents are projects/<project>/locations/<location>
//     ("global" or a region); certificate IDs are 1 to 64 characters
//     matching [a-zA-Z][a-zA-Z0-9_-]*; another project is PermissionDenied
//     ("or it may not exist"), a malformed name InvalidArgument, a missing
//     certificate NotFound, an ID that is taken AlreadyExists;
//   - self-managed certificates: pem_certificate (leaf first, then
//     intermediates) and pem_private_key are required and input only; the
//     chain must be PEM certificates, the key an unencrypted PEM key
//     (PKCS#1, SEC 1 or PKCS#8) of a type Google's load balancers take
//     (RSA 2048 to 4096 bits, ECDSA P-256 or P-384) that matches the leaf —
//     anything else is InvalidArgument, in messages that never quote the
//     key. A certificate is returned with its output fields
//     (pem_certificate, san_dnsnames, expire_time, create/update times),
//     never with its key;
//   - labels follow Google's label rules (at most 64; keys a lower-case
//     letter then up to 62 of [a-z0-9_-]; values up to 63 of those);
//     scopes ALL_REGIONS and EDGE_CACHE only in "global";
//   - UpdateCertificate needs an update_mask of "description", "labels"
//     and/or "self_managed" (other paths are InvalidArgument; self_managed
//     on a Google-managed certificate too);
//   - ListCertificates returns the certificates of a parent ordered by
//     name, pages of page_size (50 when unset, 500 at most) with an
//     opaque next_page_token, filtered by an AIP-160 conjunction of label
//     terms (labels.KEY="VALUE", labels.KEY=VALUE, labels.KEY:*; other
//     filters are InvalidArgument: the double supports only these);
//   - create, update and delete are long-running operations: the call
//     validates and answers an Operation that is done after OperationPolls
//     GetOperation calls (or CompleteAll); only then does the change take
//     effect. Meanwhile a created certificate is not readable (NotFound)
//     but its ID is taken (AlreadyExists), and an updated one still holds
//     its old PEM.
//
// It also counts calls per method (Calls), injects errors (FailNext) and
// failed operations (FailNextOperation), and lets a test look at (Get,
// Names), delete (Delete) or plant (AddManaged) certificates behind the
// client's back.
//
// It is not a faithful emulator: no certificate maps, DNS
// authorizations, Google-managed issuance, IAM, quotas, tags, expiry
// checks, in-use checks or ListOperations; errors carry no ErrorInfo
// details. When CERTFN_GCP_TEST_PROJECT is set, the certmanager tests also
// run against that real project (see docs/deploy/gcp.md).
package gcmtest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cmpb "cloud.google.com/go/certificatemanager/apiv1/certificatemanagerpb"
	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Cert is one certificate the double holds.
type Cert struct {
	Name        string
	Description string
	Labels      map[string]string
	Scope       cmpb.Certificate_Scope
	// Managed marks a Google-managed certificate (AddManaged); it has no
	// PEM.
	Managed bool
	// ChainPEM is the leaf then the intermediates, as uploaded.
	ChainPEM string
	// KeyPEM is the private key, as uploaded (never returned by the API).
	KeyPEM string
	// Leaf is the first certificate of ChainPEM.
	Leaf *x509.Certificate
	// Updates counts the completed updates of self_managed.
	Updates    int
	CreateTime time.Time
	UpdateTime time.Time
}

// Double is a running test double. It is safe for concurrent use.
type Double struct {
	// Project is the only project the double serves.
	Project string
	// Addr is the gRPC endpoint (host:port).
	Addr string

	mu sync.Mutex
	// polls is OperationPolls.
	polls    int
	certs    map[string]*Cert
	reserved map[string]bool // IDs of creates whose operation is running
	ops      map[string]*operation
	seq      int
	calls    map[string]int
	fails    []*failure
	opFail   *status.Status
	now      func() time.Time
}

type failure struct {
	n      int
	method string
	st     *status.Status
}

type operation struct {
	pb    *longrunningpb.Operation
	left  int
	apply func() (proto.Message, *status.Status)
	// release runs when the operation is done, failed or not.
	release func()
}

// New starts a double serving project, stopped when t ends. Operations are
// done at the first GetOperation (SetOperationPolls changes that).
func New(t testing.TB, project string) *Double {
	t.Helper()
	d := &Double{
		Project: project, polls: 1, certs: map[string]*Cert{}, reserved: map[string]bool{},
		ops: map[string]*operation{}, calls: map[string]int{}, now: time.Now,
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gcmtest: listen: %v", err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(d.intercept))
	cmpb.RegisterCertificateManagerServer(srv, &cmServer{d: d})
	longrunningpb.RegisterOperationsServer(srv, &opsServer{d: d})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	d.Addr = lis.Addr().String()
	return d
}

// ClientOptions are the options that connect a Certificate Manager client
// (certificatemanager.NewClient, or certmanager.NewClient) to the double:
// a new insecure gRPC connection, closed with the client or when t ends.
func (d *Double) ClientOptions(t testing.TB) []option.ClientOption {
	t.Helper()
	conn, err := grpc.NewClient(d.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("gcmtest: dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return []option.ClientOption{option.WithGRPCConn(conn)}
}

// SetOperationPolls sets how many GetOperation calls an operation started
// from now on takes to be done: 0 makes it done in the answer of the call
// that started it; the default, 1, at the first poll.
func (d *Double) SetOperationPolls(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.polls = n
}

// Calls returns how many times method ("GetCertificate", "GetOperation",
// ...) was called, failed calls included.
func (d *Double) Calls(method string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[method]
}

// FailNext makes the next n calls of method ("": any) fail with code and
// msg.
func (d *Double) FailNext(n int, method string, code codes.Code, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fails = append(d.fails, &failure{n: n, method: method, st: status.New(code, msg)})
}

// FailNextOperation makes the next operation started end with code and msg
// (the change is not applied).
func (d *Double) FailNextOperation(code codes.Code, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opFail = status.New(code, msg)
}

// CompleteAll finishes every running operation, as time would.
func (d *Double) CompleteAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, op := range d.ops {
		if !op.pb.Done {
			d.complete(op)
		}
	}
}

// Running returns how many operations are not done.
func (d *Double) Running() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, op := range d.ops {
		if !op.pb.Done {
			n++
		}
	}
	return n
}

// Get returns a copy of the certificate name, if the double holds it.
func (d *Double) Get(name string) (Cert, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.certs[name]
	if !ok {
		return Cert{}, false
	}
	out := *c
	out.Labels = clone(c.Labels)
	return out, true
}

// Names returns the names of the certificates held, sorted.
func (d *Double) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, 0, len(d.certs))
	for n := range d.certs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Delete forgets name at once (a certificate deleted in the console).
func (d *Double) Delete(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.certs, name)
}

// AddManaged plants a Google-managed certificate (no PEM) at name.
func (d *Double) AddManaged(name string, labels map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.certs[name] = &Cert{Name: name, Managed: true, Labels: clone(labels), CreateTime: now, UpdateTime: now}
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// intercept counts calls and injects failures.
func (d *Double) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
	d.mu.Lock()
	d.calls[method]++
	for i, f := range d.fails {
		if f.method == "" || f.method == method {
			f.n--
			if f.n <= 0 {
				d.fails = slices.Delete(d.fails, i, i+1)
			}
			d.mu.Unlock()
			return nil, f.st.Err()
		}
	}
	d.mu.Unlock()
	return handler(ctx, req)
}

// Names and their rules.
var (
	parentRe   = regexp.MustCompile(`^projects/([^/]+)/locations/([^/]+)$`)
	certNameRe = regexp.MustCompile(`^(projects/[^/]+/locations/[^/]+)/certificates/([^/]+)$`)
	opNameRe   = regexp.MustCompile(`^projects/[^/]+/locations/[^/]+/operations/[^/]+$`)
	certIDRe   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)
	locationRe = regexp.MustCompile(`^(global|[a-z]+-[a-z]+[0-9]+)$`)
	labelKeyRe = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValRe = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

// parent checks a projects/*/locations/* name (caller holds d.mu).
func (d *Double) parent(parent, perm string) (location string, err error) {
	m := parentRe.FindStringSubmatch(parent)
	if m == nil {
		return "", status.Errorf(codes.InvalidArgument, "Invalid resource name %q: want projects/*/locations/*.", parent)
	}
	if m[1] != d.Project {
		return "", status.Errorf(codes.PermissionDenied, "Permission '%s' denied on resource '//certificatemanager.googleapis.com/%s' (or it may not exist).", perm, parent)
	}
	if !locationRe.MatchString(m[2]) {
		return "", status.Errorf(codes.InvalidArgument, "Invalid location %q.", m[2])
	}
	return m[2], nil
}

// certName checks a certificate's name (caller holds d.mu).
func (d *Double) certName(name, perm string) error {
	m := certNameRe.FindStringSubmatch(name)
	if m == nil {
		return status.Errorf(codes.InvalidArgument, "Invalid resource name %q: want projects/*/locations/*/certificates/*.", name)
	}
	if _, err := d.parent(m[1], perm); err != nil {
		return err
	}
	if !certIDRe.MatchString(m[2]) {
		return status.Errorf(codes.InvalidArgument, "Invalid certificate id %q: want 1-64 characters matching [a-zA-Z][a-zA-Z0-9_-]*.", m[2])
	}
	return nil
}

func notFound(name string) error {
	return status.Errorf(codes.NotFound, "Resource '%s' was not found", name)
}

// view is the API's view of c: output fields, never the key.
func view(c *Cert) *cmpb.Certificate {
	out := &cmpb.Certificate{
		Name: c.Name, Description: c.Description, Labels: clone(c.Labels), Scope: c.Scope,
		CreateTime: timestamppb.New(c.CreateTime), UpdateTime: timestamppb.New(c.UpdateTime),
	}
	if c.Managed {
		out.Type = &cmpb.Certificate_Managed{Managed: &cmpb.Certificate_ManagedCertificate{State: cmpb.Certificate_ManagedCertificate_PROVISIONING}}
		return out
	}
	out.PemCertificate = c.ChainPEM
	out.SanDnsnames = slices.Clone(c.Leaf.DNSNames)
	out.ExpireTime = timestamppb.New(c.Leaf.NotAfter)
	return out
}

// start records an operation on target (caller holds d.mu); apply runs
// when it is done (unless FailNextOperation made it fail), release in any
// case (nil: nothing to release).
func (d *Double) start(target, verb string, apply func() (proto.Message, *status.Status), release func()) (*longrunningpb.Operation, error) {
	d.seq++
	m := certNameRe.FindStringSubmatch(target)
	name := fmt.Sprintf("%s/operations/operation-%d-%d", m[1], d.now().UnixNano(), d.seq)
	meta, err := anypb.New(&cmpb.OperationMetadata{
		CreateTime: timestamppb.New(d.now()), Target: target, Verb: verb, ApiVersion: "v1",
	})
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	op := &operation{pb: &longrunningpb.Operation{Name: name, Metadata: meta}, left: d.polls, apply: apply, release: release}
	if d.opFail != nil {
		st := d.opFail
		d.opFail = nil
		op.apply = func() (proto.Message, *status.Status) { return nil, st }
	}
	d.ops[name] = op
	if op.left <= 0 {
		d.complete(op)
	}
	return proto.Clone(op.pb).(*longrunningpb.Operation), nil
}

// complete applies op and marks it done (caller holds d.mu).
func (d *Double) complete(op *operation) {
	op.pb.Done = true
	if op.release != nil {
		op.release()
	}
	res, st := op.apply()
	if st != nil {
		op.pb.Result = &longrunningpb.Operation_Error{Error: st.Proto()}
		return
	}
	a, err := anypb.New(res)
	if err != nil {
		op.pb.Result = &longrunningpb.Operation_Error{Error: status.New(codes.Internal, err.Error()).Proto()}
		return
	}
	op.pb.Result = &longrunningpb.Operation_Response{Response: a}
}

type cmServer struct {
	cmpb.UnimplementedCertificateManagerServer
	d *Double
}

func (s *cmServer) GetCertificate(_ context.Context, req *cmpb.GetCertificateRequest) (*cmpb.Certificate, error) {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.certName(req.GetName(), "certificatemanager.certs.get"); err != nil {
		return nil, err
	}
	c, ok := d.certs[req.GetName()]
	if !ok {
		return nil, notFound(req.GetName())
	}
	return view(c), nil
}

func (s *cmServer) ListCertificates(_ context.Context, req *cmpb.ListCertificatesRequest) (*cmpb.ListCertificatesResponse, error) {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.parent(req.GetParent(), "certificatemanager.certs.list"); err != nil {
		return nil, err
	}
	match, err := parseFilter(req.GetFilter())
	if err != nil {
		return nil, err
	}
	if ob := strings.TrimSpace(req.GetOrderBy()); ob != "" && ob != "name" {
		return nil, status.Errorf(codes.InvalidArgument, "Invalid order_by %q: the test double orders by name only.", ob)
	}
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, status.Error(codes.InvalidArgument, "page_size must not be negative.")
	case size == 0:
		size = 50
	case size > 500:
		size = 500
	}
	after := ""
	if tok := req.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, "Invalid page_token.")
		}
		after = string(b)
	}
	prefix := req.GetParent() + "/certificates/"
	var names []string
	for n, c := range d.certs {
		if strings.HasPrefix(n, prefix) && n > after && match(c.Labels) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	out := &cmpb.ListCertificatesResponse{}
	for i, n := range names {
		if i == size {
			out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(names[i-1]))
			break
		}
		out.Certificates = append(out.Certificates, view(d.certs[n]))
	}
	return out, nil
}

// termRe is one label term of a filter.
var termRe = regexp.MustCompile(`^labels\.([a-z][a-z0-9_-]*)\s*(?:(=)\s*(?:"([^"]*)"|([a-z0-9_-]*))|(:)\s*\*)$`)

// parseFilter compiles the filters the double supports.
func parseFilter(f string) (func(map[string]string) bool, error) {
	f = strings.TrimSpace(f)
	if f == "" {
		return func(map[string]string) bool { return true }, nil
	}
	type term struct {
		key, value string
		has        bool
	}
	var terms []term
	for _, part := range strings.Split(f, " AND ") {
		m := termRe.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return nil, status.Errorf(codes.InvalidArgument, "Invalid filter %q: the test double supports labels.KEY=\"VALUE\", labels.KEY=VALUE and labels.KEY:* joined by AND.", f)
		}
		terms = append(terms, term{key: m[1], value: m[3] + m[4], has: m[5] != ""})
	}
	return func(labels map[string]string) bool {
		for _, t := range terms {
			v, ok := labels[t.key]
			if !ok || (!t.has && v != t.value) {
				return false
			}
		}
		return true
	}, nil
}

func checkLabels(labels map[string]string) error {
	if len(labels) > 64 {
		return status.Errorf(codes.InvalidArgument, "A resource may have at most 64 labels, not %d.", len(labels))
	}
	for k, v := range labels {
		if !labelKeyRe.MatchString(k) {
			return status.Errorf(codes.InvalidArgument, "Invalid label key %q.", k)
		}
		if !labelValRe.MatchString(v) {
			return status.Errorf(codes.InvalidArgument, "Invalid value %q of label %q.", v, k)
		}
	}
	return nil
}

func (s *cmServer) CreateCertificate(_ context.Context, req *cmpb.CreateCertificateRequest) (*longrunningpb.Operation, error) {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	location, err := d.parent(req.GetParent(), "certificatemanager.certs.create")
	if err != nil {
		return nil, err
	}
	id := req.GetCertificateId()
	if !certIDRe.MatchString(id) {
		return nil, status.Errorf(codes.InvalidArgument, "Invalid certificate_id %q: want 1-64 characters matching [a-zA-Z][a-zA-Z0-9_-]*.", id)
	}
	in := req.GetCertificate()
	if in == nil {
		return nil, status.Error(codes.InvalidArgument, "Field certificate is required.")
	}
	if err := checkLabels(in.GetLabels()); err != nil {
		return nil, err
	}
	switch in.GetScope() {
	case cmpb.Certificate_DEFAULT, cmpb.Certificate_CLIENT_AUTH:
	case cmpb.Certificate_ALL_REGIONS, cmpb.Certificate_EDGE_CACHE:
		if location != "global" {
			return nil, status.Errorf(codes.InvalidArgument, "Certificates with scope %s must be in location \"global\".", in.GetScope())
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "Invalid scope %d.", in.GetScope())
	}
	if in.GetManaged() != nil {
		return nil, status.Error(codes.Unimplemented, "The test double creates self-managed certificates only (AddManaged plants a managed one).")
	}
	if in.GetSelfManaged() == nil {
		return nil, status.Error(codes.InvalidArgument, "Exactly one of self_managed or managed must be set.")
	}
	leaf, err := checkKeyPair(in.GetSelfManaged())
	if err != nil {
		return nil, err
	}
	name := req.GetParent() + "/certificates/" + id
	if _, ok := d.certs[name]; ok || d.reserved[name] {
		return nil, status.Errorf(codes.AlreadyExists, "Resource '%s' already exists", name)
	}
	d.reserved[name] = true
	c := &Cert{
		Name: name, Description: in.GetDescription(), Labels: clone(in.GetLabels()), Scope: in.GetScope(),
		ChainPEM: in.GetSelfManaged().GetPemCertificate(), KeyPEM: in.GetSelfManaged().GetPemPrivateKey(), Leaf: leaf,
	}
	return d.start(name, "create", func() (proto.Message, *status.Status) {
		now := d.now()
		c.CreateTime, c.UpdateTime = now, now
		d.certs[name] = c
		return view(c), nil
	}, func() { delete(d.reserved, name) })
}

func (s *cmServer) UpdateCertificate(_ context.Context, req *cmpb.UpdateCertificateRequest) (*longrunningpb.Operation, error) {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	in := req.GetCertificate()
	name := in.GetName()
	if err := d.certName(name, "certificatemanager.certs.update"); err != nil {
		return nil, err
	}
	cur, ok := d.certs[name]
	if !ok {
		return nil, notFound(name)
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		return nil, status.Error(codes.InvalidArgument, "Field update_mask is required.")
	}
	var leaf *x509.Certificate
	for _, p := range paths {
		switch p {
		case "description":
		case "labels":
			if err := checkLabels(in.GetLabels()); err != nil {
				return nil, err
			}
		case "self_managed", "selfManaged":
			if cur.Managed {
				return nil, status.Error(codes.InvalidArgument, "self_managed cannot be set on a managed certificate.")
			}
			var err error
			if leaf, err = checkKeyPair(in.GetSelfManaged()); err != nil {
				return nil, err
			}
		default:
			return nil, status.Errorf(codes.InvalidArgument, "Invalid update_mask path %q.", p)
		}
	}
	desc, labels, sm := in.GetDescription(), clone(in.GetLabels()), in.GetSelfManaged()
	return d.start(name, "update", func() (proto.Message, *status.Status) {
		c, ok := d.certs[name]
		if !ok {
			return nil, status.New(codes.NotFound, fmt.Sprintf("Resource '%s' was not found", name))
		}
		for _, p := range paths {
			switch p {
			case "description":
				c.Description = desc
			case "labels":
				c.Labels = labels
			default:
				c.ChainPEM, c.KeyPEM, c.Leaf = sm.GetPemCertificate(), sm.GetPemPrivateKey(), leaf
				c.Updates++
			}
		}
		c.UpdateTime = d.now()
		return view(c), nil
	}, nil)
}

func (s *cmServer) DeleteCertificate(_ context.Context, req *cmpb.DeleteCertificateRequest) (*longrunningpb.Operation, error) {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	name := req.GetName()
	if err := d.certName(name, "certificatemanager.certs.delete"); err != nil {
		return nil, err
	}
	if _, ok := d.certs[name]; !ok {
		return nil, notFound(name)
	}
	return d.start(name, "delete", func() (proto.Message, *status.Status) {
		delete(d.certs, name)
		return &emptypb.Empty{}, nil
	}, nil)
}

type opsServer struct {
	longrunningpb.UnimplementedOperationsServer
	d *Double
}

func (s *opsServer) GetOperation(_ context.Context, req *longrunningpb.GetOperationRequest) (*longrunningpb.Operation, error) {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if !opNameRe.MatchString(req.GetName()) {
		return nil, status.Errorf(codes.InvalidArgument, "Invalid operation name %q.", req.GetName())
	}
	op, ok := d.ops[req.GetName()]
	if !ok {
		return nil, notFound(req.GetName())
	}
	if !op.pb.Done {
		op.left--
		if op.left <= 0 {
			d.complete(op)
		}
	}
	return proto.Clone(op.pb).(*longrunningpb.Operation), nil
}

// checkKeyPair validates self-managed certificate data as Certificate
// Manager does and returns the leaf. Its messages never quote the key.
func checkKeyPair(sm *cmpb.Certificate_SelfManagedCertificate) (*x509.Certificate, error) {
	invalid := func(format string, a ...any) error { return status.Errorf(codes.InvalidArgument, format, a...) }
	if strings.TrimSpace(sm.GetPemCertificate()) == "" {
		return nil, invalid("Field self_managed.pem_certificate is required.")
	}
	if strings.TrimSpace(sm.GetPemPrivateKey()) == "" {
		return nil, invalid("Field self_managed.pem_private_key is required.")
	}
	var chain []*x509.Certificate
	rest := []byte(sm.GetPemCertificate())
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, invalid("Failed to parse the PEM certificate chain: unexpected %s block.", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, invalid("Failed to parse the PEM certificate chain: %v.", err)
		}
		chain = append(chain, c)
	}
	if len(chain) == 0 {
		return nil, invalid("Failed to parse the PEM certificate chain: no certificate found.")
	}
	leaf := chain[0]
	b, _ := pem.Decode([]byte(sm.GetPemPrivateKey()))
	if b == nil {
		return nil, invalid("Failed to parse the PEM private key.")
	}
	if b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "" {
		return nil, invalid("The private key is encrypted; upload it unencrypted.")
	}
	var key crypto.Signer
	switch b.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
		if err != nil {
			return nil, invalid("Failed to parse the PEM private key.")
		}
		key = k
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(b.Bytes)
		if err != nil {
			return nil, invalid("Failed to parse the PEM private key.")
		}
		key = k
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, invalid("Failed to parse the PEM private key.")
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, invalid("Unsupported private key type.")
		}
		key = s
	default:
		return nil, invalid("Unsupported PEM block %s for the private key.", b.Type)
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if n := k.N.BitLen(); n < 2048 || n > 4096 {
			return nil, invalid("Unsupported RSA key size %d: want 2048 to 4096 bits.", n)
		}
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return nil, invalid("Unsupported elliptic curve %s: want P-256 or P-384.", k.Curve.Params().Name)
		}
	default:
		return nil, invalid("Unsupported private key type %T: want RSA or ECDSA.", key)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if pub, ok := key.Public().(equaler); !ok || !pub.Equal(leaf.PublicKey) {
		return nil, invalid("The private key does not match the certificate.")
	}
	return leaf, nil
}
