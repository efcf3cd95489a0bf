// Package secrets implements ports.SecretStore on AWS Secrets Manager
// (docs/design/resources.md). See docs/deploy/aws.md.
//
//   - A secret is named <prefix>/<namespace>/<name>.
//   - Its value is one JSON object with the same keys as the local store's
//     files (tls.crt, tls.key, ca.crt, any additional output), UTF-8 text
//     as is and other bytes base64-encoded, plus a "..metadata" member with
//     the labels and annotations.
//   - It is encrypted with a configurable KMS key and tagged with its
//     namespace, certificate, issuer, revision and notAfter.
//   - Put writes a new version only when the content changed: AWSCURRENT
//     moves to it and AWSPREVIOUS keeps the previous key pair, which
//     Rollback makes current again.
//   - Errors name secrets, keys and sizes, never values.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/ports"
)

// API is the subset of *secretsmanager.Client the store calls.
type API interface {
	CreateSecret(ctx context.Context, in *sm.CreateSecretInput, optFns ...func(*sm.Options)) (*sm.CreateSecretOutput, error)
	GetSecretValue(ctx context.Context, in *sm.GetSecretValueInput, optFns ...func(*sm.Options)) (*sm.GetSecretValueOutput, error)
	PutSecretValue(ctx context.Context, in *sm.PutSecretValueInput, optFns ...func(*sm.Options)) (*sm.PutSecretValueOutput, error)
	DeleteSecret(ctx context.Context, in *sm.DeleteSecretInput, optFns ...func(*sm.Options)) (*sm.DeleteSecretOutput, error)
	DescribeSecret(ctx context.Context, in *sm.DescribeSecretInput, optFns ...func(*sm.Options)) (*sm.DescribeSecretOutput, error)
	TagResource(ctx context.Context, in *sm.TagResourceInput, optFns ...func(*sm.Options)) (*sm.TagResourceOutput, error)
	UpdateSecretVersionStage(ctx context.Context, in *sm.UpdateSecretVersionStageInput, optFns ...func(*sm.Options)) (*sm.UpdateSecretVersionStageOutput, error)
}

var _ API = (*sm.Client)(nil)

// Version stages Secrets Manager maintains.
const (
	StageCurrent  = "AWSCURRENT"
	StagePrevious = "AWSPREVIOUS"
)

// DefaultPrefix is the default first segment of secret names.
const DefaultPrefix = "certfn"

// maxNameLen is Secrets Manager's limit on a secret name.
const maxNameLen = 512

