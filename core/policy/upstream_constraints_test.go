package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Transcribed from approver-policy (upstreamCommit):
// pkg/internal/approver/constraints/evaluator_test.go: Test_Evaluate.
func TestUpstreamConstraintsEvaluate(t *testing.T) {
	keys(t)
	runUpstreamEval(t, []upstreamEval{
		{name: "passes on Ed25519 CSR with private key constraints set",
			spec: `constraints: {privateKey: {algorithm: Ed25519}}`, cr: ed25519CSR(t)},
		{name: "if no constraints defined, should return NotDenied",
			spec: ``, cr: newCR(t, csr())},
		{name: "if constraints contains duration but duration wasn't requested, return Denied",
			spec: `constraints: {minDuration: 1h, maxDuration: 24h}`, cr: newCR(t, csr()),
			want: []string{"spec.constraints.maxDuration", "spec.constraints.minDuration"}},
		{name: "if constraints contains duration but requested duration is too small, return Denied",
			spec: `constraints: {minDuration: 1h, maxDuration: 24h}`, cr: newCR(t, csr(), duration(time.Minute)),
			want: []string{"spec.constraints.minDuration"}, contains: []string{"requested duration 1m0s is shorter than 1h0m0s"}},
		{name: "if constraints contains duration but requested duration is too large, return Denied",
			spec: `constraints: {minDuration: 1h, maxDuration: 24h}`, cr: newCR(t, csr(), duration(48*time.Hour)),
			want: []string{"spec.constraints.maxDuration"}, contains: []string{"requested duration 48h0m0s is longer than 24h0m0s"}},
		{name: "if constraints contains private key but CSR uses the wrong key type and is too small, return error",
			spec: `constraints: {privateKey: {algorithm: ECDSA, minSize: 4000}}`, cr: newCR(t, csr(withKey(rsaKey2048))),
			want:     []string{"spec.constraints.privateKey.algorithm", "spec.constraints.privateKey.minSize"},
			contains: []string{"the request's key is RSA, the policy requires ECDSA", "has size 2048, the policy requires at least 4000"}},
		{name: "if constraints contains private key but CSR uses the wrong key type and is too large, return error",
			spec: `constraints: {privateKey: {algorithm: RSA, maxSize: 200}}`, cr: newCR(t, csr()),
			want:     []string{"spec.constraints.privateKey.algorithm", "spec.constraints.privateKey.maxSize"},
			contains: []string{"the request's key is ECDSA, the policy requires RSA", "has size 256, the policy allows at most 200"}},
		// Beyond upstream's cases: approver-policy gives an Ed25519 key
		// size -1, so it fails any minSize and passes any maxSize.
		{name: "an Ed25519 key fails minSize, even 0",
			spec: `constraints: {privateKey: {minSize: 0, maxSize: 256}}`, cr: ed25519CSR(t),
			want: []string{"spec.constraints.privateKey.minSize"}, contains: []string{"Ed25519 key has no size"}},
	})
}

// pkg/internal/approver/constraints/evaluator_test.go: Test_Evaluate, "if
// constraints contains private key but CSR fails to decode, return error".
// Mapped: approver-policy returns an evaluation error; certfn denies a
// request whose spec.request does not parse, naming the field.
func TestUpstreamConstraintsUndecodableCSR(t *testing.T) {
	p := policyYAML(t, "upstream", `
constraints: {privateKey: {}}
selector: {issuerRef: {}}
`)
	cr := newCR(t, csr(), csrPEM([]byte("not a CSR")))
	d := newEvaluator(t).Evaluate(context.Background(), Input{Request: cr, Policies: []*api.CertificateRequestPolicy{p}, Authorizer: bindAll()})
	if d.Result != Denied || !strings.HasPrefix(d.Message(), "spec.request: ") {
		t.Fatalf("got %s (%s), want Denied naming spec.request", d.Result, d.Message())
	}
}
