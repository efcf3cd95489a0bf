# The scheduler service runs on a Cloud Scheduler job (schedule, every minute
# by default): a POST to its sweep path with an OIDC token of the cron
# account. It reads the due index and publishes the keys whose nextRunAt has
# passed (docs/design/one-step.md). A missed or failed run is not retried: the next one
# covers it.
resource "google_cloud_scheduler_job" "sweep" {
  project     = local.project
  region      = local.region
  name        = local.scheduler_job
  description = "certfn ${local.prefix}: enqueue due keys"
  schedule    = var.schedule
  time_zone   = var.schedule_time_zone

  # At most the scheduler's own timeout.
  attempt_deadline = "${min(max(var.timeout_seconds.scheduler, 15), 1800)}s"

  retry_config {
    retry_count = 0
  }

  http_target {
    http_method = "POST"
    uri         = "${google_cloud_run_v2_service.fn["scheduler"].uri}${local.sweep_path}"
    headers = {
      "Content-Type" = "application/json"
    }
    body = base64encode(jsonencode({ source = "certfn.schedule" }))

    oidc_token {
      service_account_email = local.sa_email["cron"]
      audience              = google_cloud_run_v2_service.fn["scheduler"].uri
    }
  }

  depends_on = [
    google_project_service.this,
    google_cloud_run_v2_service_iam_member.cron_invoker,
  ]
}
