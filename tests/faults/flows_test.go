package faults

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/pki"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// flow is one certfn flow the harness faults at every port call.
type flow struct {
	name string
	// acme: the flow talks to Pebble (ACME client and DNS provider ports).
	acme bool
	// localOnly says why the flow does not run on the cloud shapes ("":
	// it does).
	localOnly string
	// autoApprove is the approver setting (nil: policies decide).
	autoApprove []string
	// setup brings the world to the flow's starting point, without
	// faults (issuers Ready, a Certificate issued for a renewal).
	setup func(w *world) error
	// start is the event that starts the flow (a Certificate applied, the
	// clock reaching the renewal time); its calls are not faulted (the
	// CLI's own writes), what it wakes is.
	start func(w *world) error
	// goal says whether the flow reached its end, and why not.
	goal func(w *world) (bool, string)
	// check asserts what is particular to the flow once it converged.
	check func(w *world) error
}

const selfSignedYAML = `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
`

const caIssuerYAML = `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ca, namespace: default}
spec: {ca: {secretName: ca-key-pair}}
`

// certYAML is Certificate default/web for dnsName from issuer, with
// extra spec lines (indented by 2) and rotationPolicy rotation (if set).
func certYAML(dnsName, issuer, extra, rotation string) string {
	if rotation != "" {
		rotation = ", rotationPolicy: " + rotation
	}
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [%q]
  privateKey: {algorithm: ECDSA, size: 256%s}
  issuerRef: %s
%s`, dnsName, rotation, issuer, extra)
}

// policyYAML allows *.example.com from issuer ca and binds its use to
// certfn's controller identity (the requester of Certificates' requests).
const policyYAML = `apiVersion: policy.cert-manager.io/v1alpha1
kind: CertificateRequestPolicy
metadata: {name: example-com}
spec:
  allowed:
    dnsNames: {values: ["*.example.com"], required: true}
    usages: ["digital signature", "key encipherment", "server auth"]
  selector:
    issuerRef: {name: ca, kind: Issuer}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: use-example-com}
rules:
- apiGroups: [policy.cert-manager.io]
  resources: [certificaterequestpolicies]
  verbs: [use]
  resourceNames: [example-com]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: certfn-uses-example-com}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: use-example-com}
subjects: [{kind: ServiceAccount, name: cert-manager, namespace: cert-manager}]
`

// acmeIssuerYAML is ClusterIssuer pebble with the given solver lines.
func acmeIssuerYAML(e *env, solvers string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: pebble}
spec:
  acme:
    server: %s
    caBundle: %s
    privateKeySecretRef: {name: pebble-account}
    solvers:
%s`, e.peb.DirURL, base64.StdEncoding.EncodeToString(e.peb.TLSPEM), solvers)
}

// settle drives a set-up to its end (no faults are armed).
func settle(w *world) error {
	w.settingUp = true
	defer func() { w.settingUp = false }()
	_, err := w.drive(w.clk.Now())
	return err
}

// putCA stores a CA key pair as default/ca-key-pair.
func putCA(w *world) error {
	return w.sec.Put(w.ctx, ct.NewCA(w.t).Secret(w.t, "default", "ca-key-pair"))
}

// readyAt is the goal "Certificate web Ready at revision rev".
func readyAt(rev int) func(w *world) (bool, string) {
	return func(w *world) (bool, string) {
		c := w.cert("web")
		if c == nil {
			return false, "no Certificate"
		}
		if !api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) || c.Status.Revision == nil || *c.Status.Revision != rev {
			return false, fmt.Sprintf("Certificate web not Ready at revision %d: %s", rev, conditions(c.Status.Conditions))
		}
		return true, ""
	}
}

func conditions(cs []api.Condition) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s=%s(%s) ", c.Type, c.Status, c.Reason)
	}
	return b.String()
}

// renewal is a flow renewing web (issued by the CA in set-up) with
// rotationPolicy policy: the clock moves to its renewal time.
func renewal(policy string) *flow {
	return &flow{
		name: "renewal, rotationPolicy " + policy, autoApprove: []string{"*"},
		setup: func(w *world) error {
			if err := putCA(w); err != nil {
				return err
			}
			if err := w.apply(caIssuerYAML + "---\n" + certYAML("web.example.com", "{name: ca}",
				"  duration: 24h\n", policy)); err != nil {
				return err
			}
			if err := settle(w); err != nil {
				return err
			}
			if ok, why := readyAt(1)(w); !ok {
				return fmt.Errorf("set-up: %s", why)
			}
			k, err := publicKey(w)
			w.firstKey = k
			return err
		},
		start: func(w *world) error {
			c := w.cert("web")
			if c.Status.RenewalTime == nil {
				return fmt.Errorf("no renewal time")
			}
			w.clk.Set(c.Status.RenewalTime.Time)
			return nil
		},
		goal: readyAt(2),
		check: func(w *world) error {
			k, err := publicKey(w)
			if err != nil {
				return err
			}
			if same := string(k) == string(w.firstKey); same != (policy == "Never") {
				return fmt.Errorf("rotationPolicy %s: the renewed key is the same as revision 1's: %t", policy, same)
			}
			return nil
		},
	}
}

