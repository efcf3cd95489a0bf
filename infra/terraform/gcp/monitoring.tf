# Alert policies, the counterparts of the AWS module's alarms:
#
#   dead letters       a dead-letter subscription holds messages (keys a
#                      consumer failed max_delivery_attempts times);
#   certificate expiry a certificate has fewer than
#                      certificate_expiry_alert_days days left, from the
#                      log-based metric <name_prefix>_certificates_expiring;
#   error logs         the functions wrote log entries of severity ERROR or
#                      worse, from the log-based metric
#                      <name_prefix>_error_logs.
#
# The two log-based metrics read the functions' structured logs (one JSON
# object per line on stdout, which Cloud Run turns into jsonPayload; README.md,
# "Logs and metrics"): nothing is written through the Monitoring API and the
# functions need no monitoring role.

locals {
  expiry_alert_enabled = var.enable_metrics && var.certificate_expiry_alert_days > 0

  expiry_metric_name = "${local.prefix}_certificates_expiring"
  error_metric_name  = "${local.prefix}_error_logs"

  # The worker reports certfn_certificate_expiry_seconds
  # (core/certificates/readiness.go) on each Certificate's daily resync as
  # {"metric": "certfn_certificate_expiry_seconds", "value": <seconds>,
  # "namespace": <namespace>}; the metric counts the reports under the
  # threshold.
  expiry_metric_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=\"${local.service_name["worker"]}\"",
    "jsonPayload.metric=\"certfn_certificate_expiry_seconds\"",
    "jsonPayload.value<${var.certificate_expiry_alert_days * 86400}",
  ])

  # Application logs only (stdout, stderr): Cloud Run's request logs mark
  # every 5xx ERROR, and a 5xx is how a consumer asks Pub/Sub to retry.
  error_metric_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=(${join(" OR ", [for fn in local.functions : "\"${local.service_name[fn]}\""])})",
    "(log_id(\"run.googleapis.com/stdout\") OR log_id(\"run.googleapis.com/stderr\"))",
    "severity>=ERROR",
  ])

  # The log-based metrics deployed, each waited for (time_sleep below).
  log_metric_names = concat(
    local.expiry_alert_enabled ? [local.expiry_metric_name] : [],
    var.enable_error_log_alert ? [local.error_metric_name] : [],
  )

  # How long an alert policy on a log-based metric waits after the metric's
  # creation: see time_sleep.log_metric below.
  log_metric_propagation = "10m"
}

resource "google_monitoring_alert_policy" "dead_letter" {
  for_each = local.queues

  project               = local.project
  display_name          = "certfn ${each.value.dlq} not empty"
  combiner              = "OR"
  notification_channels = var.notification_channels
  user_labels           = local.labels

  conditions {
    display_name = "messages in ${each.value.dlq}"

    condition_threshold {
      filter          = "resource.type=\"pubsub_subscription\" AND resource.labels.subscription_id=\"${each.value.dlq}\" AND metric.type=\"pubsub.googleapis.com/subscription/num_undelivered_messages\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_MAX"
      }

      trigger {
        count = 1
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "certfn: messages in the dead-letter subscription ${each.value.dlq}: keys the ${each.key} failed ${var.max_delivery_attempts} times. Read them (`gcloud pubsub subscriptions pull ${each.value.dlq} --limit 10`), fix the cause, then republish them to ${each.value.topic} and acknowledge them (README.md, \"Dead letters\")."
  }

  depends_on = [google_project_service.this, google_pubsub_subscription.dead_letter]
}

resource "google_logging_metric" "certificates_expiring" {
  count = local.expiry_alert_enabled ? 1 : 0

  project     = local.project
  name        = local.expiry_metric_name
  description = "certfn ${local.prefix}: reports of a certificate with fewer than ${var.certificate_expiry_alert_days} days left (the worker reports every Certificate daily)."
  filter      = local.expiry_metric_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "certfn certificates expiring"

    labels {
      key         = "namespace"
      value_type  = "STRING"
      description = "Namespace of the Certificate."
    }
  }

  label_extractors = {
    "namespace" = "EXTRACT(jsonPayload.namespace)"
  }

  depends_on = [google_project_service.this]
}

