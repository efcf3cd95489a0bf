// Package secretmanager implements ports.SecretStore on Google Cloud Secret Manager
// (docs/design/resources.md and docs/ARCHITECTURE.md), as adapters/aws/secrets does on AWS Secrets
// Manager. docs/gcp-secret-manager.md has the layout and the IAM rules.
//
//   - A secret's ID is <prefix>_<class>_<namespace>_<name>, '.' written
//     '_' (secretID): valid for every namespace and name certfn accepts,
//     reversible, and under one prefix per class and per namespace.
//   - The class separates what IAM must keep apart (Class): tls (issued key
//     pairs, ACME account keys), pk (next private keys), ica (CA key pairs
//     certfn issued), ca (CA key pairs operators installed) and sc (solver
//     credentials). It follows from the content (RoleOf, the rule of the
//     AWS adapter's certfn-role tag), so IAM conditions on the ID
//     (resource.name.startsWith) let only the signer read CA keys. A Store
//     looks in the classes its function may read (Options.Classes) and
//     never writes or deletes ca or sc.
//   - A version's data is the AWS adapter's JSON payload (payload.go).
//   - Labels and annotations certfn-namespace, -name, -certificate,
//     -issuer, -revision, -not-after and -role describe the content:
//     labels sanitised to Secret Manager's rules (LabelValue), annotations
//     exact.
//   - Replication is automatic or user-managed, with an optional
//     customer-managed key (CMEK).
//   - Put adds a version only when the content changed; the version alias
//     "previous" names the one before the newest, which Rollback restores;
//     versions beyond Options.KeepVersions (default 2: current and
//     previous) are destroyed, since Google bills every version not
//     destroyed.
//   - Errors name secrets, keys and sizes, never values. Invalid input and
//     the service's InvalidArgument are permanent; every other failure
//     (Unavailable, ResourceExhausted, DeadlineExceeded, Aborted, Internal,
//     PermissionDenied while IAM propagates, ...) stays transient.
package secretmanager

import (
	"bytes"
	"context"
	"errors"
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/certfn/certfn/adapters/secretclass"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// AliasPrevious is the version alias of the version before the newest
// ("latest"): the key pair a renewal replaced.
const AliasPrevious = "previous"

// DefaultKeepVersions is the default of Options.KeepVersions.
const DefaultKeepVersions = 2

// maxKeepVersions bounds Options.KeepVersions (each kept version is billed).
const maxKeepVersions = 20

// ShellGrace is how old a secret without any version must be before
// Create takes it over: younger, it is a concurrent Create between its
// CreateSecret and its AddSecretVersion; older, a Create that died there.
const ShellGrace = time.Minute

// Replica is one location of user-managed replication.
type Replica struct {
	// Location is a Google Cloud region, e.g. "europe-west1".
	Location string
	// KMSKeyName is the customer-managed key of this replica
	// (projects/P/locations/L/keyRings/R/cryptoKeys/K, L = Location);
	// empty: Google-managed encryption.
	KMSKeyName string
}

// Options configure a Store.
type Options struct {
	// Project is the Google Cloud project (ID or number) holding the
	// secrets. Required.
	Project string
	// Prefix is the first segment of every secret ID (default "certfn"):
	// a lower-case letter, then up to 29 lower-case letters, digits and
	// '-'.
	Prefix string
	// Classes are the classes this Store reads and writes, in the order a
	// Get tries them (default AllClasses(); a function's own:
	// WorkerClasses, SignerClasses). Writing a secret of another class
	// fails before any call; ca and sc are never written or deleted.
	Classes []Class
	// KMSKeyName is the customer-managed encryption key of new secrets
	// under automatic replication (projects/P/locations/L/keyRings/R/
	// cryptoKeys/K; Secret Manager wants L = "global" there). Empty:
	// Google-managed encryption. Not with Replicas.
	KMSKeyName string
	// Replicas, when set, replace automatic replication with user-managed
	// replication in these locations, each with its own optional key.
	// Existing secrets keep the replication they were created with.
	Replicas []Replica
	// Labels are added to every secret (cost allocation, ownership), next
	// to the managed ones (Key constants); keys must not start with
	// "certfn-", and keys and values must follow Secret Manager's label
	// rules (they are not sanitised).
	Labels map[string]string
	// KeepVersions is how many versions not destroyed a secret keeps,
	// newest first (default 2: the current one and "previous"; at least
	// 2, at most 20). Older ones are destroyed after each write, except
	// versions that an alias other than "previous" names.
	KeepVersions int
	// Metrics, when set, counts certfn_gcp_secretmanager_requests_total{op}.
	Metrics ports.Metrics
	// Clock tells the age of a secret without versions (ShellGrace);
	// default clock.Real.
	Clock ports.Clock
}

// Counts are the requests a Store made (failed ones included), for cost
// figures: Secret Manager bills access operations and, per month, every
// version that is not destroyed.
type Counts struct {
	// Requests per RPC: AccessSecretVersion, CreateSecret, ...
	Requests map[string]int64
	// VersionsAdded and VersionsDestroyed count successful
	// AddSecretVersion and DestroySecretVersion calls.
	VersionsAdded, VersionsDestroyed int64
}

// Total is the number of requests of every RPC.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c.Requests {
		n += v
	}
	return n
}

