# The five functions. Each is a `bootstrap` binary for the provided.al2023
# runtime (arm64 by default) in <lambda_zip_dir>/<name>.zip, as `make lambda`
# builds them; the function role selects nothing: each zip is its own main
# (functions/aws/<name>), and CERTFN_FUNCTION tells it which one it is.

locals {
  # Environment of each function: what its main needs to build its adapters
  # (docs/deploy-aws.md, "Function environment"). Queue URLs are the queues'
  # ids.
  env_common = {
    CERTFN_FUNCTION                   = null # set per function below
    CERTFN_TABLE                      = aws_dynamodb_table.state.name
    CERTFN_DUE_SHARDS                 = tostring(var.due_shards)
    CERTFN_CLUSTER_RESOURCE_NAMESPACE = var.cluster_resource_namespace
    CERTFN_METRICS                    = var.enable_metrics ? "emf" : "none"
  }
  env_secrets = {
    CERTFN_SECRET_PREFIX = local.secret_prefix
    CERTFN_KMS_KEY_ID    = local.kms_key_arn
  }
  env = {
    worker = merge(local.env_common, local.env_secrets, {
      CERTFN_QUEUE_URL         = aws_sqs_queue.work["worker"].id
      CERTFN_SIGNER_QUEUE_URL  = aws_sqs_queue.work["signer"].id
      CERTFN_APPROVER          = var.approver
      CERTFN_AUTO_APPROVE      = join(",", var.auto_approve_signers)
      CERTFN_ROUTE53_ZONE_IDS  = join(",", [for z in var.route53_zone_ids : trimprefix(z, "/hostedzone/")])
      CERTFN_ACM_IMPORT        = tostring(var.enable_acm_import)
      CERTFN_HTTP01_ENABLED    = tostring(var.enable_http01)
      CERTFN_ACME_SERVER_ALLOW = join(",", var.acme_server_allow)
      # The worker holds back ACME requests (and hands off no CA request)
      # of a namespace at its issuance quota; the signer before signing.
      CERTFN_QUOTA_ISSUANCES_PER_HOUR = tostring(var.quota_issuances_per_hour_per_namespace)
    })
    signer = merge(local.env_common, local.env_secrets, {
      CERTFN_QUEUE_URL                = aws_sqs_queue.work["worker"].id
      CERTFN_QUOTA_ISSUANCES_PER_HOUR = tostring(var.quota_issuances_per_hour_per_namespace)
    })
    scheduler = merge(local.env_common, {
      CERTFN_QUEUE_URL = aws_sqs_queue.work["worker"].id
    })
    api = merge(local.env_common, {
      CERTFN_QUEUE_URL     = aws_sqs_queue.work["worker"].id
      CERTFN_API_ADMINS    = join(",", var.api_admin_arns)
      CERTFN_QUOTA_OBJECTS = tostring(var.quota_objects_per_namespace)
    })
    http01 = local.env_common
  }
}

resource "aws_cloudwatch_log_group" "fn" {
  for_each = local.functions

  name              = "/aws/lambda/${each.value.name}"
  retention_in_days = var.log_retention_days
  tags              = local.tags
}

resource "aws_lambda_function" "fn" {
  for_each = local.functions

  function_name = each.value.name
  description   = "certfn ${each.key}"
  role          = aws_iam_role.fn[each.key].arn

  filename         = each.value.zip
  source_code_hash = filebase64sha256(each.value.zip)
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.lambda_architecture]
  memory_size      = var.lambda_memory_mb
  timeout          = each.value.timeout

  reserved_concurrent_executions = each.value.reserved

  environment {
    variables = { for k, v in merge(local.env[each.key], { CERTFN_FUNCTION = each.key }) : k => v if v != null }
  }

  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.fn[each.key].name
  }

  tags = local.tags

  # The role's policy must exist before the function can use it (event
  # source mappings validate the queue permissions at creation).
  depends_on = [aws_iam_role_policy.fn]
}

# worker and signer consume their queues; failures are reported per message
# (ReportBatchItemFailures) so one bad key does not redeliver a whole batch.
resource "aws_lambda_event_source_mapping" "queue" {
  for_each = local.queues

  function_name                      = aws_lambda_function.fn[each.key].arn
  event_source_arn                   = aws_sqs_queue.work[each.key].arn
  batch_size                         = 10
  maximum_batching_window_in_seconds = 0
  function_response_types            = ["ReportBatchItemFailures"]

  dynamic "scaling_config" {
    for_each = local.functions[each.key].reserved >= 2 ? [local.functions[each.key].reserved] : []
    content {
      maximum_concurrency = scaling_config.value
    }
  }
}

# api: a Function URL with IAM auth. Callers need lambda:InvokeFunctionUrl on
# it, from their own IAM policy or from the resource policy below.
resource "aws_lambda_function_url" "api" {
  function_name      = aws_lambda_function.fn["api"].function_name
  authorization_type = "AWS_IAM"
}

resource "aws_lambda_permission" "api_invoke_url" {
  for_each = toset(var.api_invoker_arns)

  statement_id           = "certfn-api-url-${substr(sha256(each.value), 0, 16)}"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = aws_lambda_function.fn["api"].function_name
  principal              = each.value
  function_url_auth_type = "AWS_IAM"
}

# http01: public (auth NONE), it only answers GET
# /.well-known/acme-challenge/{token} for current challenges.
resource "aws_lambda_function_url" "http01" {
  count = var.enable_http01 ? 1 : 0

  function_name      = aws_lambda_function.fn["http01"].function_name
  authorization_type = "NONE"
}

resource "aws_lambda_permission" "http01_public_url" {
  count = var.enable_http01 ? 1 : 0

  statement_id           = "certfn-http01-public-url"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = aws_lambda_function.fn["http01"].function_name
  principal              = "*"
  function_url_auth_type = "NONE"
}
