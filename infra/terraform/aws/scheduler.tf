# The scheduler function runs on an EventBridge Scheduler schedule
# (schedule_rate, every minute by default): it reads the due index and
# enqueues the keys whose nextRunAt has passed (docs/design/one-step.md). A missed run is
# not retried: the next one covers it.
resource "aws_scheduler_schedule" "sweep" {
  name        = "${local.prefix}-sweep"
  description = "certfn: enqueue due keys"

  schedule_expression = var.schedule_rate

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = aws_lambda_function.fn["scheduler"].arn
    role_arn = aws_iam_role.schedule.arn
    input    = jsonencode({ source = "certfn.schedule" })

    retry_policy {
      maximum_event_age_in_seconds = 60
      maximum_retry_attempts       = 0
    }
  }
}
