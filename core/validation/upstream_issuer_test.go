package validation

import (
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Transcription of internal/apis/certmanager/validation/issuer_test.go
// (cert-manager at upstreamCommit): TestValidateACMEIssuerConfig,
// TestValidateACMEIssuerGatewayParentRefs, TestValidateIssuerSpec,
// TestValidateACMEIssuerHTTP01Config, TestValidateACMEIssuerDNS01Config,
// TestValidateSecretKeySelector. (TestValidateIssuer,
// TestUpdateValidateIssuer and clusterissuer_test.go have no cases.)
//
// cert-manager's fixtures use server "valid-server" and email
// "valid-email". certfn requires the server to be an http(s) URL
// (docs/guide/migrating.md), so the cases about other fields use
// upServer instead; "valid acme issuer" keeps the literal fixture and
// records the difference.

const upServer = "https://acme.example/directory"

var upKeyRef = api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "valid"}, Key: "validkey"}

func upCloudDNS() *api.ACMEIssuerDNS01ProviderCloudDNS {
	return &api.ACMEIssuerDNS01ProviderCloudDNS{ServiceAccount: &upKeyRef, Project: "valid"}
}

// upACME validates an ACME issuer built from cert-manager's fixture (with
// upServer), changed by mods, at cert-manager's nil field path.
func upACME(mods ...func(*api.ACMEIssuer)) func() ErrorList {
	return func() ErrorList {
		a := &api.ACMEIssuer{Email: "valid-email", Server: upServer, PrivateKeySecretRef: upKeyRef}
		for _, m := range mods {
			m(a)
		}
		var errs ErrorList
		acmeIssuer(&errs, "", a)
		return errs
	}
}

func solvers(s ...api.ACMEChallengeSolver) func(*api.ACMEIssuer) {
	return func(a *api.ACMEIssuer) { a.Solvers = s }
}

func dnsCloud() api.ACMEChallengeSolver {
	return api.ACMEChallengeSolver{DNS01: &api.ACMEChallengeSolverDNS01{CloudDNS: upCloudDNS()}}
}

func gateway(refs ...api.GatewayParentReference) api.ACMEChallengeSolver {
	return api.ACMEChallengeSolver{HTTP01: &api.ACMEChallengeSolverHTTP01{
		GatewayHTTPRoute: &api.ACMEChallengeSolverHTTP01GatewayHTTPRoute{ParentRefs: refs}}}
}

func parentRef(name, kind string) api.GatewayParentReference {
	r := api.GatewayParentReference{Name: name}
	if kind != "" {
		r.Kind = &kind
	}
	return r
}

func ingress(in api.ACMEChallengeSolverHTTP01Ingress) api.ACMEChallengeSolver {
	return api.ACMEChallengeSolver{HTTP01: &api.ACMEChallengeSolverHTTP01{Ingress: &in}}
}

// upIssuerSpec validates an issuer spec at cert-manager's nil field path.
func upIssuerSpec(s api.IssuerSpec) func() ErrorList {
	return func() ErrorList { return IssuerSpec(&s, "") }
}

// upHTTP01 validates an HTTP-01 solver at cert-manager's nil field path.
func upHTTP01(h api.ACMEChallengeSolverHTTP01) func() ErrorList {
	return func() ErrorList {
		var errs ErrorList
		http01(&errs, "", &h)
		return errs
	}
}

// upDNS01 validates a DNS-01 solver at cert-manager's field path "test".
func upDNS01(d api.ACMEChallengeSolverDNS01) func() ErrorList {
	return func() ErrorList {
		var errs ErrorList
		dns01(&errs, "test", &d)
		return errs
	}
}

func azure(mods ...func(*api.ACMEIssuerDNS01ProviderAzureDNS)) func() ErrorList {
	a := &api.ACMEIssuerDNS01ProviderAzureDNS{}
	for _, m := range mods {
		m(a)
	}
	return upDNS01(api.ACMEChallengeSolverDNS01{AzureDNS: a})
}

func rfc(r api.ACMEIssuerDNS01ProviderRFC2136) func() ErrorList {
	return upDNS01(api.ACMEChallengeSolverDNS01{RFC2136: &r})
}

func nameservers(ns ...string) func() ErrorList {
	return upDNS01(api.ACMEChallengeSolverDNS01{Nameservers: ns, CloudDNS: &api.ACMEIssuerDNS01ProviderCloudDNS{Project: "valid"}})
}

