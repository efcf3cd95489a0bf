package terraform_test

// The least-privilege test of docs/design/roles.md: plan the module, read the IAM
// policy documents from `terraform show -json`, and evaluate a table of
// (function, action, resource, request context) checks against them:
// forbidden ones must be denied, required ones allowed (so that the policies
// are not vacuously strict and the evaluator is exercised both ways). A
// deliberately broken variant of the module (an override file that widens
// the policies) must be caught.

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/certfn/certfn/core/app"
)

// secretRoles are the values of the certfn-role tag (docs/deploy/aws.md).
var secretRoles = []string{"ca", "issued-ca", "private-key", "certificate", "acme-account", "solver-credentials"}

// listOnlyOnStar are the Allow actions that may have Resource "*": list
// calls that AWS cannot scope to a resource.
var listOnlyOnStar = map[string]bool{
	"route53:listhostedzonesbyname": true,
	"acm:listcertificates":          true,
}

// variant describes one planned configuration of the module, as the checks
// need to know it.
type variant struct {
	prefix          string   // name_prefix
	secretPrefix    string   // effective secret prefix
	zones           []string // route53_zone_ids (bare IDs)
	kmsKeyARN       string   // kms_key_arn; "" when the module creates the key
	http01          bool     // enable_http01
	acm             bool     // enable_acm_import
	workerManagesCA bool     // worker_manages_ca_certificates
	ssm             bool     // secret_store = "ssm"
	assumeRoles     []string // route53_assume_role_arns
	noNotifications bool     // notifications = false
}

// iamCheck is one row of the table: may role perform action on resource
// with ctx? want says whether it must be allowed.
type iamCheck struct {
	name     string
	role     string
	action   string
	resource string
	ctx      map[string][]string
	want     bool
}

// checkBuilder makes the ARNs and contexts of one variant.
type checkBuilder struct {
	v      variant
	checks []iamCheck
}

func (b *checkBuilder) arn(service, rest string) string {
	return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, testRegion, testAccount, rest)
}
func (b *checkBuilder) fn(name string) string { return b.v.prefix + "-" + name }
func (b *checkBuilder) table() string         { return b.arn("dynamodb", "table/"+b.v.prefix+"-state") }
func (b *checkBuilder) index(n string) string { return b.table() + "/index/" + n }
func (b *checkBuilder) queue(n string) string { return b.arn("sqs", b.v.prefix+"-"+n) }
func (b *checkBuilder) secret(ns, name string) string {
	// Secrets Manager appends "-" and six random characters to a name.
	return b.arn("secretsmanager", "secret:"+b.v.secretPrefix+"/"+ns+"/"+name+"-AbCdEf")
}
func (b *checkBuilder) parameter(class, ns, name string) string {
	return b.arn("ssm", "parameter/"+b.v.secretPrefix+"/"+class+"/"+ns+"/"+name)
}
func (b *checkBuilder) logStream(fn string) string {
	return b.arn("logs", "log-group:/aws/lambda/"+b.fn(fn)+":log-stream:2026/01/01/[$LATEST]abc")
}

// kmsKey returns the deployment key's ARN and the context of a call through
// service (kms:ViaService), including the alias when the module made the key.
func (b *checkBuilder) kmsKey(via string) (string, map[string][]string) {
	c := map[string][]string{}
	if via != "" {
		c["kms:ViaService"] = []string{via + "." + testRegion + ".amazonaws.com"}
	}
	if b.v.kmsKeyARN != "" {
		return b.v.kmsKeyARN, c
	}
	c["kms:ResourceAliases"] = []string{"alias/" + b.v.prefix}
	return b.arn("kms", "key/0a1b2c3d-0000-4000-8000-000000000001"), c
}

func tagged(role string) map[string][]string {
	if role == "" {
		return nil
	}
	return map[string][]string{"secretsmanager:ResourceTag/certfn-role": {role}}
}

func withReq(c map[string][]string, kv ...string) map[string][]string {
	out := map[string][]string{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = strings.Split(kv[i+1], ",")
	}
	return out
}

func (b *checkBuilder) deny(name, role, action, resource string, c map[string][]string) {
	b.checks = append(b.checks, iamCheck{name, role, action, resource, c, false})
}

func (b *checkBuilder) allow(name, role, action, resource string, c map[string][]string) {
	b.checks = append(b.checks, iamCheck{name, role, action, resource, c, true})
}

// leading returns a DynamoDB request context with partition keys.
func leading(keys ...string) map[string][]string {
	return map[string][]string{"dynamodb:LeadingKeys": keys}
}

// route53Change is the context of a ChangeResourceRecordSets call.
func route53Change(types, names string) map[string][]string {
	return map[string][]string{
		"route53:ChangeResourceRecordSetsRecordTypes":           strings.Split(types, ","),
		"route53:ChangeResourceRecordSetsNormalizedRecordNames": strings.Split(names, ","),
		"route53:ChangeResourceRecordSetsActions":               {"UPSERT"},
	}
}

