output "service_urls" {
  description = "URLs of the deployed Cloud Run services, by function (worker, signer, scheduler, api, http01)."
  value       = { for fn, s in google_cloud_run_v2_service.fn : fn => s.uri }
}

output "api_url" {
  description = "URL of the api service, its deterministic URL (IAM-authenticated: send a Google ID token whose audience is this URL, as a member of api_invoker_members)."
  value       = local.api_url
}

# What a client that calls the api during the same apply (certfn's
# Terraform provider, examples/basic) points at. certfn's provider checks
# every manifest against the api at plan time (a dry run) whenever its
# endpoint is known: api_url is known before the api exists, so a first plan
# with it would fail; this value is unknown until the api service exists,
# so the provider skips the dry run in that plan, and a resource that uses
# it is created only after the deployment below is in place.
output "api_endpoint" {
  description = "The api's URL once it is deployed: api_url when the service serves it, else the service's main URL; unknown in the plan that creates the api service. Depends on the api's invoker grants, the push subscriptions, the schedule and the Firestore database with its indexes and fields, so that a client configured with it (certfn's provider) calls a complete deployment. IAM grants still take minutes to take effect (examples/basic waits)."
  value       = contains(google_cloud_run_v2_service.fn["api"].urls, local.api_url) ? local.api_url : google_cloud_run_v2_service.fn["api"].uri

  depends_on = [
    google_cloud_run_v2_service_iam_member.api_invoker,
    google_pubsub_subscription.push,
    google_pubsub_subscription_iam_member.dead_letter_subscriber,
    google_cloud_scheduler_job.sweep,
    google_firestore_index.composite,
    google_firestore_field.ascending_only,
    google_firestore_field.index_exempt,
    google_firestore_field.ttl,
    google_cloud_tasks_queue_iam_member.enqueuer,
  ]
}

output "http01_url" {
  description = "Public URL of the http01 service, or null when enable_http01 is false. Route http://<domain>/.well-known/acme-challenge/ to it."
  value       = var.enable_http01 ? google_cloud_run_v2_service.fn["http01"].uri : null
}

output "service_account_emails" {
  description = "E-mail addresses of the service accounts, by identity: the five functions' and push (Pub/Sub push), cron (Cloud Scheduler), tasks (delayed messages)."
  value       = { for id, sa in google_service_account.this : id => sa.email }
}

output "topics" {
  description = "Full names of the work topics (worker: reconcile keys; signer: approved requests of ca and selfSigned issuers)."
  value       = { for q, t in google_pubsub_topic.work : q => t.id }
}

output "topic_names" {
  description = "Short names of the work topics, by queue."
  value       = { for q, t in google_pubsub_topic.work : q => t.name }
}

output "dead_letter_topics" {
  description = "Full names of the dead-letter topics, by queue."
  value       = { for q, t in google_pubsub_topic.dead_letter : q => t.id }
}

output "dead_letter_subscriptions" {
  description = "Names of the pull subscriptions that keep the dead-lettered messages, by queue."
  value       = { for q, s in google_pubsub_subscription.dead_letter : q => s.name }
}

output "tasks_queue" {
  description = "Full name of the Cloud Tasks queue of delayed messages."
  value       = google_cloud_tasks_queue.delays.id
}

output "firestore_database" {
  description = "ID of the Firestore database."
  value       = google_firestore_database.state.name
}

output "firestore_collection" {
  description = "Collection of certfn's records in the database."
  value       = local.firestore_collection
}

output "secret_prefix" {
  description = "Secrets are <secret_prefix>_<class>_<namespace>_<name> in Secret Manager (README.md, \"Secrets\")."
  value       = local.secret_prefix
}

output "scheduler_job" {
  description = "Name of the Cloud Scheduler job that runs the sweep."
  value       = google_cloud_scheduler_job.sweep.name
}

output "certificate_expiry_metric" {
  description = "Metric type of the certificate expiry alert (a log-based counter), or null when the alert is off."
  value       = local.expiry_alert_enabled ? "logging.googleapis.com/user/${local.expiry_metric_name}" : null
}
