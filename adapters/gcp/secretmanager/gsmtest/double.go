// Package gsmtest is a TEST DOUBLE: a hand-written, in-memory stand-in for
// Google Cloud Secret Manager, for the tests of adapters/gcp/secretmanager
// and of anything that builds it (the GCP deployment's tests).
//
// HAND-WRITTEN TEST DOUBLE — NOT GOOGLE CLOUD SECRET MANAGER.
//
// No Secret Manager emulator exists (none can be installed on these
// machines), so Double implements the adapter's secretmanager.API interface directly,
// with the behaviour the service documents for the calls the adapter
// makes: CreateSecret, GetSecret, UpdateSecret (labels, annotations,
// version_aliases), DeleteSecret, AddSecretVersion, AccessSecretVersion
// (by number, "latest" or alias), DestroySecretVersion and one page of
// ListSecretVersions. It keeps:
//
//   - secret IDs ([A-Za-z0-9_-], at most 255), unique per project
//     (AlreadyExists), NotFound for missing secrets and versions;
//   - versions numbered from 1, states ENABLED, DISABLED (SetVersionState)
//     and DESTROYED (data discarded, terminal); access to a version that is
//     not ENABLED is FailedPrecondition; "latest" is the newest version,
//     whatever its state;
//   - version aliases (names, at most 50, only on existing versions);
//   - the label and annotation rules (InvalidArgument), payloads of at most
//     64 KiB with an optional CRC32C, replication required and immutable,
//     customer-managed key names checked for form;
//   - etags on secrets and versions: a stale one is Aborted;
//   - resource names with the project number (assigned per project ID).
//
// Errors are gRPC statuses wrapped as the client library wraps them
// (*apierror.APIError). It can fail the next calls with any code
// (FailNext) and counts calls per RPC (the cost figures of end-to-end
// tests).
//
// It is not a faithful emulator: no IAM (conditions on resource names are
// what certfn's access control rests on: only the real service can check
// them), no filters but "state:X OR state:Y", no delayed destruction, no
// rotation, topics, expiry, tags or regional endpoints, no eventual
// consistency. One stricter rule: it refuses to destroy a version that an
// alias names (the service does not document this case; the adapter never
// does it). The same adapter tests run against the real service when
// CERTFN_GCP_TEST_PROJECT names a project (see the adapter's tests).
package gsmtest

import (
	"context"
	"fmt"
	"hash/crc32"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Double is an in-memory Secret Manager. The zero value is not usable:
// call New. It is safe for concurrent use.
type Double struct {
	mu       sync.Mutex
	secrets  map[string]*secret // by "projects/<number>/secrets/<id>"
	numbers  map[string]string  // project ID → number
	calls    map[string]int
	faults   []fault
	now      func() time.Time
	etagSeq  int
	nextProj int64
}

type secret struct {
	pb       *smpb.Secret
	versions []*version // versions[i] is number i+1
}

type version struct {
	pb   *smpb.SecretVersion
	data []byte
}

type fault struct {
	op   string // "" = any
	code codes.Code
}

// New returns an empty double.
func New() *Double {
	return &Double{secrets: map[string]*secret{}, numbers: map[string]string{}, calls: map[string]int{},
		now: time.Now, nextProj: 100000000001}
}

// SetClock replaces the wall clock that stamps create and destroy times.
func (d *Double) SetClock(now func() time.Time) {
	d.mu.Lock()
	d.now = now
	d.mu.Unlock()
}

// FailNext makes the next n calls of op (an RPC name such as
// "AccessSecretVersion"; "" for any) fail with code, before they change
// anything. They are counted.
func (d *Double) FailNext(op string, code codes.Code, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for range n {
		d.faults = append(d.faults, fault{op, code})
	}
}

// Calls returns how many times op was called (failed calls included).
func (d *Double) Calls(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op]
}

// CallsByOp returns a copy of the call counts per RPC.
func (d *Double) CallsByOp() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.calls)
}

// TotalCalls returns the number of calls of every RPC.
func (d *Double) TotalCalls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, v := range d.calls {
		n += v
	}
	return n
}

// ResetCalls zeroes the call counts.
func (d *Double) ResetCalls() {
	d.mu.Lock()
	d.calls = map[string]int{}
	d.mu.Unlock()
}

// SecretIDs returns the IDs of the stored secrets, sorted.
func (d *Double) SecretIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.secrets))
	for name := range d.secrets {
		out = append(out, name[strings.LastIndexByte(name, '/')+1:])
	}
	slices.Sort(out)
	return out
}

