package app

import (
	"fmt"
	"slices"
	"strings"
)

// Role is what one deployed process does, as data: every deployment
// (local mode, each cloud function) is one of these roles built by Build
// over that deployment's ports. docs/design/roles.md gives each function
// its permissions; a role holds exactly the parts those permissions allow,
// and a part it lacks refuses by itself (a secret store that refuses every
// call, an approver that never decides, a signer that hands off).
//
// The role's data is also the one statement of what it needs: the ports
// it is built over (Needs, Ports), what it does with the state store
// (StoreAccess) and the secret store (SecretAccess), and the events it
// takes (Consumes, Sweeps, ServesAPI, HTTP01). Assemble builds exactly
// those ports; the cloud packages read the environment a port needs only
// for the roles that need it; the Terraform modules grant each function
// exactly what its ports need (tests/terraform holds them to this data).
type Role struct {
	// Name is the role's name in logs and refusals, and the function name
	// a deployment gives it (CERTFN_FUNCTION, the Lambda binaries).
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
	// Consumes names the queue whose keys the role reconciles (WorkQueue:
	// every step; SignerQueue: the signer's work, with SignerWorkOnly);
	// empty: the role reconciles nothing (its engine serves, sweeps or
	// only sends).
	Consumes QueueName
	// Sweeps: the role sweeps the due index into the work queue.
	Sweeps bool
	// ServesAPI: the role serves the application service over HTTP.
	ServesAPI bool
}

// QueueName names one of certfn's queues: what a role consumes
// (Role.Consumes).
type QueueName string

// The queues.
const (
	// WorkQueue holds every reconcile key (Ports.Queue).
	WorkQueue QueueName = "worker"
	// SignerQueue holds the approved requests and CA issuers the signer
	// takes (Ports.SignerQueue).
	SignerQueue QueueName = "signer"
)

// The roles certfn deploys.
var (
	// Local is `certfn serve`: everything in one process.
	Local = Role{Name: "local", Engine: true, Approves: true, Signs: []string{"selfSigned", "ca", "acme"},
		ACME: true, Secrets: true, ServiceReadsSecrets: true, ServiceWritesSecrets: true, HTTP01: true,
		Consumes: WorkQueue, Sweeps: true, ServesAPI: true}
	// Worker runs every step but CA and selfSigned signing (it holds no
	// CA key): it approves, runs the ACME issuer and hands approved CA and
	// selfSigned requests to the signer.
	Worker = Role{Name: "worker", Engine: true, Approves: true, Signs: []string{"acme"},
		HandsOff: []string{"ca", "selfSigned"}, ACME: true, Secrets: true, DeferWakes: true, Consumes: WorkQueue}
	// Signer signs approved requests of CA and selfSigned issuers and
	// checks CA issuers; it never approves.
	Signer = Role{Name: "signer", Engine: true, Signs: []string{"ca", "selfSigned"}, SignerWorkOnly: true, Secrets: true,
		DeferWakes: true, Consumes: SignerQueue}
	// Scheduler sweeps the due index into the queue.
	Scheduler = Role{Name: "scheduler", Engine: true, Sweeps: true}
	// API serves the application service; it never reads secrets.
	API = Role{Name: "api", Engine: true, ServesAPI: true}
	// HTTP01 answers HTTP-01 challenges; it has no engine.
	HTTP01 = Role{Name: "http01", HTTP01: true}
)

// Functions are the roles of the cloud deployments, one function each (a
// Lambda function, a Cloud Run service), by the name CERTFN_FUNCTION and
// the function binaries give them.
var Functions = []Role{Worker, Signer, Scheduler, API, HTTP01}

// Roles are every role: local mode's and the functions.
var Roles = append([]Role{Local}, Functions...)

// FunctionNamed returns the function role called name; an unknown name
// is an error listing the names.
func FunctionNamed(name string) (Role, error) {
	names := make([]string, len(Functions))
	for i, r := range Functions {
		if r.Name == name {
			return r, nil
		}
		names[i] = r.Name
	}
	return Role{}, fmt.Errorf("unknown role %q (want one of %s)", name, strings.Join(names, ", "))
}

