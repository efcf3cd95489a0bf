// Package secretstest holds a HAND-WRITTEN TEST DOUBLE of AWS Secrets
// Manager for tests outside adapters/aws/secrets (the Lambda assembly in
// internal/awsmode and the AWS end-to-end tests in tests/awse2e).
//
// HAND-WRITTEN TEST DOUBLE — NOT AWS SECRETS MANAGER.
//
// It is a copy, with an exported API, of adapters/aws/secrets/double_test.go
// (which the secrets package's own contract tests use). No Secrets Manager
// emulator can be installed on these machines, so Double is an
// httptest.Server that speaks the service's JSON protocol (awsJson1_1:
// POST /, X-Amz-Target: secretsmanager.<Op>, errors as {"__type": ...} with
// HTTP 400) for the operations the adapter uses — CreateSecret,
// GetSecretValue, PutSecretValue, DeleteSecret, DescribeSecret, TagResource,
// UpdateSecretVersionStage — with the behaviour AWS documents for them:
// names unique, AWSCURRENT/AWSPREVIOUS moved by each new version,
// ClientRequestToken idempotency, forced deletion. It can also answer
// ThrottlingException for the next N calls, and it counts calls per
// operation (the end-to-end cost figures). It is not a faithful emulator
// (no IAM policies, replication, rotation, recovery windows, pagination,
// ARN suffix rules): only LocalStack or the real service can confirm
// behaviour.
package secretstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Version stages Secrets Manager maintains (the same values as
// adapters/aws/secrets.StageCurrent and StagePrevious).
const (
	StageCurrent  = "AWSCURRENT"
	StagePrevious = "AWSPREVIOUS"
)

// smVersion is one version of a fake secret.
type smVersion struct {
	id     string
	value  string
	stages []string
}

// smSecret is one fake secret.
type smSecret struct {
	name     string
	arn      string
	kmsKeyID string
	tags     map[string]string
	versions []*smVersion // oldest first
	marked   bool         // deleted with a recovery window: marked for deletion
}

// Double is a running test double. It is safe for concurrent use.
type Double struct {
	mu       sync.Mutex
	secrets  map[string]*smSecret // by name
	seq      int
	calls    map[string]int // by operation
	throttle int            // answer ThrottlingException to the next throttle calls
	url      string
}

// New starts a double on a loopback port for the life of t.
func New(t testing.TB) *Double {
	t.Helper()
	f := &Double{secrets: map[string]*smSecret{}, calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// URL is the endpoint to give the SDK (e.g. awscfg.ForEndpoint(d.URL(), ...)).
func (f *Double) URL() string { return f.url }

// Calls returns how many times op (e.g. "GetSecretValue") was called,
// throttled calls included.
func (f *Double) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// CallsByOp returns a copy of the call counts per operation.
func (f *Double) CallsByOp() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.calls))
	for k, v := range f.calls {
		out[k] = v
	}
	return out
}

// TotalCalls returns the number of calls of every operation.
func (f *Double) TotalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, v := range f.calls {
		n += v
	}
	return n
}

// ResetCalls zeroes the call counts.
func (f *Double) ResetCalls() {
	f.mu.Lock()
	f.calls = map[string]int{}
	f.mu.Unlock()
}

// SetThrottle makes the next n calls fail with ThrottlingException.
func (f *Double) SetThrottle(n int) {
	f.mu.Lock()
	f.throttle = n
	f.mu.Unlock()
}

