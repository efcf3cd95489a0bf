package tfprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/apiclient"
)

// certificateDataSource is certfn_certificate: a Certificate's state as
// certfn's status route explains it — never the key pair.
type certificateDataSource struct{ data *providerData }

func newCertificateDataSource() datasource.DataSource { return &certificateDataSource{} }

type certificateModel struct {
	Namespace         types.String `tfsdk:"namespace"`
	Name              types.String `tfsdk:"name"`
	ID                types.String `tfsdk:"id"`
	Ready             types.Bool   `tfsdk:"ready"`
	Reason            types.String `tfsdk:"reason"`
	Message           types.String `tfsdk:"message"`
	Summary           types.String `tfsdk:"summary"`
	Revision          types.Int64  `tfsdk:"revision"`
	NotBefore         types.String `tfsdk:"not_before"`
	NotAfter          types.String `tfsdk:"not_after"`
	RenewalTime       types.String `tfsdk:"renewal_time"`
	DNSNames          types.List   `tfsdk:"dns_names"`
	SecretName        types.String `tfsdk:"secret_name"`
	SecretReference   types.String `tfsdk:"secret_reference"`
	ACMCertificateARN types.String `tfsdk:"acm_certificate_arn"`
	Imported          types.String `tfsdk:"imported_certificate"`
	IssuerKind        types.String `tfsdk:"issuer_kind"`
	IssuerName        types.String `tfsdk:"issuer_name"`
}

func (d *certificateDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_certificate"
}

func (d *certificateDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Description: desc}
	}
	resp.Schema = schema.Schema{
		Description: "A Certificate's state from certfn's status route: readiness, validity, and where its key pair is " +
			"(the secret store's reference, the ACM certificate). The key pair itself is never read.",
		Attributes: map[string]schema.Attribute{
			"namespace":    schema.StringAttribute{Optional: true, Description: "The Certificate's namespace (default \"default\")."},
			"name":         schema.StringAttribute{Required: true, Description: "The Certificate's name."},
			"id":           computed("Certificate/<namespace>/<name>."),
			"ready":        schema.BoolAttribute{Computed: true, Description: "Whether the Ready condition is True."},
			"reason":       computed("The Ready condition's reason."),
			"message":      computed("The Ready condition's message."),
			"summary":      computed("certfn's one-line explanation (`certfn status`): Ready, Issuing, or what blocks it."),
			"revision":     schema.Int64Attribute{Computed: true, Description: "status.revision: the number of the current issuance (0 before the first)."},
			"not_before":   computed("status.notBefore (RFC 3339), empty before the first issuance."),
			"not_after":    computed("status.notAfter (RFC 3339)."),
			"renewal_time": computed("status.renewalTime (RFC 3339): when certfn renews it."),
			"dns_names":    schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "spec.dnsNames."},
			"secret_name":  computed("spec.secretName: the secret holding tls.crt, tls.key and ca.crt."),
			"secret_reference": computed("Where the deployment's secret store keeps it: the Secrets Manager secret name (or Parameter Store path) on AWS, " +
				"the Secret Manager resource name on Google Cloud, the directory in local mode. Empty when the server does not say."),
			"acm_certificate_arn": computed("The AWS Certificate Manager ARN the key pair is imported into (annotation certfn.io/acm-import), empty otherwise: feed it to aws_lb_listener.certificate_arn."),
			"imported_certificate": computed("Where the key pair is imported, whichever the cloud: the ACM ARN on AWS, the Certificate Manager " +
				"resource name (projects/<p>/locations/<l>/certificates/<id>) on Google Cloud; empty when not imported."),
			"issuer_kind": computed("spec.issuerRef.kind."),
			"issuer_name": computed("spec.issuerRef.name."),
		},
	}
}

func (d *certificateDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, _ *datasource.ConfigureResponse) {
	if p, ok := req.ProviderData.(*providerData); ok {
		d.data = p
	}
}