var (
	azSecret = func(a *api.ACMEIssuerDNS01ProviderAzureDNS) {
		a.ClientSecret = ptr(secretKey("some-secret-name", "some-key"))
	}
	azClient       = func(a *api.ACMEIssuerDNS01ProviderAzureDNS) { a.ClientID = "some-client-id" }
	azTenant       = func(a *api.ACMEIssuerDNS01ProviderAzureDNS) { a.TenantID = "some-tenant-id" }
	azSubscription = func(a *api.ACMEIssuerDNS01ProviderAzureDNS) { a.SubscriptionID, a.ResourceGroupName = "test", "test" }
	azMI           = func(mi api.AzureManagedIdentity) func(*api.ACMEIssuerDNS01ProviderAzureDNS) {
		return func(a *api.ACMEIssuerDNS01ProviderAzureDNS) { a.ManagedIdentity = &mi }
	}
	azRequired = []string{"azureDNS.subscriptionID", "azureDNS.resourceGroupName"}
)

func plus(a []string, b ...string) []string { return append(append([]string{}, a...), b...) }

const (
	acmeFixture = "TestValidateACMEIssuerConfig"
	dnsTest     = "TestValidateACMEIssuerDNS01Config"
	httpTest    = "TestValidateACMEIssuerHTTP01Config"
	specTest    = "TestValidateIssuerSpec"
	gwTest      = "TestValidateACMEIssuerGatewayParentRefs"
	nsTest      = "util/nameserver_test.go TestValidNameserver"
)