// iamChecks returns the table for v. Check names say the rule; a failure
// prints the name, the request and what decided it.
func iamChecks(v variant) []iamCheck {
	b := &checkBuilder{v: v}
	// The deployed functions, and those without the secret store port
	// (core/app's role data).
	roles := roleNames(deployedFunctions(v))
	var noSecretRoles []string
	for _, r := range deployedFunctions(v) {
		if !r.Needs(app.PortSecrets) {
			noSecretRoles = append(noSecretRoles, r.Name)
		}
	}
	if v.ssm {
		parameterChecks(b, noSecretRoles)
	} else {
		secretsManagerChecks(b, noSecretRoles)
	}

	// --- DynamoDB
	b.allow("api writes resources", "api", "dynamodb:PutItem", b.table(), leading("Certificate/default/web"))
	b.allow("api lists resources", "api", "dynamodb:Query", b.index("kind_ns"), leading("Certificate"))
	b.allow("worker writes resources", "worker", "dynamodb:UpdateItem", b.table(), leading("Certificate/default/web"))
	b.allow("signer reads its issuer", "signer", "dynamodb:GetItem", b.table(), leading("ClusterIssuer/ca"))
	b.allow("signer writes the request's status", "signer", "dynamodb:PutItem", b.table(), leading("CertificateRequest/default/web-1"))
	b.allow("signer records its failures as Events", "signer", "dynamodb:PutItem", b.table(), leading("Event/default/certificaterequest.web-1"))
	for _, k := range []string{"CertificateRequestPolicy/example", "ClusterRoleBinding/approvers", "RoleBinding/default/approvers", "Certificate/default/web"} {
		b.deny("signer may not write "+k+" (approval rights, Certificates)", "signer", "dynamodb:PutItem", b.table(), leading(k))
		b.deny("signer may not update "+k, "signer", "dynamodb:UpdateItem", b.table(), leading(k))
	}
	b.deny("signer may not delete requests", "signer", "dynamodb:DeleteItem", b.table(), leading("CertificateRequest/default/web-1"))
	// The signer lists the requests waiting for a CA issuer that became
	// Ready (kind_ns index, kind CertificateRequest), nothing else.
	b.allow("signer lists CertificateRequests", "signer", "dynamodb:Query", b.index("kind_ns"), leading("CertificateRequest"))
	b.allow("signer reads the listed requests", "signer", "dynamodb:BatchGetItem", b.table(), leading("CertificateRequest/default/web-1", "CertificateRequest/default/web-2"))
	// CertificateSigningRequests (cluster-scoped) likewise: the signer signs
	// them and lists those waiting for a CA issuer that became Ready.
	b.allow("signer writes a CSR's status", "signer", "dynamodb:PutItem", b.table(), leading("CertificateSigningRequest/app"))
	b.allow("signer lists CertificateSigningRequests", "signer", "dynamodb:Query", b.index("kind_ns"), leading("CertificateSigningRequest"))
	b.deny("signer may not delete CSRs", "signer", "dynamodb:DeleteItem", b.table(), leading("CertificateSigningRequest/app"))
	for _, k := range []string{"Certificate", "Secret", "CertificateRequestPolicy", "Issuer", "ClusterIssuer", "Order", "Challenge", "ChallengeLease", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "Namespace"} {
		b.deny("signer may not list "+k, "signer", "dynamodb:Query", b.index("kind_ns"), leading(k))
	}
	b.deny("signer may not list CertificateRequests with another kind", "signer", "dynamodb:Query", b.index("kind_ns"), leading("CertificateRequest", "Certificate"))
	b.deny("signer may not query the due index", "signer", "dynamodb:Query", b.index("due"), leading("3"))
	b.deny("signer may not query the owner index", "signer", "dynamodb:Query", b.index("owner"), leading("Certificate/default/web"))
	b.deny("signer may not query the owner index for requests", "signer", "dynamodb:Query", b.index("owner"), leading("CertificateRequest"))
	b.deny("signer may not query the table", "signer", "dynamodb:Query", b.table(), leading("CertificateRequest/default/web-1"))
	b.allow("scheduler reads the due index", "scheduler", "dynamodb:Query", b.index("due"), leading("3"))
	for _, a := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Scan"} {
		b.deny("scheduler reads nothing but the due index ("+a+")", "scheduler", "dynamodb:"+a, b.table(), leading("Certificate/default/web"))
	}
	b.deny("scheduler may not query other indexes", "scheduler", "dynamodb:Query", b.index("kind_ns"), leading("Certificate"))
	if v.http01 {
		b.allow("http01 reads challenges", "http01", "dynamodb:GetItem", b.table(), leading("Challenge/default/web-1-2-3"))
		b.allow("http01 lists challenges", "http01", "dynamodb:Query", b.index("kind_ns"), leading("Challenge"))
		b.deny("http01 may not read other resources", "http01", "dynamodb:GetItem", b.table(), leading("Certificate/default/web"))
		b.deny("http01 may not list other kinds", "http01", "dynamodb:Query", b.index("kind_ns"), leading("Order"))
		b.deny("http01 may not write challenges", "http01", "dynamodb:PutItem", b.table(), leading("Challenge/default/web-1-2-3"))
	}
	for _, r := range roles {
		b.deny(r+" may not scan the table", r, "dynamodb:Scan", b.table(), nil)
		b.deny(r+" may not delete the table", r, "dynamodb:DeleteTable", b.table(), nil)
		b.deny(r+" may not touch another table", r, "dynamodb:GetItem", b.arn("dynamodb", "table/other"), leading("Challenge/x/y"))
	}

	// --- SQS
	b.allow("worker consumes its queue", "worker", "sqs:ReceiveMessage", b.queue("worker"), nil)
	b.allow("worker routes approved requests to the signer", "worker", "sqs:SendMessage", b.queue("signer"), nil)
	b.allow("signer consumes its queue", "signer", "sqs:ReceiveMessage", b.queue("signer"), nil)
	b.allow("signer wakes owners", "signer", "sqs:SendMessage", b.queue("worker"), nil)
	b.allow("scheduler enqueues due keys", "scheduler", "sqs:SendMessage", b.queue("worker"), nil)
	b.allow("api enqueues reconcile keys", "api", "sqs:SendMessage", b.queue("worker"), nil)
	b.deny("api may not consume", "api", "sqs:ReceiveMessage", b.queue("worker"), nil)
	b.deny("api may not reach the signer queue", "api", "sqs:SendMessage", b.queue("signer"), nil)
	b.deny("scheduler may not reach the signer queue", "scheduler", "sqs:SendMessage", b.queue("signer"), nil)
	b.deny("signer may not consume the worker queue", "signer", "sqs:ReceiveMessage", b.queue("worker"), nil)
	b.deny("worker may not consume the signer queue", "worker", "sqs:ReceiveMessage", b.queue("signer"), nil)
	for _, r := range roles {
		b.deny(r+" may not purge queues", r, "sqs:PurgeQueue", b.queue("worker"), nil)
		b.deny(r+" may not read the dead-letter queue", r, "sqs:ReceiveMessage", b.queue("worker-dlq"), nil)
	}
	if v.http01 {
		b.deny("http01 may not enqueue", "http01", "sqs:SendMessage", b.queue("worker"), nil)
	}

	// --- KMS: the deployment key, through the services only.
	for _, r := range roles {
		key, c := b.kmsKey("")
		b.deny(r+" may not use the key directly", r, "kms:Decrypt", key, c)
		_, c = b.kmsKey("dynamodb")
		b.deny(r+" may not use another key", r, "kms:Decrypt", b.arn("kms", "key/ffffffff-0000-4000-8000-000000000009"), withReq(c, "kms:ResourceAliases", "alias/other"))
		b.deny(r+" may not manage the key", r, "kms:ScheduleKeyDeletion", key, nil)
		b.deny(r+" may not grant on the key", r, "kms:CreateGrant", key, nil)
		key, c = b.kmsKey("dynamodb")
		b.allow(r+" uses the key through DynamoDB", r, "kms:Decrypt", key, c)
	}
	secretsVia := "secretsmanager"
	if v.ssm {
		secretsVia = "ssm"
	}
	for _, r := range []string{"worker", "signer"} {
		key, c := b.kmsKey(secretsVia)
		b.allow(r+" decrypts secrets", r, "kms:Decrypt", key, c)
	}
	key, c := b.kmsKey(secretsVia)
	b.allow("worker encrypts new secret versions", "worker", "kms:GenerateDataKey", key, c)
	b.deny("signer may not encrypt secrets", "signer", "kms:GenerateDataKey", key, c)
	if v.ssm {
		b.allow("worker encrypts standard SecureStrings", "worker", "kms:Encrypt", key, c)
		b.deny("signer may not encrypt parameters", "signer", "kms:Encrypt", key, c)
	}

	// --- Route53: only the listed zones, only ACME TXT records.
	zoneARN := func(id string) string { return "arn:aws:route53:::hostedzone/" + id }
	otherZone := zoneARN("ZOTHERZONE0000")
	for _, r := range roles {
		b.deny(r+" may not change records outside the listed zones", r, "route53:ChangeResourceRecordSets", otherZone, route53Change("TXT", "_acme-challenge.www.example.com"))
		b.deny(r+" may not create hosted zones", r, "route53:CreateHostedZone", "*", nil)
	}
	for _, z := range v.zones {
		b.allow("worker writes ACME TXT records in listed zone "+z, "worker", "route53:ChangeResourceRecordSets", zoneARN(z), route53Change("TXT", "_acme-challenge.www.example.com"))
		b.deny("worker may not write A records in "+z, "worker", "route53:ChangeResourceRecordSets", zoneARN(z), route53Change("A", "_acme-challenge.www.example.com"))
		b.deny("worker may not write mixed record types in "+z, "worker", "route53:ChangeResourceRecordSets", zoneARN(z), route53Change("TXT,CNAME", "_acme-challenge.www.example.com"))
		b.deny("worker may not write non-ACME names in "+z, "worker", "route53:ChangeResourceRecordSets", zoneARN(z), route53Change("TXT", "www.example.com"))
		for _, r := range []string{"signer", "scheduler", "api"} {
			b.deny(r+" may not write DNS records", r, "route53:ChangeResourceRecordSets", zoneARN(z), route53Change("TXT", "_acme-challenge.www.example.com"))
		}
	}
	if len(v.zones) == 0 {
		b.deny("worker has no Route53 permission without zones", "worker", "route53:ChangeResourceRecordSets", zoneARN("Z0123456789ABC"), route53Change("TXT", "_acme-challenge.www.example.com"))
		b.deny("worker may not list zones without zones", "worker", "route53:ListHostedZonesByName", "*", nil)
	}

	// --- STS: the worker assumes exactly the roles that route53 solvers
	// name (route53_assume_role_arns); no other function assumes any role.
	for _, arn := range v.assumeRoles {
		b.allow("worker assumes the listed route53 role "+arn, "worker", "sts:AssumeRole", arn, nil)
		for _, r := range append(slices.Clone(roles), "schedule") {
			if r == "worker" {
				continue
			}
			b.deny(r+" may not assume the route53 role "+arn, r, "sts:AssumeRole", arn, nil)
		}
	}
	for _, arn := range []string{
		"arn:aws:iam::" + testAccount + ":role/dns01-other",
		"arn:aws:iam::210987654321:role/dns01",
		"arn:aws:iam::" + testAccount + ":role/" + b.fn("signer"),
	} {
		if slices.Contains(v.assumeRoles, arn) {
			continue
		}
		b.deny("worker may not assume an unlisted role "+arn, "worker", "sts:AssumeRole", arn, nil)
	}
	for _, arn := range v.assumeRoles {
		// Neither a prefix nor a suffix of a listed ARN, nor a look-alike.
		b.deny("worker may not assume a role named like "+arn, "worker", "sts:AssumeRole", arn+"-admin", nil)
		b.deny("worker may not assume a role under the path of "+arn, "worker", "sts:AssumeRole", arn+"/admin", nil)
	}
	if len(v.assumeRoles) == 0 {
		b.deny("worker may not assume roles without route53_assume_role_arns", "worker", "sts:AssumeRole", "arn:aws:iam::"+testAccount+":role/dns01", nil)
	}

	// --- ACM
	cert := b.arn("acm", "certificate/11111111-2222-4333-8444-555555555555")
	if v.acm {
		b.allow("worker imports new certificates tagged as its own", "worker", "acm:ImportCertificate", cert, withReq(nil, "aws:RequestTag/certfn-deployment", v.prefix))
		b.allow("worker re-imports its own certificates", "worker", "acm:ImportCertificate", cert, withReq(nil, "aws:ResourceTag/certfn-deployment", v.prefix))
		b.deny("worker may not import untagged certificates", "worker", "acm:ImportCertificate", cert, nil)
	}
	for _, r := range roles {
		b.deny(r+" may not overwrite foreign ACM certificates", r, "acm:ImportCertificate", cert, withReq(nil, "aws:ResourceTag/certfn-deployment", "someone-else"))
		b.deny(r+" may not delete ACM certificates", r, "acm:DeleteCertificate", cert, withReq(nil, "aws:ResourceTag/certfn-deployment", v.prefix))
		b.deny(r+" may not export ACM certificates", r, "acm:ExportCertificate", cert, withReq(nil, "aws:ResourceTag/certfn-deployment", v.prefix))
	}

	// --- EventBridge: the worker publishes notifications on the default
	// bus with source certfn, when they are on; nobody else publishes.
	bus := b.arn("events", "event-bus/default")
	source := func(s string) map[string][]string { return map[string][]string{"events:source": {s}} }
	if v.noNotifications {
		b.deny("worker may not publish events with notifications off", "worker", "events:PutEvents", bus, source("certfn"))
	} else {
		b.allow("worker publishes certfn events on the default bus", "worker", "events:PutEvents", bus, source("certfn"))
	}
	b.deny("worker may not publish events of another source", "worker", "events:PutEvents", bus, source("aws.acm"))
	b.deny("worker may not publish events without a source", "worker", "events:PutEvents", bus, nil)
	b.deny("worker may not publish on another bus", "worker", "events:PutEvents", b.arn("events", "event-bus/other"), source("certfn"))
	b.deny("worker may not change rules", "worker", "events:PutRule", b.arn("events", "rule/certfn-notifications"), nil)
	b.deny("worker may not retarget rules", "worker", "events:PutTargets", b.arn("events", "rule/certfn-notifications"), nil)
	for _, r := range roles {
		if r != "worker" {
			b.deny(r+" may not publish events", r, "events:PutEvents", bus, source("certfn"))
		}
		b.deny(r+" may not publish to SNS", r, "sns:Publish", b.arn("sns", v.prefix+"-notifications"), nil)
	}

	// --- Logs, and no privilege escalation for anyone.
	for _, r := range roles {
		b.allow(r+" writes its own logs", r, "logs:PutLogEvents", b.logStream(r), nil)
		other := "worker"
		if r == "worker" {
			other = "api"
		}
		b.deny(r+" may not write another function's logs", r, "logs:PutLogEvents", b.logStream(other), nil)
		b.deny(r+" may not pass roles", r, "iam:PassRole", b.arn("iam", "role/"+b.fn(r)), nil)
		b.deny(r+" may not edit its role", r, "iam:PutRolePolicy", "arn:aws:iam::"+testAccount+":role/"+b.fn(r), nil)
		b.deny(r+" may not assume roles", r, "sts:AssumeRole", "arn:aws:iam::"+testAccount+":role/admin", nil)
		b.deny(r+" may not change function code", r, "lambda:UpdateFunctionCode", b.arn("lambda", "function:"+b.fn("signer")), nil)
		b.deny(r+" may not invoke functions", r, "lambda:InvokeFunction", b.arn("lambda", "function:"+b.fn("signer")), nil)
	}

	// --- The schedule's role: the scheduler function only.
	b.allow("schedule invokes the scheduler", "schedule", "lambda:InvokeFunction", b.arn("lambda", "function:"+b.fn("scheduler")), nil)
	b.deny("schedule may not invoke the worker", "schedule", "lambda:InvokeFunction", b.arn("lambda", "function:"+b.fn("worker")), nil)
	b.deny("schedule may not invoke the signer", "schedule", "lambda:InvokeFunction", b.arn("lambda", "function:"+b.fn("signer")), nil)
	return b.checks
}