// Secret returns a copy of the secret with this ID (in any project), or
// nil.
func (d *Double) Secret(id string) *smpb.Secret {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.byID(id); s != nil {
		return proto.Clone(s.pb).(*smpb.Secret)
	}
	return nil
}

// Versions returns copies of the versions of the secret with this ID,
// oldest first (nil if it is missing).
func (d *Double) Versions(id string) []*smpb.SecretVersion {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.byID(id)
	if s == nil {
		return nil
	}
	out := make([]*smpb.SecretVersion, len(s.versions))
	for i, v := range s.versions {
		out[i] = proto.Clone(v.pb).(*smpb.SecretVersion)
	}
	return out
}

// ActiveVersions returns how many versions of every secret are not
// destroyed: what Google bills each month.
func (d *Double) ActiveVersions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, s := range d.secrets {
		for _, v := range s.versions {
			if v.pb.State != smpb.SecretVersion_DESTROYED {
				n++
			}
		}
	}
	return n
}

// SetVersionState sets a version's state to ENABLED or DISABLED, as
// EnableSecretVersion and DisableSecretVersion do (an operator's action).
func (d *Double) SetVersionState(id string, number int64, state smpb.SecretVersion_State) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.byID(id)
	if s == nil || number < 1 || number > int64(len(s.versions)) {
		return fmt.Errorf("no version %d of %s", number, id)
	}
	v := s.versions[number-1]
	if v.pb.State == smpb.SecretVersion_DESTROYED || (state != smpb.SecretVersion_ENABLED && state != smpb.SecretVersion_DISABLED) {
		return fmt.Errorf("version %d of %s: cannot go from %s to %s", number, id, v.pb.State, state)
	}
	v.pb.State = state
	v.pb.Etag = d.etag()
	return nil
}

func (d *Double) byID(id string) *secret {
	for name, s := range d.secrets {
		if strings.HasSuffix(name, "/secrets/"+id) {
			return s
		}
	}
	return nil
}

// errorf builds a status error wrapped as the client library does.
func errorf(c codes.Code, format string, a ...any) error {
	err := status.Errorf(c, format, a...)
	if ae, ok := apierror.FromError(err); ok {
		return ae
	}
	return err
}

// begin counts op, honours ctx and injected faults. It is called with mu
// held.
func (d *Double) begin(ctx context.Context, op string) error {
	d.calls[op]++
	if err := ctx.Err(); err != nil {
		return errorf(status.FromContextError(err).Code(), "%v", err)
	}
	for i, f := range d.faults {
		if f.op == "" || f.op == op {
			d.faults = slices.Delete(d.faults, i, i+1)
			return errorf(f.code, "injected by the test double: %s", f.code)
		}
	}
	return nil
}

func (d *Double) etag() string {
	d.etagSeq++
	return fmt.Sprintf("\"%x\"", 0x5eed0000+d.etagSeq)
}

var (
	projectRE      = regexp.MustCompile(`^projects/([^/]+)$`)
	secretNameRE   = regexp.MustCompile(`^projects/([^/]+)/secrets/([^/]+)$`)
	versionNameRE  = regexp.MustCompile(`^projects/([^/]+)/secrets/([^/]+)/versions/([^/]+)$`)
	secretIDRE     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	aliasRE        = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,62}$`)
	labelKeyRE     = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValueRE   = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
	annotationKey  = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,61}[a-zA-Z0-9])?$`)
	kmsKeyRE       = regexp.MustCompile(`^projects/[^/]+/locations/([^/]+)/keyRings/[^/]+/cryptoKeys/[^/]+$`)
	stateFilterRE  = regexp.MustCompile(`^state:(ENABLED|DISABLED|DESTROYED)$`)
	castagnoli     = crc32.MakeTable(crc32.Castagnoli)
	maxPayload     = 65536
	maxAliases     = 50
	maxLabels      = 64
	maxAnnotations = 16 * 1024
)

// project returns the number of a project ID or number (assigning one).
func (d *Double) project(p string) string {
	if _, err := strconv.ParseInt(p, 10, 64); err == nil {
		return p
	}
	n, ok := d.numbers[p]
	if !ok {
		n = strconv.FormatInt(d.nextProj, 10)
		d.nextProj++
		d.numbers[p] = n
	}
	return n
}

