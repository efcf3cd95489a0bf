package terraform_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/certfn/certfn/adapters/aws/dynamo"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/validation"
)

// TestFmt runs `terraform fmt -check -recursive` on infra/terraform/aws (the
// module and its examples), in place: fmt reads no provider and writes
// nothing with -check.
func TestFmt(t *testing.T) {
	r := newTF(t, moduleDir(t))
	out, errOut, err := r.try("fmt", "-check", "-recursive", "-diff", "-no-color", ".")
	if err != nil {
		t.Fatalf("terraform fmt -check: %v: files need `terraform fmt -recursive infra/terraform/aws`:\n%s%s", err, out, errOut)
	}
}

// moduleExpect is what one planned configuration of the module must hold.
type moduleExpect struct {
	prefix        string
	functions     []string
	reserved      map[string]float64
	pollers       map[string]float64 // maximum_concurrency of worker and signer; absent: no scaling_config
	timeouts      map[string]float64
	arch          string
	logRetention  float64
	schedule      string
	maxReceive    float64
	createsKMSKey bool
	kmsKeyARN     string // when !createsKMSKey
}

// checkModulePlan asserts the resources of one module plan against e.
func checkModulePlan(t *testing.T, p *planJSON, e moduleExpect) {
	t.Helper()
	num := func(r planResource, k string) float64 { f, _ := r.Values[k].(float64); return f }

	// Functions: runtime, handler, architecture, concurrency, timeout,
	// logging into their own group.
	fns := p.ofType("aws_lambda_function")
	if got, want := keysOf(fns), indexed("fn", e.functions); !slices.Equal(got, want) {
		t.Fatalf("aws_lambda_function = %v, want %v", got, want)
	}
	for _, fn := range e.functions {
		r := fns[fmt.Sprintf("fn[%s]", fn)]
		name := e.prefix + "-" + fn
		if r.str("function_name") != name || r.str("runtime") != "provided.al2023" || r.str("handler") != "bootstrap" {
			t.Errorf("%s: function_name/runtime/handler = %q/%q/%q", fn, r.str("function_name"), r.str("runtime"), r.str("handler"))
		}
		if archs, _ := r.Values["architectures"].([]any); len(archs) != 1 || archs[0] != e.arch {
			t.Errorf("%s: architectures = %v, want [%s]", fn, r.Values["architectures"], e.arch)
		}
		if got := num(r, "reserved_concurrent_executions"); got != e.reserved[fn] {
			t.Errorf("%s: reserved_concurrent_executions = %v, want %v", fn, got, e.reserved[fn])
		}
		if got := num(r, "timeout"); got != e.timeouts[fn] {
			t.Errorf("%s: timeout = %v, want %v", fn, got, e.timeouts[fn])
		}
		if lc := r.blocks("logging_config"); len(lc) != 1 || lc[0]["log_group"] != "/aws/lambda/"+name || lc[0]["log_format"] != "JSON" {
			t.Errorf("%s: logging_config = %v", fn, r.Values["logging_config"])
		}
		if len(r.blocks("environment")) != 1 {
			t.Errorf("%s: no environment block", fn)
		}
		if !strings.HasSuffix(r.str("filename"), "/"+fn+".zip") {
			t.Errorf("%s: filename = %q, want <lambda_zip_dir>/%s.zip", fn, r.str("filename"), fn)
		}
	}

	// Log groups with retention.
	lgs := p.ofType("aws_cloudwatch_log_group")
	if got, want := keysOf(lgs), indexed("fn", e.functions); !slices.Equal(got, want) {
		t.Errorf("aws_cloudwatch_log_group = %v, want %v", got, want)
	}
	for k, r := range lgs {
		if num(r, "retention_in_days") != e.logRetention {
			t.Errorf("log group %s: retention_in_days = %v, want %v", k, r.Values["retention_in_days"], e.logRetention)
		}
	}

	// Queues: two work queues with redrive to their DLQ, DLQ alarms.
	queues := p.ofType("aws_sqs_queue")
	if got := keysOf(queues); !slices.Equal(got, []string{"dlq[signer]", "dlq[worker]", "work[signer]", "work[worker]"}) {
		t.Fatalf("aws_sqs_queue = %v", got)
	}
	for _, q := range []string{"worker", "signer"} {
		work, dlq := queues["work["+q+"]"], queues["dlq["+q+"]"]
		if work.str("name") != e.prefix+"-"+q || dlq.str("name") != e.prefix+"-"+q+"-dlq" {
			t.Errorf("queue names %q, %q", work.str("name"), dlq.str("name"))
		}
		var redrive struct {
			DeadLetterTargetArn string  `json:"deadLetterTargetArn"`
			MaxReceiveCount     float64 `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(work.str("redrive_policy")), &redrive); err != nil {
			t.Fatalf("%s redrive_policy %q: %v", q, work.str("redrive_policy"), err)
		}
		if !strings.HasSuffix(redrive.DeadLetterTargetArn, ":"+dlq.str("name")) || redrive.MaxReceiveCount != e.maxReceive {
			t.Errorf("%s redrive_policy = %+v, want %s after %v receives", q, redrive, dlq.str("name"), e.maxReceive)
		}
		if got, want := num(work, "visibility_timeout_seconds"), 6*e.timeouts[q]; got != want {
			t.Errorf("%s visibility_timeout_seconds = %v, want %v", q, got, want)
		}
		if !e.createsKMSKey {
			for _, r := range []planResource{work, dlq} {
				if r.str("kms_master_key_id") != e.kmsKeyARN {
					t.Errorf("%s: kms_master_key_id = %q, want %q", r.str("name"), r.str("kms_master_key_id"), e.kmsKeyARN)
				}
			}
		}
	}
	alarms := p.ofType("aws_cloudwatch_metric_alarm")
	// The certificate expiry alarm watches the worker's EMF metric.
	if a, ok := alarms["certificate_expiry[0]"]; !ok {
		t.Error("no certificate expiry alarm")
	} else if dims, _ := a.Values["dimensions"].(map[string]any); a.str("namespace") != "certfn" || a.str("metric_name") != "CertificateExpirySeconds" ||
		a.str("statistic") != "Minimum" || a.str("comparison_operator") != "LessThanThreshold" || num(a, "threshold") != 14*86400 ||
		dims["Function"] != "worker" {
		t.Errorf("certificate expiry alarm: %v", a.Values)
	}
	for _, q := range []string{"worker", "signer"} {
		a, ok := alarms["dlq["+q+"]"]
		if !ok {
			t.Errorf("no alarm on the %s dead-letter queue", q)
			continue
		}
		dims, _ := a.Values["dimensions"].(map[string]any)
		if a.str("namespace") != "AWS/SQS" || a.str("metric_name") != "ApproximateNumberOfMessagesVisible" ||
			a.str("comparison_operator") != "GreaterThanThreshold" || num(a, "threshold") != 0 ||
			dims["QueueName"] != e.prefix+"-"+q+"-dlq" {
			t.Errorf("alarm %s: %v", q, a.Values)
		}
	}

	// Event source mappings with per-message failures, pollers bounded by
	// queue_maximum_concurrency (and a reservation of 2 or more).
	esms := p.ofType("aws_lambda_event_source_mapping")
	if got := keysOf(esms); !slices.Equal(got, []string{"queue[signer]", "queue[worker]"}) {
		t.Fatalf("aws_lambda_event_source_mapping = %v", got)
	}
	for _, q := range []string{"worker", "signer"} {
		m := esms["queue["+q+"]"]
		if frt, _ := m.Values["function_response_types"].([]any); len(frt) != 1 || frt[0] != "ReportBatchItemFailures" {
			t.Errorf("%s mapping: function_response_types = %v", q, m.Values["function_response_types"])
		}
		sc := m.blocks("scaling_config")
		if max, ok := e.pollers[q]; ok {
			if len(sc) != 1 || sc[0]["maximum_concurrency"] != max {
				t.Errorf("%s mapping: scaling_config = %v, want maximum_concurrency %v", q, sc, max)
			}
		} else if len(sc) != 0 {
			t.Errorf("%s mapping: scaling_config = %v, want none", q, sc)
		}
	}

	// Function URLs: api with IAM auth, http01 public when deployed.
	urls := p.ofType("aws_lambda_function_url")
	if u, ok := urls["api"]; !ok || u.str("authorization_type") != "AWS_IAM" {
		t.Errorf("api function URL: %v", u.Values)
	}
	perms := p.ofType("aws_lambda_permission")
	if slices.Contains(e.functions, "http01") {
		if u, ok := urls["http01[0]"]; !ok || u.str("authorization_type") != "NONE" {
			t.Errorf("http01 function URL: %v", u.Values)
		}
		pp, ok := perms["http01_public_url[0]"]
		if !ok || pp.str("principal") != "*" || pp.str("action") != "lambda:InvokeFunctionUrl" || pp.str("function_url_auth_type") != "NONE" {
			t.Errorf("http01 public permission: %v", pp.Values)
		}
	} else if len(urls) != 1 || slices.ContainsFunc(keysOf(perms), func(k string) bool { return strings.HasPrefix(k, "http01") }) {
		t.Errorf("http01 disabled, yet URLs %v and permissions %v", keysOf(urls), keysOf(perms))
	}
	for k, pp := range perms {
		if pp.str("principal") == "*" && (pp.str("action") != "lambda:InvokeFunctionUrl" || pp.str("function_url_auth_type") != "NONE" || pp.str("function_name") != e.prefix+"-http01") {
			t.Errorf("public permission %s beyond the http01 URL: %v", k, pp.Values)
		}
	}

	// Schedule.
	sch, ok := p.ofType("aws_scheduler_schedule")["sweep"]
	if !ok || sch.str("schedule_expression") != e.schedule {
		t.Errorf("schedule: %v, want expression %q", sch.Values, e.schedule)
	}

	// KMS.
	keys := p.ofType("aws_kms_key")
	if e.createsKMSKey {
		k, ok := keys["this[0]"]
		if !ok || k.Values["enable_key_rotation"] != true {
			t.Errorf("created KMS key: %v", k.Values)
		}
		if a := p.ofType("aws_kms_alias")["this[0]"]; a.str("name") != "alias/"+e.prefix {
			t.Errorf("KMS alias = %q, want alias/%s", a.str("name"), e.prefix)
		}
	} else if len(keys) != 0 {
		t.Errorf("kms_key_arn given, yet the plan creates keys %v", keysOf(keys))
	}

	checkTable(t, p, e.prefix)
}

// checkTable compares the planned table with adapters/aws/dynamo's
// TableInput (the layout the state store adapter reads and writes), and
// checks TTL, point-in-time recovery and encryption.
func checkTable(t *testing.T, p *planJSON, prefix string) {
	t.Helper()
	tbl, ok := p.ofType("aws_dynamodb_table")["state"]
	if !ok {
		t.Fatal("no aws_dynamodb_table.state")
	}
	in := dynamo.TableInput(prefix + "-state")
	if tbl.str("name") != *in.TableName || tbl.str("billing_mode") != string(in.BillingMode) {
		t.Errorf("table name/billing = %q/%q, want %q/%q", tbl.str("name"), tbl.str("billing_mode"), *in.TableName, in.BillingMode)
	}
	if len(in.KeySchema) != 1 || tbl.str("hash_key") != *in.KeySchema[0].AttributeName || tbl.str("range_key") != "" {
		t.Errorf("table key = %q/%q, want hash %q only", tbl.str("hash_key"), tbl.str("range_key"), *in.KeySchema[0].AttributeName)
	}
	var wantAttrs, gotAttrs []string
	for _, a := range in.AttributeDefinitions {
		wantAttrs = append(wantAttrs, *a.AttributeName+":"+string(a.AttributeType))
	}
	for _, a := range tbl.blocks("attribute") {
		gotAttrs = append(gotAttrs, fmt.Sprintf("%v:%v", a["name"], a["type"]))
	}
	sort.Strings(wantAttrs)
	sort.Strings(gotAttrs)
	if !slices.Equal(gotAttrs, wantAttrs) {
		t.Errorf("table attributes = %v, want %v (adapters/aws/dynamo)", gotAttrs, wantAttrs)
	}
	var wantIdx, gotIdx []string
	for _, g := range in.GlobalSecondaryIndexes {
		wantIdx = append(wantIdx, fmt.Sprintf("%s(%s,%s)%s", *g.IndexName, *g.KeySchema[0].AttributeName, *g.KeySchema[1].AttributeName, g.Projection.ProjectionType))
	}
	for _, g := range tbl.blocks("global_secondary_index") {
		gotIdx = append(gotIdx, fmt.Sprintf("%v(%v,%v)%v", g["name"], g["hash_key"], g["range_key"], g["projection_type"]))
	}
	sort.Strings(wantIdx)
	sort.Strings(gotIdx)
	if !slices.Equal(gotIdx, wantIdx) {
		t.Errorf("table indexes = %v, want %v (adapters/aws/dynamo)", gotIdx, wantIdx)
	}
	if ttl := tbl.blocks("ttl"); len(ttl) != 1 || ttl[0]["attribute_name"] != dynamo.TTLAttribute || ttl[0]["enabled"] != true {
		t.Errorf("table ttl = %v, want %s enabled", tbl.Values["ttl"], dynamo.TTLAttribute)
	}
	if pitr := tbl.blocks("point_in_time_recovery"); len(pitr) != 1 || pitr[0]["enabled"] != true {
		t.Errorf("table point_in_time_recovery = %v", tbl.Values["point_in_time_recovery"])
	}
	if sse := tbl.blocks("server_side_encryption"); len(sse) != 1 || sse[0]["enabled"] != true {
		t.Errorf("table server_side_encryption = %v", tbl.Values["server_side_encryption"])
	}
}

func indexed(name string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s[%s]", name, k)
	}
	sort.Strings(out)
	return out
}

// TestModulePlan plans the module through a minimal root (defaults, then
// every input changed) and checks the planned resources.
func TestModulePlan(t *testing.T) {
	all := []string{"api", "http01", "scheduler", "signer", "worker"}
	cases := []struct {
		name   string
		inputs string
		want   moduleExpect
	}{
		{
			name:   "defaults",
			inputs: "",
			want: moduleExpect{
				prefix: "certfn", functions: all, arch: "arm64", logRetention: 30, schedule: "rate(1 minute)", maxReceive: 5, createsKMSKey: true,
				// No reservation (an account quota of 10 could not hold one).
				reserved: map[string]float64{"worker": -1, "signer": -1, "scheduler": -1, "api": -1, "http01": -1},
				pollers:  map[string]float64{"worker": 10, "signer": 2},
				timeouts: map[string]float64{"worker": 120, "signer": 60, "scheduler": 60, "api": 30, "http01": 10},
			},
		},
		{
			name:   "every input",
			inputs: everyInput,
			want: moduleExpect{
				prefix: "pki", functions: []string{"api", "scheduler", "signer", "worker"}, arch: "x86_64", logRetention: 90,
				schedule: "rate(5 minutes)", maxReceive: 3, kmsKeyARN: "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-1111-4000-8000-00000000abcd",
				// The worker's reservation lowers queue_maximum_concurrency
				// (12) to 4; the signer's (1) bounds it alone.
				reserved: map[string]float64{"worker": 4, "signer": 1, "scheduler": -1, "api": -1},
				pollers:  map[string]float64{"worker": 4},
				timeouts: map[string]float64{"worker": 300, "signer": 60, "scheduler": 60, "api": 30},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planModuleVariant(t, c.inputs, nil)
			checkModulePlan(t, p, c.want)
			checkNotificationPlan(t, p, c.want.prefix, c.name == "every input")
			if c.name == "every input" {
				fn := p.ofType("aws_lambda_function")["fn[worker]"]
				tags, _ := fn.Values["tags"].(map[string]any)
				if tags["team"] != "platform" || tags["certfn-deployment"] != "pki" {
					t.Errorf("worker tags = %v, want team=platform and certfn-deployment=pki", tags)
				}
				if fn.Values["memory_size"] != 512.0 {
					t.Errorf("worker memory_size = %v, want 512", fn.Values["memory_size"])
				}
				dlq := p.ofType("aws_sqs_queue")["dlq[worker]"]
				if dlq.Values["message_retention_seconds"] != 86400.0 {
					t.Errorf("DLQ message_retention_seconds = %v, want 86400", dlq.Values["message_retention_seconds"])
				}
				alarm := p.ofType("aws_cloudwatch_metric_alarm")["dlq[worker]"]
				if acts, _ := alarm.Values["alarm_actions"].([]any); len(acts) != 1 || acts[0] != "arn:aws:sns:us-east-1:123456789012:certfn-alarms" {
					t.Errorf("DLQ alarm_actions = %v", alarm.Values["alarm_actions"])
				}
				var invokers int
				for _, pp := range p.ofType("aws_lambda_permission") {
					if pp.str("principal") == "arn:aws:iam::123456789012:role/platform-admin" && pp.str("function_url_auth_type") == "AWS_IAM" && pp.str("function_name") == "pki-api" {
						invokers++
					}
				}
				if invokers != 1 {
					t.Errorf("%d api URL permissions for the invoker, want 1", invokers)
				}
			}
		})
	}
}

// checkNotificationPlan checks the notification resources of a plan: with
// topic, the SNS topic, its policy, the rule on this deployment's events
// and its target; none without. (The worker's CERTFN_NOTIFY_* are unknown
// at plan time, in a map with the queue URLs: TestExampleApplyMoto reads
// them back.)
func checkNotificationPlan(t *testing.T, p *planJSON, prefix string, topic bool) {
	t.Helper()
	topics, rules, targets, policies := p.ofType("aws_sns_topic"), p.ofType("aws_cloudwatch_event_rule"), p.ofType("aws_cloudwatch_event_target"), p.ofType("aws_sns_topic_policy")
	if !topic {
		if len(topics)+len(rules)+len(targets)+len(policies) != 0 {
			t.Errorf("notification_sns_topic off, yet topics %v rules %v targets %v policies %v", keysOf(topics), keysOf(rules), keysOf(targets), keysOf(policies))
		}
		return
	}
	if tp, ok := topics["notifications[0]"]; !ok || tp.str("name") != prefix+"-notifications" {
		t.Errorf("SNS topic = %v, want %s-notifications", tp.Values, prefix)
	}
	if _, ok := policies["notifications[0]"]; !ok {
		t.Error("no policy on the SNS topic (EventBridge could not publish)")
	}
	rule, ok := rules["notifications[0]"]
	var pattern map[string]any
	if ok {
		_ = json.Unmarshal([]byte(rule.str("event_pattern")), &pattern)
	}
	if !ok || rule.str("name") != prefix+"-notifications" || rule.str("event_bus_name") != "default" ||
		fmt.Sprint(pattern) != fmt.Sprintf("map[detail:map[deployment:[%s]] source:[certfn]]", prefix) {
		t.Errorf("rule = %v, want %s-notifications on the default bus matching source certfn and deployment %s", rule.Values, prefix, prefix)
	}
	if tg, ok := targets["notifications[0]"]; !ok || tg.str("rule") != prefix+"-notifications" || tg.str("target_id") != "sns" {
		t.Errorf("rule target = %v", tg.Values)
	}
}

// TestNotificationTopicNeedsNotifications: an SNS topic for events the
// worker does not publish is refused at plan time, naming the inputs.
func TestNotificationTopicNeedsNotifications(t *testing.T) {
	mod := copyModule(t)
	r := newTF(t, moduleRoot(t, mod, "  notifications = false\n  notification_sns_topic = true"))
	r.run("init", "-backend=false", "-input=false", "-no-color")
	_, errOut, err := r.try("plan", "-input=false", "-lock=false", "-no-color", "-var", "lambda_zip_dir="+placeholderZips(t))
	if msg := strings.Join(strings.Fields(string(errOut)), " "); err == nil || !strings.Contains(msg, "notification_sns_topic: needs notifications = true") {
		t.Fatalf("plan with notification_sns_topic and without notifications: %v\n%s", err, errOut)
	}
}

// TestModuleRejectsBadInputs plans the module with one invalid value per
// validated input and requires an error naming each variable (Terraform
// reports every failed validation of a plan at once).
func TestModuleRejectsBadInputs(t *testing.T) {
	cases := []struct{ input, wantMsg string }{
		{`name_prefix = "Certfn_Prod"`, "name_prefix: must be 2-29 characters"},
		{`kms_key_arn = "alias/certfn"`, "kms_key_arn: must be empty or a KMS key ARN"},
		{`schedule_rate = "every minute"`, "schedule_rate: must be rate("},
		{`log_retention_days = 10`, "log_retention_days: must be one of"},
		{`route53_zone_ids = ["example.com"]`, "route53_zone_ids: each entry must be a hosted zone ID"},
		{`route53_record_name_patterns = ["*"]`, "route53_record_name_patterns: must hold at least one pattern"},
		{`reserved_concurrency = { worker = -5 }`, "reserved_concurrency: each value must be -1"},
		{`lambda_architecture = "amd64"`, "lambda_architecture: must be arm64 or x86_64"},
		{`secret_prefix = "/certfn/"`, "secret_prefix: must be path segments"},
		{`account_id = "12345"`, "account_id: must be empty or 12 digits"},
		{`max_receive_count = 0`, "max_receive_count: must be between 1 and 1000"},
		{`due_shards = 300`, "due_shards: must be between 1 and 256"},
		{`cluster_resource_namespace = "Cert_Manager"`, "cluster_resource_namespace: must be a DNS label"},
		{`api_admin_arns = ["arn:aws:sts::123456789012:assumed-role/ci/build-1"]`, "api_admin_arns: each entry must be"},
		{`route53_assume_role_arns = ["arn:aws:iam::123456789012:role/dns01-*"]`, "route53_assume_role_arns: each entry must be an IAM role ARN"},
		{`certificate_expiry_alarm_days = -1`, "certificate_expiry_alarm_days: must be 0 (off) to 365"},
		{`acme_server_allow = ["https://acme.example/dir", "https://user@evil.example/dir"]`, "acme_server_allow: each entry must be an http(s) URL"},
		{`acme_allow_private_networks = ["10.0.0.0/8", "10.0.0.0/33"]`, "acme_allow_private_networks: each entry must be a CIDR prefix"},
		{`quota_objects_per_namespace = -1`, "quota_objects_per_namespace: must be a whole number of 0 (unlimited)"},
		{`quota_issuances_per_hour_per_namespace = 2.5`, "quota_issuances_per_hour_per_namespace: must be a whole number of 0 (unlimited)"},
		{`secret_store = "s3"`, `secret_store: must be "secretsmanager" or "ssm"`},
		{`acme_poll_first = "fast"`, "acme_poll_first: must be empty or a Go duration"},
		{`queue_maximum_concurrency = { signer = 1 }`, "queue_maximum_concurrency: each value must be a whole number from 2 to 1000"},
		{`api_invoker_arns = ["*"]`, "api_invoker_arns: each entry must be an account ID"},
	}
	var inputs []string
	for _, c := range cases {
		inputs = append(inputs, "  "+c.input)
	}
	mod := copyModule(t)
	// account_id is set by rootBody; drop it there so the bad one applies.
	body := strings.Replace(rootBody(mod, strings.Join(inputs, "\n")), fmt.Sprintf("  account_id     = %q\n", testAccount), "", 1)
	root := moduleRoot(t, mod, "")
	if err := os.WriteFile(filepath.Join(root, "main.tf"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newTF(t, root)
	r.run("init", "-backend=false", "-input=false", "-no-color")
	out, errOut, err := r.try("plan", "-input=false", "-lock=false", "-no-color", "-var", "lambda_zip_dir="+placeholderZips(t))
	if err == nil {
		t.Fatalf("plan accepted every invalid input:\n%s", out)
	}
	// Terraform wraps long messages: compare with whitespace collapsed.
	msgs := strings.Join(strings.Fields(string(errOut)), " ")
	for _, c := range cases {
		if !strings.Contains(msgs, c.wantMsg) {
			t.Errorf("no error %q for %s\n%s", c.wantMsg, c.input, msgs)
		}
	}
}

// TestModuleRejectsParameterStorePrefix: with secret_store = "ssm" the
// secret prefix must follow Parameter Store's rules (no '@', not starting
// with aws or ssm), which Secrets Manager's do not impose.
func TestModuleRejectsParameterStorePrefix(t *testing.T) {
	for _, prefix := range []string{"aws-certs", "team@org/certs"} {
		mod := copyModule(t)
		r := newTF(t, moduleRoot(t, mod, fmt.Sprintf("secret_store = \"ssm\"\n  secret_prefix = %q", prefix)))
		r.run("init", "-backend=false", "-input=false", "-no-color")
		out, errOut, err := r.try("plan", "-input=false", "-lock=false", "-no-color", "-var", "lambda_zip_dir="+placeholderZips(t))
		if err == nil {
			t.Fatalf("plan accepted secret_prefix %q with Parameter Store:\n%s", prefix, out)
		}
		if msgs := strings.Join(strings.Fields(string(errOut)), " "); !strings.Contains(msgs, `with secret_store = "ssm", must be path segments`) {
			t.Errorf("secret_prefix %q: error does not name the rule:\n%s", prefix, errOut)
		}
	}
}

// rootBody is moduleRoot's main.tf.
func rootBody(modPath, inputs string) string {
	return offlineProvider + fmt.Sprintf(`
variable "lambda_zip_dir" {
  type = string
}

module "certfn" {
  source         = %q
  account_id     = %q
  lambda_zip_dir = var.lambda_zip_dir
%s
}

output "api_url" {
  value = module.certfn.api_url
}
`, modPath, testAccount, inputs)
}

// exampleDir returns the example root in a copy of the module tree.
func exampleDir(t *testing.T) string {
	return filepath.Join(copyModule(t), "examples", "basic")
}

// localstackVars reads localstack/example.tfvars.json, the inputs
// `make localstack-e2e` applies the example with.
func localstackVars(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "localstack", "example.tfvars.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("localstack/example.tfvars.json: %v", err)
	}
	return m
}

// TestExamplePlan plans the example root module twice: against AWS with the
// provider's checks skipped by an override file (no account needed), and
// with localstack/example.tfvars.json (every endpoint at LocalStack; the
// plan itself contacts nothing). Both render manifests that certfn decodes
// and validates.
func TestExamplePlan(t *testing.T) {
	zips := placeholderZips(t)
	t.Run("aws", func(t *testing.T) {
		dir := exampleDir(t)
		// Only for the test: the example's provider talks to AWS; this
		// override gives it fake credentials and skips every lookup.
		override := strings.Replace(offlineProvider, `provider "aws" {`, `provider "aws" {
  # test override: no AWS account needed for plan`, 1)
		if err := os.WriteFile(filepath.Join(dir, "provider_override.tf"), []byte(override), 0o644); err != nil {
			t.Fatal(err)
		}
		r := newTF(t, dir)
		r.initValidate()
		p := r.plan(map[string]string{
			"lambda_zip_dir":   zips,
			"account_id":       testAccount,
			"route53_zone_ids": `["Z0123456789ABC"]`,
		})
		checkExampleOutputs(t, p, "certfn")
		objs := checkManifests(t, p)
		if got := kindsOf(objs); !slices.Equal(got, []string{"Certificate", "CertificateRequestPolicy", "ClusterRole", "ClusterRoleBinding", "Issuer"}) {
			t.Errorf("manifest kinds = %v", got)
		}
		checkExampleCertfnResources(t, p, []string{"certificate[web]", "issuer[selfsigned]", "policy[binding]", "policy[policy]", "policy[role]"})
		for _, pol := range rolePoliciesNoFail(t, p) {
			if !strings.Contains(pol, ":"+testAccount+":") {
				t.Errorf("policy without the account %s: %s", testAccount, pol)
			}
		}
	})
	t.Run("localstack", func(t *testing.T) {
		dir := exampleDir(t)
		vars := map[string]string{"lambda_zip_dir": zips, "lambda_architecture": "x86_64"}
		for k, v := range localstackVars(t) {
			switch v := v.(type) {
			case string:
				vars[k] = v
			default:
				b, _ := json.Marshal(v)
				vars[k] = string(b)
			}
		}
		if !strings.HasPrefix(vars["aws_endpoint_url"], "http://") {
			t.Fatalf("localstack/example.tfvars.json: aws_endpoint_url = %q", vars["aws_endpoint_url"])
		}
		r := newTF(t, dir)
		r.initValidate()
		p := r.plan(vars)
		checkExampleOutputs(t, p, "certfn")
		// The ACME names default to the http01 URL's host, unknown until
		// apply; the rest of the outputs are known.
		if o := p.PlannedValues.Outputs["manifests"]; o.Value != nil {
			t.Errorf("manifests output known at plan, although the ACME names come from the http01 URL")
		}
		// LocalStack's account appears in every ARN.
		pols := rolePoliciesNoFail(t, p)
		if len(pols) == 0 {
			t.Fatal("no IAM policy in the LocalStack plan")
		}
		for _, pol := range pols {
			if !strings.Contains(pol, ":000000000000:") {
				t.Errorf("policy without LocalStack's account 000000000000: %s", pol)
			}
		}
		// With explicit ACME names the manifests are known: decode them.
		vars["acme_dns_names"] = `["acme.certfn.test"]`
		p = r.plan(vars)
		objs := checkManifests(t, p)
		if got := kindsOf(objs); !slices.Equal(got, []string{"Certificate", "Certificate", "CertificateRequestPolicy", "ClusterRole", "ClusterRoleBinding", "Issuer", "Issuer"}) {
			t.Errorf("manifest kinds = %v", got)
		}
		for _, o := range objs {
			if is, ok := o.(*api.Issuer); ok && is.Spec.ACME != nil {
				if is.Spec.ACME.Server != vars["acme_server_url"] || !is.Spec.ACME.SkipTLSVerify || len(is.Spec.ACME.Solvers) != 1 || is.Spec.ACME.Solvers[0].HTTP01 == nil {
					t.Errorf("ACME issuer = %+v", is.Spec.ACME)
				}
			}
		}
	})
}

// checkExampleCertfnResources checks that the example declares its objects
// with certfn's provider: the certfn_manifest instances (sorted), each
// planned with the fields of its object (known at plan: the provider's
// endpoint is not, so the server's dry run waits for apply).
func checkExampleCertfnResources(t *testing.T, p *planJSON, want []string) {
	t.Helper()
	rs := p.ofType("certfn_manifest")
	if got := keysOf(rs); !slices.Equal(got, want) {
		t.Fatalf("certfn_manifest instances = %v, want %v", got, want)
	}
	web := rs["certificate[web]"]
	if f := web.str("fields"); !strings.Contains(f, `"www.example.internal"`) || !strings.Contains(f, `"secretName": "web-tls"`) {
		t.Errorf(`certfn_manifest.certificate["web"] fields = %s`, f)
	}
	if web.str("id") != "Certificate/default/web" {
		t.Errorf(`certfn_manifest.certificate["web"] id = %q`, web.str("id"))
	}
}

// checkExampleOutputs checks the example's known outputs.
func checkExampleOutputs(t *testing.T, p *planJSON, prefix string) {
	t.Helper()
	want := map[string]string{
		"table_name":             prefix + "-state",
		"queue_name":             prefix + "-worker",
		"dead_letter_queue_name": prefix + "-worker-dlq",
		"secret_prefix":          prefix,
	}
	for k, v := range want {
		o, ok := p.PlannedValues.Outputs[k]
		if !ok || o.Value != v {
			t.Errorf("output %s = %v, want %q", k, o.Value, v)
		}
	}
}

// checkManifests decodes the example's "manifests" output with certfn's own
// decoder and validation (the api would refuse anything they refuse).
func checkManifests(t *testing.T, p *planJSON) []api.Object {
	t.Helper()
	s, ok := p.PlannedValues.Outputs["manifests"].Value.(string)
	if !ok || s == "" {
		t.Fatal("manifests output unknown at plan")
	}
	objs, err := api.Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode manifests: %v\n%s", err, s)
	}
	for _, obj := range objs {
		if errs := validation.Object(obj); len(errs) > 0 {
			t.Errorf("manifest %T invalid: %v", obj, errs.Err())
		}
	}
	return objs
}

func kindsOf(objs []api.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", o), "*api."))
	}
	sort.Strings(out)
	return out
}

// rolePoliciesNoFail returns the raw policy documents of the plan.
func rolePoliciesNoFail(t *testing.T, p *planJSON) []string {
	t.Helper()
	var out []string
	for _, r := range p.ofType("aws_iam_role_policy") {
		out = append(out, r.str("policy"))
	}
	return out
}
