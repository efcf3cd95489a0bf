package api

import "encoding/json"

// Issuer condition types.
const (
	IssuerConditionReady = "Ready"
)

// Issuer is cert-manager.io/v1 Issuer (namespaced).
type Issuer struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       IssuerSpec   `json:"spec"`
	Status     IssuerStatus `json:"status,omitempty"`
}

// ClusterIssuer is cert-manager.io/v1 ClusterIssuer (cluster-scoped). Its CA
// and account secrets are read from the cluster resource namespace
// (certfn's default: "certfn").
type ClusterIssuer struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       IssuerSpec   `json:"spec"`
	Status     IssuerStatus `json:"status,omitempty"`
}

// GenericIssuer is an Issuer or a ClusterIssuer.
type GenericIssuer interface {
	Object
	GetSpec() *IssuerSpec
	GetStatus() *IssuerStatus
}

// GetSpec implements GenericIssuer.
func (i *Issuer) GetSpec() *IssuerSpec { return &i.Spec }

// GetStatus implements GenericIssuer.
func (i *Issuer) GetStatus() *IssuerStatus { return &i.Status }

// GetSpec implements GenericIssuer.
func (i *ClusterIssuer) GetSpec() *IssuerSpec { return &i.Spec }

// GetStatus implements GenericIssuer.
func (i *ClusterIssuer) GetStatus() *IssuerStatus { return &i.Status }

// IssuerSpec is cert-manager's IssuerConfig: exactly one type is set.
// Vault and Venafi are accepted so that existing manifests decode, and
// reported as unsupported.
type IssuerSpec struct {
	ACME       *ACMEIssuer       `json:"acme,omitempty"`
	CA         *CAIssuer         `json:"ca,omitempty"`
	Vault      json.RawMessage   `json:"vault,omitempty"`
	SelfSigned *SelfSignedIssuer `json:"selfSigned,omitempty"`
	Venafi     json.RawMessage   `json:"venafi,omitempty"`
}

// CAIssuer signs with the key pair in secretName (tls.crt, tls.key).
type CAIssuer struct {
	SecretName             string   `json:"secretName"`
	CRLDistributionPoints  []string `json:"crlDistributionPoints,omitempty"`
	OCSPServers            []string `json:"ocspServers,omitempty"`
	IssuingCertificateURLs []string `json:"issuingCertificateURLs,omitempty"`
}

// SelfSignedIssuer signs each request with its own key.
type SelfSignedIssuer struct {
	CRLDistributionPoints []string `json:"crlDistributionPoints,omitempty"`
}

// IssuerStatus holds conditions and ACME account state.
type IssuerStatus struct {
	Conditions []Condition       `json:"conditions,omitempty"`
	ACME       *ACMEIssuerStatus `json:"acme,omitempty"`
}

// ACMEIssuerStatus records the registered account.
type ACMEIssuerStatus struct {
	URI                 string `json:"uri,omitempty"`
	LastRegisteredEmail string `json:"lastRegisteredEmail,omitempty"`
	LastPrivateKeyHash  string `json:"lastPrivateKeyHash,omitempty"`
}

// ACMEIssuer is cert-manager's ACMEIssuer.
type ACMEIssuer struct {
	Email                       string                      `json:"email,omitempty"`
	Server                      string                      `json:"server"`
	PreferredChain              string                      `json:"preferredChain,omitempty"`
	CABundle                    []byte                      `json:"caBundle,omitempty"`
	SkipTLSVerify               bool                        `json:"skipTLSVerify,omitempty"`
	ExternalAccountBinding      *ACMEExternalAccountBinding `json:"externalAccountBinding,omitempty"`
	PrivateKeySecretRef         SecretKeySelector           `json:"privateKeySecretRef"`
	Solvers                     []ACMEChallengeSolver       `json:"solvers,omitempty"`
	DisableAccountKeyGeneration bool                        `json:"disableAccountKeyGeneration,omitempty"`
	EnableDurationFeature       bool                        `json:"enableDurationFeature,omitempty"`
	Profile                     string                      `json:"profile,omitempty"`
	// RenewalInformationSource is ARI (the default: ask the server for
	// renewal windows, RFC 9773) or None.
	RenewalInformationSource string `json:"renewalInformationSource,omitempty"`
}

