// Package metrics is the one table of the metrics certfn emits: each
// name with its type, labels, help text and the deployments that emit it.
// The Prometheus writer of local mode takes its HELP lines from here, and
// docs/reference/metrics.md is generated from it (Markdown); the package's
// tests fail when a metric the code emits (a name passed to
// ports.Metrics.Inc or Observe, or a Metric* constant) is missing here,
// when its type or labels differ from the call sites, and when the
// reference page is stale.
package metrics

import (
	"fmt"
	"sort"
	"strings"
)

// Types of a metric, as in the Prometheus text format's TYPE line.
const (
	// Counter: ports.Metrics.Inc.
	Counter = "counter"
	// Summary: ports.Metrics.Observe (a sum and a count).
	Summary = "summary"
	// Gauge: a value read when the metrics are scraped (local mode).
	Gauge = "gauge"
)

// Where a metric is emitted.
const (
	All   = "all"
	Local = "local"
	AWS   = "aws"
	GCP   = "gcp"
	Cloud = "aws, gcp"
)

// Def describes one metric.
type Def struct {
	Name   string
	Type   string
	Labels []string
	// Help is the one-line HELP text.
	Help string
	// Where lists the deployments that emit it (All, Local, AWS, GCP, Cloud).
	Where string
}

// Catalog lists every metric certfn emits, sorted by name.
var Catalog = sorted([]Def{
	// The kernel (every deployment).
	{"certfn_reconciles_total", Counter, l("kind"), "Reconciles run, by kind of object.", All},
	{"certfn_state_writes_total", Counter, l("kind"), "Writes to the state store (create, update, delete), by kind of object.", All},
	{"certfn_queue_messages_total", Counter, nil, "Keys sent to the work queue (wake-ups and delayed retries).", All},
	{"certfn_conflicts_total", Counter, l("kind"), "Reconciles that lost a race on a conditional write (retried at once), by kind.", All},
	{"certfn_permanent_errors_total", Counter, l("kind"), "Reconciles that failed permanently (recorded as a Warning Event; not retried until something changes), by kind.", All},
	{"certfn_transient_errors_total", Counter, l("kind"), "Reconciles that failed transiently (retried with backoff), by kind.", All},
	{"certfn_bad_messages_total", Counter, nil, "Queue messages dropped because they name no valid key.", All},
	{"certfn_sweeps_total", Counter, nil, "Sweeps of the due index (the scheduler looking for due work).", All},
	{"certfn_events_recorded_total", Counter, l("type"), "Events recorded (a new Event or a repeat counted on one), by type (Normal, Warning).", All},
	{"certfn_event_errors_total", Counter, l("kind"), "Events that could not be written after their step's write (the step stands; the Event is lost), by the kind of the object they are about.", All},

	// Certificates, requests, CSRs (every deployment).
	{"certfn_requests_created_total", Counter, l("namespace"), "CertificateRequests created for Certificates, by namespace.", All},
	{"certfn_certificates_issued_total", Counter, l("namespace", "issuer"), "Certificates issued (a new revision stored in the secret), by namespace and issuer name.", All},
	{"certfn_issuance_failures_total", Counter, l("namespace", "issuer"), "Issuances that failed (the request was denied or failed), by namespace and issuer name.", All},
	{"certfn_private_keys_generated_total", Counter, l("namespace"), "Private keys generated for Certificates, by namespace.", All},
	{"certfn_private_key_generations_deferred_total", Counter, l("namespace"), "Private key generations put off because the generators were busy, by namespace.", All},
	{"certfn_cleanup_errors_total", Counter, l("what"), "Failures to remove what an issuance left behind (what: next_private_key).", All},
	{"certfn_certificate_expiry_seconds", Summary, l("namespace"), "Seconds left until a stored certificate's notAfter (negative once expired), observed on each readiness check; the clouds alert on its minimum. Local mode exports the per-certificate gauges instead.", All},
	{"certfn_approval_total", Counter, l("namespace", "status"), "CertificateRequest approval decisions, by namespace and status (approved, denied, unmatched: pending, counted when its Ready message changes).", All},
	{"certfn_requests_signed_total", Counter, l("namespace", "issuer_type"), "CertificateRequests signed, by namespace and issuer type.", All},
	{"certfn_csr_approval_total", Counter, l("signer", "status"), "CertificateSigningRequest approval decisions, by signer and status (approved, denied).", All},
	{"certfn_csrs_signed_total", Counter, l("signer", "issuer_type"), "CertificateSigningRequests signed, by signer and issuer type.", All},
	{"certfn_csrs_failed_total", Counter, l("signer", "reason"), "CertificateSigningRequests marked Failed, by signer and reason.", All},
	{"certfn_csrs_cleaned_total", Counter, l("signer"), "Old CertificateSigningRequests deleted by the cleanup, by signer.", All},
	{"certfn_signer_duration_seconds_requested", Summary, l("issuer"), "The certificate lifetime requests asked the CA issuer for, in seconds, by issuer.", All},
	{"certfn_signer_duration_seconds_honoured", Summary, l("issuer"), "The certificate lifetime the CA issuer granted, in seconds, by issuer.", All},
	{"apiserver_certificates_registry_csr_requested_duration_total", Counter, l("signerName"), "CertificateSigningRequests signed that asked for a lifetime (spec.expirationSeconds), by signer domain (Kubernetes' name).", All},
	{"apiserver_certificates_registry_csr_honored_duration_total", Counter, l("signerName"), "CertificateSigningRequests signed whose asked-for lifetime was honoured, by signer domain (Kubernetes' name).", All},
	{"policy_approval_outcomes_total", Counter, l("namespace", "status"), "CertificateRequestPolicy evaluations, by namespace and status (approved, denied, unmatched); approver-policy's name.", All},
	{"certfn_notifications_total", Counter, l("type", "result"), "Certificate event publications, by type (Issued, Renewed, Failed, Expiring) and result (published, failed).", All},
	{"certfn_notification_failures_total", Counter, l("type"), "Certificate event publications that failed permanently (retried an hour later), by type.", All},
	{"certfn_acm_imports_total", Counter, l("result"), "Imports of certificates into AWS Certificate Manager, by result (imported, unchanged, failed).", AWS},

	// ACME (every deployment).
	{"certfn_acme_orders_created_total", Counter, l("namespace"), "ACME Orders created for requests, by namespace.", All},
	{"certfn_acme_orders_valid_total", Counter, l("namespace"), "ACME Orders that became valid (a certificate was downloaded), by namespace.", All},
	{"certfn_acme_orders_failed_total", Counter, l("namespace"), "ACME Orders that failed, by namespace.", All},
	{"certfn_acme_requests_total", Counter, l("op"), "Requests to ACME servers, by operation (new_order, get_order, get_authorization, accept_challenge, finalize, download_certificate, renewal_info).", All},
	{"certfn_acme_challenges_total", Counter, l("state", "type"), "ACME Challenges reaching a final state, by state and type.", All},
	{"certfn_acme_challenge_lease_takeovers_total", Counter, nil, "Challenge leases taken over from a holder that was gone.", All},

	// Local mode.
	{"certfn_deploy_hook_runs_total", Counter, l("result"), "Runs of serve's deploy hook, by result (ok, failed, timeout).", Local},
	{"certfn_build_info", Gauge, l("version", "revision", "goversion"), "certfn's build: 1, labelled with its version, VCS revision and Go version.", Local},
	{"certfn_last_sweep_timestamp_seconds", Gauge, nil, "When the scheduler last looked for due work, as a Unix timestamp; a serve whose sweeps stop has stalled.", Local},
	{"certmanager_certificate_expiration_timestamp_seconds", Gauge, certLabels(), "The date after which the certificate expires, as a Unix timestamp (cert-manager's name and labels).", Local},
	{"certmanager_certificate_not_after_timestamp_seconds", Gauge, certLabels(), "The certificate's notAfter, as a Unix timestamp (cert-manager's name and labels).", Local},
	{"certmanager_certificate_not_before_timestamp_seconds", Gauge, certLabels(), "The certificate's notBefore, as a Unix timestamp (cert-manager's name and labels).", Local},
	{"certmanager_certificate_renewal_timestamp_seconds", Gauge, certLabels(), "The time the certificate will be renewed, as a Unix timestamp (cert-manager's name and labels).", Local},
	{"certmanager_certificate_ready_status", Gauge, append(certLabels(), "condition"), "The Ready condition of the certificate: 1 for its current status (condition True, False or Unknown), 0 for the others.", Local},

	// The clouds' dispatch.
	{"certfn_handoffs_total", Counter, l("kind"), "Keys the worker handed to the signer queue, by kind.", Cloud},
	{"certfn_final_requests_to_worker_total", Counter, nil, "Final requests the signer sent back to the worker queue.", Cloud},
	{"certfn_follow_ups_total", Counter, nil, "Follow-up steps run in the same invocation (keys a step woke).", Cloud},
	{"certfn_duplicate_messages_total", Counter, nil, "Messages skipped because the same key came twice in one batch.", AWS},

	// Cloud adapters.
	{"certfn_dynamodb_requests_total", Counter, l("op"), "DynamoDB requests, by operation.", AWS},
	{"certfn_dynamodb_capacity_units", Summary, l("op", "kind"), "DynamoDB capacity units consumed, by operation and kind.", AWS},
	{"certfn_sqs_messages_total", Counter, l("op"), "SQS messages, by operation (send, receive, ack, retry).", AWS},
	{"certfn_secretsmanager_requests_total", Counter, l("op"), "Secrets Manager requests, by operation.", AWS},
	{"certfn_ssm_requests_total", Counter, l("op"), "Parameter Store requests, by operation.", AWS},
	{"certfn_firestore_requests_total", Counter, l("op"), "Firestore requests, by operation.", GCP},
	{"certfn_firestore_documents", Summary, l("op", "kind"), "Firestore documents read or written per request, by operation and kind.", GCP},
	{"certfn_gcp_secretmanager_requests_total", Counter, l("op"), "Secret Manager requests, by operation.", GCP},
	{"certfn_pubsub_messages_total", Counter, l("op"), "Pub/Sub messages, by operation (publish).", GCP},
	{"certfn_cloudtasks_tasks_total", Counter, l("op"), "Cloud Tasks tasks for delayed messages, by operation (create, duplicate).", GCP},
})

func l(names ...string) []string { return names }

// certLabels are cert-manager's labels of its per-certificate gauges.
func certLabels() []string {
	return []string{"name", "namespace", "issuer_name", "issuer_kind", "issuer_group"}
}

func sorted(defs []Def) []Def {
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

var byName = func() map[string]*Def {
	m := make(map[string]*Def, len(Catalog))
	for i := range Catalog {
		m[Catalog[i].Name] = &Catalog[i]
	}
	return m
}()

// Lookup returns the definition of name, or false when the catalog lacks it.
func Lookup(name string) (Def, bool) {
	d, ok := byName[name]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// Help returns the HELP text of name, or "" when the catalog lacks it.
func Help(name string) string {
	d, _ := Lookup(name)
	return d.Help
}

// Markdown renders the catalog as the table of docs/reference/metrics.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| name | type | labels | emitted by | help |\n|---|---|---|---|---|\n")
	for _, d := range Catalog {
		labels := "—"
		if len(d.Labels) > 0 {
			labels = "`" + strings.Join(d.Labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", d.Name, d.Type, labels, d.Where, strings.ReplaceAll(d.Help, "|", `\|`))
	}
	return b.String()
}