# Cloud Monitoring learns of a new log-based metric some time after Logging
# has created it. Until then an alert policy that names the metric is
# refused with 404 "Cannot find metric(s) that match type = ... If a metric
# was created recently, it could take up to 10 minutes to become available",
# and the provider does not retry that error
# (hashicorp/terraform-provider-google#11102): without a wait the first
# apply fails on both policies below. The wait is the 10 minutes the API
# itself names as the bound: the shorter waits other configurations use for
# this error (30 s) are guesses below it, and a first apply that fails
# now and then is the fault to remove. It costs little: each wait starts as
# soon as its metric exists (early: the metrics need only the APIs) and
# runs alongside the rest of the apply (Firestore, Cloud Run, Pub/Sub), and
# it delays only the two alert policies on log-based metrics (the
# dead-letter policies watch a built-in metric and do not wait). One wait per metric, keyed by
# its name: a metric added later (enable_error_log_alert) or renamed
# (name_prefix) is new to Monitoring again and gets a wait of its own; a
# later apply that changes neither waits for nothing (time_sleep waits on
# creation only).
resource "time_sleep" "log_metric" {
  for_each = toset(local.log_metric_names)

  create_duration = local.log_metric_propagation

  depends_on = [google_logging_metric.certificates_expiring, google_logging_metric.error_logs]
}

resource "google_monitoring_alert_policy" "certificate_expiry" {
  count = local.expiry_alert_enabled ? 1 : 0

  project               = local.project
  display_name          = "certfn ${local.prefix} certificate expiring"
  combiner              = "OR"
  notification_channels = var.notification_channels
  user_labels           = local.labels

  conditions {
    display_name = "a certificate expires within ${var.certificate_expiry_alert_days} days"

    condition_threshold {
      filter          = "resource.type=\"cloud_run_revision\" AND metric.type=\"logging.googleapis.com/user/${local.expiry_metric_name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      # Every Certificate reports once a day: a one-day window sees each.
      aggregations {
        alignment_period     = "86400s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.namespace"]
      }

      trigger {
        count = 1
      }

      # A renewed certificate stops the reports: the incident closes.
      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "certfn: a certificate expires within ${var.certificate_expiry_alert_days} days (renewal should have happened long before). Find it with `certfn get certificates -A -o wide`, and why with `certfn status certificate NAME` and `certfn get events -A`."
  }

  depends_on = [google_logging_metric.certificates_expiring, time_sleep.log_metric]
}

resource "google_logging_metric" "error_logs" {
  count = var.enable_error_log_alert ? 1 : 0

  project     = local.project
  name        = local.error_metric_name
  description = "certfn ${local.prefix}: log entries of severity ERROR or worse written by the functions."
  filter      = local.error_metric_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "certfn error logs"

    labels {
      key         = "service"
      value_type  = "STRING"
      description = "Cloud Run service that wrote the entry."
    }
  }

  label_extractors = {
    "service" = "EXTRACT(resource.labels.service_name)"
  }

  depends_on = [google_project_service.this]
}

resource "google_monitoring_alert_policy" "error_logs" {
  count = var.enable_error_log_alert ? 1 : 0

  project               = local.project
  display_name          = "certfn ${local.prefix} error logs"
  combiner              = "OR"
  notification_channels = var.notification_channels
  user_labels           = local.labels

  conditions {
    display_name = "more than ${var.error_log_alert_threshold} error log entries in 5 minutes"

    condition_threshold {
      filter          = "resource.type=\"cloud_run_revision\" AND metric.type=\"logging.googleapis.com/user/${local.error_metric_name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = var.error_log_alert_threshold
      duration        = "0s"

      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.service"]
      }

      trigger {
        count = 1
      }

      evaluation_missing_data = "EVALUATION_MISSING_DATA_INACTIVE"
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "certfn: a function logged errors. Read them in Logs Explorer (resource.type=\"cloud_run_revision\" severity>=ERROR, service ${local.prefix}-*); permanent failures are also recorded in the resources' status and events (`certfn get events -A`)."
  }

  depends_on = [google_logging_metric.error_logs, time_sleep.log_metric]
}