// secretName normalises a secret's resource name to the project number.
func (d *Double) secretName(name string) (string, error) {
	m := secretNameRE.FindStringSubmatch(name)
	if m == nil {
		return "", errorf(codes.InvalidArgument, "Invalid resource field value in the request: name %q", name)
	}
	return "projects/" + d.project(m[1]) + "/secrets/" + m[2], nil
}

// lookup finds a secret by resource name.
func (d *Double) lookup(name string) (*secret, string, error) {
	n, err := d.secretName(name)
	if err != nil {
		return nil, "", err
	}
	s, ok := d.secrets[n]
	if !ok {
		return nil, n, errorf(codes.NotFound, "Secret [%s] not found or has no versions.", n)
	}
	return s, n, nil
}

// lookupVersion finds a version by resource name: a number, "latest" or an
// alias (aliases only where allowAlias).
func (d *Double) lookupVersion(name string, allowAlias bool) (*secret, *version, error) {
	m := versionNameRE.FindStringSubmatch(name)
	if m == nil {
		return nil, nil, errorf(codes.InvalidArgument, "Invalid resource field value in the request: name %q", name)
	}
	s, sn, err := d.lookup("projects/" + m[1] + "/secrets/" + m[2])
	if err != nil {
		return nil, nil, err
	}
	var n int64
	switch v := m[3]; {
	case v == "latest":
		n = int64(len(s.versions))
		if n == 0 {
			return nil, nil, errorf(codes.NotFound, "Secret [%s] not found or has no versions.", sn)
		}
	default:
		if num, err := strconv.ParseInt(v, 10, 64); err == nil {
			n = num
		} else if !allowAlias {
			return nil, nil, errorf(codes.InvalidArgument, "Invalid resource field value in the request: version %q", v)
		} else if num, ok := s.pb.VersionAliases[v]; ok {
			n = num
		} else {
			return nil, nil, errorf(codes.NotFound, "Secret Version [%s/versions/%s] not found.", sn, v)
		}
	}
	if n < 1 || n > int64(len(s.versions)) {
		return nil, nil, errorf(codes.NotFound, "Secret Version [%s/versions/%d] not found.", sn, n)
	}
	return s, s.versions[n-1], nil
}

func checkLabels(labels map[string]string) error {
	if len(labels) > maxLabels {
		return errorf(codes.InvalidArgument, "Secret.labels: %d labels, at most %d", len(labels), maxLabels)
	}
	for k, v := range labels {
		if !labelKeyRE.MatchString(k) || len(k) > 128 {
			return errorf(codes.InvalidArgument, "Secret.labels: invalid key %q", k)
		}
		if !labelValueRE.MatchString(v) || len(v) > 128 {
			return errorf(codes.InvalidArgument, "Secret.labels: invalid value for key %q", k)
		}
	}
	return nil
}

func checkAnnotations(a map[string]string) error {
	size := 0
	for k, v := range a {
		if !annotationKey.MatchString(k) || len(k) > 128 {
			return errorf(codes.InvalidArgument, "Secret.annotations: invalid key %q", k)
		}
		size += len(k) + len(v)
	}
	if size >= maxAnnotations {
		return errorf(codes.InvalidArgument, "Secret.annotations: total size %d bytes, must be less than %d", size, maxAnnotations)
	}
	return nil
}

func checkAliases(s *secret, aliases map[string]int64) error {
	if len(aliases) > maxAliases {
		return errorf(codes.InvalidArgument, "Secret.version_aliases: %d aliases, at most %d", len(aliases), maxAliases)
	}
	for a, n := range aliases {
		if !aliasRE.MatchString(a) || a == "latest" || a == "NEW" {
			return errorf(codes.InvalidArgument, "Secret.version_aliases: invalid alias %q", a)
		}
		if n < 1 || n > int64(len(s.versions)) {
			return errorf(codes.InvalidArgument, "Secret.version_aliases: alias %q names version %d, which does not exist", a, n)
		}
	}
	return nil
}

