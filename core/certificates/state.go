// Package certificates is the controller package of the Certificate kind,
// named as cert-manager's pkg/controller/certificates
// (docs/design/certificate-controllers.md). Each step is one file and one
// exported function; the Controller (controller.go) runs them in this order
// and stops after the first one that writes (one step per invocation): trigger.go
// (TriggerStep), keymanager.go (KeyManagerStep), requestmanager.go
// (RequestManagerStep), issuing.go (IssuingStep), readiness.go
// (ReadinessStep), outputs.go (OutputsStep, the issuing controller's
// output refresh), then certfn's extensions acmimport.go (ACMImportStep)
// and notify.go (NotifyStep). What the steps share is in state.go (the
// loaded State of one Certificate and the Env through which a step acts),
// owner.go (who owns spec.secretName) and policies.go (when to issue).
// The key generation stage is the sub-package keygen; the test builders
// and doubles are certtest.
package certificates

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/certfn/certfn/core/kernel"
	"sort"
	"strconv"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/step"
)

// Request is an owned CertificateRequest with its stored version.
type Request struct {
	CR      *api.CertificateRequest
	Version int64
}

// Revision returns the request's revision annotation, or 0 when absent or invalid.
func (r Request) Revision() int {
	n, err := strconv.Atoi(r.CR.Annotations[api.AnnotationRevision])
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// Writer is how a step changes stored state. Every call is a conditional
// write; a lost race returns ports.ErrConflict and the step returns it.
// Successful writes enqueue the written key and its owner.
type Writer interface {
	// UpdateCertificate writes st.Cert (status and metadata) conditionally on
	// st.Version, with nextRunAt as the record's due time (zero: none).
	UpdateCertificate(ctx context.Context, st *State, nextRunAt time.Time) error
	// CreateRequest stores a new CertificateRequest owned by the Certificate.
	CreateRequest(ctx context.Context, st *State, cr *api.CertificateRequest) error
	// DeleteRequest deletes an owned request conditionally on its version.
	DeleteRequest(ctx context.Context, r Request) error
	// SecretWritten tells the controller spec.secretName was (re)written, so
	// issuers signing with that secret are checked again.
	SecretWritten(ctx context.Context, namespace, name string) error
	// Enqueue asks for a reconcile of key after delay.
	Enqueue(ctx context.Context, key api.Key, delay time.Duration) error
}

// Env is what the steps get from the outside: no step calls time.Now or a
// store directly.
type Env struct {
	Clock   ports.Clock
	Secrets ports.SecretStore
	Writer  Writer
	Metrics ports.Metrics
	// Identity is certfn's own requester identity, recorded on the
	// CertificateRequests the steps create (docs/design/certificates-api.md).
	Username string
	UID      string
	Groups   []string
	// WaitPoll is how long a Certificate waiting on another resource waits
	// before checking again on its own (the writes of that resource wake it earlier).
	WaitPoll time.Duration
	// Importer copies key pairs into AWS Certificate Manager for
	// Certificates annotated certfn.io/acm-import (nil: not configured;
	// see core/certificates/acmimport.go).
	Importer ports.CertificateImporter
	// Notifier publishes what happens to Certificates (nil: notifications
	// are off; see core/certificates/notify.go).
	Notifier ports.Notifier
	// NotifyExpiryWindow is how long before its expiry a certificate is
	// announced as expiring, once a day (0: never).
	NotifyExpiryWindow time.Duration
	// Keys generates next private keys (nil: pki.GenerateKey, unshared).
	Keys KeyGenerator
	// KeyPolicy, when set, is asked before a next private key is
	// generated whether any approver could allow it (nil: no check, as
	// with an approver that has no policies).
	KeyPolicy KeyPolicy
}

// KeyGenerator generates the private key of a Certificate of namespace
// as spec asks. It may refuse for now with an error wrapping
// ErrKeyGenerationBusy (the namespace has its share of key generation in
// flight): the caller looks again after KeyGenerationRetry, its worker
// free for other work meanwhile.
type KeyGenerator interface {
	Generate(ctx context.Context, namespace string, spec *api.CertificatePrivateKey) (crypto.Signer, error)
}

// ErrKeyGenerationBusy: this namespace already has its share of the
// expensive key generations in flight.
var ErrKeyGenerationBusy = errors.New("key generation is busy for this namespace")

// KeyGenerationRetry is how soon a Certificate refused by a busy key
// generation looks again.
const KeyGenerationRetry = 2 * time.Second

// KeyPolicy decides, before a key exists, whether the requests of a
// Certificate could be approved with the key spec.privateKey asks for.
type KeyPolicy interface {
	// RefuseKey returns why no request of crt could be approved with its
	// spec.privateKey ("" when one could, or when that is not known
	// before the request exists). The message names spec.privateKey and
	// the bounds that refuse it.
	RefuseKey(ctx context.Context, crt *api.Certificate) (string, error)
}

// ReasonKeyNotAllowed is the reason of the Issuing (and Ready) condition
// of a Certificate whose spec.privateKey no applicable policy allows: no
// key was generated and no request created for it.
const ReasonKeyNotAllowed = "KeyNotAllowed"

// State is everything one reconcile of a Certificate reads. The
// controller loads it once per invocation; steps read it and act through Env.
type State struct {
	Cert      *api.Certificate
	Version   int64
	NextRunAt time.Time
	Now       time.Time

	// Events receives the Events the steps record about the Certificate
	// (cert-manager's reasons: Issuing, Generated, Reused, Requested;
	// certfn's Issued and Renewed; Failed, KeyNotAllowed); nil drops them
	// (a State a test builds). A step records before its write: the
	// kernel writes the Event once that write succeeded.
	Events func(kernel.Note)
	// reusedKey says the next-key secret holds the stored key
	// (rotationPolicy Never), for the keymanager's Event.
	reusedKey bool

	// Secret is spec.secretName, nil when it does not exist. When
	// SecretLoader is set the secret has not been read yet: steps that look
	// at it call LoadSecret first. The trigger does on every reconcile, as
	// Ownership reads the secret's certificate-name annotation: a secret
	// that names this Certificate spares the listing of the namespace's
	// Certificates.
	Secret       *ports.Secret
	SecretLoader func(context.Context) (*ports.Secret, error)
	// Requests are the CertificateRequests this Certificate owns.
	Requests []Request

	// Sharers are the other Certificates of the namespace with the same
	// spec.secretName. When SharersLoader is set they have not been listed
	// yet: Ownership lists them only when the secret does not already
	// name this Certificate.
	Sharers       []*api.Certificate
	SharersLoader func(context.Context) ([]*api.Certificate, error)
	owner         *Ownership

	// SecretUsesLoader lists the references to spec.secretName by the
	// issuers whose secrets live in the Certificate's namespace, and with
	// certificates true also by the keystores of the namespace's other
	// Certificates (nil: none). Ownership calls it only for a secret that
	// does not name this Certificate.
	SecretUsesLoader func(ctx context.Context, certificates bool) ([]api.SecretUse, error)
	// FileBounds bound the file permissions spec.secretTemplate may ask
	// for (nil: not bounded, the secret store ignores them).
	FileBounds *api.SecretFileBounds

	nextKeyLoaded bool
	nextKey       *ports.Secret

	// parsed memoizes Parse for parsedFor (the Secret it was computed from).
	parsedFor     *ports.Secret
	parsed        *Issued
	parsedProblem IssuedProblem
}

// LoadSecret reads spec.secretName if it has not been read yet.
func (s *State) LoadSecret(ctx context.Context) error {
	if s.SecretLoader == nil {
		return nil
	}
	sec, err := s.SecretLoader(ctx)
	if err != nil {
		return err
	}
	s.Secret, s.SecretLoader = sec, nil
	return nil
}

// SetSecret records a secret a step just wrote.
func (s *State) SetSecret(sec *ports.Secret) { s.Secret, s.SecretLoader = sec, nil }

// Key returns the Certificate's key.
func (s *State) Key() api.Key { return api.KeyOf(s.Cert) }

// CurrentRevision is status.revision, 0 when never issued.
func (s *State) CurrentRevision() int {
	if s.Cert.Status.Revision == nil {
		return 0
	}
	return *s.Cert.Status.Revision
}

// NextRevision is the revision a new request is created for (docs/design/certificate-controllers.md).
func (s *State) NextRevision() int { return s.CurrentRevision() + 1 }

// RequestsFor returns the owned requests annotated with revision rev.
func (s *State) RequestsFor(rev int) []Request {
	var out []Request
	for _, r := range s.Requests {
		if r.Revision() == rev {
			out = append(out, r)
		}
	}
	return out
}

// RequestName is the deterministic name of the request for revision rev:
// "<certificate>-<rev>", so that duplicate messages can only ever create
// one request per revision (the create is conditional on absence).
func RequestName(certName string, rev int) string {
	return fmt.Sprintf("%s-%d", certName, rev)
}

// NextKeySecretName is the deterministic name of the next-private-key secret.
func NextKeySecretName(certName string) string { return certName + "-next-private-key" }

// IsIssuing reports whether the Issuing condition is True.
func (s *State) IsIssuing() bool {
	return api.IsTrue(s.Cert.Status.Conditions, api.CertificateConditionIssuing)
}

// skipIssuance says why a step of an issuance has nothing to do, "" when
// it has: the Certificate is not Issuing, or another Certificate owns
// spec.secretName (the trigger stops that issuance, and nothing is made
// for it: no key, no request, no write of the secret).
func (s *State) skipIssuance(ctx context.Context) (string, error) {
	if !s.IsIssuing() {
		return "not issuing", nil
	}
	own, err := s.Ownership(ctx)
	if err != nil {
		return "", err
	}
	if !own.Owns(s.Cert.Name) {
		return "not the owner of the secret (the trigger stops the issuance)", nil
	}
	return "", nil
}

// NextKeySecret loads (once) the secret named by
// status.nextPrivateKeySecretName; nil when unset or missing.
func (s *State) NextKeySecret(ctx context.Context, env *Env) (*ports.Secret, error) {
	if s.nextKeyLoaded {
		return s.nextKey, nil
	}
	name := s.Cert.Status.NextPrivateKeySecretName
	if name == nil || *name == "" {
		s.nextKeyLoaded = true
		return nil, nil
	}
	sec, err := env.Secrets.Get(ctx, s.Cert.Namespace, *name)
	if err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("read next private key secret %s/%s: %w", s.Cert.Namespace, *name, err)
	}
	s.nextKeyLoaded = true
	if err == nil {
		s.nextKey = &sec
	}
	return s.nextKey, nil
}

