output "service_urls" {
  description = "URLs of the deployed Cloud Run services, by function (worker, signer, scheduler, api, http01)."
  value       = { for fn, s in google_cloud_run_v2_service.fn : fn => s.uri }
}

output "api_url" {
  description = "URL of the api service, its deterministic URL (IAM-authenticated: send a Google ID token whose audience is this URL, as a member of api_invoker_members)."
  value       = local.api_url
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