func checkReplication(r *smpb.Replication) error {
	key := func(c *smpb.CustomerManagedEncryption) (string, bool) {
		if c == nil {
			return "", true
		}
		m := kmsKeyRE.FindStringSubmatch(c.GetKmsKeyName())
		if m == nil {
			return "", false
		}
		return m[1], true
	}
	switch {
	case r.GetAutomatic() != nil:
		if _, ok := key(r.GetAutomatic().GetCustomerManagedEncryption()); !ok {
			return errorf(codes.InvalidArgument, "Secret.replication.automatic.customer_managed_encryption.kms_key_name: invalid key name")
		}
	case r.GetUserManaged() != nil:
		reps := r.GetUserManaged().GetReplicas()
		if len(reps) == 0 {
			return errorf(codes.InvalidArgument, "Secret.replication.user_managed.replicas: at least one replica is required")
		}
		seen := map[string]bool{}
		for i, rep := range reps {
			if rep.GetLocation() == "" || seen[rep.GetLocation()] {
				return errorf(codes.InvalidArgument, "Secret.replication.user_managed.replicas[%d].location: missing or repeated", i)
			}
			seen[rep.GetLocation()] = true
			if loc, ok := key(rep.GetCustomerManagedEncryption()); !ok || (loc != "" && loc != rep.GetLocation()) {
				return errorf(codes.InvalidArgument, "Secret.replication.user_managed.replicas[%d].customer_managed_encryption: the key must be in the replica's location", i)
			}
		}
	default:
		return errorf(codes.InvalidArgument, "Secret.replication is required")
	}
	return nil
}

// CreateSecret creates a secret without versions.
func (d *Double) CreateSecret(ctx context.Context, req *smpb.CreateSecretRequest, _ ...gax.CallOption) (*smpb.Secret, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.begin(ctx, "CreateSecret"); err != nil {
		return nil, err
	}
	m := projectRE.FindStringSubmatch(req.GetParent())
	if m == nil {
		return nil, errorf(codes.InvalidArgument, "Invalid resource field value in the request: parent %q", req.GetParent())
	}
	if !secretIDRE.MatchString(req.GetSecretId()) {
		return nil, errorf(codes.InvalidArgument, "Invalid secret_id %q: at most 255 letters, digits, '-' and '_'", req.GetSecretId())
	}
	in := req.GetSecret()
	if in == nil {
		return nil, errorf(codes.InvalidArgument, "Secret is required")
	}
	if err := checkReplication(in.GetReplication()); err != nil {
		return nil, err
	}
	if err := checkLabels(in.GetLabels()); err != nil {
		return nil, err
	}
	if err := checkAnnotations(in.GetAnnotations()); err != nil {
		return nil, err
	}
	if len(in.GetVersionAliases()) > 0 {
		return nil, errorf(codes.InvalidArgument, "Secret.version_aliases: a new secret has no versions to alias")
	}
	name := "projects/" + d.project(m[1]) + "/secrets/" + req.GetSecretId()
	if _, ok := d.secrets[name]; ok {
		return nil, errorf(codes.AlreadyExists, "Secret [%s] already exists.", name)
	}
	pb := &smpb.Secret{
		Name:        name,
		Replication: proto.Clone(in.GetReplication()).(*smpb.Replication),
		CreateTime:  timestamppb.New(d.now()),
		Labels:      maps.Clone(in.GetLabels()),
		Annotations: maps.Clone(in.GetAnnotations()),
		Etag:        d.etag(),
	}
	d.secrets[name] = &secret{pb: pb}
	return proto.Clone(pb).(*smpb.Secret), nil
}

// GetSecret returns a secret's metadata.
func (d *Double) GetSecret(ctx context.Context, req *smpb.GetSecretRequest, _ ...gax.CallOption) (*smpb.Secret, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.begin(ctx, "GetSecret"); err != nil {
		return nil, err
	}
	s, _, err := d.lookup(req.GetName())
	if err != nil {
		return nil, err
	}
	return proto.Clone(s.pb).(*smpb.Secret), nil
}