// secretsManagerChecks are the secret rows with secret_store =
// "secretsmanager": by certfn-role tag.
func secretsManagerChecks(b *checkBuilder, noSecretRoles []string) {
	v := b.v
	web := b.secret("default", "web-tls")
	// --- api, scheduler, http01: no secret value, whatever its tag.
	for _, r := range noSecretRoles {
		for _, tag := range append([]string{""}, secretRoles...) {
			b.deny(r+" may not read secret values (tag "+tag+")", r, "secretsmanager:GetSecretValue", web, tagged(tag))
			b.deny(r+" may not write secrets (tag "+tag+")", r, "secretsmanager:PutSecretValue", web, tagged(tag))
		}
		b.deny(r+" may not read secret values outside the prefix", r, "secretsmanager:GetSecretValue", b.arn("secretsmanager", "secret:elsewhere/x-AbCdEf"), nil)
		b.deny(r+" may not create secrets", r, "secretsmanager:CreateSecret", web, withReq(nil, "aws:RequestTag/certfn-role", "certificate"))
		key, c := b.kmsKey("secretsmanager")
		b.deny(r+" may not decrypt through Secrets Manager", r, "kms:Decrypt", key, c)
	}

	// --- worker: its secrets, never a CA key.
	workerRW := []string{"private-key", "certificate", "acme-account"}
	caRoles := []string{"ca"}
	if v.workerManagesCA {
		workerRW = append(workerRW, "issued-ca")
	} else {
		caRoles = append(caRoles, "issued-ca")
	}
	for _, tag := range workerRW {
		b.allow("worker reads its secrets ("+tag+")", "worker", "secretsmanager:GetSecretValue", web, tagged(tag))
		b.allow("worker writes its secrets ("+tag+")", "worker", "secretsmanager:PutSecretValue", web, tagged(tag))
		b.allow("worker creates its secrets ("+tag+")", "worker", "secretsmanager:CreateSecret", web, withReq(nil, "aws:RequestTag/certfn-role", tag))
		b.allow("worker tags new secrets ("+tag+")", "worker", "secretsmanager:TagResource", web, withReq(nil, "aws:RequestTag/certfn-role", tag))
		b.allow("worker re-tags its secrets after a renewal ("+tag+")", "worker", "secretsmanager:TagResource", web, withReq(tagged(tag), "aws:RequestTag/certfn.io/not-after", "2027-01-01T00:00:00Z"))
		b.allow("worker rolls its secrets back ("+tag+")", "worker", "secretsmanager:UpdateSecretVersionStage", web, tagged(tag))
	}
	b.deny("worker may not tag untagged secrets without a role", "worker", "secretsmanager:TagResource", web, withReq(nil, "aws:RequestTag/certfn.io/not-after", "2027-01-01T00:00:00Z"))
	b.allow("worker reads solver credentials", "worker", "secretsmanager:GetSecretValue", web, tagged("solver-credentials"))
	b.deny("worker may not overwrite solver credentials", "worker", "secretsmanager:PutSecretValue", web, tagged("solver-credentials"))
	for _, ca := range caRoles {
		for _, a := range []string{"GetSecretValue", "PutSecretValue", "UpdateSecret", "DeleteSecret", "RestoreSecret", "UntagResource", "UpdateSecretVersionStage"} {
			b.deny("worker may not touch CA keys ("+ca+", "+a+")", "worker", "secretsmanager:"+a, web, tagged(ca))
		}
		b.deny("worker may not create CA keys ("+ca+")", "worker", "secretsmanager:CreateSecret", web, withReq(nil, "aws:RequestTag/certfn-role", ca))
		b.deny("worker may not re-tag CA keys ("+ca+")", "worker", "secretsmanager:TagResource", web, withReq(tagged(ca), "aws:RequestTag/certfn-role", "certificate"))
		b.deny("worker may not tag a secret as a CA key ("+ca+")", "worker", "secretsmanager:TagResource", web, withReq(tagged("certificate"), "aws:RequestTag/certfn-role", ca))
	}
	// A secret that does not exist has no tags: looking it up must reach
	// Secrets Manager (ResourceNotFoundException), or issuance cannot start.
	b.allow("worker looks up a secret that does not exist yet", "worker", "secretsmanager:GetSecretValue", web, nil)
	b.allow("worker describes a secret that does not exist yet", "worker", "secretsmanager:DescribeSecret", web, nil)
	for _, a := range []string{"PutSecretValue", "DeleteSecret", "UpdateSecretVersionStage", "TagResource"} {
		b.deny("worker may not change untagged secrets ("+a+")", "worker", "secretsmanager:"+a, web, nil)
	}
	b.deny("worker may not create untagged secrets", "worker", "secretsmanager:CreateSecret", web, nil)
	b.deny("worker may not read secrets outside the prefix", "worker", "secretsmanager:GetSecretValue",
		b.arn("secretsmanager", "secret:"+v.secretPrefix+"-other/default/web-tls-AbCdEf"), tagged("certificate"))

	// --- signer: CA keys and request keys, read only.
	for _, tag := range []string{"ca", "issued-ca", "private-key"} {
		b.allow("signer reads signing keys ("+tag+")", "signer", "secretsmanager:GetSecretValue", web, tagged(tag))
	}
	b.allow("signer looks up a CA secret that does not exist yet", "signer", "secretsmanager:GetSecretValue", web, nil)
	for _, tag := range []string{"certificate", "acme-account", "solver-credentials"} {
		b.deny("signer may not read other secrets ("+tag+")", "signer", "secretsmanager:GetSecretValue", web, tagged(tag))
	}
	for _, a := range []string{"PutSecretValue", "DeleteSecret", "UpdateSecret", "TagResource"} {
		b.deny("signer may not write secrets ("+a+")", "signer", "secretsmanager:"+a, web, tagged("ca"))
	}
	b.deny("signer may not create secrets", "signer", "secretsmanager:CreateSecret", web, withReq(nil, "aws:RequestTag/certfn-role", "ca"))
}

