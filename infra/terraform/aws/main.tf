# certfn on AWS: five Lambda functions (worker, signer, scheduler, api,
# http01), two SQS queues with dead-letter queues, one DynamoDB table, secrets
# in Secrets Manager, an EventBridge Scheduler schedule, and one IAM role per
# function with only the permissions docs/design/roles.md gives it (iam.tf).
#
# Every ARN that appears in an IAM policy is built from names known at plan
# time (not read from the created resources), so that `terraform plan` shows
# complete policy documents: tests/terraform checks them for least privilege.

data "aws_partition" "current" {}

# The provider's region. Read from the region's EC2 endpoint
# (ec2.<region>.<dns suffix>): `name` is deprecated from hashicorp/aws 6.0 and
# `id` from 6.47 in favour of `region`, which 5.x does not have; `endpoint` is
# in both (see versions.tf).
data "aws_region" "current" {}

data "aws_caller_identity" "current" {
  count = var.account_id == "" ? 1 : 0
}

locals {
  partition = data.aws_partition.current.partition
  region    = split(".", data.aws_region.current.endpoint)[1]
  account   = var.account_id != "" ? var.account_id : data.aws_caller_identity.current[0].account_id

  prefix        = var.name_prefix
  secret_prefix = var.secret_prefix != "" ? var.secret_prefix : var.name_prefix

  tags = merge(var.tags, { "certfn-deployment" = var.name_prefix })

  # The functions deployed: http01 only when enabled.
  function_names = concat(["worker", "signer", "scheduler", "api"], var.enable_http01 ? ["http01"] : [])
  functions = {
    for fn in local.function_names : fn => {
      name    = "${local.prefix}-${fn}"
      timeout = var.lambda_timeout_seconds[fn]
      # -1 is the provider's "unreserved".
      reserved = var.reserved_concurrency[fn]
      # SQS pollers (worker, signer): queue_maximum_concurrency, at most the
      # reservation when there is one of 2 or more; null below 2 (Lambda's
      # minimum: a reservation of 0 or 1 bounds the function by itself).
      pollers = !contains(keys(var.queue_maximum_concurrency), fn) ? null : (
        var.reserved_concurrency[fn] == -1 ? var.queue_maximum_concurrency[fn] :
        var.reserved_concurrency[fn] >= 2 ? min(var.reserved_concurrency[fn], var.queue_maximum_concurrency[fn]) : null
      )
      zip = "${local.zip_dir}/${fn}.zip"
    }
  }
  zip_dir = var.lambda_zip_dir != "" ? var.lambda_zip_dir : abspath("${path.module}/../../../dist/lambda")

  table_name = "${local.prefix}-state"
  queues = {
    worker = { name = "${local.prefix}-worker", dlq = "${local.prefix}-worker-dlq" }
    signer = { name = "${local.prefix}-signer", dlq = "${local.prefix}-signer-dlq" }
  }

  # KMS: an existing key, or the one created below.
  create_kms_key = var.kms_key_arn == ""
  kms_alias      = "alias/${local.prefix}"
  kms_key_arn    = local.create_kms_key ? aws_kms_key.this[0].arn : var.kms_key_arn

  # ARNs known at plan time (see the note at the top of this file).
  arn = {
    table         = "arn:${local.partition}:dynamodb:${local.region}:${local.account}:table/${local.table_name}"
    index_due     = "arn:${local.partition}:dynamodb:${local.region}:${local.account}:table/${local.table_name}/index/due"
    index_kind_ns = "arn:${local.partition}:dynamodb:${local.region}:${local.account}:table/${local.table_name}/index/kind_ns"
    index_owner   = "arn:${local.partition}:dynamodb:${local.region}:${local.account}:table/${local.table_name}/index/owner"
    worker_queue  = "arn:${local.partition}:sqs:${local.region}:${local.account}:${local.queues.worker.name}"
    signer_queue  = "arn:${local.partition}:sqs:${local.region}:${local.account}:${local.queues.signer.name}"
    worker_dlq    = "arn:${local.partition}:sqs:${local.region}:${local.account}:${local.queues.worker.dlq}"
    signer_dlq    = "arn:${local.partition}:sqs:${local.region}:${local.account}:${local.queues.signer.dlq}"
    secrets       = "arn:${local.partition}:secretsmanager:${local.region}:${local.account}:secret:${local.secret_prefix}/*"
    any_secret    = "arn:${local.partition}:secretsmanager:${local.region}:${local.account}:secret:*"
    # Parameter Store (secret_store = "ssm"): one path per class.
    parameters     = { for c in ["tls", "pk", "ica", "ca", "sc"] : c => "arn:${local.partition}:ssm:${local.region}:${local.account}:parameter/${local.secret_prefix}/${c}/*" }
    kms_keys       = "arn:${local.partition}:kms:${local.region}:${local.account}:key/*"
    route53_change = "arn:${local.partition}:route53:::change/*"
    acm_certs      = "arn:${local.partition}:acm:${local.region}:${local.account}:certificate/*"
    event_bus      = "arn:${local.partition}:events:${local.region}:${local.account}:event-bus/${local.notification_bus}"
  }
  # Over every function name, deployed or not (names are fixed).
  all_function_names = ["worker", "signer", "scheduler", "api", "http01"]
  function_arn       = { for fn in local.all_function_names : fn => "arn:${local.partition}:lambda:${local.region}:${local.account}:function:${local.prefix}-${fn}" }
  log_group_arn      = { for fn in local.all_function_names : fn => "arn:${local.partition}:logs:${local.region}:${local.account}:log-group:/aws/lambda/${local.prefix}-${fn}" }
  zone_arns          = [for z in var.route53_zone_ids : "arn:${local.partition}:route53:::hostedzone/${trimprefix(z, "/hostedzone/")}"]
}

# The key of secrets, queues and table when kms_key_arn is empty. Its key
# policy is the default one (the account's IAM policies decide); the
# functions' policies reach it through its alias (kms:ResourceAliases), so
# they are complete at plan time.
resource "aws_kms_key" "this" {
  count = local.create_kms_key ? 1 : 0

  description             = "certfn ${local.prefix}: secrets, queues and state table"
  enable_key_rotation     = true
  deletion_window_in_days = 30
  tags                    = local.tags
}

resource "aws_kms_alias" "this" {
  count = local.create_kms_key ? 1 : 0

  name          = local.kms_alias
  target_key_id = aws_kms_key.this[0].key_id
}