// UpdateSecret updates labels, annotations and version aliases (the
// fields of the update mask), conditionally on the etag when one is given.
func (d *Double) UpdateSecret(ctx context.Context, req *smpb.UpdateSecretRequest, _ ...gax.CallOption) (*smpb.Secret, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.begin(ctx, "UpdateSecret"); err != nil {
		return nil, err
	}
	in := req.GetSecret()
	s, _, err := d.lookup(in.GetName())
	if err != nil {
		return nil, err
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		return nil, errorf(codes.InvalidArgument, "update_mask is required")
	}
	if e := in.GetEtag(); e != "" && e != s.pb.Etag {
		return nil, errorf(codes.Aborted, "etag mismatch for secret [%s]", s.pb.Name)
	}
	for _, p := range paths {
		switch p {
		case "labels":
			if err := checkLabels(in.GetLabels()); err != nil {
				return nil, err
			}
		case "annotations":
			if err := checkAnnotations(in.GetAnnotations()); err != nil {
				return nil, err
			}
		case "version_aliases":
			if err := checkAliases(s, in.GetVersionAliases()); err != nil {
				return nil, err
			}
		case "replication":
			return nil, errorf(codes.InvalidArgument, "update_mask: replication is immutable")
		default:
			return nil, errorf(codes.InvalidArgument, "update_mask: path %q is not supported by the test double", p)
		}
	}
	for _, p := range paths {
		switch p {
		case "labels":
			s.pb.Labels = maps.Clone(in.GetLabels())
		case "annotations":
			s.pb.Annotations = maps.Clone(in.GetAnnotations())
		case "version_aliases":
			s.pb.VersionAliases = maps.Clone(in.GetVersionAliases())
		}
	}
	s.pb.Etag = d.etag()
	return proto.Clone(s.pb).(*smpb.Secret), nil
}

// DeleteSecret deletes a secret and its versions, conditionally on the
// etag when one is given.
func (d *Double) DeleteSecret(ctx context.Context, req *smpb.DeleteSecretRequest, _ ...gax.CallOption) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.begin(ctx, "DeleteSecret"); err != nil {
		return err
	}
	s, name, err := d.lookup(req.GetName())
	if err != nil {
		return err
	}
	if e := req.GetEtag(); e != "" && e != s.pb.Etag {
		return errorf(codes.Aborted, "etag mismatch for secret [%s]", name)
	}
	delete(d.secrets, name)
	return nil
}

// AddSecretVersion adds an ENABLED version holding the payload.
func (d *Double) AddSecretVersion(ctx context.Context, req *smpb.AddSecretVersionRequest, _ ...gax.CallOption) (*smpb.SecretVersion, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.begin(ctx, "AddSecretVersion"); err != nil {
		return nil, err
	}
	s, name, err := d.lookup(req.GetParent())
	if err != nil {
		return nil, err
	}
	p := req.GetPayload()
	if p == nil {
		return nil, errorf(codes.InvalidArgument, "payload is required")
	}
	if len(p.GetData()) > maxPayload {
		return nil, errorf(codes.InvalidArgument, "Secret payload data length must be less than or equal to %d bytes (got %d).", maxPayload, len(p.GetData()))
	}
	if sum := p.DataCrc32C; sum != nil && int64(crc32.Checksum(p.GetData(), castagnoli)) != *sum {
		return nil, errorf(codes.InvalidArgument, "The checksum in field data_crc32c did not match the data.")
	}
	now := d.now()
	pb := &smpb.SecretVersion{
		Name:                           fmt.Sprintf("%s/versions/%d", name, len(s.versions)+1),
		CreateTime:                     timestamppb.New(now),
		State:                          smpb.SecretVersion_ENABLED,
		Etag:                           d.etag(),
		ClientSpecifiedPayloadChecksum: p.DataCrc32C != nil,
		ReplicationStatus:              replicationStatus(s.pb.GetReplication()),
	}
	s.versions = append(s.versions, &version{pb: pb, data: slices.Clone(p.GetData())})
	return proto.Clone(pb).(*smpb.SecretVersion), nil
}

// replicationStatus reports, per replica, the key version that encrypted
// a new version (the first version of each key, in the double).
func replicationStatus(r *smpb.Replication) *smpb.ReplicationStatus {
	keyStatus := func(c *smpb.CustomerManagedEncryption) *smpb.CustomerManagedEncryptionStatus {
		if c == nil {
			return nil
		}
		return &smpb.CustomerManagedEncryptionStatus{KmsKeyVersionName: c.GetKmsKeyName() + "/cryptoKeyVersions/1"}
	}
	if a := r.GetAutomatic(); a != nil {
		return &smpb.ReplicationStatus{ReplicationStatus: &smpb.ReplicationStatus_Automatic{
			Automatic: &smpb.ReplicationStatus_AutomaticStatus{CustomerManagedEncryption: keyStatus(a.GetCustomerManagedEncryption())}}}
	}
	um := &smpb.ReplicationStatus_UserManagedStatus{}
	for _, rep := range r.GetUserManaged().GetReplicas() {
		um.Replicas = append(um.Replicas, &smpb.ReplicationStatus_UserManagedStatus_ReplicaStatus{
			Location: rep.GetLocation(), CustomerManagedEncryption: keyStatus(rep.GetCustomerManagedEncryption())})
	}
	return &smpb.ReplicationStatus{ReplicationStatus: &smpb.ReplicationStatus_UserManaged{UserManaged: um}}
}

