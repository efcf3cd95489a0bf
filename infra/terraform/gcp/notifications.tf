# Notifications (README.md, "Notifications"; docs/deploy/gcp.md): the worker
# publishes what happens to Certificates — issued, renewed, issuance failed,
# approaching expiration — on one Pub/Sub topic, one message per event, the
# data in the schema of the AWS deployment's EventBridge detail and the
# attributes (source, type, detailType, deployment, namespace, name, id) for
# subscription filters. The module creates the topic and lets the worker,
# and no other identity, publish on it; subscriptions (a push endpoint, a
# function, a chat or e-mail relay) are the user's. The topic keeps what it
# received for notification_retention_seconds, so that a subscription
# created later can seek back to events published before it existed.

locals {
  notification_topic    = "${local.prefix}-notifications"
  notification_topic_id = "projects/${local.project}/topics/${local.notification_topic}"

  # The worker's notification settings (merged into its environment in
  # run.tf; null values are left out).
  env_notify = {
    CERTFN_NOTIFY_TOPIC       = var.notifications ? local.notification_topic_id : null
    CERTFN_NOTIFY_EXPIRY_DAYS = var.notifications ? tostring(var.certificate_expiry_alert_days) : null
  }
}

resource "google_pubsub_topic" "notifications" {
  count = var.notifications ? 1 : 0

  project                    = local.project
  name                       = local.notification_topic
  labels                     = local.labels
  message_retention_duration = "${var.notification_retention_seconds}s"

  depends_on = [google_project_service.this]
}

# The worker runs the notification step (core/app's role data: the worker
# is the one function with the notifier port).
resource "google_pubsub_topic_iam_member" "notification_publisher" {
  count = var.notifications ? 1 : 0

  project = local.project
  topic   = local.notification_topic
  role    = "roles/pubsub.publisher"
  member  = local.sa_member["worker"]

  depends_on = [google_pubsub_topic.notifications, google_service_account.this]
}

output "notification_topic" {
  description = "Full name of the notifications topic (projects/<project>/topics/<name_prefix>-notifications), or null when notifications is false. Subscribe to it to receive the Certificates' events."
  value       = var.notifications ? local.notification_topic_id : null
}

output "notification_topic_name" {
  description = "Short name of the notifications topic, or null when notifications is false."
  value       = var.notifications ? local.notification_topic : null
}