// parameterChecks are the secret rows with secret_store = "ssm": by
// Parameter Store class path (adapters/aws/ssmstore), the same split as
// the tags.
func parameterChecks(b *checkBuilder, noSecretRoles []string) {
	v := b.v
	classes := []string{"tls", "pk", "ica", "ca", "sc"}
	reads := []string{"ssm:GetParameter", "ssm:GetParameters"}
	writes := []string{"ssm:PutParameter", "ssm:DeleteParameter"}
	for _, r := range noSecretRoles {
		for _, c := range classes {
			for _, a := range append(append(slices.Clone(reads), writes...), "ssm:GetParametersByPath", "ssm:GetParameterHistory") {
				b.deny(r+" may not touch parameters ("+c+", "+a+")", r, a, b.parameter(c, "default", "web-tls"), nil)
			}
		}
		key, c := b.kmsKey("ssm")
		b.deny(r+" may not decrypt through Parameter Store", r, "kms:Decrypt", key, c)
	}
	workerRead := []string{"tls", "pk", "sc"}
	workerWrite := []string{"tls", "pk"}
	if v.workerManagesCA {
		workerRead = append(workerRead, "ica")
		workerWrite = append(workerWrite, "ica")
	}
	for _, c := range classes {
		p := b.parameter(c, "default", "web-tls")
		for _, a := range reads {
			want := slices.Contains(workerRead, c)
			b.checks = append(b.checks, iamCheck{fmt.Sprintf("worker reads class %s: %v (%s)", c, want, a), "worker", a, p, nil, want})
			want = slices.Contains([]string{"ca", "ica", "pk"}, c)
			b.checks = append(b.checks, iamCheck{fmt.Sprintf("signer reads class %s: %v (%s)", c, want, a), "signer", a, p, nil, want})
		}
		for _, a := range writes {
			want := slices.Contains(workerWrite, c)
			b.checks = append(b.checks, iamCheck{fmt.Sprintf("worker writes class %s: %v (%s)", c, want, a), "worker", a, p, nil, want})
			b.deny("signer may not write parameters ("+c+", "+a+")", "signer", a, p, nil)
		}
		for _, r := range []string{"worker", "signer"} {
			b.deny(r+" may not list parameters by path ("+c+")", r, "ssm:GetParametersByPath", p, nil)
			b.deny(r+" reads parameters outside the prefix ("+c+")", r, "ssm:GetParameter", b.arn("ssm", "parameter/"+v.secretPrefix+"-other/"+c+"/default/web-tls"), nil)
		}
	}
	for _, r := range []string{"worker", "signer"} {
		b.deny(r+" may not read Secrets Manager secrets with secret_store = ssm", r, "secretsmanager:GetSecretValue", b.secret("default", "web-tls"), tagged("certificate"))
	}
}