// AccessSecretVersion returns a version's payload, with its CRC32C.
func (d *Double) AccessSecretVersion(ctx context.Context, req *smpb.AccessSecretVersionRequest, _ ...gax.CallOption) (*smpb.AccessSecretVersionResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.begin(ctx, "AccessSecretVersion"); err != nil {
		return nil, err
	}
	_, v, err := d.lookupVersion(req.GetName(), true)
	if err != nil {
		return nil, err
	}
	if v.pb.State != smpb.SecretVersion_ENABLED {
		return nil, errorf(codes.FailedPrecondition, "Secret Version [%s] is in %s state.", v.pb.Name, v.pb.State)
	}
	sum := int64(crc32.Checksum(v.data, castagnoli))
	return &smpb.AccessSecretVersionResponse{Name: v.pb.Name, Payload: &smpb.SecretPayload{Data: slices.Clone(v.data), DataCrc32C: &sum}}, nil
}

// DestroySecretVersion discards a version's data for good, conditionally
// on the etag when one is given.
func (d *Double) DestroySecretVersion(ctx context.Context, req *smpb.DestroySecretVersionRequest, _ ...gax.CallOption) (*smpb.SecretVersion, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.begin(ctx, "DestroySecretVersion"); err != nil {
		return nil, err
	}
	s, v, err := d.lookupVersion(req.GetName(), false)
	if err != nil {
		return nil, err
	}
	if e := req.GetEtag(); e != "" && e != v.pb.Etag {
		return nil, errorf(codes.Aborted, "etag mismatch for secret version [%s]", v.pb.Name)
	}
	if v.pb.State == smpb.SecretVersion_DESTROYED {
		return nil, errorf(codes.FailedPrecondition, "Secret Version [%s] is already in DESTROYED state.", v.pb.Name)
	}
	for a, n := range s.pb.VersionAliases {
		if s.versions[n-1] == v {
			return nil, errorf(codes.FailedPrecondition, "Secret Version [%s] has the alias %q (the test double refuses to destroy aliased versions)", v.pb.Name, a)
		}
	}
	v.pb.State = smpb.SecretVersion_DESTROYED
	v.pb.DestroyTime = timestamppb.New(d.now())
	v.pb.Etag = d.etag()
	v.data = nil
	return proto.Clone(v.pb).(*smpb.SecretVersion), nil
}

// ListSecretVersionsPage returns one page of a secret's versions, newest
// first. The filter may be empty or "state:X OR state:Y ...".
func (d *Double) ListSecretVersionsPage(ctx context.Context, req *smpb.ListSecretVersionsRequest, _ ...gax.CallOption) (*smpb.ListSecretVersionsResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.begin(ctx, "ListSecretVersions"); err != nil {
		return nil, err
	}
	s, _, err := d.lookup(req.GetParent())
	if err != nil {
		return nil, err
	}
	states := map[smpb.SecretVersion_State]bool{}
	if f := strings.TrimSpace(req.GetFilter()); f != "" {
		for _, term := range strings.Split(f, " OR ") {
			m := stateFilterRE.FindStringSubmatch(strings.TrimSpace(term))
			if m == nil {
				return nil, errorf(codes.InvalidArgument, "filter %q: the test double understands only \"state:X OR state:Y\"", f)
			}
			states[smpb.SecretVersion_State(smpb.SecretVersion_State_value[m[1]])] = true
		}
	}
	var match []*smpb.SecretVersion
	for i := len(s.versions) - 1; i >= 0; i-- {
		if v := s.versions[i]; len(states) == 0 || states[v.pb.State] {
			match = append(match, v.pb)
		}
	}
	start := 0
	if t := req.GetPageToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(match) {
			return nil, errorf(codes.InvalidArgument, "page_token %q is not valid", t)
		}
		start = n
	}
	size := int(req.GetPageSize())
	if size <= 0 || size > 25000 {
		size = 25000
	}
	end := min(start+size, len(match))
	out := &smpb.ListSecretVersionsResponse{TotalSize: int32(len(match))}
	for _, v := range match[start:end] {
		out.Versions = append(out.Versions, proto.Clone(v).(*smpb.SecretVersion))
	}
	if end < len(match) {
		out.NextPageToken = strconv.Itoa(end)
	}
	return out, nil
}