// flows are the flows the harness runs, in order.
func flows() []*flow {
	return []*flow{
		{
			name: "selfSigned", autoApprove: []string{"*"},
			setup: func(w *world) error {
				if err := w.apply(selfSignedYAML); err != nil {
					return err
				}
				return settle(w)
			},
			start: func(w *world) error {
				return w.apply(certYAML("web.example.com", "{name: selfsigned, kind: ClusterIssuer}", "", ""))
			},
			goal: readyAt(1),
		},
		{
			name: "CA issuance", autoApprove: []string{"*"},
			setup: func(w *world) error {
				if err := putCA(w); err != nil {
					return err
				}
				if err := w.apply(caIssuerYAML); err != nil {
					return err
				}
				return settle(w)
			},
			start: func(w *world) error { return w.apply(certYAML("web.example.com", "{name: ca}", "", "")) },
			goal:  readyAt(1),
		},
		{
			name: "ACM import", autoApprove: []string{"*"},
			setup: func(w *world) error {
				if err := putCA(w); err != nil {
					return err
				}
				if err := w.apply(caIssuerYAML); err != nil {
					return err
				}
				return settle(w)
			},
			start: func(w *world) error {
				return w.apply(strings.Replace(certYAML("web.example.com", "{name: ca}", "", ""),
					"metadata: {name: web, namespace: default}", "metadata: {name: web, namespace: default, annotations: {certfn.io/acm-import: \"true\"}}", 1))
			},
			goal: func(w *world) (bool, string) {
				if ok, why := readyAt(1)(w); !ok {
					return false, why
				}
				if c := w.cert("web"); c.Status.ACMCertificateARN == "" {
					return false, "not imported yet"
				}
				return true, ""
			},
			check: checkImported,
		},
		renewal("Always"),
		renewal("Never"),
		{
			name: "policy approval",
			setup: func(w *world) error {
				if err := putCA(w); err != nil {
					return err
				}
				if err := w.apply(caIssuerYAML + "---\n" + policyYAML); err != nil {
					return err
				}
				return settle(w)
			},
			start: func(w *world) error { return w.apply(certYAML("web.example.com", "{name: ca}", "", "")) },
			goal:  readyAt(1),
			check: func(w *world) error {
				return requestCondition(w, "web-1", api.CertificateRequestConditionApproved, "example-com")
			},
		},
		{
			name: "policy denial",
			setup: func(w *world) error {
				if err := putCA(w); err != nil {
					return err
				}
				if err := w.apply(caIssuerYAML + "---\n" + policyYAML); err != nil {
					return err
				}
				return settle(w)
			},
			start: func(w *world) error { return w.apply(certYAML("web.example.org", "{name: ca}", "", "")) },
			goal: func(w *world) (bool, string) {
				c := w.cert("web")
				if c == nil {
					return false, "no Certificate"
				}
				is := api.FindCondition(c.Status.Conditions, api.CertificateConditionIssuing)
				if is == nil || is.Status != api.ConditionFalse || is.Reason != "Failed" || c.Status.FailedIssuanceAttempts == nil ||
					*c.Status.FailedIssuanceAttempts != 1 {
					return false, "the denial is not recorded on the Certificate: " + conditions(c.Status.Conditions)
				}
				return true, ""
			},
			check: func(w *world) error {
				if err := requestCondition(w, "web-1", api.CertificateRequestConditionDenied, ""); err != nil {
					return err
				}
				if _, err := w.sec.Get(w.ctx, "default", "web-tls"); err == nil {
					return fmt.Errorf("a denied Certificate has a secret")
				}
				w.l.mu.Lock()
				defer w.l.mu.Unlock()
				if len(w.l.signed) > 0 {
					return fmt.Errorf("a denied request was signed: %v", w.l.signed)
				}
				return nil
			},
		},
		{
			name: "ACME HTTP-01 (Pebble)", acme: true, autoApprove: []string{"*"},
			setup: func(w *world) error {
				if err := w.apply(acmeIssuerYAML(w.env, "    - http01: {ingress: {}}\n")); err != nil {
					return err
				}
				return settle(w)
			},
			start: func(w *world) error {
				return w.apply(certYAML(w.name+".example.test", "{name: pebble, kind: ClusterIssuer}", "", ""))
			},
			goal: readyAt(1),
		},
		{
			// Revocation (`certfn revoke`: the certificate is revoked at
			// Pebble with the account key, then re-issued as renew does):
			// the revocation itself is the CLI's call; what it starts is
			// faulted.
			name: "ACME revocation and replacement (Pebble)", acme: true, autoApprove: []string{"*"},
			localOnly: "revocation reads the secret store from the CLI: the cloud APIs have no revoke route",
			setup: func(w *world) error {
				if err := w.apply(acmeIssuerYAML(w.env, "    - http01: {ingress: {}}\n")); err != nil {
					return err
				}
				if err := w.apply(certYAML(w.name+".example.test", "{name: pebble, kind: ClusterIssuer}", "", "")); err != nil {
					return err
				}
				if err := settle(w); err != nil {
					return err
				}
				if ok, why := readyAt(1)(w); !ok {
					return fmt.Errorf("set-up: %s", why)
				}
				k, err := publicKey(w)
				w.firstKey = k
				return err
			},
			start: func(w *world) error {
				return w.p.app.Service.Revoke(w.ctx, caller, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"}, "keyCompromise")
			},
			goal: readyAt(2),
			check: func(w *world) error {
				k, err := publicKey(w)
				if err != nil {
					return err
				}
				if string(k) == string(w.firstKey) {
					return fmt.Errorf("the replacement of the revoked certificate reuses its key")
				}
				return nil
			},
		},
		{
			name: "ACME DNS-01 (Pebble, challtestsrv)", acme: true, autoApprove: []string{"*"},
			setup: func(w *world) error {
				if err := w.apply(acmeIssuerYAML(w.env, "    - dns01: {webhook: {groupName: acme.certfn.io, solverName: challtestsrv}}\n")); err != nil {
					return err
				}
				return settle(w)
			},
			start: func(w *world) error {
				return w.apply(certYAML("*."+w.name+".example.test", "{name: pebble, kind: ClusterIssuer}", "", ""))
			},
			goal: readyAt(1),
			check: func(w *world) error {
				if v := w.env.peb.DNS.GetDNSTXTRecords("_acme-challenge." + w.name + ".example.test."); len(v) > 0 {
					return fmt.Errorf("orphaned DNS-01 TXT records: %q", v)
				}
				return nil
			},
		},
	}
}

// requestCondition checks that request name has condition typ True
// (with a message naming want, when set).
func requestCondition(w *world, name, typ, want string) error {
	for _, o := range w.list(api.KindCertificateRequest) {
		cr := o.(*api.CertificateRequest)
		if cr.Name != name {
			continue
		}
		c := api.FindCondition(cr.Status.Conditions, typ)
		if c == nil || c.Status != api.ConditionTrue || !strings.Contains(c.Message, want) {
			return fmt.Errorf("request %s: %s is %+v, want True naming %q", name, typ, c, want)
		}
		return nil
	}
	return fmt.Errorf("no request %s", name)
}

// checkImported: the certificate manager holds one entry for web, the one
// its status names, holding the certificate in web-tls (no orphaned or
// duplicated import).
func checkImported(w *world) error {
	c := w.cert("web")
	entries := w.imp.Entries()
	if len(entries) != 1 {
		refs := make([]string, len(entries))
		for i, e := range entries {
			refs[i] = e.Ref
		}
		return fmt.Errorf("%d imported certificates, want 1: %v", len(entries), refs)
	}
	e := entries[0]
	if e.Ref != c.Status.ACMCertificateARN || e.Owner != api.KeyOf(c) {
		return fmt.Errorf("imported %s for %s, status names %q", e.Ref, e.Owner, c.Status.ACMCertificateARN)
	}
	sec, err := w.sec.Get(w.ctx, "default", "web-tls")
	if err != nil {
		return err
	}
	chain, err := pki.ParseChainPEM(sec.Data["tls.crt"])
	if err != nil {
		return err
	}
	if e.Serial.Cmp(chain[0].SerialNumber) != 0 {
		return fmt.Errorf("the imported certificate (serial %x) is not web-tls's (%x)", e.Serial, chain[0].SerialNumber)
	}
	return nil
}
