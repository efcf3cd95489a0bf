# The five functions. Each is a `bootstrap` binary for the provided.al2023
# runtime (arm64 by default) in <lambda_zip_dir>/<name>.zip, as `make lambda`
# builds them; the function role selects nothing: each zip is its own main
# (functions/aws/<name>), and CERTFN_FUNCTION tells it which one it is.

locals {
  # Environment of each function: what its main needs to build its adapters
  # (docs/deploy/aws.md, "Function environment"). Queue URLs are the queues'
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
    CERTFN_SECRET_STORE  = var.secret_store
  }
  env = {
    worker = merge(local.env_common, local.env_secrets, {
      # The Parameter Store classes the worker reads, as its IAM paths (iam.tf).
      CERTFN_SECRET_CLASSES              = local.use_ssm ? join(",", local.ssm_read.worker) : null
      CERTFN_QUEUE_URL                   = aws_sqs_queue.work["worker"].id
      CERTFN_SIGNER_QUEUE_URL            = aws_sqs_queue.work["signer"].id
      CERTFN_APPROVER                    = var.approver
      CERTFN_AUTO_APPROVE                = join(",", var.auto_approve_signers)
      CERTFN_ROUTE53_ZONE_IDS            = join(",", [for z in var.route53_zone_ids : trimprefix(z, "/hostedzone/")])
      CERTFN_ACM_IMPORT                  = tostring(var.enable_acm_import)
      CERTFN_HTTP01_ENABLED              = tostring(var.enable_http01)
      CERTFN_ACME_SERVER_ALLOW           = join(",", var.acme_server_allow)
      CERTFN_ACME_ALLOW_PRIVATE_NETWORKS = join(",", var.acme_allow_private_networks)
      CERTFN_ACME_POLL_FIRST             = var.acme_poll_first != "" ? var.acme_poll_first : null
      CERTFN_ACME_POLL_MAX               = var.acme_poll_max != "" ? var.acme_poll_max : null
      # The worker holds back ACME requests (and hands off no CA request)
      # of a namespace at its issuance quota; the signer before signing.
      CERTFN_QUOTA_ISSUANCES_PER_HOUR = tostring(var.quota_issuances_per_hour_per_namespace)
      # Notifications (notifications.tf): the bus, empty when off, and the
      # expiry window of the daily "Approaching Expiration" events.
      CERTFN_NOTIFY_EVENT_BUS   = var.notifications ? local.notification_bus : ""
      CERTFN_NOTIFY_EXPIRY_DAYS = tostring(var.certificate_expiry_alarm_days)
    })
    signer = merge(local.env_common, local.env_secrets, {
      CERTFN_SECRET_CLASSES           = local.use_ssm ? join(",", local.ssm_read.signer) : null
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
      # Names only (the api holds no secret permission): the status route
      # reports where each Certificate's secret is (secret.reference).
      CERTFN_SECRET_PREFIX = local.secret_prefix
      CERTFN_SECRET_STORE  = var.secret_store
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

  # The pollers' bound (main.tf, local.functions): no reservation needed.
  dynamic "scaling_config" {
    for_each = local.functions[each.key].pollers != null ? [local.functions[each.key].pollers] : []
    content {
      maximum_concurrency = scaling_config.value
    }
  }
}

# api: a Function URL with IAM auth. Since October 2025 a Function URL
# answers 403 unless the caller holds both lambda:InvokeFunctionUrl and
# lambda:InvokeFunction ("Control access to Lambda function URLs", AWS Lambda
# developer guide; accounts with older URLs had until 2026-11-01).
# lambda:InvokeFunction is only ever granted under the condition
# lambda:InvokedViaFunctionUrl = true, so that it permits calls through the
# URL and never a direct Invoke.
#
# - Same-account callers: their identity policy grants both (the
#   api_invoker_policy_json output; api_invoker_role_names attaches it).
# - api_invoker_arns (other accounts): the resource policy grants both,
#   lambda:InvokeFunctionUrl below, lambda:InvokeFunction at the end of this
#   file; the callers still need the identity policy in their own account.
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

locals {
  api_function_arn = "arn:${local.partition}:lambda:${local.region}:${local.account}:function:${local.functions["api"].name}"

  # What a caller of the api URL needs in its own IAM policy (same account):
  # the URL action for AWS_IAM URLs, and Invoke only through the URL.
  api_invoker_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "CertfnApiFunctionUrl"
        Effect    = "Allow"
        Action    = "lambda:InvokeFunctionUrl"
        Resource  = local.api_function_arn
        Condition = { StringEquals = { "lambda:FunctionUrlAuthType" = "AWS_IAM" } }
      },
      {
        Sid       = "CertfnApiInvokeViaFunctionUrl"
        Effect    = "Allow"
        Action    = "lambda:InvokeFunction"
        Resource  = local.api_function_arn
        Condition = { Bool = { "lambda:InvokedViaFunctionUrl" = "true" } }
      },
    ]
  })
}