// prefixRE is what a prefix may hold: the characters of a secret name,
// without leading, trailing or doubled '/'.
var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_+=.@-]+(/[A-Za-z0-9_+=.@-]+)*$`)

// Options configure a Store.
type Options struct {
	// Prefix is the first part of every secret name (default "certfn").
	Prefix string
	// KMSKeyID encrypts new secrets (a key id, ARN or alias); empty means
	// the account's aws/secretsmanager key. Existing secrets keep theirs.
	KMSKeyID string
	// Tags are added to every secret created (cost allocation, ownership),
	// next to the managed tags (see the Tag constants).
	Tags map[string]string
	// Metrics, when set, counts certfn_secretsmanager_requests_total{op}.
	Metrics ports.Metrics
}

// Store is the ports.SecretStore on Secrets Manager. It is safe for
// concurrent use.
type Store struct {
	client API
	prefix string
	kms    string
	tags   map[string]string
	m      ports.Metrics
}

var _ ports.SecretStore = (*Store)(nil)

// New returns a Store through client. It makes no call.
func New(client API, opts Options) (*Store, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if !prefixRE.MatchString(opts.Prefix) || len(opts.Prefix) > 128 {
		return nil, errs.Permanentf("secrets manager store: prefix: %q is not valid: want letters, digits and _+=.@- in '/'-separated segments, at most 128 characters", opts.Prefix)
	}
	for k, v := range opts.Tags {
		if k == "" || len(k) > 128 || strings.HasPrefix(k, "aws:") || strings.HasPrefix(k, "certfn.io/") {
			return nil, errs.Permanentf("secrets manager store: tags[%q]: want 1 to 128 characters, not starting with \"aws:\" or \"certfn.io/\"", k)
		}
		if tagValue(v) != v {
			return nil, errs.Permanentf("secrets manager store: tags[%q]: value must be at most 256 letters, digits, spaces and _.:/=+-@", k)
		}
	}
	return &Store{client: client, prefix: opts.Prefix, kms: opts.KMSKeyID, tags: maps.Clone(opts.Tags), m: opts.Metrics}, nil
}

// SecretID returns the Secrets Manager name of namespace/name,
// <prefix>/<namespace>/<name>, after validating both.
func (s *Store) SecretID(namespace, name string) (string, error) {
	if err := checkName("namespace", namespace); err != nil {
		return "", fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	if err := checkName("name", name); err != nil {
		return "", fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	id := s.prefix + "/" + namespace + "/" + name
	if len(id) > maxNameLen {
		return "", errs.Permanentf("secret %s/%s: name %d characters long, Secrets Manager allows %d", namespace, name, len(id), maxNameLen)
	}
	return id, nil
}

func (s *Store) inc(op string) {
	if s.m != nil {
		s.m.Inc("certfn_secretsmanager_requests_total", "op", op)
	}
}

// isNotFound reports a missing secret: ResourceNotFoundException, or a
// secret already marked for deletion (InvalidRequestException), which is
// gone for every purpose of the store.
func isNotFound(err error) bool {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return true
	}
	var ir *types.InvalidRequestException
	return errors.As(err, &ir) && strings.Contains(strings.ToLower(ir.ErrorMessage()), "marked for deletion")
}

func isExists(err error) bool {
	var ex *types.ResourceExistsException
	return errors.As(err, &ex)
}

// Get returns the secret's current version (AWSCURRENT), or
// ports.ErrNotFound.
func (s *Store) Get(ctx context.Context, namespace, name string) (ports.Secret, error) {
	id, err := s.SecretID(namespace, name)
	if err != nil {
		return ports.Secret{}, err
	}
	sec, _, err := s.get(ctx, id, StageCurrent)
	if err != nil {
		return ports.Secret{}, fmt.Errorf("secret %s/%s: get: %w", namespace, name, err)
	}
	sec.Namespace, sec.Name = namespace, name
	return sec, nil
}

// get reads one version stage of id; ports.ErrNotFound when id is missing.
// raw is the secret string as stored.
func (s *Store) get(ctx context.Context, id, stage string) (sec ports.Secret, raw string, err error) {
	if err := ctx.Err(); err != nil {
		return ports.Secret{}, "", err
	}
	out, err := s.client.GetSecretValue(ctx, &sm.GetSecretValueInput{SecretId: aws.String(id), VersionStage: aws.String(stage)})
	s.inc("GetSecretValue")
	if isNotFound(err) {
		return ports.Secret{}, "", ports.ErrNotFound
	}
	if err != nil {
		return ports.Secret{}, "", err
	}
	if out.SecretString == nil {
		return ports.Secret{}, "", errs.Permanentf("%s holds a binary value, not a certfn JSON payload", id)
	}
	sec, err = decodePayload(*out.SecretString)
	if err != nil {
		return ports.Secret{}, "", errs.Permanent(fmt.Errorf("%s: %w", id, err))
	}
	return sec, *out.SecretString, nil
}

// tagList renders the managed tags of sec plus extra.
func tagList(sec ports.Secret, extra map[string]string) []types.Tag {
	all := tagsFor(sec)
	maps.Copy(all, extra)
	out := make([]types.Tag, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(all[k])})
	}
	return out
}

// Create writes a new secret; ports.ErrAlreadyExists if it exists (one of
// concurrent creators wins).
func (s *Store) Create(ctx context.Context, sec ports.Secret) error {
	id, err := s.SecretID(sec.Namespace, sec.Name)
	if err != nil {
		return err
	}
	if err := s.create(ctx, id, sec); err != nil {
		return fmt.Errorf("secret %s/%s: create: %w", sec.Namespace, sec.Name, err)
	}
	return nil
}

// create is CreateSecret with the payload, KMS key and tags.
func (s *Store) create(ctx context.Context, id string, sec ports.Secret) error {
	payload, err := encodePayload(sec)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	in := &sm.CreateSecretInput{
		Name:         aws.String(id),
		SecretString: aws.String(payload),
		Description:  aws.String("certfn secret " + sec.Namespace + "/" + sec.Name),
		Tags:         tagList(sec, s.tags),
	}
	if s.kms != "" {
		in.KmsKeyId = aws.String(s.kms)
	}
	_, err = s.client.CreateSecret(ctx, in)
	s.inc("CreateSecret")
	if isExists(err) {
		return ports.ErrAlreadyExists
	}
	return err
}

// Put creates the secret or replaces its whole content. When the content
// differs from the current version it puts a new version (AWSCURRENT; the
// replaced one becomes AWSPREVIOUS) and updates the managed tags; a Put of
// the current content writes nothing, so a retried Put never pushes the
// real previous version out of AWSPREVIOUS.
func (s *Store) Put(ctx context.Context, sec ports.Secret) error {
	id, err := s.SecretID(sec.Namespace, sec.Name)
	if err != nil {
		return err
	}
	if err := s.put(ctx, id, sec); err != nil {
		return fmt.Errorf("secret %s/%s: put: %w", sec.Namespace, sec.Name, err)
	}
	return nil
}

func (s *Store) put(ctx context.Context, id string, sec ports.Secret) error {
	payload, err := encodePayload(sec)
	if err != nil {
		return err
	}
	// Two rounds: a concurrent creator may win between our read and our
	// create; then the secret exists and the second round updates it.
	for range 2 {
		cur, raw, err := s.get(ctx, id, StageCurrent)
		switch {
		case errors.Is(err, ports.ErrNotFound):
			err := s.create(ctx, id, sec)
			if errors.Is(err, ports.ErrAlreadyExists) {
				continue
			}
			return err
		case err != nil && !errs.IsPermanent(err):
			return err
		case err == nil && raw == payload:
			return nil
		case err == nil:
			if err := Replaces(cur, sec); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		// A current version that does not decode is replaced as well.
		if _, err := s.client.PutSecretValue(ctx, &sm.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String(payload)}); err != nil {
			s.inc("PutSecretValue")
			return err
		}
		s.inc("PutSecretValue")
		cur.Namespace = sec.Namespace
		if tags := tagList(sec, nil); cur.Data == nil || !slices.EqualFunc(tags, tagList(cur, nil), tagEqual) {
			if err := s.tag(ctx, id, tags); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("created and deleted concurrently; try again")
}

func tagEqual(a, b types.Tag) bool {
	return aws.ToString(a.Key) == aws.ToString(b.Key) && aws.ToString(a.Value) == aws.ToString(b.Value)
}

// tag sets tags on id.
func (s *Store) tag(ctx context.Context, id string, tags []types.Tag) error {
	_, err := s.client.TagResource(ctx, &sm.TagResourceInput{SecretId: aws.String(id), Tags: tags})
	s.inc("TagResource")
	if err != nil {
		return fmt.Errorf("tag: %w", err)
	}
	return nil
}

// Delete removes the secret at once (ForceDeleteWithoutRecovery, as
// Kubernetes deletes a Secret); nil if it is missing.
func (s *Store) Delete(ctx context.Context, namespace, name string) error {
	id, err := s.SecretID(namespace, name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("secret %s/%s: delete: %w", namespace, name, err)
	}
	_, err = s.client.DeleteSecret(ctx, &sm.DeleteSecretInput{SecretId: aws.String(id), ForceDeleteWithoutRecovery: aws.Bool(true)})
	s.inc("DeleteSecret")
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("secret %s/%s: delete: %w", namespace, name, err)
	}
	return nil
}

// Rollback makes the previous version (AWSPREVIOUS) current again, and the
// current one previous (a second Rollback undoes the first), then re-tags
// the secret for the restored content. ports.ErrNotFound if the secret is
// missing; a permanent error if it has no previous version.
func (s *Store) Rollback(ctx context.Context, namespace, name string) error {
	id, err := s.SecretID(namespace, name)
	if err != nil {
		return err
	}
	fail := func(err error) error { return fmt.Errorf("secret %s/%s: rollback: %w", namespace, name, err) }
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	desc, err := s.client.DescribeSecret(ctx, &sm.DescribeSecretInput{SecretId: aws.String(id)})
	s.inc("DescribeSecret")
	if isNotFound(err) {
		return fail(ports.ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	var current, previous string
	for v, stages := range desc.VersionIdsToStages {
		if slices.Contains(stages, StageCurrent) {
			current = v
		}
		if slices.Contains(stages, StagePrevious) {
			previous = v
		}
	}
	if previous == "" || current == "" {
		return fail(errs.Permanentf("no previous version kept"))
	}
	_, err = s.client.UpdateSecretVersionStage(ctx, &sm.UpdateSecretVersionStageInput{
		SecretId:            aws.String(id),
		VersionStage:        aws.String(StageCurrent),
		MoveToVersionId:     aws.String(previous),
		RemoveFromVersionId: aws.String(current),
	})
	s.inc("UpdateSecretVersionStage")
	if err != nil {
		return fail(err)
	}
	restored, _, err := s.get(ctx, id, StageCurrent)
	if err != nil {
		return fail(err)
	}
	restored.Namespace = namespace
	if err := s.tag(ctx, id, tagList(restored, nil)); err != nil {
		return fail(err)
	}
	return nil
}

// Name returns the Secrets Manager name <prefix>/<namespace>/<name> of a
// secret (prefix DefaultPrefix when empty) without validating it: what
// the API reports as the secret's reference (the ARN carries a random
// suffix only Secrets Manager knows).
func Name(prefix, namespace, name string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + "/" + namespace + "/" + name
}