// SetNextKeySecret records a next-key secret the keymanager just wrote.
func (s *State) SetNextKeySecret(sec *ports.Secret) {
	s.nextKeyLoaded = true
	s.nextKey = sec
}

// Issued is the parsed content of spec.secretName.
type Issued struct {
	Chain []*x509.Certificate
	Key   crypto.Signer
}

// IssuedProblem is why the stored secret cannot be used, as a
// (reason, message) pair a person understands; empty when it can.
type IssuedProblem struct {
	Reason  string
	Message string
}

// Parse decodes spec.secretName. It returns a problem instead of an error
// when the data is missing or invalid: those are trigger reasons, not failures.
func (s *State) Parse() (*Issued, IssuedProblem) {
	if s.parsedFor != nil && s.parsedFor == s.Secret && s.SecretLoader == nil {
		return s.parsed, s.parsedProblem
	}
	s.parsed, s.parsedProblem = s.parse()
	s.parsedFor = s.Secret
	return s.parsed, s.parsedProblem
}

func (s *State) parse() (*Issued, IssuedProblem) {
	if s.SecretLoader != nil {
		// A caller forgot LoadSecret: never mistake "not read" for "missing".
		return nil, IssuedProblem{"Unknown", "the secret has not been read yet"}
	}
	if s.Secret == nil {
		return nil, IssuedProblem{"DoesNotExist", fmt.Sprintf("Issuing certificate as Secret %q does not exist", s.Cert.Spec.SecretName)}
	}
	crtPEM, keyPEM := s.Secret.Data["tls.crt"], s.Secret.Data["tls.key"]
	if len(crtPEM) == 0 || len(keyPEM) == 0 {
		return nil, IssuedProblem{"MissingData", "Issuing certificate as Secret does not contain a certificate and a private key"}
	}
	key, err := pki.DecodePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, IssuedProblem{"InvalidKeyPair", "Issuing certificate as Secret contains an invalid private key: " + err.Error()}
	}
	chain, err := pki.ParseChainPEM(crtPEM)
	if err != nil {
		return nil, IssuedProblem{"InvalidCertificate", "Issuing certificate as Secret contains an invalid certificate: " + err.Error()}
	}
	if !pki.PublicKeysEqual(key.Public(), chain[0].PublicKey) {
		return nil, IssuedProblem{"InvalidKeyPair", "Issuing certificate as Secret contains a private key that does not match the certificate"}
	}
	return &Issued{Chain: chain, Key: key}, IssuedProblem{}
}

