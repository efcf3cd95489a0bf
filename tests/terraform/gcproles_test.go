package terraform_test

// The IAM table of infra/terraform/gcp, per function, follows from
// core/app's role data (docs/design/roles.md): gcpFunctionGrants is the
// port → grant table of the Google Cloud adapters, and expectedGCPGrants
// (gcp_test.go) is it over app.Functions plus the grants of the token
// identities, which no role holds. TestGCPIAMTable compares it with every
// grant the module makes, both ways.

import (
	"slices"
	"testing"

	"github.com/certfn/certfn/core/app"
)

// gcpFunctionGrants are the grants of role's service account that its
// ports need with the module inputs o.
func gcpFunctionGrants(role app.Role, o gcpOpts) []grant {
	proj := "project:" + gcpProject
	db := `resource.name == "projects/` + gcpProject + `/databases/certfn-state"`
	custom := func(id string) string { return "projects/" + gcpProject + "/roles/certfn_" + id }
	topic := func(q string) string { return "topic:" + gcpProject + "/certfn-" + q }
	sa := saMember(role.Name)

	var g []grant
	switch role.StoreAccess() {
	case app.StoreAll, app.StoreSigning:
		g = append(g, grant{proj, "roles/datastore.user", sa, db})
	default:
		g = append(g, grant{proj, "roles/datastore.viewer", sa, db})
	}
	if role.Needs(app.PortSecrets) {
		access := role.SecretAccess()
		read, write := access.Classes(o.manageCA)
		onlyRead := slices.DeleteFunc(slices.Clone(read), func(c app.SecretClass) bool { return slices.Contains(write, c) })
		if len(write) > 0 {
			g = append(g, grant{proj, custom("worker_secrets"), sa, secretCond(classNames(write)...)})
		}
		if len(onlyRead) > 0 {
			g = append(g, grant{proj, "roles/secretmanager.secretAccessor", sa, secretCond(classNames(onlyRead)...)})
		}
		if access.Writes() {
			g = append(g, grant{proj, custom("secret_creator"), sa, ""})
		}
	}
	if role.Needs(app.PortQueue) {
		g = append(g, grant{topic("worker"), "roles/pubsub.publisher", sa, ""})
	}
	if role.Needs(app.PortSignerQueue) {
		g = append(g, grant{topic("signer"), "roles/pubsub.publisher", sa, ""})
	}
	if role.DelaysWork() {
		// Delayed messages are Cloud Tasks tasks publishing as the tasks
		// account.
		g = append(g,
			grant{"queue:" + gcpProject + "/us-central1/certfn-delays", "roles/cloudtasks.enqueuer", sa, ""},
			grant{"serviceAccount:projects/" + gcpProject + "/serviceAccounts/" + saEmail("tasks"), "roles/iam.serviceAccountUser", sa, ""},
		)
	}
	if role.Needs(app.PortDNS01) && len(o.zones) > 0 {
		dnsProject := gcpProject
		if o.dnsProject != "" {
			dnsProject = o.dnsProject
		}
		for _, z := range o.zones {
			g = append(g, grant{"dnsZone:" + dnsProject + "/" + z, "projects/" + dnsProject + "/roles/certfn_dns01_records", sa, ""})
		}
		g = append(g, grant{"project:" + dnsProject, "projects/" + dnsProject + "/roles/certfn_dns01_zone_list", sa, ""})
	}
	if role.Needs(app.PortCertificateImporter) && o.certImport {
		g = append(g, grant{proj, custom("certificate_import"), sa, ""})
	}
	if role.Needs(app.PortNotifier) && !o.noNotifications {
		g = append(g, grant{topic("notifications"), "roles/pubsub.publisher", sa, ""})
	}
	return g
}

func roleNames(rs []app.Role) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

func classNames(cs []app.SecretClass) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// gcpDeployedFunctions are the functions the module deploys with o.
func gcpDeployedFunctions(o gcpOpts) []app.Role {
	return deployedFunctions(variant{http01: o.http01})
}

// roleNamed returns the function called name, or false for an identity
// that is no function (push, cron, tasks).
func roleNamed(name string) (app.Role, bool) {
	r, err := app.FunctionNamed(name)
	return r, err == nil
}

// The table follows the role data: a role that gains a port gets grants
// the module does not make, which TestGCPIAMTable reports as missing.
func TestGCPGrantsFollowRoles(t *testing.T) {
	o := gcpIAMVariants[0].o
	made := map[string]bool{}
	for _, g := range gcpGrants(t, gcpEval(t, o.vars())) {
		made[g.String()] = true
	}
	for _, c := range []struct {
		role    app.Role
		missing string
	}{
		{func() app.Role { r := app.API; r.Secrets = true; r.Signs = []string{"ca"}; return r }(),
			saMember("api") + " roles/secretmanager.secretAccessor on project:" + gcpProject + " if " + secretCond("ca", "ica")},
		{func() app.Role { r := app.Scheduler; r.HandsOff = []string{"ca"}; return r }(),
			saMember("scheduler") + " roles/pubsub.publisher on topic:" + gcpProject + "/certfn-signer"},
		{func() app.Role { r := app.API; r.Consumes = app.WorkQueue; return r }(),
			saMember("api") + " roles/cloudtasks.enqueuer on queue:" + gcpProject + "/us-central1/certfn-delays"},
	} {
		var missing []string
		for _, g := range gcpFunctionGrants(c.role, o) {
			if !made[g.String()] {
				missing = append(missing, g.String())
			}
		}
		if !slices.Contains(missing, c.missing) {
			t.Errorf("changed %s role: missing grants %q, want %q among them", c.role.Name, missing, c.missing)
		}
	}
	// And the roles as they are need exactly what is granted to them.
	for _, r := range gcpDeployedFunctions(o) {
		for _, g := range gcpFunctionGrants(r, o) {
			if !made[g.String()] {
				t.Errorf("%s: its ports need %s, which the module does not grant", r.Name, g)
			}
		}
	}
}
