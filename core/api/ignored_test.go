package api

import (
	"reflect"
	"testing"
	"time"
)

// cert-manager's current fields decode under their JSON names (a name
// certfn did not know would be an "unknown field" error), and the parts
// certfn does not act on are listed by IgnoredFields.
func TestUpstreamFieldsDecodeAndIgnored(t *testing.T) {
	objs, err := Decode([]byte(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: le}
spec:
  acme:
    server: https://acme-v02.api.letsencrypt.org/directory
    privateKeySecretRef: {name: le-account}
    renewalInformationSource: None
    solvers:
    - http01:
        ingress:
          ingressClassName: nginx
          serviceType: ClusterIP
          podTemplate:
            metadata: {labels: {a: b}}
            spec:
              nodeSelector: {k: v}
              tolerations: [{key: k, operator: Exists, effect: NoSchedule}]
              resources: {requests: {cpu: 20m}}
          ingressTemplate:
            metadata: {annotations: {x: z}}
    - http01:
        gatewayHTTPRoute:
          labels: {a: b}
          parentRefs: [{name: traefik, namespace: traefik, kind: Gateway, sectionName: http, port: 80}]
    - waitInsteadOfSelfCheck: 30s
      dns01:
        nameservers: ["10.0.0.53:53", "https://dns.example/dns-query"]
        rfc2136: {nameserver: "[2001:db8::1]"}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [example.com]
  issuerRef: {name: le, kind: ClusterIssuer}
  renewal:
    policy: RenewBefore
    windows:
    - {timezone: Europe/Paris, cron: "0 3 * * *", windowDuration: 2h}
`))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	iss := objs[0].(*ClusterIssuer)
	s := iss.Spec.ACME.Solvers
	if in := s[0].HTTP01.Ingress; in == nil || in.IngressClassName == nil || *in.IngressClassName != "nginx" ||
		in.PodTemplate.Spec.Tolerations[0].Operator != "Exists" || in.IngressTemplate.Metadata.Annotations["x"] != "z" {
		t.Errorf("ingress = %+v", s[0].HTTP01.Ingress)
	}
	if g := s[1].HTTP01.GatewayHTTPRoute; g == nil || g.ParentRefs[0].Name != "traefik" || *g.ParentRefs[0].Kind != "Gateway" || *g.ParentRefs[0].Port != 80 {
		t.Errorf("gatewayHTTPRoute = %+v", s[1].HTTP01.GatewayHTTPRoute)
	}
	if w := s[2].WaitInsteadOfSelfCheck; w == nil || w.Duration != 30*time.Second {
		t.Errorf("waitInsteadOfSelfCheck = %v", w)
	}
	want := []string{
		"spec.acme.renewalInformationSource",
		"spec.acme.solvers[0].http01.ingress",
		"spec.acme.solvers[1].http01.gatewayHTTPRoute",
		"spec.acme.solvers[2].dns01.nameservers[1]",
	}
	if got := IgnoredFields(iss); !reflect.DeepEqual(got, want) {
		t.Errorf("IgnoredFields = %q, want %q", got, want)
	}
	crt := objs[1].(*Certificate)
	r := crt.Spec.Renewal
	if r == nil || r.Policy != RenewalPolicyRenewBefore || r.Windows[0].Timezone != "Europe/Paris" || r.Windows[0].WindowDuration.Duration != 2*time.Hour {
		t.Errorf("renewal = %+v", r)
	}
	if got := IgnoredFields(crt); len(got) != 0 {
		t.Errorf("IgnoredFields(certificate with renewal) = %q, want none (certfn acts on spec.renewal)", got)
	}
}