// absoluteForbidden are actions for which a role may not have any Allow
// statement at all, whatever its Resource or Condition (docs/design/roles.md: the
// api reads no private key; scheduler and http01 touch nothing but their
// own data).
var absoluteForbidden = map[string][]string{
	"api":       {"secretsmanager:GetSecretValue", "secretsmanager:BatchGetSecretValue", "secretsmanager:PutSecretValue", "secretsmanager:CreateSecret", "route53:ChangeResourceRecordSets", "acm:ImportCertificate", "sts:AssumeRole", "events:PutEvents"},
	"scheduler": {"secretsmanager:GetSecretValue", "secretsmanager:BatchGetSecretValue", "secretsmanager:PutSecretValue", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "route53:ChangeResourceRecordSets", "sts:AssumeRole", "events:PutEvents"},
	"http01":    {"secretsmanager:GetSecretValue", "secretsmanager:BatchGetSecretValue", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "sqs:SendMessage", "sts:AssumeRole", "events:PutEvents"},
	"signer":    {"secretsmanager:PutSecretValue", "secretsmanager:CreateSecret", "secretsmanager:DeleteSecret", "dynamodb:DeleteItem", "route53:ChangeResourceRecordSets", "acm:ImportCertificate", "sts:AssumeRole", "events:PutEvents"},
	"schedule":  {"sts:AssumeRole"},
}