// Values of ACMEIssuer.RenewalInformationSource.
const (
	ACMERenewalInformationSourceARI  = "ARI"
	ACMERenewalInformationSourceNone = "None"
)

// ACMEExternalAccountBinding is the EAB key id and HMAC secret.
type ACMEExternalAccountBinding struct {
	KeyID        string            `json:"keyID"`
	Key          SecretKeySelector `json:"keySecretRef"`
	KeyAlgorithm string            `json:"keyAlgorithm,omitempty"`
}

// ACMEChallengeSolver chooses how identifiers matching Selector are validated.
type ACMEChallengeSolver struct {
	Selector *CertificateDNSNameSelector `json:"selector,omitempty"`
	HTTP01   *ACMEChallengeSolverHTTP01  `json:"http01,omitempty"`
	DNS01    *ACMEChallengeSolverDNS01   `json:"dns01,omitempty"`
	// WaitInsteadOfSelfCheck, when set, skips the self-check: a presented
	// challenge is accepted once this long has passed since it was
	// presented (zero: at once). Must not be negative.
	WaitInsteadOfSelfCheck *Duration `json:"waitInsteadOfSelfCheck,omitempty"`
}

// CertificateDNSNameSelector selects solvers per identifier.
type CertificateDNSNameSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	DNSNames    []string          `json:"dnsNames,omitempty"`
	DNSZones    []string          `json:"dnsZones,omitempty"`
}

// ACMEChallengeSolverHTTP01 is accepted as cert-manager defines it; its
// Kubernetes-only settings (ingress, gatewayHTTPRoute) are validated as
// cert-manager's webhook does and reported as ignored: certfn serves
// HTTP-01 itself. An http01 solver with neither is certfn's own form
// ("http01: {}").
type ACMEChallengeSolverHTTP01 struct {
	Ingress          *ACMEChallengeSolverHTTP01Ingress          `json:"ingress,omitempty"`
	GatewayHTTPRoute *ACMEChallengeSolverHTTP01GatewayHTTPRoute `json:"gatewayHTTPRoute,omitempty"`
}

// Kubernetes Service types an HTTP-01 solver may ask for.
const (
	ServiceTypeClusterIP = "ClusterIP"
	ServiceTypeNodePort  = "NodePort"
)

// ACMEChallengeSolverHTTP01Ingress is cert-manager's ingress-based HTTP-01
// solver. certfn does not act on it.
type ACMEChallengeSolverHTTP01Ingress struct {
	ServiceType      string                                       `json:"serviceType,omitempty"`
	IngressClassName *string                                      `json:"ingressClassName,omitempty"`
	Class            *string                                      `json:"class,omitempty"`
	Name             string                                       `json:"name,omitempty"`
	PodTemplate      *ACMEChallengeSolverHTTP01IngressPodTemplate `json:"podTemplate,omitempty"`
	IngressTemplate  *ACMEChallengeSolverHTTP01IngressTemplate    `json:"ingressTemplate,omitempty"`
}

// ACMEChallengeSolverHTTP01GatewayHTTPRoute is cert-manager's Gateway API
// HTTP-01 solver. certfn does not act on it.
type ACMEChallengeSolverHTTP01GatewayHTTPRoute struct {
	ServiceType string                                       `json:"serviceType,omitempty"`
	Labels      map[string]string                            `json:"labels,omitempty"`
	ParentRefs  []GatewayParentReference                     `json:"parentRefs,omitempty"`
	PodTemplate *ACMEChallengeSolverHTTP01IngressPodTemplate `json:"podTemplate,omitempty"`
}

// GatewayParentReference is the Gateway API's ParentReference (v1).
type GatewayParentReference struct {
	Group       *string `json:"group,omitempty"`
	Kind        *string `json:"kind,omitempty"`
	Namespace   *string `json:"namespace,omitempty"`
	Name        string  `json:"name"`
	SectionName *string `json:"sectionName,omitempty"`
	Port        *int32  `json:"port,omitempty"`
}