var issuerCases = []upstreamCase{
	// TestValidateACMEIssuerConfig
	{test: acmeFixture, name: "valid acme issuer", run: upACME(func(a *api.ACMEIssuer) { a.Server = "valid-server" }),
		certfn: &divergence{paths: []string{"server"}, why: "certfn requires spec.acme.server to be an http(s) URL (it is fetched as the ACME directory)"}},
	{test: acmeFixture, name: "acme issuer with missing fields", run: func() ErrorList {
		var errs ErrorList
		acmeIssuer(&errs, "", &api.ACMEIssuer{})
		return errs
	}, paths: []string{"privateKeySecretRef.name", "server"}},
	{test: acmeFixture, name: "acme issuer with an invalid CA bundle", run: upACME(func(a *api.ACMEIssuer) { a.CABundle = []byte("abc123") }, solvers(dnsCloud())), paths: []string{"caBundle"}},
	{test: acmeFixture, name: "acme issuer with both a CA bundle and SkipTLSVerify", run: upACME(func(a *api.ACMEIssuer) { a.CABundle, a.SkipTLSVerify = testCAPEMOnce(), true }, solvers(dnsCloud())),
		paths: []string{"caBundle", "skipTLSVerify"}},
	{test: acmeFixture, name: "acme solver without any config", run: upACME(solvers(api.ACMEChallengeSolver{})), paths: []string{"solvers[0]"}},
	{test: acmeFixture, name: "acme solver with valid dns01 config", run: upACME(solvers(dnsCloud()))},
	{test: acmeFixture, name: "acme solver with a valid waitInsteadOfSelfCheck duration", run: upACME(solvers(withWait(dnsCloud(), 30*time.Second)))},
	{test: acmeFixture, name: "acme solver with a zero waitInsteadOfSelfCheck duration", run: upACME(solvers(withWait(dnsCloud(), 0)))},
	{test: acmeFixture, name: "acme solver with a negative waitInsteadOfSelfCheck duration", run: upACME(solvers(withWait(dnsCloud(), -5*time.Second))), paths: []string{"solvers[0].waitInsteadOfSelfCheck"}},
	{test: acmeFixture, name: "acme solver with external account binding missing required fields", run: upACME(func(a *api.ACMEIssuer) { a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{} }, solvers(dnsCloud())),
		paths: []string{"externalAccountBinding.keyID", "externalAccountBinding.keySecretRef.name", "externalAccountBinding.keySecretRef.key"}},
	{test: acmeFixture, name: "acme solver with a valid external account binding and keyAlgorithm not set", run: upACME(func(a *api.ACMEIssuer) {
		a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{KeyID: "test", Key: upKeyRef}
	}, solvers(dnsCloud()))},
	// cert-manager warns that keyAlgorithm is deprecated; certfn lists it
	// among the ignored fields (api.IgnoredFields).
	{test: acmeFixture, name: "acme solver with a valid external account binding and keyAlgorithm set", run: upACME(func(a *api.ACMEIssuer) {
		a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{KeyID: "test", Key: upKeyRef, KeyAlgorithm: "HS384"}
	}, solvers(dnsCloud()))},
	{test: acmeFixture, name: "acme solver with missing http01 config type", run: upACME(solvers(api.ACMEChallengeSolver{HTTP01: &api.ACMEChallengeSolverHTTP01{}})),
		paths:  []string{"solvers[0].http01"},
		certfn: &divergence{why: `"http01: {}" is certfn's HTTP-01 solver: certfn answers the challenges itself, without an ingress or a Gateway`}},
	{test: acmeFixture, name: "acme solver with valid http01 ingress config", run: upACME(solvers(ingress(api.ACMEChallengeSolverHTTP01Ingress{})))},
	{test: acmeFixture, name: "acme solver with valid http01 gateway config", run: upACME(solvers(gateway(parentRef("blah", "Gateway"))))},
	{test: acmeFixture, name: "acme solver with invalid http01 gateway config", run: upACME(solvers(gateway(parentRef("", "Gateway")))),
		paths: []string{"solvers[0].http01.gateway.parentRefs[0].name"}},
	{test: acmeFixture, name: "acme solver with multiple http01 solver configs", run: upACME(solvers(api.ACMEChallengeSolver{HTTP01: &api.ACMEChallengeSolverHTTP01{
		Ingress: &api.ACMEChallengeSolverHTTP01Ingress{},
		GatewayHTTPRoute: &api.ACMEChallengeSolverHTTP01GatewayHTTPRoute{Labels: map[string]string{"a": "b"},
			ParentRefs: []api.GatewayParentReference{parentRef("blah", "Gateway")}}}})),
		paths: []string{"solvers[0].http01"}},
	{test: acmeFixture, name: "acme issue with valid pod template ObjectMeta attributes", run: upACME(solvers(ingress(api.ACMEChallengeSolverHTTP01Ingress{
		PodTemplate: &api.ACMEChallengeSolverHTTP01IngressPodTemplate{Metadata: api.ACMEChallengeSolverHTTP01ObjectMeta{
			Labels: map[string]string{"valid_to_contain": "labels"}, Annotations: map[string]string{"valid_to_contain": "annotations"}}}})))},
	{test: acmeFixture, name: "acme issue with valid pod template PodSpec attributes", run: upACME(solvers(ingress(api.ACMEChallengeSolverHTTP01Ingress{
		PodTemplate: &api.ACMEChallengeSolverHTTP01IngressPodTemplate{Spec: api.ACMEChallengeSolverHTTP01IngressPodSpec{
			NodeSelector: map[string]string{"valid_to_contain": "nodeSelector"},
			Tolerations:  []api.Toleration{{Key: "valid_key", Operator: "Exists", Effect: "NoSchedule"}}}}})))},
	{test: acmeFixture, name: "acme issue with valid pod template ObjectMeta and PodSpec attributes", run: upACME(solvers(ingress(api.ACMEChallengeSolverHTTP01Ingress{
		PodTemplate: &api.ACMEChallengeSolverHTTP01IngressPodTemplate{
			Metadata: api.ACMEChallengeSolverHTTP01ObjectMeta{Labels: map[string]string{"valid_to_contain": "labels"}},
			Spec:     api.ACMEChallengeSolverHTTP01IngressPodSpec{NodeSelector: map[string]string{"valid_to_contain": "nodeSelector"}}}})))},

	// TestValidateACMEIssuerGatewayParentRefs
	{test: gwTest, name: "kind without name", run: upACME(solvers(gateway(parentRef("", "Gateway")))), paths: []string{"solvers[0].http01.gateway.parentRefs[0].name"}},
	{test: gwTest, name: "name without kind", run: upACME(solvers(gateway(parentRef("test-gateway", "")))), paths: []string{"solvers[0].http01.gateway.parentRefs[0].kind"}},
	{test: gwTest, name: "empty parentRefs array", run: upACME(solvers(gateway()))},
	{test: gwTest, name: "both name and kind present", run: upACME(solvers(gateway(parentRef("test-gateway", "Gateway"))))},
	{test: gwTest, name: "multiple valid parentRefs", run: upACME(solvers(gateway(parentRef("gateway-1", "Gateway"), parentRef("gateway-2", "Gateway"))))},

	// TestValidateIssuerSpec
	{test: specTest, name: "valid ca issuer", run: upIssuerSpec(api.IssuerSpec{CA: &api.CAIssuer{SecretName: "valid"}})},
	{test: specTest, name: "ca issuer without secret name specified", run: upIssuerSpec(api.IssuerSpec{CA: &api.CAIssuer{}}), paths: []string{"ca.secretName"}},
	{test: specTest, name: "valid self-signed issuer", run: upIssuerSpec(api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}})},
	{test: specTest, name: "valid acme issuer", run: upIssuerSpec(api.IssuerSpec{ACME: &api.ACMEIssuer{Email: "valid-email", Server: "valid-server", PrivateKeySecretRef: upKeyRef}}),
		certfn: &divergence{paths: []string{"acme.server"}, why: "certfn requires spec.acme.server to be an http(s) URL"}},
	// certfn keeps a vault issuer as given (not implemented: reported as
	// an ignored field); it counts as the issuer's one type.
	{test: specTest, name: "valid vault issuer", run: upIssuerSpec(api.IssuerSpec{Vault: []byte(`{"auth":{"tokenSecretRef":{"name":"valid","key":"validkey"}},"server":"something","path":"a/b/c"}`)})},
	{test: specTest, name: "missing issuer config", run: upIssuerSpec(api.IssuerSpec{}), paths: []string{""}},
	{test: specTest, name: "multiple issuers configured", run: upIssuerSpec(api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}, CA: &api.CAIssuer{SecretName: "valid"}}), paths: []string{"selfSigned"}},
	{test: specTest, name: "valid ocsp url", run: upIssuerSpec(api.IssuerSpec{CA: &api.CAIssuer{SecretName: "valid", OCSPServers: []string{"http://ocsp.int-x3.letsencrypt.org"}}})},
	{test: specTest, name: "invalid ocsp url", run: upIssuerSpec(api.IssuerSpec{CA: &api.CAIssuer{SecretName: "valid", OCSPServers: []string{""}}}), paths: []string{"ca.ocspServer[0]"}},
	{test: specTest, name: "valid IssuingCertificateURLs", run: upIssuerSpec(api.IssuerSpec{CA: &api.CAIssuer{SecretName: "valid", IssuingCertificateURLs: []string{"http://ca.example.com/ca.crt"}}})},
	{test: specTest, name: "invalid IssuingCertificateURLs", run: upIssuerSpec(api.IssuerSpec{CA: &api.CAIssuer{SecretName: "valid", IssuingCertificateURLs: []string{""}}}), paths: []string{"ca.issuingCertificateURLs[0]"}},

	// TestValidateACMEIssuerHTTP01Config
	{test: httpTest, name: "ingress name field specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{Name: "abc"}})},
	{test: httpTest, name: "ingress class field specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{Class: ptr("abc")}})},
	{test: httpTest, name: "ingressClassName field specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{IngressClassName: ptr("abc")}})},
	{test: httpTest, name: "neither field specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{}})},
	{test: httpTest, name: "no solver config type specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{}), paths: []string{""},
		certfn: &divergence{why: `"http01: {}" is certfn's HTTP-01 solver: certfn answers the challenges itself`}},
	{test: httpTest, name: "both ingress class and ingressClassName specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{Class: ptr("abc"), IngressClassName: ptr("abc")}}), paths: []string{"ingress"}},
	{test: httpTest, name: "both ingress class and ingress name specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{Class: ptr("abc"), Name: "abc"}}), paths: []string{"ingress"}},
	{test: httpTest, name: "both ingressClassName and ingress name specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{IngressClassName: ptr("abc"), Name: "abc"}}), paths: []string{"ingress"}},
	{test: httpTest, name: "all three fields specified", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{Name: "abc", Class: ptr("abc"), IngressClassName: ptr("abc")}}), paths: []string{"ingress"}},
	{test: httpTest, name: "ingressClassName is invalid", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{IngressClassName: ptr("azure/application-gateway")}}), paths: []string{"ingress.ingressClassName"}},
	{test: httpTest, name: "acme issuer with valid http01 service config serviceType ClusterIP", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{ServiceType: "ClusterIP"}})},
	{test: httpTest, name: "acme issuer with valid http01 service config serviceType NodePort", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{ServiceType: "NodePort"}})},
	{test: httpTest, name: "acme issuer with valid http01 service config serviceType (empty string)", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{ServiceType: ""}})},
	{test: httpTest, name: "acme issuer with invalid http01 service config", run: upHTTP01(api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{ServiceType: "InvalidServiceType"}}), paths: []string{"ingress.serviceType"}},

	// TestValidateACMEIssuerDNS01Config
	{test: dnsTest, name: "missing clouddns project", run: upDNS01(api.ACMEChallengeSolverDNS01{CloudDNS: &api.ACMEIssuerDNS01ProviderCloudDNS{ServiceAccount: &upKeyRef}}), paths: []string{"cloudDNS.project"}},
	{test: dnsTest, name: "missing clouddns service account key", run: upDNS01(api.ACMEChallengeSolverDNS01{CloudDNS: &api.ACMEIssuerDNS01ProviderCloudDNS{Project: "valid", ServiceAccount: ptr(secretKey("something", ""))}}), paths: []string{"cloudDNS.serviceAccountSecretRef.key"}},
	{test: dnsTest, name: "missing clouddns service account name", run: upDNS01(api.ACMEChallengeSolverDNS01{CloudDNS: &api.ACMEIssuerDNS01ProviderCloudDNS{Project: "valid", ServiceAccount: ptr(secretKey("", "something"))}}), paths: []string{"cloudDNS.serviceAccountSecretRef.name"}},
	{test: dnsTest, name: "clouddns serviceAccount field not set should be allowed for ambient auth", run: upDNS01(api.ACMEChallengeSolverDNS01{CloudDNS: &api.ACMEIssuerDNS01ProviderCloudDNS{Project: "valid"}})},
	{test: dnsTest, name: "missing cloudflare api key fields", run: upDNS01(api.ACMEChallengeSolverDNS01{Cloudflare: &api.ACMEIssuerDNS01ProviderCloudflare{Email: "valid", APIKey: &api.SecretKeySelector{}}}),
		paths: []string{"cloudflare.apiKeySecretRef.name", "cloudflare.apiKeySecretRef.key"}},
	{test: dnsTest, name: "missing cloudflare api token fields", run: upDNS01(api.ACMEChallengeSolverDNS01{Cloudflare: &api.ACMEIssuerDNS01ProviderCloudflare{Email: "valid", APIToken: &api.SecretKeySelector{}}}),
		paths: []string{"cloudflare.apiTokenSecretRef.name", "cloudflare.apiTokenSecretRef.key"}},
	{test: dnsTest, name: "missing cloudflare api token or key", run: upDNS01(api.ACMEChallengeSolverDNS01{Cloudflare: &api.ACMEIssuerDNS01ProviderCloudflare{Email: "valid"}}), paths: []string{"cloudflare"}},
	{test: dnsTest, name: "both cloudflare api token and key specified", run: upDNS01(api.ACMEChallengeSolverDNS01{Cloudflare: &api.ACMEIssuerDNS01ProviderCloudflare{Email: "valid", APIToken: &upKeyRef, APIKey: &upKeyRef}}), paths: []string{"cloudflare"}},
	{test: dnsTest, name: "missing cloudflare email", run: upDNS01(api.ACMEChallengeSolverDNS01{Cloudflare: &api.ACMEIssuerDNS01ProviderCloudflare{APIKey: &upKeyRef}}), paths: []string{"cloudflare.email"}},
	{test: dnsTest, name: "empty route53 field should be valid because ambient credentials and region may be used instead", run: upDNS01(api.ACMEChallengeSolverDNS01{Route53: &api.ACMEIssuerDNS01ProviderRoute53{}})},
	{test: dnsTest, name: "both route53 accessKeyID and accessKeyIDSecretRef specified", run: upDNS01(api.ACMEChallengeSolverDNS01{Route53: &api.ACMEIssuerDNS01ProviderRoute53{Region: "valid", AccessKeyID: "valid", SecretAccessKeyID: &upKeyRef}}), paths: []string{"route53"}},
	{test: dnsTest, name: "route53 accessKeyIDSecretRef missing name", run: upDNS01(api.ACMEChallengeSolverDNS01{Route53: &api.ACMEIssuerDNS01ProviderRoute53{Region: "valid", SecretAccessKeyID: ptr(secretKey("", "key"))}}), paths: []string{"route53.accessKeyIDSecretRef.name"}},
	{test: dnsTest, name: "route53 accessKeyIDSecretRef missing key", run: upDNS01(api.ACMEChallengeSolverDNS01{Route53: &api.ACMEIssuerDNS01ProviderRoute53{Region: "valid", SecretAccessKeyID: ptr(secretKey("name", ""))}}), paths: []string{"route53.accessKeyIDSecretRef.key"}},
	{test: dnsTest, name: "missing provider config", run: upDNS01(api.ACMEChallengeSolverDNS01{}), paths: []string{""}},
	{test: dnsTest, name: "missing azuredns config", run: azure(), paths: azRequired},
	{test: dnsTest, name: "invalid azuredns environment", run: azure(func(a *api.ACMEIssuerDNS01ProviderAzureDNS) { a.Environment = "an env" }), paths: plus(azRequired, "azureDNS.environment")},
	{test: dnsTest, name: "invalid azuredns missing clientSecret and tenantID", run: azure(azClient), paths: plus(azRequired, "azureDNS.clientSecretSecretRef", "azureDNS.tenantID")},
	{test: dnsTest, name: "invalid azuredns missing clientID and tenantID", run: azure(azSecret), paths: plus(azRequired, "azureDNS.clientID", "azureDNS.tenantID")},
	{test: dnsTest, name: "invalid azuredns missing clientID and clientSecret", run: azure(azTenant), paths: plus(azRequired, "azureDNS.clientID", "azureDNS.clientSecretSecretRef")},
	{test: dnsTest, name: "invalid azuredns missing clientID", run: azure(azSecret, azTenant), paths: plus(azRequired, "azureDNS.clientID")},
	{test: dnsTest, name: "invalid azuredns missing clientSecret", run: azure(azTenant, azClient), paths: plus(azRequired, "azureDNS.clientSecretSecretRef")},
	{test: dnsTest, name: "invalid azuredns clientSecret missing key", run: azure(azTenant, azClient, func(a *api.ACMEIssuerDNS01ProviderAzureDNS) { a.ClientSecret = ptr(secretKey("some-secret-name", "")) }),
		paths: plus(azRequired, "azureDNS.clientSecretSecretRef.key")},
	{test: dnsTest, name: "invalid azuredns clientSecret missing secret name", run: azure(azTenant, azClient, func(a *api.ACMEIssuerDNS01ProviderAzureDNS) { a.ClientSecret = ptr(secretKey("", "some-key")) }),
		paths: plus(azRequired, "azureDNS.clientSecretSecretRef.name")},
	{test: dnsTest, name: "invalid azuredns missing tenantID", run: azure(azClient, azSecret), paths: plus(azRequired, "azureDNS.tenantID")},
	{test: dnsTest, name: "invalid azuredns clientID used with managedIdentity", run: azure(azClient, azMI(api.AzureManagedIdentity{ClientID: "test"})),
		paths: plus(azRequired, "azureDNS.clientSecretSecretRef", "azureDNS.tenantID", "azureDNS.managedIdentity")},
	{test: dnsTest, name: "invalid azuredns tenantID used with managedIdentity", run: azure(azTenant, azMI(api.AzureManagedIdentity{ClientID: "test"})),
		paths: plus(azRequired, "azureDNS.clientID", "azureDNS.clientSecretSecretRef", "azureDNS.managedIdentity")},
	{test: dnsTest, name: "invalid azuredns managedIdentity tenantID used without managedIdentity clientID ", run: azure(azMI(api.AzureManagedIdentity{TenantID: "some-tenant-id"})),
		paths: plus(azRequired, "azureDNS.managedIdentity")},
	{test: dnsTest, name: "invalid azuredns managedIdentity tenantID used with resourceID", run: azure(azSubscription, azMI(api.AzureManagedIdentity{ResourceID: "test", TenantID: "some-tenant-id"})),
		paths: []string{"azureDNS.managedIdentity", "azureDNS.managedIdentity"}},
	{test: dnsTest, name: "invalid azuredns clientSecret used with managedIdentity", run: azure(azSecret, azMI(api.AzureManagedIdentity{ClientID: "test"})),
		paths: plus(azRequired, "azureDNS.clientID", "azureDNS.tenantID", "azureDNS.managedIdentity")},
	{test: dnsTest, name: "valid azuredns with managedIdentity", run: azure(azSubscription)},
	{test: dnsTest, name: "valid azuredns with managedIdentity with clientID", run: azure(azSubscription, azMI(api.AzureManagedIdentity{ClientID: "test"}))},
	{test: dnsTest, name: "valid azuredns with managedIdentity with resourceID", run: azure(azSubscription, azMI(api.AzureManagedIdentity{ResourceID: "test"}))},
	{test: dnsTest, name: "invalid azuredns managedIdentity with both clientID and resourceID", run: azure(azSubscription, azMI(api.AzureManagedIdentity{ClientID: "test", ResourceID: "test"})), paths: []string{"azureDNS.managedIdentity"}},
	{test: dnsTest, name: "missing akamai config", run: upDNS01(api.ACMEChallengeSolverDNS01{Akamai: &api.ACMEIssuerDNS01ProviderAkamai{}}),
		paths: []string{"akamai.accessToken.name", "akamai.accessToken.key", "akamai.clientSecret.name", "akamai.clientSecret.key",
			"akamai.clientToken.name", "akamai.clientToken.key", "akamai.serviceConsumerDomain"}},
	{test: dnsTest, name: "valid akamai config", run: upDNS01(api.ACMEChallengeSolverDNS01{Akamai: &api.ACMEIssuerDNS01ProviderAkamai{
		AccessToken: upKeyRef, ClientSecret: upKeyRef, ClientToken: upKeyRef, ServiceConsumerDomain: "abc"}})},
	{test: dnsTest, name: "rfc2136 provider with missing nameserver", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{}), paths: []string{"rfc2136.nameserver"}},
	{test: dnsTest, name: "rfc2136 provider with IPv4 nameserver", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "127.0.0.1"})},
	{test: dnsTest, name: "rfc2136 provider with unenclosed IPv6 nameserver", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "2001:db8::1"}), paths: []string{"rfc2136.nameserver"}},
	{test: dnsTest, name: "rfc2136 provider with empty IPv6 nameserver", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "[]:53"}), paths: []string{"rfc2136.nameserver"}},
	{test: dnsTest, name: "rfc2136 provider with IPv6 nameserver", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "[2001:db8::1]"})},
	{test: dnsTest, name: "rfc2136 provider with FQDN nameserver", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "dns.example.com"})},
	{test: dnsTest, name: "rfc2136 provider with hostname nameserver", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "dns"})},
	{test: dnsTest, name: "rfc2136 provider with nameserver without host", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: ":53"}), paths: []string{"rfc2136.nameserver"}},
	{test: dnsTest, name: "rfc2136 provider using case-camel in algorithm", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "127.0.0.1", TSIGAlgorithm: "HmAcMd5"})},
	{test: dnsTest, name: "rfc2136 provider using unsupported algorithm", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "127.0.0.1", TSIGAlgorithm: "HAMMOCK"}), paths: []string{"rfc2136.tsigAlgorithm"}},
	{test: dnsTest, name: "rfc2136 provider TSIGKeyName provided but no TSIGSecret", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "127.0.0.1", TSIGKeyName: "some-name"}),
		paths: []string{"rfc2136.tsigSecretSecretRef.name", "rfc2136.tsigSecretSecretRef.key"}},
	{test: dnsTest, name: "rfc2136 provider TSIGSecret provided but no TSIGKeyName", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "127.0.0.1", TSIGSecret: upKeyRef}), paths: []string{"rfc2136.tsigKeyName"}},
	{test: dnsTest, name: "multiple providers configured", run: upDNS01(api.ACMEChallengeSolverDNS01{CloudDNS: &api.ACMEIssuerDNS01ProviderCloudDNS{Project: "something"},
		Cloudflare: &api.ACMEIssuerDNS01ProviderCloudflare{}}), paths: []string{"cloudflare"}},
	{test: dnsTest, name: "valid nameservers with ip:port", run: nameservers("8.8.8.8:53", "1.1.1.1:53")},
	{test: dnsTest, name: "valid nameservers with hostname:port", run: nameservers("ns.example.com:53")},
	{test: dnsTest, name: "valid nameservers with doh url", run: nameservers("https://cloudflare-dns.com/dns-query")},
	{test: dnsTest, name: "invalid nameserver missing port", run: nameservers("8.8.8.8"), paths: []string{"nameservers[0]"}},
	{test: dnsTest, name: "invalid nameserver doh url missing host", run: nameservers("https://"), paths: []string{"nameservers[0]"}},

	// util/nameserver_test.go TestValidNameserver: which rfc2136
	// nameserver forms are valid (the port 53 default is applied at run
	// time, core/acme/dns01's normalizeNameserver, tested there).
	{test: nsTest, name: "IPv4 with no port should return port 53", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "8.8.8.8"})},
	{test: nsTest, name: "IPv4 with : but no port number should return port 53", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "8.8.8.8:"})},
	{test: nsTest, name: "IPv4 with port number should return the same", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "8.8.8.8:5353"})},
	{test: nsTest, name: "IPv6 with no port should return port 53", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "[2001:db8::1]"})},
	{test: nsTest, name: "IPv6 with : but no port number should return port 53", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "[2001:db8::1]:"})},
	{test: nsTest, name: "IPv6 with port number should return the same", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "[2001:db8::1]:5353"})},
	{test: nsTest, name: "DNS name with no port should return port 53", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "nameserver.com"})},
	{test: nsTest, name: "DNS name with : but no port number should return port 53", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "nameserver.com:"})},
	{test: nsTest, name: "DNS name with port number should return the same", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "nameserver.com:5353"})},
	{test: nsTest, name: "Non unenclosed IPv6 should error", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "2001:db8::1:5353"}), paths: []string{"rfc2136.nameserver"}},
	{test: nsTest, name: "Port only should error", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: ":53"}), paths: []string{"rfc2136.nameserver"}},
	{test: nsTest, name: "Empty nameserver should error", run: rfc(api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: ""}), paths: []string{"rfc2136.nameserver"}},

	// TestValidateSecretKeySelector (nil field path)
	{test: "TestValidateSecretKeySelector", name: "valid selector", run: selector(secretKey("name", "key"))},
	{test: "TestValidateSecretKeySelector", name: "missing name", run: selector(secretKey("", "key")), paths: []string{"name"}},
	{test: "TestValidateSecretKeySelector", name: "missing key", run: selector(secretKey("name", "")), paths: []string{"key"}},
}

