package terraform_test

// The IAM tables of infra/terraform/aws are held to core/app's role data
// (docs/design/roles.md): each function's policy must grant exactly what
// the ports of its role need — no permission that no port needs, none
// missing for a port it has. What each port needs on AWS is the table
// below (awsNeeds); the role data says which ports a role has
// (app.Role.Ports), what it does with the state store (StoreAccess) and
// the secret store (SecretAccess), and which queue it consumes.
//
// A grant is compared as a unit "action@resource[qualifier]": the action
// in lower case, the resource by what it is (table, index/<name>,
// queue/<name>, secret, parameter/<class>, zone, ...), and for Secrets
// Manager the certfn-role tag a statement is limited to ([tag]; [new tag]
// for the tag a request must carry; [untagged]), for KMS the service the
// key is used through ("via sqs"). Resource scoping in detail (leading
// keys, record names, tags of requests) is iam_test.go's.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/app"
)

// secretClassTags are the certfn-role tags of each secret class
// (docs/deploy/aws.md, "Secrets"; adapters/aws/ssmstore.ClassOf inverted).
var secretClassTags = map[app.SecretClass][]string{
	app.ClassTLS:               {"certificate", "acme-account"},
	app.ClassPrivateKey:        {"private-key"},
	app.ClassIssuedCA:          {"issued-ca"},
	app.ClassCA:                {"ca"},
	app.ClassSolverCredentials: {"solver-credentials"},
}

// needs collects the units a role needs, each with the port (or event)
// that needs it.
type needs map[string]string

func (n needs) add(why string, actions []string, resources ...string) {
	for _, a := range actions {
		for _, r := range resources {
			n[strings.ToLower(a)+"@"+r] = why
		}
	}
}

// kms adds the deployment key's actions through service.
func (n needs) kms(why, service string, actions ...string) {
	for _, a := range actions {
		n[strings.ToLower(a)+"@kms via "+service] = why
	}
}

// awsNeeds is the port → IAM table of the AWS adapters: the units role
// needs in variant v.
func awsNeeds(role app.Role, v variant) needs {
	n := needs{}
	n.add("its log group", []string{"logs:CreateLogStream", "logs:PutLogEvents"}, "logs")
	store := "state store (" + string(role.StoreAccess()) + ")"
	rw := []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
	switch role.StoreAccess() {
	case app.StoreAll:
		n.add(store, rw, "table", "index/kind_ns", "index/owner")
	case app.StoreSigning:
		n.add(store, []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}, "table")
		n.add(store, []string{"dynamodb:Query"}, "index/kind_ns")
	case app.StoreDue:
		n.add(store, []string{"dynamodb:Query"}, "index/due")
	case app.StoreChallenges:
		n.add(store, []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}, "table", "index/kind_ns")
	}
	// The table's key: an engine's store also has DynamoDB generate data
	// keys under it; the HTTP-01 responder only reads.
	n.kms(store, "dynamodb", "kms:Decrypt")
	if role.Engine {
		n.kms(store, "dynamodb", "kms:GenerateDataKey")
	}
	send := []string{"sqs:SendMessage"}
	if role.Needs(app.PortQueue) {
		n.add(string(app.PortQueue), send, "queue/worker")
		n.kms(string(app.PortQueue), "sqs", "kms:Decrypt", "kms:GenerateDataKey")
	}
	if role.Needs(app.PortSignerQueue) {
		n.add(string(app.PortSignerQueue), send, "queue/signer")
		n.kms(string(app.PortSignerQueue), "sqs", "kms:Decrypt", "kms:GenerateDataKey")
	}
	if q := role.Consumes; q != "" {
		why := "consumes the " + string(q) + " queue"
		n.add(why, []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"}, "queue/"+string(q))
		n.kms(why, "sqs", "kms:Decrypt")
	}
	if role.Needs(app.PortSecrets) {
		awsSecretNeeds(n, role.SecretAccess(), v)
	}
	if role.Needs(app.PortDNS01) {
		why := string(app.PortDNS01)
		if len(v.zones) > 0 {
			n.add(why, []string{"route53:ChangeResourceRecordSets", "route53:ListResourceRecordSets", "route53:GetHostedZone"}, "zone")
			n.add(why, []string{"route53:GetChange"}, "change")
			n.add(why, []string{"route53:ListHostedZonesByName"}, "*")
		}
		if len(v.assumeRoles) > 0 {
			n.add(why, []string{"sts:AssumeRole"}, "role")
		}
	}
	if role.Needs(app.PortCertificateImporter) && v.acm {
		why := string(app.PortCertificateImporter)
		n.add(why, []string{"acm:ImportCertificate", "acm:AddTagsToCertificate", "acm:DescribeCertificate", "acm:ListTagsForCertificate"}, "acm")
		n.add(why, []string{"acm:ListCertificates"}, "*")
	}
	if role.Needs(app.PortNotifier) && !v.noNotifications {
		n.add(string(app.PortNotifier), []string{"events:PutEvents"}, "bus")
	}
	return n
}

