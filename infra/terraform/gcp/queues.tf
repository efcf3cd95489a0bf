# The queues (docs/design/one-step.md): a Pub/Sub topic per consumer, pushed to its
# Cloud Run service —
#   worker — reconcile keys (every resource write, scheduler sweeps, delays);
#   signer — keys of approved CertificateRequests whose issuer is ca or
#            selfSigned (only the signer holds CA keys: docs/design/roles.md).
# A push that fails (non-2xx or no answer within the acknowledgement
# deadline, which is the consumer's request timeout) is retried with
# exponential backoff (retry_backoff_seconds); after max_delivery_attempts
# deliveries Pub/Sub moves the message to the dead-letter topic, whose pull
# subscription keeps it for dead_letter_retention_seconds (a topic without
# subscription would drop it) and raises the dead-letter alert.
#
# Pub/Sub has no per-message delay: a short wait (DNS propagation, an ACME
# authorization still pending, a backoff) is a Cloud Task on the delays queue
# that publishes the message to its topic when it is due (README.md,
# "Delays"). Long waits are found by the scheduler's sweep.

resource "google_pubsub_topic" "work" {
  for_each = local.queues

  project = local.project
  name    = each.value.topic
  labels  = local.labels

  depends_on = [google_project_service.this]
}

resource "google_pubsub_topic" "dead_letter" {
  for_each = local.queues

  project = local.project
  name    = each.value.dlq
  labels  = local.labels

  depends_on = [google_project_service.this]
}

# Keeps the dead-lettered messages: inspect them, fix the cause, then
# republish them to the work topic (README.md, "Dead letters").
resource "google_pubsub_subscription" "dead_letter" {
  for_each = local.queues

  project                    = local.project
  name                       = each.value.dlq
  topic                      = google_pubsub_topic.dead_letter[each.key].id
  ack_deadline_seconds       = 60
  message_retention_duration = "${var.dead_letter_retention_seconds}s"
  labels                     = local.labels

  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "push" {
  for_each = local.queues

  project = local.project
  name    = each.value.subscription
  topic   = google_pubsub_topic.work[each.key].id
  labels  = local.labels

  # For push delivery this is also the request timeout.
  ack_deadline_seconds       = var.timeout_seconds[each.key]
  message_retention_duration = "345600s" # 4 days

  push_config {
    push_endpoint = "${google_cloud_run_v2_service.fn[each.key].uri}${local.push_path}"

    oidc_token {
      service_account_email = local.sa_email["push"]
      audience              = google_cloud_run_v2_service.fn[each.key].uri
    }
  }

  retry_policy {
    minimum_backoff = "${var.retry_backoff_seconds.minimum}s"
    maximum_backoff = "${var.retry_backoff_seconds.maximum}s"
  }

  dead_letter_policy {
    dead_letter_topic     = local.dlq_topic_id[each.key]
    max_delivery_attempts = var.max_delivery_attempts
  }

  expiration_policy {
    ttl = ""
  }

  depends_on = [
    google_pubsub_topic.dead_letter,
    google_pubsub_topic_iam_member.dead_letter_publisher,
    google_cloud_run_v2_service_iam_member.push_invoker,
    google_service_account_iam_member.pubsub_agent_token_creator,
  ]
}

# Dead-lettering is done by Pub/Sub's service agent: it publishes to the
# dead-letter topic and acknowledges on the push subscription.
resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  for_each = local.queues

  project = local.project
  topic   = each.value.dlq
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_agent

  depends_on = [google_pubsub_topic.dead_letter]
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  for_each = local.queues

  project      = local.project
  subscription = each.value.subscription
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent

  depends_on = [google_pubsub_subscription.push]
}

# The delays queue. Its tasks are HTTP POSTs of a Pub/Sub publish request:
# the queue forces them to https://pubsub.googleapis.com (whatever host a
# task names) with an OAuth token of the tasks service account, which may
# publish to the two work topics and nothing else.
resource "google_cloud_tasks_queue" "delays" {
  project  = local.project
  name     = local.tasks_queue
  location = local.region

  rate_limits {
    max_dispatches_per_second = 100
    max_concurrent_dispatches = 100
  }

  # A publish that keeps failing is given up after max_attempts: the
  # record's nextRunAt is still set, so the scheduler's sweep finds it.
  retry_config {
    max_attempts  = 10
    min_backoff   = "1s"
    max_backoff   = "300s"
    max_doublings = 8
  }

  http_target {
    http_method = "POST"

    uri_override {
      scheme                    = "HTTPS"
      host                      = "pubsub.googleapis.com"
      uri_override_enforce_mode = "ALWAYS"
    }

    oauth_token {
      service_account_email = local.sa_email["tasks"]
      scope                 = "https://www.googleapis.com/auth/pubsub"
    }
  }

  depends_on = [google_project_service.this, google_service_account.this]
}