// assumeRoleViolations checks the worker's sts:AssumeRole structurally: the
// Allow statements that cover it name exactly want (route53_assume_role_arns),
// with no wildcard, and there are none when want is empty.
func assumeRoleViolations(policies map[string][]iamPolicy, want []string) []string {
	var out, got []string
	for _, p := range policies["worker"] {
		for _, st := range p.Statement {
			if st.Effect != "Allow" || len(allowStatementsFor([]iamPolicy{{Statement: []iamStatement{st}}}, "sts:AssumeRole")) == 0 {
				continue
			}
			if len(st.Condition) > 0 {
				out = append(out, fmt.Sprintf("worker: %s: sts:AssumeRole under a condition; want plain resources", st.Sid))
			}
			for _, r := range st.Resource {
				if strings.ContainsAny(r, "*?") {
					out = append(out, fmt.Sprintf("worker: %s: sts:AssumeRole on a wildcard resource %q", st.Sid, r))
				}
				got = append(got, r)
			}
		}
	}
	got = slices.Compact(slices.Sorted(slices.Values(got)))
	want = slices.Compact(slices.Sorted(slices.Values(want)))
	if !slices.Equal(got, want) {
		out = append(out, fmt.Sprintf("worker: sts:AssumeRole allowed on %v, want exactly route53_assume_role_arns %v", got, want))
	}
	return out
}

// rolePolicies returns the inline policies of every role in the plan, keyed
// by function name (the for_each key of aws_iam_role_policy.fn) and
// "schedule" for the EventBridge Scheduler role. It fails the test when a
// policy is not known at plan time or when any managed policy is attached
// (those could not be checked here).
func rolePolicies(t *testing.T, p *planJSON) map[string][]iamPolicy {
	t.Helper()
	for _, typ := range []string{"aws_iam_role_policy_attachment", "aws_iam_policy_attachment", "aws_iam_policy", "aws_iam_role_policies_exclusive", "aws_iam_role_policy_attachments_exclusive"} {
		if got := p.ofType(typ); len(got) > 0 {
			t.Errorf("the plan has %s resources %v: every permission must be an inline policy that this test evaluates", typ, keysOf(got))
		}
	}
	for k, r := range p.ofType("aws_iam_role") {
		if arns, ok := r.Values["managed_policy_arns"].([]any); ok && len(arns) > 0 {
			t.Errorf("aws_iam_role.%s attaches managed policies %v", k, arns)
		}
	}
	out := map[string][]iamPolicy{}
	for k, r := range p.ofType("aws_iam_role_policy") {
		doc := r.str("policy")
		if doc == "" {
			t.Fatalf("aws_iam_role_policy.%s: policy unknown at plan time; build its ARNs from names (main.tf, local.arn)", k)
		}
		// IAM's limit for a role's inline policies is 10,240 characters
		// (whitespace not counted; jsonencode writes none).
		if len(doc) > 10240 {
			t.Errorf("aws_iam_role_policy.%s: %d characters, over IAM's 10240 for a role's inline policies", k, len(doc))
		}
		pol, err := parsePolicy(doc)
		if err != nil {
			t.Fatalf("aws_iam_role_policy.%s: %v", k, err)
		}
		key := r.Name
		if idx, ok := r.Index.(string); ok {
			key = idx
		}
		out[key] = append(out[key], pol)
	}
	return out
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// iamViolations runs every check and the structural rules on policies and
// returns one message per violation.
func iamViolations(policies map[string][]iamPolicy, checks []iamCheck) []string {
	var out []string
	for role, pols := range policies {
		for _, w := range wildcardAllows(pols, listOnlyOnStar) {
			out = append(out, fmt.Sprintf("%s: no wildcard permissions: %s", role, w))
		}
		for _, a := range absoluteForbidden[role] {
			if sids := allowStatementsFor(pols, a); len(sids) > 0 {
				out = append(out, fmt.Sprintf("%s: no Allow statement may cover %s, found in %v", role, a, sids))
			}
		}
	}
	for _, c := range checks {
		pols, ok := policies[c.role]
		if !ok {
			out = append(out, fmt.Sprintf("%s: role %q has no policy in the plan", c.name, c.role))
			continue
		}
		d, sids, err := evaluate(pols, iamRequest{Action: c.action, Resource: c.resource, Context: c.ctx})
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", c.name, err))
			continue
		}
		if (d == allowed) != c.want {
			out = append(out, fmt.Sprintf("%s: %s %s on %s with %v: got %v (by %v), want allowed=%v",
				c.name, c.role, c.action, c.resource, c.ctx, d, sids, c.want))
		}
	}
	sort.Strings(out)
	return out
}