# The invoker policy attached to roles of this account that call the api.
resource "aws_iam_role_policy" "api_invoker" {
  for_each = toset(var.api_invoker_role_names)

  name   = "${local.prefix}-api-invoker"
  role   = each.value
  policy = local.api_invoker_policy
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

# lambda:InvokeFunction through the URL (condition
# lambda:InvokedViaFunctionUrl = true), for the public http01 URL and each
# api_invoker_arns entry. aws_lambda_permission cannot express it before
# hashicorp/aws 6.28 (invoked_via_function_url; Lambda refuses
# function_url_auth_type with any action but lambda:InvokeFunctionUrl), and
# 6.28 and later add only the http01 statement, and only when they create the
# URL. So the module declares the statements as AWS::Lambda::Permission
# resources (property InvokedViaFunctionUrl) of one CloudFormation stack,
# which works the same with every provider version and needs nothing on the
# applying machine; CloudFormation removes them with the stack. With 6.28 and
# later the http01 function holds the provider's statement too (same grant).
#
# function_url_invoke_permissions_via_cli replaces the stack by
# `aws lambda add-permission --invoked-via-function-url`, run on the
# applying machine (the AWS CLI with credentials for this account on its
# PATH), for accounts where CloudFormation is denied. Those statements go
# with the function when it is destroyed, not when the option is turned off.
locals {
  invoke_via_url_grants = merge(
    var.enable_http01 ? {
      http01 = { function = "http01", principal = "*", sid = "certfn-http01-invoke-via-url", logical_id = "Http01InvokeViaUrl" }
    } : {},
    {
      for a in var.api_invoker_arns : "api-${substr(sha256(a), 0, 16)}" => {
        function = "api", principal = a, sid = "certfn-api-invoke-${substr(sha256(a), 0, 16)}", logical_id = "ApiInvokeViaUrl${substr(sha256(a), 0, 16)}"
      }
    },
  )
}

resource "aws_cloudformation_stack" "invoke_via_url" {
  count = !var.function_url_invoke_permissions_via_cli && length(local.invoke_via_url_grants) > 0 ? 1 : 0

  name = "${local.prefix}-invoke-via-url"
  template_body = jsonencode({
    AWSTemplateFormatVersion = "2010-09-09"
    Description              = "certfn ${local.prefix}: lambda:InvokeFunction through the Function URLs only (Terraform module infra/terraform/aws)"
    Resources = {
      for g in values(local.invoke_via_url_grants) : g.logical_id => {
        Type = "AWS::Lambda::Permission"
        Properties = {
          # The function's attribute, not its name: the stack follows the
          # function (created after it, destroyed before it).
          FunctionName          = aws_lambda_function.fn[g.function].function_name
          Action                = "lambda:InvokeFunction"
          Principal             = g.principal
          InvokedViaFunctionUrl = true
        }
      }
    }
  })
  tags = local.tags
}

resource "terraform_data" "invoke_via_url" {
  for_each = var.function_url_invoke_permissions_via_cli ? local.invoke_via_url_grants : {}

  triggers_replace = [
    { function = local.functions[each.value.function].name, principal = each.value.principal, sid = each.value.sid },
    aws_lambda_function.fn[each.value.function].arn,
  ]

  provisioner "local-exec" {
    interpreter = ["/bin/sh", "-c"]
    # Idempotent: a statement already there (same id) is success.
    command = <<-EOT
      out=$(aws lambda add-permission --region "$REGION" --function-name "$FUNCTION" \
        --statement-id "$SID" --action lambda:InvokeFunction --principal "$PRINCIPAL" \
        --invoked-via-function-url 2>&1) || case "$out" in
        *ResourceConflictException*) ;;
        *) echo "$out" >&2; exit 1 ;;
      esac
    EOT
    environment = {
      REGION    = local.region
      FUNCTION  = local.functions[each.value.function].name
      SID       = each.value.sid
      PRINCIPAL = each.value.principal
    }
  }
}