// Port names one adapter of Ports that a role may be built over
// (PortFactories has one factory per port).
type Port string

// The ports, in Ports' order.
const (
	// PortStore is the state store (Ports.Store): every role.
	PortStore Port = "store"
	// PortSecrets is the secret store (Ports.Secrets): roles with an
	// engine and Secrets, covering SecretAccess.
	PortSecrets Port = "secrets"
	// PortQueue is the work queue the engine sends keys to (Ports.Queue):
	// roles with an engine. A role that consumes a queue also sends with
	// delays (DelaysWork).
	PortQueue Port = "queue"
	// PortSignerQueue is the signer queue (Ports.SignerQueue): roles that
	// hand requests off (HandsOff).
	PortSignerQueue Port = "signerQueue"
	// PortACME is the ACME dialer (Ports.ACME): roles with ACME.
	PortACME Port = "acme"
	// PortDNS01 are the DNS-01 providers (Ports.DNS01): roles with ACME.
	PortDNS01 Port = "dns01"
	// PortCertificateImporter imports issued key pairs
	// (Ports.CertificateImporter): roles that run every step of the work
	// queue, the issuing step among them. Optional: a deployment may
	// configure none.
	PortCertificateImporter Port = "certificateImporter"
	// PortNotifier publishes events about Certificates (Ports.Notifier):
	// roles that run every step of the work queue. Optional.
	PortNotifier Port = "notifier"
)

// AllPorts lists every port, in Ports' order.
var AllPorts = []Port{PortStore, PortSecrets, PortQueue, PortSignerQueue, PortACME, PortDNS01, PortCertificateImporter, PortNotifier}

// Optional reports whether a deployment may leave port p unconfigured
// (Assemble accepts a nil factory or adapter for it).
func (p Port) Optional() bool { return p == PortCertificateImporter || p == PortNotifier }

// Needs reports whether the role is built over port p (see the ports'
// documentation for the rule of each).
func (r Role) Needs(p Port) bool {
	switch p {
	case PortStore:
		return true
	case PortSecrets:
		return r.Engine && r.Secrets
	case PortQueue:
		return r.Engine
	case PortSignerQueue:
		return r.Engine && len(r.HandsOff) > 0
	case PortACME, PortDNS01:
		return r.Engine && r.ACME
	case PortCertificateImporter, PortNotifier:
		return r.runsEveryStep()
	}
	return false
}

// Ports lists the ports the role needs, in AllPorts' order.
func (r Role) Ports() []Port {
	var out []Port
	for _, p := range AllPorts {
		if r.Needs(p) {
			out = append(out, p)
		}
	}
	return out
}

// DelaysWork reports whether the role sends keys to the work queue with a
// delay (retries and follow-ups of what it consumes: Deliverer), so that
// its queue must take delayed messages. Roles that only sweep or serve
// send without one.
func (r Role) DelaysWork() bool { return r.Engine && r.Consumes != "" }

// runsEveryStep: the role reconciles every kind from the work queue (the
// Certificate steps, issuing among them).
func (r Role) runsEveryStep() bool {
	return r.Engine && r.Consumes == WorkQueue && !r.SignerWorkOnly
}

// StoreAccess is what a role does with the state store.
type StoreAccess string

// The state store accesses, narrowest first.
const (
	// StoreChallenges reads Challenges only (the HTTP-01 responder).
	StoreChallenges StoreAccess = "challenges"
	// StoreDue reads the due index only (a sweep).
	StoreDue StoreAccess = "due"
	// StoreSigning reads and writes CertificateRequests,
	// CertificateSigningRequests, issuers and Events, and lists the
	// requests waiting for an issuer (the signer's work); it deletes
	// nothing.
	StoreSigning StoreAccess = "signing"
	// StoreAll reads, writes and deletes every kind.
	StoreAll StoreAccess = "all"
)