// everyInput sets every input of the module to a non-default value but
// notifications, which notification_sns_topic needs (the variant
// "notifications off" turns it off) (TestModulePlan and
// TestIAMLeastPrivilege share its plan).
const everyInput = `name_prefix = "pki"
  secret_prefix = "org/pki"
  kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-1111-4000-8000-00000000abcd"
  schedule_rate = "rate(5 minutes)"
  reserved_concurrency = { worker = 4, signer = 1 }
  queue_maximum_concurrency = { worker = 12 }
  lambda_timeout_seconds = { worker = 300 }
  log_retention_days = 90
  enable_http01 = false
  route53_zone_ids = ["/hostedzone/Z0123456789ABC", "ZSECONDZONE01"]
  route53_record_name_patterns = ["_acme-challenge.*", "_acme-challenge-*"]
  enable_acm_import = true
  worker_manages_ca_certificates = true
  lambda_architecture = "x86_64"
  lambda_memory_mb = 512
  max_receive_count = 3
  dlq_retention_seconds = 86400
  alarm_actions = ["arn:aws:sns:us-east-1:123456789012:certfn-alarms"]
  cluster_resource_namespace = "pki-system"
  due_shards = 32
  auto_approve_signers = ["issuers.cert-manager.io/*"]
  api_admin_arns = ["arn:aws:iam::123456789012:role/platform-admin"]
  api_invoker_arns = ["arn:aws:iam::123456789012:role/platform-admin"]
  route53_assume_role_arns = ["arn:aws:iam::123456789012:role/dns01", "arn:aws:iam::210987654321:role/certfn/dns01-zones"]
  acme_server_allow = ["https://acme-v02.api.letsencrypt.org/directory", "https://ca.internal.example/acme/"]
  quota_objects_per_namespace = 500
  quota_issuances_per_hour_per_namespace = 20
  notification_sns_topic = true
  tags = { team = "platform" }`

// planCache holds plans of the module by inputs, for the tests that plan
// the same configuration (plans take seconds each).
var planCache = struct {
	sync.Mutex
	plans map[string]*planJSON
}{plans: map[string]*planJSON{}}

// planModuleVariant copies the module, writes a root for it with inputs
// (HCL lines) and any extra files into the module copy, and returns the
// plan. Plans are cached by inputs and extra files.
func planModuleVariant(t *testing.T, inputs string, extra map[string]string) *planJSON {
	t.Helper()
	key := inputs
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		key += "\x00" + name + "\x00" + extra[name]
	}
	planCache.Lock()
	p, ok := planCache.plans[key]
	planCache.Unlock()
	if ok {
		return p
	}
	p = planFresh(t, inputs, extra)
	if !t.Failed() {
		planCache.Lock()
		planCache.plans[key] = p
		planCache.Unlock()
	}
	return p
}

