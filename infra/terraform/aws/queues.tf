# Two work queues, each with a dead-letter queue and an alarm on it:
#   worker — reconcile keys (every resource write, scheduler sweeps, delays);
#   signer — keys of approved CertificateRequests whose issuer is ca or
#            selfSigned (only the signer holds CA keys: docs/design/roles.md).
# Visibility timeout = 6 × the consumer's timeout (AWS's advice for Lambda
# SQS triggers); a message that fails max_receive_count times moves to the DLQ.

resource "aws_sqs_queue" "dlq" {
  for_each = local.queues

  name                              = each.value.dlq
  message_retention_seconds         = var.dlq_retention_seconds
  kms_master_key_id                 = local.kms_key_arn
  kms_data_key_reuse_period_seconds = 300
  tags                              = local.tags
}

resource "aws_sqs_queue" "work" {
  for_each = local.queues

  name                              = each.value.name
  visibility_timeout_seconds        = 6 * local.functions[each.key].timeout
  message_retention_seconds         = 345600 # 4 days
  receive_wait_time_seconds         = 20
  kms_master_key_id                 = local.kms_key_arn
  kms_data_key_reuse_period_seconds = 300

  # The DLQ's ARN is built from its name (known at plan time, like the ARNs
  # in iam.tf), hence the explicit dependency.
  redrive_policy = jsonencode({
    deadLetterTargetArn = local.arn["${each.key}_dlq"]
    maxReceiveCount     = var.max_receive_count
  })

  tags = local.tags

  depends_on = [aws_sqs_queue.dlq]
}

# Only the work queue of the same pair may redrive into a DLQ.
resource "aws_sqs_queue_redrive_allow_policy" "dlq" {
  for_each = local.queues

  queue_url = aws_sqs_queue.dlq[each.key].id
  redrive_allow_policy = jsonencode({
    redrivePermission = "byQueue"
    sourceQueueArns   = [local.arn["${each.key}_queue"]]
  })
}

# Any message in a dead-letter queue is a key certfn gave up on: alarm.
resource "aws_cloudwatch_metric_alarm" "dlq" {
  for_each = local.queues

  alarm_name          = "${each.value.dlq}-not-empty"
  alarm_description   = "certfn: messages in ${each.value.dlq} (keys the ${each.key} failed ${var.max_receive_count} times). Inspect them, fix the cause, then redrive them to ${each.value.name}."
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  comparison_operator = "GreaterThanThreshold"
  threshold           = 0
  treat_missing_data  = "notBreaching"
  dimensions = {
    QueueName = aws_sqs_queue.dlq[each.key].name
  }
  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = local.tags
}

# The soonest certificate expiry, as the worker reports it on each
# Certificate's daily resync (CertificateExpirySeconds, EMF): a renewal that
# keeps failing reaches this long before the certificate expires.
resource "aws_cloudwatch_metric_alarm" "certificate_expiry" {
  count = var.enable_metrics && var.certificate_expiry_alarm_days > 0 ? 1 : 0

  alarm_name          = "${local.prefix}-certificate-expiring"
  alarm_description   = "certfn: a certificate expires within ${var.certificate_expiry_alarm_days} days (renewal should have happened long before). Find it with `certfn get certificates -A -o wide`, and why with `certfn status certificate NAME` and `certfn get events -A`."
  namespace           = "certfn"
  metric_name         = "CertificateExpirySeconds"
  statistic           = "Minimum"
  period              = 86400
  evaluation_periods  = 1
  comparison_operator = "LessThanThreshold"
  threshold           = var.certificate_expiry_alarm_days * 86400
  treat_missing_data  = "notBreaching"
  dimensions = {
    Function = "worker"
  }
  alarm_actions = var.alarm_actions
  ok_actions    = var.alarm_actions
  tags          = local.tags
}
