// Package tfprovider is certfn's Terraform provider (plugin framework,
// protocol 6): the resource certfn_manifest declares any certfn object
// (Issuer, Certificate, CertificateRequestPolicy, RBAC, …) and the data
// sources certfn_certificate and certfn_issuer read what certfn made of
// them. It talks to certfn's HTTP API only (internal/apiclient), with the
// authentications of the CLI's remote mode, and never holds key material:
// the API has no secret route, and Secret manifests are refused.
package tfprovider

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/certfn/certfn/internal/apiclient"
)

// Address is the provider's source address in the CLI's configuration
// (a filesystem mirror or dev_overrides; there is no registry entry).
const Address = "registry.terraform.io/certfn/certfn"

// Options change the provider for tests.
type Options struct {
	// HTTPClient, when set, is the API client's HTTP client (with
	// auth aws-sigv4, google-id-token or none).
	HTTPClient *http.Client
	// PollInterval is the longest wait between two polls of `wait`
	// (default 2 s; the first polls come sooner).
	PollInterval time.Duration
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// New returns the provider factory for providerserver.
func New(version string, o Options) func() provider.Provider {
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	return func() provider.Provider { return &certfnProvider{version: version, opts: o} }
}

type certfnProvider struct {
	version string
	opts    Options
}

// providerData is what Configure hands to resources and data sources.
// client is nil while the configuration is not known (an endpoint that
// is another resource's output, during the first plan).
type providerData struct {
	client *apiclient.Client
	opts   Options
}

type providerModel struct {
	Endpoint   types.String `tfsdk:"endpoint"`
	Auth       types.String `tfsdk:"auth"`
	Region     types.String `tfsdk:"region"`
	Audience   types.String `tfsdk:"audience"`
	Token      types.String `tfsdk:"token"`
	ClientCert types.String `tfsdk:"client_cert"`
	ClientKey  types.String `tfsdk:"client_key"`
	ServerCA   types.String `tfsdk:"server_ca"`
}

func (p *certfnProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "certfn"
	resp.Version = p.version
}

func (p *certfnProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "certfn: cert-manager's Issuers, Certificates and policies without Kubernetes, through certfn's HTTP API. " +
			"Every attribute mirrors a flag of the CLI's remote mode and falls back to the same environment variable.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{Optional: true,
				Description: "The API's URL (CLI --server, CERTFN_SERVER): the api function's Function URL, the Cloud Run api service's URL, or https://host:port of `certfn serve --api-listen`."},
			"auth": schema.StringAttribute{Optional: true,
				Description: "aws-sigv4, google-id-token, client-cert or none (CLI --auth, CERTFN_AUTH); default: chosen from the other attributes and the URL as the CLI does."},
			"region": schema.StringAttribute{Optional: true,
				Description: "aws-sigv4: the region to sign for (CLI --region); default the Function URL's, else AWS_REGION or the profile's."},
			"audience": schema.StringAttribute{Optional: true,
				Description: "google-id-token: the ID token's audience (CLI --audience, CERTFN_AUDIENCE); default https://<endpoint host>."},
			"token": schema.StringAttribute{Optional: true, Sensitive: true,
				Description: "google-id-token: an ID token to send instead of one from Application Default Credentials (CLI --token, CERTFN_TOKEN)."},
			"client_cert": schema.StringAttribute{Optional: true,
				Description: "client-cert: path of the PEM client certificate (CLI --client-cert, CERTFN_CLIENT_CERT)."},
			"client_key": schema.StringAttribute{Optional: true,
				Description: "client-cert: path of its PEM key (CLI --client-key, CERTFN_CLIENT_KEY). The key is read by the provider and never stored in the state."},
			"server_ca": schema.StringAttribute{Optional: true,
				Description: "Path of a PEM file of the CAs the server's certificate must chain to (CLI --server-ca, CERTFN_SERVER_CA)."},
		},
	}
}

// envOf are the environment variables of the provider's attributes.
var envOf = map[string]string{"endpoint": "CERTFN_SERVER", "auth": "CERTFN_AUTH", "audience": "CERTFN_AUDIENCE", "token": "CERTFN_TOKEN",
	"client_cert": "CERTFN_CLIENT_CERT", "client_key": "CERTFN_CLIENT_KEY", "server_ca": "CERTFN_SERVER_CA"}

// flagOf maps the CLI's flag names (in apiclient's errors) to attributes.
var flagOf = map[string]string{"server": "endpoint", "client-cert": "client_cert", "client-key": "client_key", "server-ca": "server_ca"}

func (p *certfnProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	data := &providerData{opts: p.opts}
	resp.ResourceData, resp.DataSourceData = data, data
	for _, v := range []types.String{m.Endpoint, m.Auth, m.Region, m.Audience, m.Token, m.ClientCert, m.ClientKey, m.ServerCA} {
		if v.IsUnknown() {
			return // known at apply: plans skip the server's dry run meanwhile
		}
	}
	val := func(attr string, v types.String) string {
		if !v.IsNull() && v.ValueString() != "" {
			return v.ValueString()
		}
		if env := envOf[attr]; env != "" {
			return p.opts.Getenv(env)
		}
		return ""
	}
	o := apiclient.Options{Server: val("endpoint", m.Endpoint), Auth: val("auth", m.Auth), Region: val("region", m.Region),
		Audience: val("audience", m.Audience), Token: val("token", m.Token), ClientCert: val("client_cert", m.ClientCert),
		ClientKey: val("client_key", m.ClientKey), ServerCA: val("server_ca", m.ServerCA), HTTPClient: p.opts.HTTPClient,
		Name: func(flag string) string {
			attr := flag
			if a, ok := flagOf[flag]; ok {
				attr = a
			}
			if env := envOf[attr]; env != "" && p.opts.Getenv(env) != "" {
				return "provider attribute " + attr + " (or " + env + ")"
			}
			return "provider attribute " + attr
		}}
	if o.Server == "" {
		resp.Diagnostics.AddError("certfn provider: no endpoint",
			"Set the provider's endpoint (or CERTFN_SERVER) to certfn's API: the api function's Function URL, the Cloud Run api service's URL, "+
				"or https://host:port of `certfn serve --api-listen`.")
		return
	}
	c, err := apiclient.New(ctx, o)
	if err != nil {
		resp.Diagnostics.AddError("certfn provider: configuration", err.Error())
		return
	}
	data.client = c
}

func (p *certfnProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{newManifestResource}
}

func (p *certfnProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{newCertificateDataSource, newIssuerDataSource}
}