// planFresh is planModuleVariant without the cache.
func planFresh(t *testing.T, inputs string, extra map[string]string) *planJSON {
	t.Helper()
	mod := copyModule(t)
	for name, body := range extra {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newTF(t, moduleRoot(t, mod, inputs))
	r.initValidate()
	return r.plan(map[string]string{"lambda_zip_dir": placeholderZips(t)})
}

// iamVariants are the configurations whose policies are checked.
var iamVariants = []struct {
	name   string
	inputs string
	v      variant
}{
	{
		name:   "defaults with one zone",
		inputs: `route53_zone_ids = ["Z0123456789ABC"]`,
		v:      variant{prefix: "certfn", secretPrefix: "certfn", zones: []string{"Z0123456789ABC"}, http01: true},
	},
	{
		name:   "every input",
		inputs: everyInput,
		v: variant{prefix: "pki", secretPrefix: "org/pki", zones: []string{"Z0123456789ABC", "ZSECONDZONE01"},
			kmsKeyARN: "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-1111-4000-8000-00000000abcd", acm: true, workerManagesCA: true,
			assumeRoles: []string{"arn:aws:iam::123456789012:role/dns01", "arn:aws:iam::210987654321:role/certfn/dns01-zones"}},
	},
	{
		name:   "no zones",
		inputs: ``,
		v:      variant{prefix: "certfn", secretPrefix: "certfn", http01: true},
	},
	{
		name:   "Parameter Store",
		inputs: `secret_store = "ssm"`,
		v:      variant{prefix: "certfn", secretPrefix: "certfn", http01: true, ssm: true},
	},
	{
		name: "Parameter Store, the worker manages CA certificates",
		inputs: `secret_store = "ssm"
  secret_prefix = "org/pki"
  worker_manages_ca_certificates = true`,
		v: variant{prefix: "certfn", secretPrefix: "org/pki", http01: true, ssm: true, workerManagesCA: true},
	},
	{
		name:   "notifications off",
		inputs: `notifications = false`,
		v:      variant{prefix: "certfn", secretPrefix: "certfn", http01: true, noNotifications: true},
	},
}

// TestIAMLeastPrivilege plans each variant and requires every check to hold.
func TestIAMLeastPrivilege(t *testing.T) {
	for _, tc := range iamVariants {
		t.Run(tc.name, func(t *testing.T) {
			p := planModuleVariant(t, tc.inputs, nil)
			policies := rolePolicies(t, p)
			want := append(roleNames(deployedFunctions(tc.v)), "schedule")
			sort.Strings(want)
			if got := keysOf(policies); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("roles with policies = %v, want %v", got, want)
			}
			checks := iamChecks(tc.v)
			if len(checks) < 100 {
				t.Fatalf("only %d checks generated", len(checks))
			}
			for _, v := range iamViolations(policies, checks) {
				t.Error(v)
			}
			for _, v := range assumeRoleViolations(policies, tc.v.assumeRoles) {
				t.Error(v)
			}
		})
	}
}

// brokenExtra and brokenOverride widen the policies the way a careless edit
// would: the explicit denies dropped and one bad Allow per function.
// brokenExtra is an ordinary file of the module copy (new locals);
// brokenOverride is a Terraform override file (a local of the same name
// replaces the module's policy_documents).
const brokenExtra = `locals {
  broken_extra = {
    api = [{
      Sid      = "BrokenApiReadsSecrets"
      Effect   = "Allow"
      Action   = ["secretsmanager:GetSecretValue"]
      Resource = [local.arn.secrets]
    }]
    worker = [
      {
        Sid      = "BrokenWorkerReadsEverySecret"
        Effect   = "Allow"
        Action   = ["secretsmanager:GetSecretValue"]
        Resource = [local.arn.secrets]
      },
      {
        Sid      = "BrokenWorkerAnyZone"
        Effect   = "Allow"
        Action   = ["route53:ChangeResourceRecordSets"]
        Resource = ["arn:${local.partition}:route53:::hostedzone/*"]
      },
      {
        Sid      = "BrokenWorkerAssumesAnyRole"
        Effect   = "Allow"
        Action   = ["sts:AssumeRole"]
        Resource = ["arn:${local.partition}:iam::${local.account}:role/*"]
      },
    ]
    signer = [
      {
        Sid      = "BrokenSignerWritesAnyItem"
        Effect   = "Allow"
        Action   = ["dynamodb:PutItem"]
        Resource = [local.arn.table]
      },
      {
        Sid      = "BrokenSignerListsAnyKind"
        Effect   = "Allow"
        Action   = ["dynamodb:Query"]
        Resource = [local.arn.index_kind_ns]
      },
    ]
    scheduler = [{
      Sid      = "BrokenSchedulerAdmin"
      Effect   = "Allow"
      Action   = ["*"]
      Resource = ["*"]
    }]
    http01 = []
  }
}
`

const brokenOverride = `locals {
  policy_documents = {
    for fn in local.function_names : fn => {
      Version   = "2012-10-17"
      Statement = concat([for s in local.policy_statements[fn] : s if s.Effect == "Allow"], local.broken_extra[fn])
    }
  }
}
`

// TestIAMCatchesBrokenPolicies plans the module with brokenOverride and
// requires the checks to report each widened permission.
func TestIAMCatchesBrokenPolicies(t *testing.T) {
	tc := iamVariants[0]
	p := planModuleVariant(t, tc.inputs, map[string]string{
		"zz_broken_extra.tf":    brokenExtra,
		"zz_broken_override.tf": brokenOverride,
	})
	policies := rolePolicies(t, p)
	got := append(iamViolations(policies, iamChecks(tc.v)), assumeRoleViolations(policies, tc.v.assumeRoles)...)
	if len(got) == 0 {
		t.Fatal("no violation reported for the broken policies")
	}
	t.Logf("%d violations reported, e.g. %q", len(got), got[0])
	mustReport := []string{
		"api may not read secret values (tag certificate)",
		"api: no Allow statement may cover secretsmanager:GetSecretValue",
		"worker may not touch CA keys (ca, GetSecretValue)",
		"worker may not touch CA keys (issued-ca, GetSecretValue)",
		"worker may not change records outside the listed zones",
		"signer may not write CertificateRequestPolicy/example",
		"signer may not write ClusterRoleBinding/approvers",
		"signer may not list Certificate",
		"signer may not list CertificateRequests with another kind",
		"worker may not assume roles without route53_assume_role_arns",
		"worker may not assume an unlisted role",
		"worker: sts:AssumeRole allowed on",
		"worker: BrokenWorkerAssumesAnyRole: sts:AssumeRole on a wildcard resource",
		"scheduler: no wildcard permissions: BrokenSchedulerAdmin: wildcard action \"*\"",
		"scheduler may not read secret values (tag ca)",
		"scheduler may not pass roles",
	}
	for _, want := range mustReport {
		found := false
		for _, g := range got {
			if strings.HasPrefix(g, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("the broken variant was not reported for %q", want)
		}
	}
	// The rules that the override did not break still hold.
	for _, g := range got {
		if strings.HasPrefix(g, "http01") {
			t.Errorf("unexpected violation for the unchanged http01 policy: %s", g)
		}
	}
}
