# Notifications (docs/deploy/aws.md, "Notifications"): the worker publishes
# certfn's events on the account's default event bus (CERTFN_NOTIFY_EVENT_BUS,
# IAM events:PutEvents with source certfn, iam.tf). Users route them with
# rules of their own; notification_sns_topic adds one: a rule matching this
# deployment's events (detail.deployment = name_prefix) → an SNS topic.
#
# The topic is not encrypted with the deployment's KMS key: EventBridge
# could publish to it only if the key policy let events.amazonaws.com use
# the key, and the events hold no secret (names, serials, dates; never a
# key). Its policy lets only this rule publish.

locals {
  notification_bus = "default"
  # The event pattern of this deployment's events (output
  # notification_event_pattern, the rule below).
  notification_pattern = jsonencode({
    source = ["certfn"]
    detail = { deployment = [local.prefix] }
  })
  notification_topic = var.notification_sns_topic ? 1 : 0
}

resource "aws_sns_topic" "notifications" {
  count = local.notification_topic

  name = "${local.prefix}-notifications"
  tags = local.tags

  lifecycle {
    precondition {
      condition     = var.notifications
      error_message = "notification_sns_topic: needs notifications = true (without it the worker publishes no event for the topic to forward)."
    }
  }
}

resource "aws_cloudwatch_event_rule" "notifications" {
  count = local.notification_topic

  name           = "${local.prefix}-notifications"
  description    = "certfn ${local.prefix}: certificate events (issued, renewed, failed, approaching expiration) to the SNS topic ${local.prefix}-notifications"
  event_bus_name = local.notification_bus
  event_pattern  = local.notification_pattern
  tags           = local.tags
}

resource "aws_cloudwatch_event_target" "notifications" {
  count = local.notification_topic

  rule           = aws_cloudwatch_event_rule.notifications[0].name
  event_bus_name = local.notification_bus
  target_id      = "sns"
  arn            = aws_sns_topic.notifications[0].arn
}

resource "aws_sns_topic_policy" "notifications" {
  count = local.notification_topic

  arn = aws_sns_topic.notifications[0].arn
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "CertfnRulePublishes"
      Effect    = "Allow"
      Principal = { Service = "events.amazonaws.com" }
      Action    = "sns:Publish"
      Resource  = aws_sns_topic.notifications[0].arn
      Condition = { ArnEquals = { "aws:SourceArn" = aws_cloudwatch_event_rule.notifications[0].arn } }
    }]
  })
}
