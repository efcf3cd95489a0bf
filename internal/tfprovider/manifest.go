package tfprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/apiclient"
)

// manifestResource is certfn_manifest: one certfn object from a YAML or
// JSON document (manifest) or an HCL object (object).
type manifestResource struct{ data *providerData }

var (
	_ resource.ResourceWithConfigure      = (*manifestResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*manifestResource)(nil)
	_ resource.ResourceWithImportState    = (*manifestResource)(nil)
	_ resource.ResourceWithValidateConfig = (*manifestResource)(nil)
)

func newManifestResource() resource.Resource { return &manifestResource{} }

type manifestModel struct {
	ID         types.String  `tfsdk:"id"`
	Manifest   types.String  `tfsdk:"manifest"`
	Object     types.Dynamic `tfsdk:"object"`
	APIVersion types.String  `tfsdk:"api_version"`
	Kind       types.String  `tfsdk:"kind"`
	Namespace  types.String  `tfsdk:"namespace"`
	Name       types.String  `tfsdk:"name"`
	Fields     types.String  `tfsdk:"fields"`
	Wait       *waitModel    `tfsdk:"wait"`
}

type waitModel struct {
	Condition types.String `tfsdk:"condition"`
	Timeout   types.String `tfsdk:"timeout"`
}

func (r *manifestResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_manifest"
}

func (r *manifestResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "One certfn object of any kind (Issuer, ClusterIssuer, Certificate, CertificateRequest, CertificateRequestPolicy, Role, " +
			"RoleBinding, ClusterRole, ClusterRoleBinding, Namespace), written as cert-manager's YAML or JSON (manifest) or as an HCL object (object). " +
			"Terraform manages the fields the manifest sets, never status. Plans are checked by the server (a dry run): invalid fields, " +
			"RBAC and policy refusals fail the plan.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, Description: "kind/namespace/name (kind/name for cluster-scoped kinds); the import ID."},
			"manifest": schema.StringAttribute{Optional: true,
				Description: "One YAML or JSON document (file(), templatefile(), yamlencode(), a heredoc). Exactly one of manifest and object."},
			"object": schema.DynamicAttribute{Optional: true,
				Description: "The object as an HCL value ({ apiVersion = ..., kind = ..., metadata = {...}, spec = {...} }). Exactly one of manifest and object."},
			"api_version": schema.StringAttribute{Computed: true, Description: "The manifest's apiVersion."},
			"kind":        schema.StringAttribute{Computed: true, Description: "The manifest's kind."},
			"namespace":   schema.StringAttribute{Computed: true, Description: "Its namespace (\"default\" when a namespaced kind gives none; empty for cluster-scoped kinds)."},
			"name":        schema.StringAttribute{Computed: true, Description: "metadata.name."},
			"fields": schema.StringAttribute{Computed: true,
				Description: "The fields the manifest sets, as JSON with sorted keys, as certfn holds them: plans show changes and drift here field by field. Never status."},
		},
		Blocks: map[string]schema.Block{
			"wait": schema.SingleNestedBlock{
				Description: "After create and update, wait until the object's condition is True for its current generation (a Certificate: issued, and not issuing). " +
					"A Certificate that cannot get there (request denied or failed, issuer misconfigured) fails at once with certfn's explanation; a timeout names what blocks it.",
				Attributes: map[string]schema.Attribute{
					"condition": schema.StringAttribute{Optional: true, Description: "The condition type (default Ready)."},
					"timeout":   schema.StringAttribute{Optional: true, Description: "How long to wait, a Go duration (default 10m)."},
				},
			},
		},
	}
}

func (r *manifestResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if d, ok := req.ProviderData.(*providerData); ok {
		r.data = d
	}
}

// source returns the attribute the document comes from, for errors.
func (m *manifestModel) source() path.Path {
	if !m.Object.IsNull() {
		return path.Root("object")
	}
	return path.Root("manifest")
}