// Names returns the names of the stored secrets (not marked for
// deletion), sorted.
func (f *Double) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for name, s := range f.secrets {
		if !s.marked {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Tags returns a copy of the tags of secret name (nil when absent).
func (f *Double) Tags(name string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.secrets[name]
	if !ok {
		return nil
	}
	out := make(map[string]string, len(s.tags))
	for k, v := range s.tags {
		out[k] = v
	}
	return out
}

// smError is an error reply.
type smError struct {
	typ, msg string
}

// ServeHTTP answers one Secrets Manager JSON-protocol call.
func (f *Double) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "secretsmanager.")
	if r.Method != http.MethodPost || !ok {
		http.Error(w, "not a Secrets Manager call", http.StatusBadRequest)
		return
	}
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"__type": "SerializationException", "message": err.Error()})
		return
	}
	out, serr := f.call(op, in)
	if serr != nil {
		status := http.StatusBadRequest
		if serr.typ == "InternalServiceError" {
			status = http.StatusInternalServerError
		}
		writeJSON(w, status, map[string]any{"__type": serr.typ, "message": serr.msg})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// str reads a string member ("" when absent).
func str(in map[string]any, k string) string {
	s, _ := in[k].(string)
	return s
}

// call runs one operation under the lock.
func (f *Double) call(op string, in map[string]any) (map[string]any, *smError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.throttle > 0 {
		f.throttle--
		return nil, &smError{"ThrottlingException", "Rate exceeded"}
	}
	switch op {
	case "CreateSecret":
		return f.createSecret(in)
	case "GetSecretValue":
		return f.getSecretValue(in)
	case "PutSecretValue":
		return f.putSecretValue(in)
	case "DeleteSecret":
		return f.deleteSecret(in)
	case "DescribeSecret":
		return f.describeSecret(in)
	case "TagResource":
		return f.tagResource(in)
	case "UpdateSecretVersionStage":
		return f.updateSecretVersionStage(in)
	}
	return nil, &smError{"UnknownOperationException", "the test double does not implement " + op}
}

// lookup finds a secret by name or ARN.
func (f *Double) lookup(id string) (*smSecret, *smError) {
	if s, ok := f.secrets[id]; ok {
		if s.marked {
			return nil, &smError{"InvalidRequestException", "You can't perform this operation on the secret because it was marked for deletion."}
		}
		return s, nil
	}
	for _, s := range f.secrets {
		if s.arn == id && !s.marked {
			return s, nil
		}
	}
	return nil, &smError{"ResourceNotFoundException", "Secrets Manager can't find the specified secret."}
}

func (s *smSecret) version(id string) *smVersion {
	for _, v := range s.versions {
		if v.id == id {
			return v
		}
	}
	return nil
}

func (s *smSecret) staged(stage string) *smVersion {
	for _, v := range s.versions {
		if slices.Contains(v.stages, stage) {
			return v
		}
	}
	return nil
}

func removeStage(v *smVersion, stage string) {
	if v != nil {
		v.stages = slices.DeleteFunc(v.stages, func(s string) bool { return s == stage })
	}
}

// addCurrent makes v AWSCURRENT; the old current becomes AWSPREVIOUS.
func (s *smSecret) addCurrent(v *smVersion) {
	old := s.staged(StageCurrent)
	if old == v {
		return
	}
	removeStage(s.staged(StagePrevious), StagePrevious)
	removeStage(old, StageCurrent)
	if old != nil {
		old.stages = append(old.stages, StagePrevious)
	}
	removeStage(v, StagePrevious)
	v.stages = append(v.stages, StageCurrent)
	// Versions without a stage are deprecated; AWS keeps a few, the double none.
	s.versions = slices.DeleteFunc(s.versions, func(x *smVersion) bool { return len(x.stages) == 0 && x != v })
}

func (f *Double) token(in map[string]any) string {
	if t := str(in, "ClientRequestToken"); t != "" {
		return t
	}
	f.seq++
	return fmt.Sprintf("version-%d", f.seq)
}

func tagsOf(in map[string]any) map[string]string {
	out := map[string]string{}
	list, _ := in["Tags"].([]any)
	for _, t := range list {
		m, _ := t.(map[string]any)
		out[str(m, "Key")] = str(m, "Value")
	}
	return out
}

func (f *Double) createSecret(in map[string]any) (map[string]any, *smError) {
	name := str(in, "Name")
	if name == "" {
		return nil, &smError{"InvalidParameterException", "Name is required"}
	}
	if s, ok := f.secrets[name]; ok {
		if s.marked {
			return nil, &smError{"InvalidRequestException", "You can't create this secret because a secret with this name is already scheduled for deletion."}
		}
		return nil, &smError{"ResourceExistsException", "The operation failed because the secret " + name + " already exists."}
	}
	f.seq++
	s := &smSecret{name: name, arn: fmt.Sprintf("arn:aws:secretsmanager:us-east-1:123456789012:secret:%s-%06d", name, f.seq),
		kmsKeyID: str(in, "KmsKeyId"), tags: tagsOf(in)}
	v := &smVersion{id: f.token(in), value: str(in, "SecretString")}
	s.addCurrent(v)
	s.versions = append(s.versions, v)
	f.secrets[name] = s
	return map[string]any{"ARN": s.arn, "Name": name, "VersionId": v.id}, nil
}

func (f *Double) getSecretValue(in map[string]any) (map[string]any, *smError) {
	s, err := f.lookup(str(in, "SecretId"))
	if err != nil {
		return nil, err
	}
	var v *smVersion
	switch id, stage := str(in, "VersionId"), str(in, "VersionStage"); {
	case id != "":
		v = s.version(id)
	case stage != "":
		v = s.staged(stage)
	default:
		v = s.staged(StageCurrent)
	}
	if v == nil {
		return nil, &smError{"ResourceNotFoundException", "Secrets Manager can't find the specified secret value for the version."}
	}
	return map[string]any{"ARN": s.arn, "Name": s.name, "VersionId": v.id, "SecretString": v.value, "VersionStages": v.stages}, nil
}

func (f *Double) putSecretValue(in map[string]any) (map[string]any, *smError) {
	s, err := f.lookup(str(in, "SecretId"))
	if err != nil {
		return nil, err
	}
	token, value := f.token(in), str(in, "SecretString")
	if v := s.version(token); v != nil {
		if v.value != value {
			return nil, &smError{"ResourceExistsException", "A version with this ClientRequestToken already exists with different content."}
		}
		return map[string]any{"ARN": s.arn, "Name": s.name, "VersionId": v.id, "VersionStages": v.stages}, nil
	}
	v := &smVersion{id: token, value: value}
	s.versions = append(s.versions, v)
	s.addCurrent(v)
	return map[string]any{"ARN": s.arn, "Name": s.name, "VersionId": v.id, "VersionStages": v.stages}, nil
}

func (f *Double) deleteSecret(in map[string]any) (map[string]any, *smError) {
	s, err := f.lookup(str(in, "SecretId"))
	if err != nil {
		return nil, err
	}
	if force, _ := in["ForceDeleteWithoutRecovery"].(bool); force {
		delete(f.secrets, s.name)
	} else {
		s.marked = true
	}
	return map[string]any{"ARN": s.arn, "Name": s.name}, nil
}

func (f *Double) describeSecret(in map[string]any) (map[string]any, *smError) {
	s, err := f.lookup(str(in, "SecretId"))
	if err != nil {
		return nil, err
	}
	stages := map[string][]string{}
	for _, v := range s.versions {
		stages[v.id] = v.stages
	}
	var tags []map[string]string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.tags {
			if !yield(k) {
				return
			}
		}
	}) {
		tags = append(tags, map[string]string{"Key": k, "Value": s.tags[k]})
	}
	out := map[string]any{"ARN": s.arn, "Name": s.name, "VersionIdsToStages": stages, "Tags": tags}
	if s.kmsKeyID != "" {
		out["KmsKeyId"] = s.kmsKeyID
	}
	return out, nil
}

func (f *Double) tagResource(in map[string]any) (map[string]any, *smError) {
	s, err := f.lookup(str(in, "SecretId"))
	if err != nil {
		return nil, err
	}
	for k, v := range tagsOf(in) {
		s.tags[k] = v
	}
	return map[string]any{}, nil
}

func (f *Double) updateSecretVersionStage(in map[string]any) (map[string]any, *smError) {
	s, err := f.lookup(str(in, "SecretId"))
	if err != nil {
		return nil, err
	}
	stage := str(in, "VersionStage")
	to, from := s.version(str(in, "MoveToVersionId")), str(in, "RemoveFromVersionId")
	if to == nil {
		return nil, &smError{"InvalidParameterException", "MoveToVersionId does not name a version"}
	}
	holder := s.staged(stage)
	if holder != nil && holder != to && holder.id != from {
		return nil, &smError{"InvalidParameterException", "The staging label " + stage + " is attached to another version: name it in RemoveFromVersionId."}
	}
	if stage == StageCurrent {
		s.addCurrent(to)
	} else {
		removeStage(holder, stage)
		removeStage(to, stage)
		to.stages = append(to.stages, stage)
	}
	return map[string]any{"ARN": s.arn, "Name": s.name}, nil
}