// awsSecretNeeds adds the secret store's units for access: by certfn-role
// tag on Secrets Manager, by class path on Parameter Store.
func awsSecretNeeds(n needs, access app.SecretAccess, v variant) {
	why := string(app.PortSecrets)
	read, write := access.Classes(v.workerManagesCA)
	if v.ssm {
		for _, c := range read {
			n.add(why, []string{"ssm:GetParameter", "ssm:GetParameters"}, "parameter/"+string(c))
		}
		for _, c := range write {
			n.add(why, []string{"ssm:PutParameter", "ssm:DeleteParameter"}, "parameter/"+string(c))
		}
		n.kms(why, "ssm", "kms:Decrypt")
		if access.Writes() {
			n.kms(why, "ssm", "kms:GenerateDataKey", "kms:Encrypt")
		}
		return
	}
	lookup := []string{"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}
	// A secret that does not exist yet has no tag: looking it up must
	// reach Secrets Manager.
	n.add(why, lookup, "secret[untagged]")
	for _, c := range read {
		for _, tag := range secretClassTags[c] {
			n.add(why, lookup, "secret["+tag+"]")
		}
	}
	for _, c := range write {
		for _, tag := range secretClassTags[c] {
			n.add(why, []string{"secretsmanager:PutSecretValue", "secretsmanager:UpdateSecret", "secretsmanager:UpdateSecretVersionStage",
				"secretsmanager:DeleteSecret", "secretsmanager:RestoreSecret", "secretsmanager:TagResource"}, "secret["+tag+"]")
			n.add(why, []string{"secretsmanager:CreateSecret", "secretsmanager:TagResource"}, "secret[new "+tag+"]")
		}
	}
	n.kms(why, "secretsmanager", "kms:Decrypt")
	if access.Writes() {
		n.kms(why, "secretsmanager", "kms:GenerateDataKey")
	}
}

// awsResource names what arn is (see the file comment); "" for an ARN the
// table does not know, which fails the test.
func awsResource(arn string) string {
	if arn == "*" {
		return "*"
	}
	p := strings.SplitN(arn, ":", 6)
	if len(p) != 6 || p[0] != "arn" {
		return ""
	}
	service, rest := p[2], p[5]
	switch service {
	case "logs":
		return "logs"
	case "dynamodb":
		if _, index, ok := strings.Cut(rest, "/index/"); ok {
			return "index/" + index
		}
		return "table"
	case "sqs":
		for _, q := range []string{"worker", "signer"} {
			if strings.HasSuffix(rest, "-"+q) {
				return "queue/" + q
			}
		}
	case "secretsmanager":
		return "secret"
	case "ssm":
		if segs := strings.Split(strings.TrimSuffix(rest, "/*"), "/"); len(segs) >= 2 {
			return "parameter/" + segs[len(segs)-1]
		}
	case "kms":
		return "kms"
	case "route53":
		if strings.HasPrefix(rest, "hostedzone/") {
			return "zone"
		}
		if strings.HasPrefix(rest, "change/") {
			return "change"
		}
	case "acm":
		return "acm"
	case "events":
		return "bus"
	case "iam":
		return "role"
	}
	return ""
}

// awsGrants returns the units the Allow statements of pols grant, each
// with the statement granting it.
func awsGrants(pols []iamPolicy) map[string]string {
	out := map[string]string{}
	for _, p := range pols {
		for _, st := range p.Statement {
			if st.Effect != "Allow" {
				continue
			}
			for _, a := range st.Action {
				for _, r := range st.Resource {
					res := awsResource(r)
					if res == "" {
						res = "unknown resource " + r
					}
					for _, q := range qualifiers(st, res) {
						out[strings.ToLower(a)+"@"+res+q] = st.Sid
					}
				}
			}
		}
	}
	return out
}

// qualifiers are the units' suffixes of st on res: the certfn-role tags
// its condition limits a secret to, or the services a key is used through.
func qualifiers(st iamStatement, res string) []string {
	var out []string
	switch res {
	case "secret":
		for op, kv := range st.Condition {
			for k, vals := range kv {
				switch {
				case op == "Null" && strings.HasPrefix(k, "secretsmanager:ResourceTag/"):
					out = append(out, "[untagged]")
				case op == "StringEquals" && strings.HasPrefix(k, "secretsmanager:ResourceTag/"):
					for _, v := range vals {
						out = append(out, "["+v+"]")
					}
				case op == "StringEquals" && strings.HasPrefix(k, "aws:RequestTag/"):
					for _, v := range vals {
						out = append(out, "[new "+v+"]")
					}
				}
			}
		}
		if len(out) == 0 {
			out = []string{"[any]"}
		}
	case "kms":
		for _, via := range st.Condition["StringEquals"]["kms:ViaService"] {
			out = append(out, " via "+strings.SplitN(via, ".", 2)[0])
		}
		if len(out) == 0 {
			out = []string{" directly"}
		}
	default:
		out = []string{""}
	}
	return out
}

// roleGrantViolations compares what Terraform grants role with what its
// ports need.
func roleGrantViolations(role app.Role, granted map[string]string, want needs) []string {
	var out []string
	for _, u := range slices.Sorted(maps.Keys(granted)) {
		if _, ok := want[u]; !ok {
			out = append(out, fmt.Sprintf("%s: Terraform grants %s (statement %s), which no port of the role needs (ports %v)", role.Name, u, granted[u], role.Ports()))
		}
	}
	for _, u := range slices.Sorted(maps.Keys(want)) {
		if _, ok := granted[u]; !ok {
			out = append(out, fmt.Sprintf("%s: its %s needs %s, which Terraform does not grant", role.Name, want[u], u))
		}
	}
	return out
}

// deployedFunctions are the functions variant v deploys.
func deployedFunctions(v variant) []app.Role {
	var out []app.Role
	for _, r := range app.Functions {
		if r.Name != app.HTTP01.Name || v.http01 {
			out = append(out, r)
		}
	}
	return out
}

// TestIAMGrantsFollowRoles plans each variant and requires every
// function's policy to grant exactly what its role's ports need, and a
// policy for every function of core/app (and only those, with the
// schedule's role).
func TestIAMGrantsFollowRoles(t *testing.T) {
	for _, tc := range iamVariants {
		t.Run(tc.name, func(t *testing.T) {
			policies := rolePolicies(t, planModuleVariant(t, tc.inputs, nil))
			want := []string{"schedule"}
			for _, r := range deployedFunctions(tc.v) {
				want = append(want, r.Name)
			}
			sort.Strings(want)
			if got := keysOf(policies); !slices.Equal(got, want) {
				t.Fatalf("policies of %v, want one per function of core/app: %v", got, want)
			}
			for _, r := range deployedFunctions(tc.v) {
				for _, v := range roleGrantViolations(r, awsGrants(policies[r.Name]), awsNeeds(r, tc.v)) {
					t.Error(v)
				}
			}
		})
	}
}

// The comparison fails both ways: a role that gains a port Terraform does
// not grant, and a grant no port needs (the broken variant of iam_test.go,
// which widens every policy).
func TestIAMGrantsFollowRolesCatches(t *testing.T) {
	tc := iamVariants[0]
	policies := rolePolicies(t, planModuleVariant(t, tc.inputs, nil))
	for _, c := range []struct {
		role app.Role
		want string
	}{
		{func() app.Role { r := app.API; r.Secrets = true; return r }(), "api: its secrets needs secretsmanager:getsecretvalue@secret[untagged]"},
		{func() app.Role { r := app.Scheduler; r.HandsOff = []string{"ca"}; return r }(), "scheduler: its signerQueue needs sqs:sendmessage@queue/signer"},
		{func() app.Role { r := app.Worker; r.Signs = append(r.Signs, "ca"); return r }(), "worker: its secrets needs secretsmanager:getsecretvalue@secret[ca]"},
		{func() app.Role { r := app.Signer; r.Consumes = app.WorkQueue; return r }(), "signer: its consumes the worker queue needs sqs:receivemessage@queue/worker"},
		{func() app.Role { r := app.Worker; r.ACME = false; return r }(), "worker: Terraform grants route53:changeresourcerecordsets@zone"},
	} {
		got := roleGrantViolations(c.role, awsGrants(policies[c.role.Name]), awsNeeds(c.role, tc.v))
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, c.want) }) {
			t.Errorf("changed %s role: no violation %q in %q", c.role.Name, c.want, got)
		}
	}
	broken := rolePolicies(t, planModuleVariant(t, tc.inputs, map[string]string{
		"zz_broken_extra.tf":    brokenExtra,
		"zz_broken_override.tf": brokenOverride,
	}))
	var got []string
	for _, r := range deployedFunctions(tc.v) {
		got = append(got, roleGrantViolations(r, awsGrants(broken[r.Name]), awsNeeds(r, tc.v))...)
	}
	for _, want := range []string{
		"api: Terraform grants secretsmanager:getsecretvalue@secret[any] (statement BrokenApiReadsSecrets)",
		"worker: Terraform grants secretsmanager:getsecretvalue@secret[any] (statement BrokenWorkerReadsEverySecret)",
		"worker: Terraform grants sts:assumerole@role (statement BrokenWorkerAssumesAnyRole)",
		"scheduler: Terraform grants *@*",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("broken policies: no violation %q in %q", want, got)
		}
	}
}