// SortRequests orders requests by revision, then name (deterministic).
func SortRequests(rs []Request) {
	sort.Slice(rs, func(i, j int) bool {
		if ri, rj := rs[i].Revision(), rs[j].Revision(); ri != rj {
			return ri < rj
		}
		return rs[i].CR.Name < rs[j].CR.Name
	})
}

// RecordFailedAttempt counts one more failed issuance attempt of st's
// Certificate at st.Now (status.failedIssuanceAttempts and
// lastFailureTime) and returns the attempt's number and when its backoff
// ends.
func RecordFailedAttempt(st *State) (attempt int, retry time.Time) {
	s := &st.Cert.Status
	attempt = 1
	if s.FailedIssuanceAttempts != nil {
		attempt = *s.FailedIssuanceAttempts + 1
	}
	s.FailedIssuanceAttempts = &attempt
	s.LastFailureTime = api.NewTime(st.Now)
	return attempt, st.Now.Add(Backoff(attempt))
}

// Backoff is the wait after n consecutive failed issuances: 1 h doubling,
// capped at 32 h (cert-manager's policy; docs/design/certificate-controllers.md "back-off").
func Backoff(failedAttempts int) time.Duration {
	if failedAttempts < 1 {
		return 0
	}
	d := time.Hour
	for i := 1; i < failedAttempts && d < 32*time.Hour; i++ {
		d *= 2
	}
	if d > 32*time.Hour {
		d = 32 * time.Hour
	}
	return d
}

func isNotFound(err error) bool { return err != nil && errors.Is(err, ports.ErrNotFound) }

// Outcome is what a step did (see step.Outcome).
type Outcome = step.Outcome

// FollowUpGrace is the due time set on a write that expects a follow-up
// step: the write also enqueues the key, so the due index only matters when
// that message is lost (the scheduler's safety net, docs/design/one-step.md).
const FollowUpGrace = 2 * time.Minute

// Earliest returns the earlier non-zero time.
func Earliest(a, b time.Time) time.Time { return step.Earliest(a, b) }

// Record hands n to st.Events (see there).
func (st *State) Record(n kernel.Note) {
	if st.Events != nil {
		st.Events(n)
	}
}