func selector(s api.SecretKeySelector) func() ErrorList {
	return func() ErrorList {
		var errs ErrorList
		secretKeySelector(&errs, "", s)
		return errs
	}
}

func withWait(s api.ACMEChallengeSolver, w time.Duration) api.ACMEChallengeSolver {
	s.WaitInsteadOfSelfCheck = api.NewDuration(w)
	return s
}

// testCAPEMOnce is a PEM CA certificate for caBundle cases.
func testCAPEMOnce() []byte { return testCAPEM(nil) }

const (
	whyVault   = "certfn does not implement the vault issuer: spec.vault is kept as given, counts as the issuer's type and is reported as an ignored field (the Issuer is not Ready)"
	whyVenafi  = "certfn does not implement the venafi issuer: spec.venafi is kept as given, counts as the issuer's type and is reported as an ignored field (the Issuer is not Ready)"
	whyACMERes = "certfn refuses every create and update of Orders and Challenges from callers (core/app); its own controllers keep their specs immutable (acme.SpecChanged)"
)

// issuerNotTranscribed: the vault and venafi cases of issuer_test.go and
// the Order and Challenge cases of internal/apis/acme/validation.
var issuerNotTranscribed = []notTranscribed{
	{"TestValidateVaultIssuerConfig", "vault issuer defines both caBundle and caBundleSecretRef", whyVault},
	{"TestValidateVaultIssuerConfig", "valid vault issuer", whyVault},
	{"TestValidateVaultIssuerConfig", "vault issuer with missing fields", whyVault},
	{"TestValidateVaultIssuerConfig", "vault issuer with a CA bundle containing no valid certificates", whyVault},
	{"TestValidateVaultIssuerConfig", "vault issuer define clientCertSecretRef but not clientKeySecretRef", whyVault},
	{"TestValidateVaultIssuerConfig", "vault issuer define clientKeySecretRef but not clientCertSecretRef", whyVault},
	{"TestValidateVaultIssuerConfig", "invalid vault issuer: path contains '..' segments", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth: all three auth types can be set simultaneously", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth.tokenSecretRef", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.tokenSecretRef: key can be omitted", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth.appRole", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth.appRole: key can be omitted", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.appRole: roleId is required", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth.clientCertificate: all fields can be empty", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth.kubernetes.secretRef: key can be left empty", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth.kubernetes.serviceAccountRef", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.kubernetes: role is required", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.kubernetes: secretRef and serviceAccountRef mutually exclusive", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth.aws", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth.aws with serviceAccountRef", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.aws: role is required", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.aws: serviceAccountRef.name is required", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.aws: iamRoleArn is required when serviceAccountRef is set", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.appRole: path contains '..' segments", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.clientCertificate: path contains '..' segments", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.kubernetes: path contains '..' segments", whyVault},
	{"TestValidateVaultIssuerAuth", "invalid auth.aws: mountPath contains '..' segments", whyVault},
	{"TestValidateVaultIssuerAuth", "valid auth: all five auth types can be set simultaneously", whyVault},
	{"TestValidateVenafiIssuerConfig", "valid", whyVenafi},
	{"TestValidateVenafiIssuerConfig", "missing zone", whyVenafi},
	{"TestValidateVenafiIssuerConfig", "missing configuration", whyVenafi},
	{"TestValidateVenafiIssuerConfig", "multiple configuration", whyVenafi},
	{"TestValidateVenafiIssuerConfig", "valid NGTS configuration", whyVenafi},
	{"TestValidateVenafiIssuerConfig", "NGTS and TPP both set", whyVenafi},
	{"TestValidateVenafiIssuerConfig", "NGTS and Cloud both set", whyVenafi},
	{"TestValidateVenafiTPP", "valid", whyVenafi},
	{"TestValidateVenafiTPP", "missing url", whyVenafi},
	{"TestValidateVenafiTPP", "venafi TPP issuer defines both caBundle and caBundleSecretRef", whyVenafi},
	{"TestValidateVenafiNGTS", "valid NGTS config", whyVenafi},
	{"TestValidateVenafiNGTS", "valid NGTS config without optional fields", whyVenafi},
	{"TestValidateVenafiNGTS", "missing tsgID", whyVenafi},
	{"TestValidateVenafiNGTS", "missing credentialsRef name", whyVenafi},
	{"TestValidateVenafiNGTS", "missing all required fields", whyVenafi},
	{"TestValidateOrderUpdate (internal/apis/acme/validation/order_test.go)", "every immutable-field case and \"allows all updates if old is nil\"", whyACMERes},
	{"TestValidateOrder (internal/apis/acme/validation/order_test.go)", "all cases", whyACMERes},
	{"TestValidateChallengeUpdate (internal/apis/acme/validation/challenge_test.go)", "allows setting challenge spec for the first time", whyACMERes},
	{"TestValidateChallengeUpdate (internal/apis/acme/validation/challenge_test.go)", "disallow updating challenge spec", whyACMERes},
	{"TestValidateChallengeUpdate (internal/apis/acme/validation/challenge_test.go)", "allow updating challenge spec if no changes are made", whyACMERes},
}

func TestUpstreamIssuer(t *testing.T) {
	runUpstream(t, "internal/apis/certmanager/validation/issuer_test.go", "test", issuerCases)
	countCases(t, "issuer_test.go", issuerCases, issuerNotTranscribed)
}
