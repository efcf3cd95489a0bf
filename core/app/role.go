package app

// Role is what one deployed process does, as data: every deployment
// (local mode, each AWS function, and the next cloud's services) is one
// of these roles built by Build over that deployment's ports.
// docs/design/roles.md gives each function its permissions; a role holds exactly the parts
// those permissions allow, and a part it lacks refuses by itself (a
// secret store that refuses every call, an approver that never decides,
// a signer that hands off).
type Role struct {
	// Name is the role's name in logs and refusals.
	Name string
	// Engine: the role runs the engine (reconciles, sweeps, the
	// application service). Every role but http01.
	Engine bool
	// Approves: the role decides approvals (the auto-approve list, then
	// CertificateRequestPolicies). A role that does not refuses,
	// permanently, a request without a decision (docs/design/certificates-api.md: the approver
	// and the signer are separate actors).
	Approves bool
	// Signs lists the issuer types the role signs itself
	// ("selfSigned", "ca", "acme").
	Signs []string
	// HandsOff lists the issuer types whose approved requests the role
	// sends to the signer queue (Ports.SignerQueue) instead of signing.
	HandsOff []string
	// SignerWorkOnly: the role takes only approved requests of the issuer
	// types it signs and CA issuers; a runtime drops anything else
	// (Deliverer).
	SignerWorkOnly bool
	// ACME: the role runs the ACME issuer — account registration (issuer
	// readiness) and the Order and Challenge handlers.
	ACME bool
	// Secrets: the role may use the secret store; without it every call is
	// refused, naming the role.
	Secrets bool
	// ServiceReadsSecrets: the application service may read the secret
	// store (Status describes the secret's tls.crt, Revoke reads it), as
	// local mode does for its own user. The cloud APIs never read it.
	ServiceReadsSecrets bool
	// ServiceWritesSecrets: the application service applies and deletes
	// Secret manifests into the secret store (local mode). The cloud APIs
	// hold no secret store permission and refuse them.
	ServiceWritesSecrets bool
	// DeferWakes: the engine returns the keys a reconcile wakes instead of
	// enqueueing them (kernel.Config.DeferWakes); the runtime routes them.
	DeferWakes bool
	// HTTP01: the role answers ACME HTTP-01 requests from the state store.
	HTTP01 bool
}

// The roles certfn deploys.
var (
	// Local is `certfn serve`: everything in one process.
	Local = Role{Name: "local", Engine: true, Approves: true, Signs: []string{"selfSigned", "ca", "acme"},
		ACME: true, Secrets: true, ServiceReadsSecrets: true, ServiceWritesSecrets: true, HTTP01: true}
	// Worker runs every step but CA and selfSigned signing (it holds no
	// CA key): it approves, runs the ACME issuer and hands approved CA and
	// selfSigned requests to the signer.
	Worker = Role{Name: "worker", Engine: true, Approves: true, Signs: []string{"acme"},
		HandsOff: []string{"ca", "selfSigned"}, ACME: true, Secrets: true, DeferWakes: true}
	// Signer signs approved requests of CA and selfSigned issuers and
	// checks CA issuers; it never approves.
	Signer = Role{Name: "signer", Engine: true, Signs: []string{"ca", "selfSigned"}, SignerWorkOnly: true, Secrets: true, DeferWakes: true}
	// Scheduler sweeps the due index into the queue.
	Scheduler = Role{Name: "scheduler", Engine: true}
	// API serves the application service; it never reads secrets.
	API = Role{Name: "api", Engine: true}
	// HTTP01 answers HTTP-01 challenges; it has no engine.
	HTTP01 = Role{Name: "http01", HTTP01: true}
)

func (r Role) signs(typ string) bool    { return contains(r.Signs, typ) }
func (r Role) handsOff(typ string) bool { return contains(r.HandsOff, typ) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