// StoreAccess returns what the role does with the state store: a role
// without an engine only answers HTTP-01 from it, a signer-only role
// touches requests and issuers, a role that only sweeps reads the due
// index, and every other role everything.
func (r Role) StoreAccess() StoreAccess {
	switch {
	case !r.Engine:
		return StoreChallenges
	case r.SignerWorkOnly:
		return StoreSigning
	case r.Consumes == "" && !r.ServesAPI:
		return StoreDue
	}
	return StoreAll
}

// SecretAccess is what a role does with the secret store: the secrets a
// deployment's permissions must let it read and write, and no other
// (docs/design/roles.md). The zero value is no access.
type SecretAccess struct {
	// Issued: reads and writes Certificates' key pairs and next private
	// keys (the Certificate steps).
	Issued bool
	// ACMEAccounts: reads and writes ACME account keys (the ACME issuer).
	ACMEAccounts bool
	// SolverCredentials: reads the credentials DNS-01 solvers name.
	SolverCredentials bool
	// CAKeys: reads CA issuers' key pairs (signs for CA issuers).
	CAKeys bool
	// PrivateKeys: reads requests' next private keys (a selfSigned
	// request is signed with its own key; the Certificate steps).
	PrivateKeys bool
}

// Writes reports whether the access writes any secret.
func (a SecretAccess) Writes() bool { return a.Issued || a.ACMEAccounts }

// SecretAccess returns what the role does with the secret store (the
// zero value without PortSecrets).
func (r Role) SecretAccess() SecretAccess {
	if !r.Needs(PortSecrets) {
		return SecretAccess{}
	}
	return SecretAccess{
		Issued:            r.runsEveryStep(),
		ACMEAccounts:      r.ACME,
		SolverCredentials: r.ACME,
		CAKeys:            r.signs("ca"),
		PrivateKeys:       r.runsEveryStep() || r.signs("selfSigned"),
	}
}

// SecretClass is a group of secrets the same roles may read and write:
// the segment a deployment's permissions separate on (a Parameter Store
// path, a Secret Manager ID segment; Secrets Manager tags name the same
// groups). The adapters' classes have these names.
type SecretClass string

// The secret classes.
const (
	// ClassTLS: Certificates' key pairs and ACME account keys.
	ClassTLS SecretClass = "tls"
	// ClassPrivateKey: next private keys.
	ClassPrivateKey SecretClass = "pk"
	// ClassIssuedCA: CA key pairs certfn issued (an isCA Certificate).
	ClassIssuedCA SecretClass = "ica"
	// ClassCA: CA key pairs operators installed; certfn never writes them.
	ClassCA SecretClass = "ca"
	// ClassSolverCredentials: DNS-01 solvers' credentials operators
	// installed; certfn never writes them.
	ClassSolverCredentials SecretClass = "sc"
)

// Classes returns the secret classes the access reads, in the order a
// lookup by name tries them (the most used first), and writes. issuedCA
// says whether the deployment lets the Certificate steps keep the CA key
// pairs they issue (worker_manages_ca_certificates): then Issued covers
// ClassIssuedCA too; otherwise only CAKeys reads it.
func (a SecretAccess) Classes(issuedCA bool) (read, write []SecretClass) {
	add := func(list []SecretClass, c SecretClass, ok bool) []SecretClass {
		if ok && !slices.Contains(list, c) {
			list = append(list, c)
		}
		return list
	}
	read = add(read, ClassTLS, a.Issued || a.ACMEAccounts)
	read = add(read, ClassCA, a.CAKeys)
	read = add(read, ClassIssuedCA, a.CAKeys)
	read = add(read, ClassPrivateKey, a.Issued || a.PrivateKeys)
	read = add(read, ClassSolverCredentials, a.SolverCredentials)
	read = add(read, ClassIssuedCA, a.Issued && issuedCA)
	write = add(write, ClassTLS, a.Issued || a.ACMEAccounts)
	write = add(write, ClassPrivateKey, a.Issued)
	write = add(write, ClassIssuedCA, a.Issued && issuedCA)
	return read, write
}

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