// desired returns the document the configuration declares and what it
// names; errUnknown when it is not known before apply.
func (m *manifestModel) desired() (doc, identity, error) {
	hasManifest, hasObject := !m.Manifest.IsNull(), !m.Object.IsNull()
	switch {
	case hasManifest && hasObject:
		return nil, identity{}, errors.New("set manifest or object, not both")
	case !hasManifest && !hasObject:
		return nil, identity{}, errors.New("set manifest (YAML or JSON) or object (HCL)")
	}
	var d doc
	if hasManifest {
		if m.Manifest.IsUnknown() {
			return nil, identity{}, errUnknown
		}
		var err error
		if d, err = parseManifest(m.Manifest.ValueString()); err != nil {
			return nil, identity{}, err
		}
	} else {
		v, err := fromValue(m.Object)
		if err != nil {
			return nil, identity{}, err
		}
		var ok bool
		if d, ok = v.(map[string]any); !ok {
			return nil, identity{}, fmt.Errorf("object: want an object with apiVersion, kind, metadata and spec, not %T", v)
		}
	}
	stripServerManaged(d)
	id, err := check(d)
	if err != nil {
		return nil, identity{}, err
	}
	return d, id, nil
}

func (r *manifestResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m manifestModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, _, err := m.desired(); err != nil && !errors.Is(err, errUnknown) {
		resp.Diagnostics.AddAttributeError(m.source(), "Invalid certfn manifest", err.Error())
	}
	if m.Wait != nil && !m.Wait.Timeout.IsNull() && !m.Wait.Timeout.IsUnknown() {
		if _, err := parseTimeout(m.Wait.Timeout.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("wait").AtName("timeout"), "Invalid wait timeout", err.Error())
		}
	}
}

func (r *manifestResource) client() (*apiclient.Client, diag.Diagnostics) {
	var diags diag.Diagnostics
	if r.data == nil || r.data.client == nil {
		diags.AddError("certfn provider not configured", "The provider's endpoint is not known: it must be known before objects can be read or written.")
		return nil, diags
	}
	return r.data.client, diags
}

