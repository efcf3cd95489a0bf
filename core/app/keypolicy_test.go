package app_test

import (
	"crypto"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/ports"
)

// keyLimitPolicy selects the selfsigned ClusterIssuer, allows RSA keys of
// at most 4096 bits, and is bound (`use`) to certfn's own identity, the
// requester of the requests Certificates create.
const keyLimitPolicy = `apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: small-keys}
spec:
  allowed:
    dnsNames: {values: ["*.example.com"]}
  constraints:
    privateKey: {algorithm: RSA, maxSize: 4096}
  selector:
    issuerRef: {name: selfsigned, kind: ClusterIssuer}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: use-small-keys}
rules:
- apiGroups: [policy.cert-manager.io]
  resources: [certificaterequestpolicies]
  verbs: [use]
  resourceNames: [small-keys]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: certfn-uses-small-keys}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: use-small-keys}
subjects: [{kind: User, name: "system:serviceaccount:cert-manager:cert-manager"}]
`

// keyCounter counts the keys generated, by "ALG SIZE"; every key it
// returns is one ECDSA key (the steps after the key manager are not run).
type keyCounter struct {
	mu    sync.Mutex
	key   crypto.Signer
	calls map[string]int
}

func (k *keyCounter) generate(spec *api.CertificatePrivateKey) (crypto.Signer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls[string(spec.Algorithm)+" "+strconv.Itoa(spec.Size)]++
	return k.key, nil
}

func (k *keyCounter) total() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, c := range k.calls {
		n += c
	}
	return n
}

func rsaCert(size string) string {
	return strings.Replace(apptest.CertYAML, "privateKey: {algorithm: ECDSA, size: 256}", "privateKey: {algorithm: RSA, size: "+size+"}", 1)
}

// With the policy approver, a Certificate whose spec.privateKey no
// applicable policy allows gets no key (the generator is never called)
// and no request, and is not Ready with a message naming spec.privateKey
// and the policy's bound; changing the key is tried at once. With
// cert-manager's approver (every signer auto-approved) nothing is refused.
func TestKeyNoPolicyAllowsIsNeverGenerated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		autoAll  bool
		size     string
		wantKeys int
		wantMsg  string
	}{
		{name: "policy approver: RSA 8192 above the policy's maxSize", size: "8192", wantKeys: 0,
			wantMsg: `spec.privateKey: a RSA 8192 key is not allowed by any CertificateRequestPolicy that applies to this Certificate's requests, so no key was generated and no request created: [policy "small-keys": spec.constraints.privateKey.maxSize: the request's RSA key has size 8192, the policy allows at most 4096]`},
		{name: "policy approver: RSA 4096 allowed", size: "4096", wantKeys: 1},
		{name: "cert-manager's approver: no policy decides, nothing refused", autoAll: true, size: "8192", wantKeys: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := &keyCounter{key: ct.Key(t, nil), calls: map[string]int{}}
			r := apptest.NewPolicyRig(t, func(s *app.Settings) {
				s.GenerateKey = kc.generate
				if tc.autoAll {
					s.AutoApprove = []string{"*"}
				}
			})
			r.Apply(apptest.SelfSignedYAML)
			r.Apply(keyLimitPolicy)
			r.Apply(rsaCert(tc.size))
			for range 4 { // trigger, key manager, and again: nothing more is generated
				r.Reconcile(apptest.CertKey)
				if kc.total() > 0 {
					break
				}
			}
			if got := kc.total(); got != tc.wantKeys {
				t.Fatalf("keys generated = %d (%v), want %d", got, kc.calls, tc.wantKeys)
			}
			if tc.wantMsg == "" {
				return
			}
			c := r.Get(apptest.CertKey).(*api.Certificate)
			ready := api.FindCondition(c.Status.Conditions, api.CertificateConditionReady)
			if ready == nil || ready.Status != api.ConditionFalse || ready.Reason != certificates.ReasonKeyNotAllowed || !strings.Contains(ready.Message, tc.wantMsg) {
				t.Fatalf("Ready = %+v, want False %s with %q", ready, certificates.ReasonKeyNotAllowed, tc.wantMsg)
			}
			issuing := api.FindCondition(c.Status.Conditions, api.CertificateConditionIssuing)
			if issuing == nil || issuing.Status != api.ConditionFalse || issuing.Reason != certificates.ReasonKeyNotAllowed {
				t.Fatalf("Issuing = %+v, want False %s", issuing, certificates.ReasonKeyNotAllowed)
			}
			reqs, err := r.Store.Store.List(r.Ctx, ports.ListOptions{Kind: api.KindCertificateRequest, Namespace: "default"})
			if err != nil || len(reqs) != 0 {
				t.Fatalf("requests = %d (%v), want none", len(reqs), err)
			}
			// The backoff does not hold a changed spec: RSA 4096 is generated at once.
			r.Apply(rsaCert("4096"))
			for range 4 { // until the key manager has run (the fake's keys do not match an RSA spec)
				r.Reconcile(apptest.CertKey)
				if kc.total() > 0 {
					break
				}
			}
			if kc.calls["RSA 4096"] != 1 || kc.total() != 1 {
				t.Fatalf("after the spec change, keys generated = %v, want one RSA 4096", kc.calls)
			}
		})
	}
}