// ACMEChallengeSolverHTTP01IngressPodTemplate is the solver pod's template.
type ACMEChallengeSolverHTTP01IngressPodTemplate struct {
	Metadata ACMEChallengeSolverHTTP01ObjectMeta     `json:"metadata,omitempty"`
	Spec     ACMEChallengeSolverHTTP01IngressPodSpec `json:"spec,omitempty"`
}

// ACMEChallengeSolverHTTP01ObjectMeta is the labels and annotations of a
// solver pod or ingress template.
type ACMEChallengeSolverHTTP01ObjectMeta struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// ACMEChallengeSolverHTTP01IngressPodSpec is the solver pod's spec. The
// Kubernetes core types cert-manager embeds (affinity, securityContext,
// resources) are kept as given: certfn runs no pod.
type ACMEChallengeSolverHTTP01IngressPodSpec struct {
	NodeSelector       map[string]string      `json:"nodeSelector,omitempty"`
	Affinity           json.RawMessage        `json:"affinity,omitempty"`
	Tolerations        []Toleration           `json:"tolerations,omitempty"`
	PriorityClassName  string                 `json:"priorityClassName,omitempty"`
	ServiceAccountName string                 `json:"serviceAccountName,omitempty"`
	ImagePullSecrets   []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	SecurityContext    json.RawMessage        `json:"securityContext,omitempty"`
	Resources          json.RawMessage        `json:"resources,omitempty"`
}

// Toleration is Kubernetes' core/v1 Toleration.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// ACMEChallengeSolverHTTP01IngressTemplate is the solver ingress's template.
type ACMEChallengeSolverHTTP01IngressTemplate struct {
	Metadata ACMEChallengeSolverHTTP01ObjectMeta `json:"metadata,omitempty"`
}

// ACMEChallengeSolverDNS01 configures a DNS-01 provider.
type ACMEChallengeSolverDNS01 struct {
	CNAMEStrategy string `json:"cnameStrategy,omitempty"`
	// Nameservers, when set, are the DNS servers this solver's propagation
	// checks ask ("host:port", or a DNS-over-HTTPS URL, which certfn does
	// not implement and reports as ignored) instead of the deployment's;
	// the check then asks them only (not the zone's authoritative servers).
	Nameservers []string `json:"nameservers,omitempty"`

	RFC2136      *ACMEIssuerDNS01ProviderRFC2136      `json:"rfc2136,omitempty"`
	Route53      *ACMEIssuerDNS01ProviderRoute53      `json:"route53,omitempty"`
	CloudDNS     *ACMEIssuerDNS01ProviderCloudDNS     `json:"cloudDNS,omitempty"`
	Akamai       *ACMEIssuerDNS01ProviderAkamai       `json:"akamai,omitempty"`
	AzureDNS     *ACMEIssuerDNS01ProviderAzureDNS     `json:"azureDNS,omitempty"`
	Cloudflare   *ACMEIssuerDNS01ProviderCloudflare   `json:"cloudflare,omitempty"`
	DigitalOcean *ACMEIssuerDNS01ProviderDigitalOcean `json:"digitalocean,omitempty"`
	AcmeDNS      *ACMEIssuerDNS01ProviderAcmeDNS      `json:"acmeDNS,omitempty"`
	Webhook      json.RawMessage                      `json:"webhook,omitempty"`
}

// ACMEIssuerDNS01ProviderAkamai is cert-manager's akamai solver. certfn
// accepts and validates it but cannot act on it (the Issuer says so).
type ACMEIssuerDNS01ProviderAkamai struct {
	ServiceConsumerDomain string            `json:"serviceConsumerDomain"`
	ClientToken           SecretKeySelector `json:"clientTokenSecretRef"`
	ClientSecret          SecretKeySelector `json:"clientSecretSecretRef"`
	AccessToken           SecretKeySelector `json:"accessTokenSecretRef"`
}