func (r *manifestResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var cfg, plan manifestModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	d, id, err := cfg.desired()
	if errors.Is(err, errUnknown) {
		return // computed attributes stay unknown
	}
	if err != nil {
		resp.Diagnostics.AddAttributeError(cfg.source(), "Invalid certfn manifest", err.Error())
		return
	}
	fields, err := canonical(d)
	if err != nil {
		resp.Diagnostics.AddAttributeError(cfg.source(), "Invalid certfn manifest", err.Error())
		return
	}
	plan.ID, plan.APIVersion, plan.Kind = types.StringValue(id.ID()), types.StringValue(id.APIVersion), types.StringValue(id.Kind)
	plan.Namespace, plan.Name, plan.Fields = types.StringValue(id.Namespace), types.StringValue(id.Name), types.StringValue(fields)

	changed, replace := true, false
	if !req.State.Raw.IsNull() {
		var state manifestModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
		if state.ID.ValueString() != id.ID() {
			replace = true // another object: create it, delete the old one
		} else if old, err := parseCanonical(state.Fields.ValueString()); err == nil {
			if sameManaged(id.Kind, d, old) && sameManaged(id.Kind, old, d) {
				plan.Fields, changed = state.Fields, false // the same in certfn's spelling: no diff
			} else if id.Kind == api.KindCertificateRequest && !reflect.DeepEqual(
				normalizeNumbers(roundTrip(id.Kind, d)["spec"]), normalizeNumbers(roundTrip(id.Kind, old)["spec"])) {
				replace = true // a CertificateRequest's spec is immutable
			}
		}
		if replace {
			resp.RequiresReplace = append(resp.RequiresReplace, cfg.source())
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	if !changed || replace || r.data == nil || r.data.client == nil {
		return
	}
	if req.State.Raw.IsNull() && id.Kind == api.KindCertificateRequest {
		// Terraform plans the create of a replacement with no prior state
		// while the old request still exists: the server would judge the
		// dry run as an update of an immutable spec and refuse it. The old
		// request is deleted first; the new one is validated and decided
		// when it is created.
		if _, err := getObject(ctx, r.data.client, id); err == nil {
			return
		}
	}
	resp.Diagnostics.Append(dryRun(ctx, r.data.client, d, id, cfg.source())...)
}

// dryRun asks the server whether it would apply d (authorization,
// validation, quotas, the policies' decision on a Certificate's request)
// and reports its refusals on the attribute at src.
func dryRun(ctx context.Context, c *apiclient.Client, d doc, id identity, src path.Path) diag.Diagnostics {
	var diags diag.Diagnostics
	body, err := json.Marshal(d)
	if err != nil {
		diags.AddAttributeError(src, "Invalid certfn manifest", err.Error())
		return diags
	}
	var out struct {
		DryRun []app.DryRunResult `json:"dryRun"`
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/apply?dryRun=All", body, &out); err != nil {
		summary, detail := refusal(id, "plan", err)
		diags.AddAttributeError(src, summary, detail)
		return diags
	}
	for _, r := range out.DryRun {
		if r.Approval == nil {
			continue
		}
		switch r.Approval.Result {
		case "Denied":
			diags.AddAttributeError(src, fmt.Sprintf("certfn's policies would deny %s's request", id.ID()),
				fmt.Sprintf("The CertificateRequestPolicies deny the request this %s would create: %s", id.Kind, r.Approval.Message))
		case "Unmatched":
			diags.AddAttributeWarning(src, fmt.Sprintf("No CertificateRequestPolicy approves %s's request yet", id.ID()),
				"At plan time no policy applies to its request ("+r.Approval.Message+"); it will wait for approval unless a policy "+
					"created in the same apply, or the deployment's auto-approval, approves it.")
		}
	}
	return diags
}

// refusal turns an API error into a diagnostic naming the object, the
// status and, for invalid manifests, the field.
func refusal(id identity, verb string, err error) (string, string) {
	var ae *apiclient.APIError
	if !errors.As(err, &ae) {
		return fmt.Sprintf("certfn: %s %s failed", verb, id.ID()), err.Error()
	}
	switch ae.StatusCode() {
	case http.StatusUnprocessableEntity, http.StatusBadRequest:
		detail := err.Error()
		if f := ae.Field(); f != "" {
			detail = "field " + f + ": " + detail
		}
		return fmt.Sprintf("certfn refused %s as invalid (%d %s)", id.ID(), ae.StatusCode(), ae.Reason()), detail
	case http.StatusForbidden:
		return fmt.Sprintf("certfn refused %s: 403 Forbidden", id.ID()), err.Error() +
			"\n\nThe provider's identity (its client certificate, AWS principal or Google service account) needs a RoleBinding granting this verb (docs/reference/policy.md)."
	case http.StatusUnauthorized:
		return "certfn refused the provider's credentials (401)", err.Error()
	}
	return fmt.Sprintf("certfn: %s %s: %d", verb, id.ID(), ae.StatusCode()), err.Error()
}

func (r *manifestResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan manifestModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	c, diags := r.client()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	d, id, err := plan.desired()
	if err != nil {
		resp.Diagnostics.AddAttributeError(plan.source(), "Invalid certfn manifest", err.Error())
		return
	}
	if _, err := getObject(ctx, c, id); err == nil {
		resp.Diagnostics.AddError(fmt.Sprintf("%s already exists", id.ID()),
			fmt.Sprintf("certfn already holds %s: import it (terraform import <address> %s) to manage it with Terraform.", id.ID(), id.ID()))
		return
	} else if !errors.Is(err, ports.ErrNotFound) {
		summary, detail := refusal(id, "read", err)
		resp.Diagnostics.AddError(summary, detail)
		return
	}
	r.apply(ctx, c, d, id, &plan, &resp.State, &resp.Diagnostics)
}

func (r *manifestResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan manifestModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	c, diags := r.client()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	d, id, err := plan.desired()
	if err != nil {
		resp.Diagnostics.AddAttributeError(plan.source(), "Invalid certfn manifest", err.Error())
		return
	}
	r.apply(ctx, c, d, id, &plan, &resp.State, &resp.Diagnostics)
}

// stateSetter is the part of tfsdk.State apply uses.
type stateSetter interface {
	Set(ctx context.Context, val any) diag.Diagnostics
}

// apply writes d, records the planned state, then waits when asked: an
// object written but not ready is in the state (so the next apply updates
// it) and the error says what blocks it.
func (r *manifestResource) apply(ctx context.Context, c *apiclient.Client, d doc, id identity, plan *manifestModel, state stateSetter, diags *diag.Diagnostics) {
	body, err := json.Marshal(d)
	if err != nil {
		diags.AddError("Invalid certfn manifest", err.Error())
		return
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/apply", body, nil); err != nil {
		summary, detail := refusal(id, "apply", err)
		diags.AddAttributeError(plan.source(), summary, detail)
		return
	}
	if plan.Fields.IsUnknown() { // the manifest was not known at plan time
		fields, err := canonical(d)
		if err != nil {
			diags.AddError("Invalid certfn manifest", err.Error())
			return
		}
		plan.Fields = types.StringValue(fields)
	}
	plan.ID, plan.APIVersion, plan.Kind = types.StringValue(id.ID()), types.StringValue(id.APIVersion), types.StringValue(id.Kind)
	plan.Namespace, plan.Name = types.StringValue(id.Namespace), types.StringValue(id.Name)
	diags.Append(state.Set(ctx, plan)...)
	if plan.Wait == nil || diags.HasError() {
		return
	}
	if err := r.wait(ctx, c, id, plan.Wait); err != nil {
		diags.AddError(fmt.Sprintf("%s is not %s", id.ID(), waitCondition(plan.Wait)), err.Error())
	}
}

// getObject reads the stored object as generic JSON.
func getObject(ctx context.Context, c *apiclient.Client, id identity) (doc, error) {
	p, err := apiclient.ObjectPath(id.key())
	if err != nil {
		return nil, err
	}
	var obj doc
	if err := c.Do(ctx, http.MethodGet, p, nil, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func (r *manifestResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state manifestModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	c, diags := r.client()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseImportID(state.ID.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Invalid certfn_manifest ID", err.Error())
		return
	}
	obj, err := getObject(ctx, c, id)
	if errors.Is(err, ports.ErrNotFound) {
		resp.State.RemoveResource(ctx) // deleted outside Terraform: plan creates it again
		return
	}
	if err != nil {
		summary, detail := refusal(id, "read", err)
		resp.Diagnostics.AddError(summary, detail)
		return
	}
	var fields doc
	if old, err := parseCanonical(state.Fields.ValueString()); err == nil && len(old) > 0 {
		if sameManaged(id.Kind, old, obj) {
			return // as applied
		}
		fields, _ = project(obj, old).(map[string]any)
	} else {
		fields = managed(obj) // import: everything but status and certfn's metadata
	}
	s, err := canonical(fields)
	if err != nil {
		resp.Diagnostics.AddError("certfn: undecodable object", err.Error())
		return
	}
	av, _ := obj["apiVersion"].(string)
	state.ID, state.Kind, state.Namespace, state.Name = types.StringValue(id.ID()), types.StringValue(id.Kind), types.StringValue(id.Namespace), types.StringValue(id.Name)
	state.APIVersion, state.Fields = types.StringValue(av), types.StringValue(s)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *manifestResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state manifestModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	c, diags := r.client()
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	id, err := parseImportID(state.ID.ValueString())
	if err != nil {
		resp.Diagnostics.AddError("Invalid certfn_manifest ID", err.Error())
		return
	}
	p, err := apiclient.ObjectPath(id.key())
	if err != nil {
		resp.Diagnostics.AddError("Invalid certfn_manifest ID", err.Error())
		return
	}
	if err := c.Do(ctx, http.MethodDelete, p, nil, nil); err != nil && !errors.Is(err, ports.ErrNotFound) {
		summary, detail := refusal(id, "delete", err)
		resp.Diagnostics.AddError(summary, detail)
	}
}

func (r *manifestResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	id, err := parseImportID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	for attr, v := range map[string]string{"id": id.ID(), "kind": id.Kind, "namespace": id.Namespace, "name": id.Name} {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(attr), v)...)
	}
}