// Store is the ports.SecretStore on Secret Manager. It is safe for
// concurrent use.
type Store struct {
	api         API
	project     string
	prefix      string
	classes     []Class
	replication *smpb.Replication
	labels      map[string]string
	keep        int
	m           ports.Metrics
	clock       ports.Clock

	mu     sync.Mutex
	counts Counts
	// where remembers the class a secret was last found or written in, so
	// that the next Get tries it first. A hint only: a miss tries the
	// other classes.
	where secretclass.Hints[Class]
	// unfinished holds the IDs whose version maintenance (labels, aliases,
	// destruction) failed after a version was added: a retried Put of the
	// same content finishes it instead of writing nothing. In this process
	// only; otherwise the next write does it.
	unfinished map[string]bool
}

var _ ports.SecretStore = (*Store)(nil)

var (
	projectRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.:-]{0,62}$`)
	kmsKeyRE  = regexp.MustCompile(`^projects/[^/]+/locations/([^/]+)/keyRings/[^/]+/cryptoKeys/[^/]+$`)
)

// New returns a Store through api. It makes no call.
func New(api API, opts Options) (*Store, error) {
	if !projectRE.MatchString(opts.Project) {
		return nil, errs.Permanentf("secret manager store: project: %q is not a project ID or number", opts.Project)
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if !prefixRE.MatchString(opts.Prefix) {
		return nil, errs.Permanentf("secret manager store: prefix: %q is not valid: want a lower-case letter, then lower-case letters, digits and '-', at most 30 characters", opts.Prefix)
	}
	if len(opts.Classes) == 0 {
		opts.Classes = allClasses
	}
	for i, c := range opts.Classes {
		if !c.valid() || slices.Contains(opts.Classes[:i], c) {
			return nil, errs.Permanentf("secret manager store: classes[%d]: %q is not a class or is repeated: want distinct values of %v", i, c, allClasses)
		}
	}
	if opts.KeepVersions == 0 {
		opts.KeepVersions = DefaultKeepVersions
	}
	if opts.KeepVersions < 2 || opts.KeepVersions > maxKeepVersions {
		return nil, errs.Permanentf("secret manager store: keepVersions: %d, want 2 to %d (the current version and \"previous\" at least)", opts.KeepVersions, maxKeepVersions)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	repl, err := replication(opts)
	if err != nil {
		return nil, err
	}
	for k, v := range opts.Labels {
		if strings.HasPrefix(k, managedPrefix) || !validLabel(k, v) {
			return nil, errs.Permanentf("secret manager store: labels[%q]: want a key of 1 to 63 lower-case letters, digits, '_' and '-' starting with a letter and not with %q, and a value of at most 63 of them", k, managedPrefix)
		}
	}
	if len(opts.Labels)+len(managedKeys) > maxLabels {
		return nil, errs.Permanentf("secret manager store: labels: %d, at most %d next to the %d managed ones", len(opts.Labels), maxLabels-len(managedKeys), len(managedKeys))
	}
	return &Store{
		api: api, project: opts.Project, prefix: opts.Prefix, classes: slices.Clone(opts.Classes),
		replication: repl, labels: maps.Clone(opts.Labels), keep: opts.KeepVersions, m: opts.Metrics, clock: opts.Clock,
		counts: Counts{Requests: map[string]int64{}}, unfinished: map[string]bool{},
	}, nil
}

// replication builds the replication policy of new secrets.
func replication(opts Options) (*smpb.Replication, error) {
	if len(opts.Replicas) == 0 {
		auto := &smpb.Replication_Automatic{}
		if opts.KMSKeyName != "" {
			if !kmsKeyRE.MatchString(opts.KMSKeyName) {
				return nil, errs.Permanentf("secret manager store: kmsKeyName: %q is not a key name: want projects/P/locations/L/keyRings/R/cryptoKeys/K", opts.KMSKeyName)
			}
			auto.CustomerManagedEncryption = &smpb.CustomerManagedEncryption{KmsKeyName: opts.KMSKeyName}
		}
		return &smpb.Replication{Replication: &smpb.Replication_Automatic_{Automatic: auto}}, nil
	}
	if opts.KMSKeyName != "" {
		return nil, errs.Permanentf("secret manager store: kmsKeyName: not with replicas: set each replica's key")
	}
	um := &smpb.Replication_UserManaged{}
	for i, r := range opts.Replicas {
		if r.Location == "" || strings.Contains(r.Location, "/") || slices.ContainsFunc(opts.Replicas[:i], func(o Replica) bool { return o.Location == r.Location }) {
			return nil, errs.Permanentf("secret manager store: replicas[%d]: location %q: want a distinct region name", i, r.Location)
		}
		rep := &smpb.Replication_UserManaged_Replica{Location: r.Location}
		if r.KMSKeyName != "" {
			m := kmsKeyRE.FindStringSubmatch(r.KMSKeyName)
			if m == nil || m[1] != r.Location {
				return nil, errs.Permanentf("secret manager store: replicas[%d]: kmsKeyName: %q: want a key in location %s (projects/P/locations/%s/keyRings/R/cryptoKeys/K)", i, r.KMSKeyName, r.Location, r.Location)
			}
			rep.CustomerManagedEncryption = &smpb.CustomerManagedEncryption{KmsKeyName: r.KMSKeyName}
		}
		um.Replicas = append(um.Replicas, rep)
	}
	return &smpb.Replication{Replication: &smpb.Replication_UserManaged_{UserManaged: um}}, nil
}

// Prefix returns the first segment of the Store's secret IDs.
func (s *Store) Prefix() string { return s.prefix }

// Counts returns the requests made so far.
func (s *Store) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts
	c.Requests = maps.Clone(c.Requests)
	return c
}

// ResetCounts zeroes the counts and returns their previous value.
func (s *Store) ResetCounts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts
	s.counts = Counts{Requests: map[string]int64{}}
	return c
}

// count records one request of op; added and destroyed count versions.
func (s *Store) count(op string, added, destroyed int64) {
	s.mu.Lock()
	s.counts.Requests[op]++
	s.counts.VersionsAdded += added
	s.counts.VersionsDestroyed += destroyed
	s.mu.Unlock()
	if s.m != nil {
		s.m.Inc("certfn_gcp_secretmanager_requests_total", "op", op)
	}
}

// secretName is the resource name of secret id.
func (s *Store) secretName(id string) string {
	return "projects/" + s.project + "/secrets/" + id
}

// classify marks the service's answers that no retry can change as
// permanent; everything else keeps its status and stays transient.
func classify(err error) error {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.OutOfRange, codes.Unimplemented:
		return errs.Permanent(err)
	}
	return err
}

func isCode(err error, c codes.Code) bool { return err != nil && status.Code(err) == c }

// castagnoli is the CRC32C table of payload checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// located is where locate found a secret.
type located struct {
	class Class
	id    string
	// data is the newest version's payload; nil when that version cannot
	// be read (disabled or destroyed: unreadable says why).
	data       []byte
	unreadable error
}

// access reads version (a number, an alias or "latest") of secret id.
func (s *Store) access(ctx context.Context, id, version string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := s.api.AccessSecretVersion(ctx, &smpb.AccessSecretVersionRequest{Name: s.secretName(id) + "/versions/" + version})
	s.count("AccessSecretVersion", 0, 0)
	if err != nil {
		return nil, err
	}
	data := resp.GetPayload().GetData()
	if sum := resp.GetPayload().DataCrc32C; sum != nil && int64(crc32.Checksum(data, castagnoli)) != *sum {
		return nil, status.Errorf(codes.DataLoss, "%s: version %s: payload checksum mismatch (%d bytes)", id, version, len(data))
	}
	return data, nil
}

// locate finds namespace/name in the Store's classes (the remembered
// class first): found is false when no class holds a readable or
// unreadable newest version (a secret without versions counts as
// missing).
func (s *Store) locate(ctx context.Context, namespace, name string) (loc located, found bool, err error) {
	for _, c := range s.where.Order(namespace, name, s.classes) {
		id := secretID(s.prefix, c, namespace, name)
		data, err := s.access(ctx, id, "latest")
		switch {
		case err == nil:
			s.where.Remember(namespace, name, c)
			return located{class: c, id: id, data: data}, true, nil
		case isCode(err, codes.NotFound):
			continue
		case isCode(err, codes.FailedPrecondition):
			s.where.Remember(namespace, name, c)
			return located{class: c, id: id, unreadable: err}, true, nil
		default:
			return located{}, false, classify(err)
		}
	}
	s.where.Forget(namespace, name)
	return located{}, false, nil
}

// Get returns the secret's newest version ("latest"), or ports.ErrNotFound.
func (s *Store) Get(ctx context.Context, namespace, name string) (ports.Secret, error) {
	sec, err := s.get(ctx, namespace, name, "")
	if err != nil {
		return ports.Secret{}, fmt.Errorf("secret %s/%s: get: %w", namespace, name, err)
	}
	return sec, nil
}

// Previous returns the version the alias "previous" names: the content a
// Rollback would restore. ports.ErrNotFound when the secret is missing or
// has no previous version.
func (s *Store) Previous(ctx context.Context, namespace, name string) (ports.Secret, error) {
	sec, err := s.get(ctx, namespace, name, AliasPrevious)
	if err != nil {
		return ports.Secret{}, fmt.Errorf("secret %s/%s: get previous: %w", namespace, name, err)
	}
	return sec, nil
}

// get reads the newest version (alias "") or the version alias names.
func (s *Store) get(ctx context.Context, namespace, name, alias string) (ports.Secret, error) {
	if err := checkNames(namespace, name); err != nil {
		return ports.Secret{}, err
	}
	loc, found, err := s.locate(ctx, namespace, name)
	if err != nil {
		return ports.Secret{}, err
	}
	if !found {
		return ports.Secret{}, ports.ErrNotFound
	}
	data := loc.data
	if alias != "" {
		data, err = s.access(ctx, loc.id, alias)
		if isCode(err, codes.NotFound) {
			return ports.Secret{}, ports.ErrNotFound
		}
		if isCode(err, codes.FailedPrecondition) {
			return ports.Secret{}, errs.Permanent(fmt.Errorf("%s: version %q is not readable: %w", loc.id, alias, err))
		}
		if err != nil {
			return ports.Secret{}, classify(err)
		}
	} else if loc.unreadable != nil {
		return ports.Secret{}, errs.Permanent(fmt.Errorf("%s: the newest version is not readable (enable it, or Put a new one): %w", loc.id, loc.unreadable))
	}
	sec, err := decodePayload(data)
	if err != nil {
		return ports.Secret{}, errs.Permanent(fmt.Errorf("%s: %w", loc.id, err))
	}
	sec.Namespace, sec.Name = namespace, name
	return sec, nil
}

// prepare validates sec and returns its payload and the class it is
// written to.
func (s *Store) prepare(sec ports.Secret) (payload []byte, c Class, err error) {
	if err := checkNames(sec.Namespace, sec.Name); err != nil {
		return nil, "", err
	}
	payload, err = encodePayload(sec)
	if err != nil {
		return nil, "", err
	}
	role := RoleOf(sec)
	c = ClassOf(role)
	if !slices.Contains(s.classes, c) {
		return nil, "", errs.Permanentf("a secret of role %s belongs to class %s, which this store does not serve (classes %v)", role, c, s.classes)
	}
	return payload, c, nil
}

// createSecret creates secret id (no version) with its replication,
// labels and annotations; ports.ErrAlreadyExists if it exists.
func (s *Store) createSecret(ctx context.Context, id string, sec ports.Secret) (*smpb.Secret, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	values := managedValues(sec)
	out, err := s.api.CreateSecret(ctx, &smpb.CreateSecretRequest{
		Parent:   "projects/" + s.project,
		SecretId: id,
		Secret: &smpb.Secret{
			Replication: s.replication,
			Labels:      mergeMeta(nil, s.labels, managedLabels(values)),
			Annotations: values,
		},
	})
	s.count("CreateSecret", 0, 0)
	if isCode(err, codes.AlreadyExists) {
		return nil, ports.ErrAlreadyExists
	}
	if err != nil {
		return nil, classify(err)
	}
	return out, nil
}

// addVersion adds payload as the newest version of id and returns its
// number.
func (s *Store) addVersion(ctx context.Context, id string, payload []byte) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	sum := int64(crc32.Checksum(payload, castagnoli))
	v, err := s.api.AddSecretVersion(ctx, &smpb.AddSecretVersionRequest{
		Parent:  s.secretName(id),
		Payload: &smpb.SecretPayload{Data: payload, DataCrc32C: &sum},
	})
	if err != nil {
		s.count("AddSecretVersion", 0, 0)
		return 0, classify(err)
	}
	s.count("AddSecretVersion", 1, 0)
	return versionNumber(v.GetName()), nil
}

// versionNumber parses the number at the end of a version's name (0 if
// none).
func versionNumber(name string) int64 {
	n, err := strconv.ParseInt(name[strings.LastIndexByte(name, '/')+1:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// deleteSecret deletes id (with etag, only that state of it); nil if it
// is missing.
func (s *Store) deleteSecret(ctx context.Context, id, etag string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.api.DeleteSecret(ctx, &smpb.DeleteSecretRequest{Name: s.secretName(id), Etag: etag})
	s.count("DeleteSecret", 0, 0)
	if err != nil && !isCode(err, codes.NotFound) {
		return classify(err)
	}
	return nil
}

// Create writes a new secret; ports.ErrAlreadyExists if it exists in any
// of the Store's classes (one of concurrent creators wins).
func (s *Store) Create(ctx context.Context, sec ports.Secret) error {
	if err := s.create(ctx, sec); err != nil {
		return fmt.Errorf("secret %s/%s: create: %w", sec.Namespace, sec.Name, err)
	}
	return nil
}

func (s *Store) create(ctx context.Context, sec ports.Secret) error {
	payload, c, err := s.prepare(sec)
	if err != nil {
		return err
	}
	if _, found, err := s.locate(ctx, sec.Namespace, sec.Name); err != nil {
		return err
	} else if found {
		return ports.ErrAlreadyExists
	}
	id := secretID(s.prefix, c, sec.Namespace, sec.Name)
	created, err := s.createSecret(ctx, id, sec)
	if errors.Is(err, ports.ErrAlreadyExists) {
		// A concurrent Create between its CreateSecret and its
		// AddSecretVersion, or one that died there (an abandoned shell).
		created, err = s.takeOverShell(ctx, id, sec)
	}
	if err != nil {
		return err
	}
	if _, err := s.addVersion(ctx, id, payload); err != nil {
		// Leave no empty secret behind: it would make the next Create
		// fail until ShellGrace has passed. Only this state of it (etag).
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = s.deleteSecret(dctx, id, created.GetEtag())
		cancel()
		return err
	}
	s.where.Remember(sec.Namespace, sec.Name, c)
	return nil
}

// takeOverShell handles CreateSecret's AlreadyExists for id: a secret with
// a version was created concurrently (ports.ErrAlreadyExists); one without
// any, created more than ShellGrace ago, is deleted (conditionally on its
// etag) and created again.
func (s *Store) takeOverShell(ctx context.Context, id string, sec ports.Secret) (*smpb.Secret, error) {
	_, err := s.access(ctx, id, "latest")
	if !isCode(err, codes.NotFound) {
		if err != nil && !isCode(err, codes.FailedPrecondition) {
			return nil, classify(err)
		}
		return nil, ports.ErrAlreadyExists
	}
	cur, err := s.api.GetSecret(ctx, &smpb.GetSecretRequest{Name: s.secretName(id)})
	s.count("GetSecret", 0, 0)
	if isCode(err, codes.NotFound) {
		return s.createSecret(ctx, id, sec) // deleted meanwhile
	}
	if err != nil {
		return nil, classify(err)
	}
	if ct := cur.GetCreateTime(); ct == nil || s.clock.Now().Sub(ct.AsTime()) < ShellGrace {
		return nil, ports.ErrAlreadyExists
	}
	if err := s.deleteSecret(ctx, id, cur.GetEtag()); err != nil {
		if isCode(err, codes.Aborted) || isCode(err, codes.FailedPrecondition) {
			return nil, ports.ErrAlreadyExists // changed meanwhile: someone else took it
		}
		return nil, err
	}
	return s.createSecret(ctx, id, sec)
}

// Put creates the secret or replaces its whole content. It adds a version
// only when the content differs from the newest one, so a retried Put
// never pushes the real previous version out of "previous". When the
// content's class differs from the class the secret is in (a Certificate
// that became a CA), the secret moves: it is written in the new class and
// deleted from the old one (its older versions go with it).
func (s *Store) Put(ctx context.Context, sec ports.Secret) error {
	if err := s.put(ctx, sec); err != nil {
		return fmt.Errorf("secret %s/%s: put: %w", sec.Namespace, sec.Name, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, sec ports.Secret) error {
	payload, c, err := s.prepare(sec)
	if err != nil {
		return err
	}
	loc, found, err := s.locate(ctx, sec.Namespace, sec.Name)
	if err != nil {
		return err
	}
	if found && !loc.class.writable() {
		return errs.Permanentf("%s is in class %s, which operators own: certfn does not write it", loc.id, loc.class)
	}
	if found && loc.data != nil {
		if cur, err := decodePayload(loc.data); err == nil {
			if err := replaces(cur, sec); err != nil {
				return fmt.Errorf("%s: %w", loc.id, err)
			}
		}
	}
	id := secretID(s.prefix, c, sec.Namespace, sec.Name)
	if found && loc.class == c {
		if loc.data != nil && bytes.Equal(loc.data, payload) {
			if s.isUnfinished(id) {
				return s.maintain(ctx, id, sec)
			}
			return nil
		}
		// New content, or a newest version that cannot be read.
		if _, err := s.addVersion(ctx, id, payload); err != nil {
			return err
		}
		return s.maintain(ctx, id, sec)
	}
	_, err = s.createSecret(ctx, id, sec)
	existed := errors.Is(err, ports.ErrAlreadyExists) // a concurrent creator, or a shell
	if err != nil && !existed {
		return err
	}
	if _, err := s.addVersion(ctx, id, payload); err != nil {
		return err
	}
	if existed {
		if err := s.maintain(ctx, id, sec); err != nil {
			return err
		}
	}
	s.where.Remember(sec.Namespace, sec.Name, c)
	if found {
		if err := s.deleteSecret(ctx, loc.id, ""); err != nil {
			return fmt.Errorf("moved to %s, but deleting %s: %w", id, loc.id, err)
		}
	}
	return nil
}

func (s *Store) isUnfinished(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unfinished[id]
}

// maintain runs after a version was added to id for sec: it sets the
// managed labels and annotations for sec, points "previous" at the second
// newest version not destroyed, and destroys the versions beyond
// KeepVersions (not those another alias names). The secret's etag makes
// the update conditional; a concurrent change is re-read, up to three
// times.
func (s *Store) maintain(ctx context.Context, id string, sec ports.Secret) error {
	err := s.maintainOnce(ctx, id, sec)
	s.mu.Lock()
	if err != nil {
		if len(s.unfinished) >= secretclass.MaxHints {
			clear(s.unfinished)
		}
		s.unfinished[id] = true
	} else {
		delete(s.unfinished, id)
	}
	s.mu.Unlock()
	return err
}

func (s *Store) maintainOnce(ctx context.Context, id string, sec ports.Secret) error {
	name := s.secretName(id)
	values := managedValues(sec)
	for range 3 {
		if err := ctx.Err(); err != nil {
			return err
		}
		cur, err := s.api.GetSecret(ctx, &smpb.GetSecretRequest{Name: name})
		s.count("GetSecret", 0, 0)
		if err != nil {
			return fmt.Errorf("versions: %w", classify(err))
		}
		live, err := s.liveVersions(ctx, name)
		if err != nil {
			return fmt.Errorf("versions: %w", err)
		}
		aliases := maps.Clone(cur.GetVersionAliases())
		if aliases == nil {
			aliases = map[string]int64{}
		}
		delete(aliases, AliasPrevious)
		if len(live) >= 2 {
			aliases[AliasPrevious] = versionNumber(live[1].GetName())
		}
		labels := mergeMeta(cur.GetLabels(), s.labels, managedLabels(values))
		annotations := mergeMeta(cur.GetAnnotations(), nil, values)
		if !maps.Equal(aliases, cur.GetVersionAliases()) || !maps.Equal(labels, cur.GetLabels()) || !maps.Equal(annotations, cur.GetAnnotations()) {
			_, err := s.api.UpdateSecret(ctx, &smpb.UpdateSecretRequest{
				Secret:     &smpb.Secret{Name: name, Etag: cur.GetEtag(), Labels: labels, Annotations: annotations, VersionAliases: aliases},
				UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels", "annotations", "version_aliases"}},
			})
			s.count("UpdateSecret", 0, 0)
			if isCode(err, codes.Aborted) || isCode(err, codes.FailedPrecondition) {
				continue // the etag changed: read again
			}
			if err != nil {
				return fmt.Errorf("update labels and aliases: %w", classify(err))
			}
		}
		pinned := map[int64]bool{}
		for _, v := range aliases {
			pinned[v] = true
		}
		for i, v := range live {
			if i < s.keep || pinned[versionNumber(v.GetName())] {
				continue
			}
			if err := s.destroy(ctx, v); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("versions: %s kept changing while its aliases were updated; try again", id)
}

// liveVersions lists the versions of secret name that are not destroyed
// nor scheduled for destruction, newest first.
func (s *Store) liveVersions(ctx context.Context, name string) ([]*smpb.SecretVersion, error) {
	var out []*smpb.SecretVersion
	token := ""
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		page, err := s.api.ListSecretVersionsPage(ctx, &smpb.ListSecretVersionsRequest{
			Parent: name, PageSize: 100, PageToken: token, Filter: "state:ENABLED OR state:DISABLED",
		})
		s.count("ListSecretVersions", 0, 0)
		if err != nil {
			return nil, classify(err)
		}
		for _, v := range page.GetVersions() {
			if v.GetState() != smpb.SecretVersion_DESTROYED && v.GetScheduledDestroyTime() == nil {
				out = append(out, v)
			}
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	slices.SortFunc(out, func(a, b *smpb.SecretVersion) int {
		return int(versionNumber(b.GetName()) - versionNumber(a.GetName()))
	})
	return out, nil
}

// destroy destroys version v (conditionally on its etag); one destroyed or
// changed meanwhile is left alone.
func (s *Store) destroy(ctx context.Context, v *smpb.SecretVersion) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := s.api.DestroySecretVersion(ctx, &smpb.DestroySecretVersionRequest{Name: v.GetName(), Etag: v.GetEtag()})
	switch {
	case err == nil:
		s.count("DestroySecretVersion", 0, 1)
		return nil
	case isCode(err, codes.NotFound), isCode(err, codes.FailedPrecondition), isCode(err, codes.Aborted):
		s.count("DestroySecretVersion", 0, 0)
		return nil
	}
	s.count("DestroySecretVersion", 0, 0)
	return fmt.Errorf("destroy version %d: %w", versionNumber(v.GetName()), classify(err))
}

// Delete removes the secret and all its versions from every class the
// Store writes; nil if it is missing. Secrets of the operators' classes
// (ca, sc) are never deleted.
func (s *Store) Delete(ctx context.Context, namespace, name string) error {
	if err := checkNames(namespace, name); err != nil {
		return fmt.Errorf("secret %s/%s: delete: %w", namespace, name, err)
	}
	s.where.Forget(namespace, name)
	for _, c := range s.classes {
		if !c.writable() {
			continue
		}
		if err := s.deleteSecret(ctx, secretID(s.prefix, c, namespace, name), ""); err != nil {
			return fmt.Errorf("secret %s/%s: delete: %w", namespace, name, err)
		}
	}
	return nil
}

// Rollback makes the previous version current again: it adds a copy of
// the version "previous" names as the newest version, so "previous" then
// names the version rolled back from (a second Rollback undoes the first),
// and sets the labels and annotations for the restored content.
// ports.ErrNotFound if the secret is missing; a permanent error if it has
// no readable previous version.
func (s *Store) Rollback(ctx context.Context, namespace, name string) error {
	fail := func(err error) error { return fmt.Errorf("secret %s/%s: rollback: %w", namespace, name, err) }
	if err := checkNames(namespace, name); err != nil {
		return fail(err)
	}
	loc, found, err := s.locate(ctx, namespace, name)
	if err != nil {
		return fail(err)
	}
	if !found {
		return fail(ports.ErrNotFound)
	}
	if !loc.class.writable() {
		return fail(errs.Permanentf("%s is in class %s, which operators own: certfn does not write it", loc.id, loc.class))
	}
	data, err := s.access(ctx, loc.id, AliasPrevious)
	switch {
	case isCode(err, codes.NotFound):
		return fail(errs.Permanentf("%s: no previous version kept", loc.id))
	case isCode(err, codes.FailedPrecondition):
		return fail(errs.Permanent(fmt.Errorf("%s: the previous version is not readable: %w", loc.id, err)))
	case err != nil:
		return fail(classify(err))
	}
	prev, err := decodePayload(data)
	if err != nil {
		return fail(errs.Permanent(fmt.Errorf("%s: previous version: %w", loc.id, err)))
	}
	prev.Namespace, prev.Name = namespace, name
	if _, err := s.addVersion(ctx, loc.id, data); err != nil {
		return fail(err)
	}
	if err := s.maintain(ctx, loc.id, prev); err != nil {
		return fail(err)
	}
	return nil
}