// ACMEIssuerDNS01ProviderCloudflare is cert-manager's cloudflare solver:
// an API token, or a global API key with the account's e-mail.
type ACMEIssuerDNS01ProviderCloudflare struct {
	Email    string             `json:"email,omitempty"`
	APIKey   *SecretKeySelector `json:"apiKeySecretRef,omitempty"`
	APIToken *SecretKeySelector `json:"apiTokenSecretRef,omitempty"`
}

// ACMEIssuerDNS01ProviderDigitalOcean is cert-manager's digitalocean solver.
type ACMEIssuerDNS01ProviderDigitalOcean struct {
	Token SecretKeySelector `json:"tokenSecretRef"`
}

// ACMEIssuerDNS01ProviderAzureDNS is cert-manager's azureDNS solver: a
// service principal (clientID, clientSecretSecretRef, tenantID) or a
// managed identity.
type ACMEIssuerDNS01ProviderAzureDNS struct {
	ClientID          string                `json:"clientID,omitempty"`
	ClientSecret      *SecretKeySelector    `json:"clientSecretSecretRef,omitempty"`
	SubscriptionID    string                `json:"subscriptionID"`
	TenantID          string                `json:"tenantID,omitempty"`
	ResourceGroupName string                `json:"resourceGroupName"`
	HostedZoneName    string                `json:"hostedZoneName,omitempty"`
	Environment       string                `json:"environment,omitempty"`
	ManagedIdentity   *AzureManagedIdentity `json:"managedIdentity,omitempty"`
	ZoneType          string                `json:"zoneType,omitempty"`
}

// AzureManagedIdentity selects a managed identity for azureDNS.
type AzureManagedIdentity struct {
	ClientID   string `json:"clientID,omitempty"`
	ResourceID string `json:"resourceID,omitempty"`
	TenantID   string `json:"tenantID,omitempty"`
}

// Azure environments and zone types cert-manager accepts.
const (
	AzurePublicCloud       = "AzurePublicCloud"
	AzureChinaCloud        = "AzureChinaCloud"
	AzureGermanCloud       = "AzureGermanCloud"
	AzureUSGovernmentCloud = "AzureUSGovernmentCloud"
	AzurePrivateZone       = "AzurePrivateZone"
	AzurePublicZone        = "AzurePublicZone"
)

// ACMEIssuerDNS01ProviderAcmeDNS is cert-manager's acmeDNS solver: the
// acme-dns server and a secret key holding the registration JSON
// (domain → username, password, fulldomain, subdomain).
type ACMEIssuerDNS01ProviderAcmeDNS struct {
	Host          string            `json:"host"`
	AccountSecret SecretKeySelector `json:"accountSecretRef"`
}

// ACMEIssuerDNS01ProviderRFC2136 is cert-manager's rfc2136 solver.
type ACMEIssuerDNS01ProviderRFC2136 struct {
	Nameserver    string            `json:"nameserver"`
	TSIGSecret    SecretKeySelector `json:"tsigSecretSecretRef,omitempty"`
	TSIGKeyName   string            `json:"tsigKeyName,omitempty"`
	TSIGAlgorithm string            `json:"tsigAlgorithm,omitempty"`
	Protocol      string            `json:"protocol,omitempty"`
}

// ACMEIssuerDNS01ProviderRoute53 is cert-manager's route53 solver.
type ACMEIssuerDNS01ProviderRoute53 struct {
	Auth              json.RawMessage    `json:"auth,omitempty"`
	AccessKeyID       string             `json:"accessKeyID,omitempty"`
	SecretAccessKeyID *SecretKeySelector `json:"accessKeyIDSecretRef,omitempty"`
	SecretAccessKey   SecretKeySelector  `json:"secretAccessKeySecretRef,omitempty"`
	Role              string             `json:"role,omitempty"`
	HostedZoneID      string             `json:"hostedZoneID,omitempty"`
	Region            string             `json:"region,omitempty"`
}

// ACMEIssuerDNS01ProviderCloudDNS is cert-manager's cloudDNS solver.
type ACMEIssuerDNS01ProviderCloudDNS struct {
	ServiceAccount *SecretKeySelector `json:"serviceAccountSecretRef,omitempty"`
	Project        string             `json:"project"`
	HostedZoneName string             `json:"hostedZoneName,omitempty"`
}