func rfc3339(t *api.Time) types.String {
	if t == nil || t.IsZero() {
		return types.StringValue("")
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}

func (d *certificateDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m certificateModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.data == nil || d.data.client == nil {
		resp.Diagnostics.AddError("certfn provider not configured", "The provider's endpoint must be known to read a Certificate.")
		return
	}
	ns := m.Namespace.ValueString()
	if ns == "" {
		ns = "default"
	}
	id := identity{Kind: api.KindCertificate, Namespace: ns, Name: m.Name.ValueString(), Namespaced: true}
	p, err := apiclient.ObjectPath(id.key())
	if err != nil {
		resp.Diagnostics.AddError("certfn_certificate", err.Error())
		return
	}
	var rep app.Report
	if err := d.data.client.Do(ctx, http.MethodGet, p+"/status", nil, &rep); err != nil {
		summary, detail := refusal(id, "read", err)
		resp.Diagnostics.AddError(summary, detail)
		return
	}
	c := rep.Certificate
	if c == nil {
		resp.Diagnostics.AddError("certfn_certificate", "the server answered a status without a certificate")
		return
	}
	m.Namespace, m.ID, m.Summary = types.StringValue(ns), types.StringValue(id.ID()), types.StringValue(rep.Summary)
	m.Ready, m.Reason, m.Message = types.BoolValue(false), types.StringValue(""), types.StringValue("")
	if cond := api.FindCondition(c.Status.Conditions, api.CertificateConditionReady); cond != nil {
		m.Ready, m.Reason, m.Message = types.BoolValue(string(cond.Status) == "True"), types.StringValue(cond.Reason), types.StringValue(cond.Message)
	}
	rev := int64(0)
	if c.Status.Revision != nil {
		rev = int64(*c.Status.Revision)
	}
	m.Revision = types.Int64Value(rev)
	m.NotBefore, m.NotAfter, m.RenewalTime = rfc3339(c.Status.NotBefore), rfc3339(c.Status.NotAfter), rfc3339(c.Status.RenewalTime)
	names, diags := types.ListValueFrom(ctx, types.StringType, append([]string{}, c.Spec.DNSNames...))
	resp.Diagnostics.Append(diags...)
	m.DNSNames = names
	m.SecretName, m.SecretReference = types.StringValue(c.Spec.SecretName), types.StringValue(rep.Secret.Reference)
	// status.acmCertificateARN holds the import's reference on either cloud
	// (docs/deploy/gcp.md); acm_certificate_arn only an ARN.
	m.Imported, m.ACMCertificateARN = types.StringValue(c.Status.ACMCertificateARN), types.StringValue("")
	if strings.HasPrefix(c.Status.ACMCertificateARN, "arn:") {
		m.ACMCertificateARN = m.Imported
	}
	m.IssuerKind, m.IssuerName = types.StringValue(c.Spec.IssuerRef.Kind), types.StringValue(c.Spec.IssuerRef.Name)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// issuerDataSource is certfn_issuer: an Issuer's or ClusterIssuer's
// readiness.
type issuerDataSource struct{ data *providerData }

func newIssuerDataSource() datasource.DataSource { return &issuerDataSource{} }

type issuerModel struct {
	Kind      types.String `tfsdk:"kind"`
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
	ID        types.String `tfsdk:"id"`
	Type      types.String `tfsdk:"type"`
	Ready     types.Bool   `tfsdk:"ready"`
	Reason    types.String `tfsdk:"reason"`
	Message   types.String `tfsdk:"message"`
	ACMEURI   types.String `tfsdk:"acme_account_uri"`
}

func (d *issuerDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_issuer"
}

func (d *issuerDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "An Issuer's or ClusterIssuer's readiness.",
		Attributes: map[string]schema.Attribute{
			"kind":             schema.StringAttribute{Optional: true, Description: "Issuer (default) or ClusterIssuer."},
			"namespace":        schema.StringAttribute{Optional: true, Description: "The Issuer's namespace (default \"default\"; ignored for a ClusterIssuer)."},
			"name":             schema.StringAttribute{Required: true, Description: "Its name."},
			"id":               schema.StringAttribute{Computed: true, Description: "Issuer/<namespace>/<name> or ClusterIssuer/<name>."},
			"type":             schema.StringAttribute{Computed: true, Description: "acme, ca, selfSigned, vault or venafi."},
			"ready":            schema.BoolAttribute{Computed: true, Description: "Whether the Ready condition is True."},
			"reason":           schema.StringAttribute{Computed: true, Description: "The Ready condition's reason."},
			"message":          schema.StringAttribute{Computed: true, Description: "The Ready condition's message."},
			"acme_account_uri": schema.StringAttribute{Computed: true, Description: "status.acme.uri: the ACME account (acme issuers)."},
		},
	}
}

func (d *issuerDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, _ *datasource.ConfigureResponse) {
	if p, ok := req.ProviderData.(*providerData); ok {
		d.data = p
	}
}

func (d *issuerDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m issuerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.data == nil || d.data.client == nil {
		resp.Diagnostics.AddError("certfn provider not configured", "The provider's endpoint must be known to read an issuer.")
		return
	}
	kind := m.Kind.ValueString()
	if kind == "" {
		kind = api.KindIssuer
	}
	id := identity{Kind: kind, Name: m.Name.ValueString()}
	switch kind {
	case api.KindIssuer:
		id.Namespace, id.Namespaced = m.Namespace.ValueString(), true
		if id.Namespace == "" {
			id.Namespace = "default"
		}
	case api.KindClusterIssuer:
	default:
		resp.Diagnostics.AddError("certfn_issuer: kind", fmt.Sprintf("%q: want Issuer or ClusterIssuer", kind))
		return
	}
	obj, err := getObject(ctx, d.data.client, id)
	if err != nil {
		summary, detail := refusal(id, "read", err)
		resp.Diagnostics.AddError(summary, detail)
		return
	}
	b, _ := json.Marshal(obj)
	var iss api.Issuer // the same shape as a ClusterIssuer
	if err := json.Unmarshal(b, &iss); err != nil {
		resp.Diagnostics.AddError("certfn_issuer", "undecodable issuer: "+err.Error())
		return
	}
	m.Kind, m.Namespace, m.ID = types.StringValue(kind), types.StringValue(id.Namespace), types.StringValue(id.ID())
	s := iss.Spec
	typ := ""
	switch {
	case s.ACME != nil:
		typ = "acme"
	case s.CA != nil:
		typ = "ca"
	case s.SelfSigned != nil:
		typ = "selfSigned"
	case s.Vault != nil:
		typ = "vault"
	case s.Venafi != nil:
		typ = "venafi"
	}
	m.Type = types.StringValue(typ)
	m.Ready, m.Reason, m.Message = types.BoolValue(false), types.StringValue(""), types.StringValue("")
	if cond := api.FindCondition(iss.Status.Conditions, "Ready"); cond != nil {
		m.Ready, m.Reason, m.Message = types.BoolValue(string(cond.Status) == "True"), types.StringValue(cond.Reason), types.StringValue(cond.Message)
	}
	m.ACMEURI = types.StringValue("")
	if iss.Status.ACME != nil {
		m.ACMEURI = types.StringValue(iss.Status.ACME.URI)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
