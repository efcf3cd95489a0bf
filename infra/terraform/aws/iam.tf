# One IAM role per function, each with one inline policy holding only what
# docs/design/roles.md gives that function:
#
#   api       resources in the table; enqueue on the worker queue. No secret
#             value at all (explicit deny).
#   worker    resources; its queue; enqueue on both queues; secrets tagged
#             certfn-role = private-key | certificate | acme-account (read and
#             write) and solver-credentials (read); Route53 TXT records under
#             _acme-challenge in the listed zones; sts:AssumeRole on the
#             route53_assume_role_arns only (route53 solvers' role field);
#             ACM import when enabled; events:PutEvents with source certfn
#             on the default event bus when notifications are on. Never a
#             CA key (explicit deny on certfn-role = ca, and issued-ca
#             unless worker_manages_ca_certificates).
#   signer    CertificateRequest / CertificateSigningRequest / Issuer /
#             ClusterIssuer items only; lists
#             CertificateRequests and CSRs (Query on the kind_ns index for those kinds
#             only) to wake the requests waiting for a CA issuer that became
#             Ready; its queue; enqueue on the worker queue; reads secrets
#             tagged ca, issued-ca (CA key pairs) and private-key (a
#             selfSigned request's key). It cannot write or approve anything
#             else.
#   scheduler the due index and the worker queue, nothing else.
#   http01    Challenge items, read only.
#
# With secret_store = "ssm" the same split is made by Parameter Store path
# instead of tag: the worker reads /<prefix>/{tls,pk,sc}/* and writes
# /<prefix>/{tls,pk}/* (ica too with worker_manages_ca_certificates), the
# signer reads /<prefix>/{ca,ica,pk}/*; api, scheduler and http01 are
# denied every parameter read.
#
# The secret naming and tagging scheme is in docs/deploy/aws.md. No managed
# policy is attached anywhere: tests/terraform evaluates these documents.

locals {
  secret_role_tag = "certfn-role"

  # Tag values of certfn-role (docs/deploy/aws.md, "Secrets").
  worker_secret_rw    = concat(["private-key", "certificate", "acme-account"], var.worker_manages_ca_certificates ? ["issued-ca"] : [])
  worker_secret_ro    = ["solver-credentials"]
  worker_denied_roles = concat(["ca"], var.worker_manages_ca_certificates ? [] : ["issued-ca"])
  signer_secret_ro    = ["ca", "issued-ca", "private-key"]

  # Parameter Store classes (secret_store = "ssm"; adapters/aws/ssmstore):
  # what each function reads (also its CERTFN_SECRET_CLASSES, in this
  # order) and writes. The same split as the tags above, by path.
  use_ssm = var.secret_store == "ssm"
  ssm_read = {
    worker = concat(["tls", "pk", "sc"], var.worker_manages_ca_certificates ? ["ica"] : [])
    signer = ["ca", "ica", "pk"]
  }
  ssm_write = {
    worker = concat(["tls", "pk"], var.worker_manages_ca_certificates ? ["ica"] : [])
  }

  # Secrets Manager actions that touch a secret's value, its versions or its
  # tags: denied to the worker on CA keys whatever else is allowed.
  secret_value_actions = [
    "secretsmanager:GetSecretValue",
    "secretsmanager:PutSecretValue",
    "secretsmanager:UpdateSecret",
    "secretsmanager:UpdateSecretVersionStage",
    "secretsmanager:DeleteSecret",
    "secretsmanager:RestoreSecret",
    "secretsmanager:RotateSecret",
    "secretsmanager:CancelRotateSecret",
    "secretsmanager:TagResource",
    "secretsmanager:UntagResource",
    "secretsmanager:PutResourcePolicy",
    "secretsmanager:DeleteResourcePolicy",
    "secretsmanager:ReplicateSecretToRegions",
  ]

  # KMS: the deployment's key only, and only through the services that use
  # it (kms:ViaService). A created key is matched by its alias so the ARN is
  # known at plan time.
  kms_resource = local.create_kms_key ? local.arn.kms_keys : var.kms_key_arn
  kms_key_condition = local.create_kms_key ? {
    "ForAnyValue:StringEquals" = { "kms:ResourceAliases" = [local.kms_alias] }
  } : {}
  via = {
    sqs      = "sqs.${local.region}.amazonaws.com"
    dynamodb = "dynamodb.${local.region}.amazonaws.com"
    secrets  = local.use_ssm ? "ssm.${local.region}.amazonaws.com" : "secretsmanager.${local.region}.amazonaws.com"
  }

  # Statements shared by several functions.
  st_logs = {
    for fn in local.all_function_names : fn => {
      Sid      = "OwnLogGroup"
      Effect   = "Allow"
      Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
      Resource = ["${local.log_group_arn[fn]}:*"]
    }
  }
  st_no_secret_values = {
    Sid      = "NoSecretValues"
    Effect   = "Deny"
    Action   = ["secretsmanager:GetSecretValue", "secretsmanager:BatchGetSecretValue", "ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath", "ssm:GetParameterHistory"]
    Resource = ["*"]
  }
  st_consume = {
    for q in keys(local.queues) : q => {
      Sid      = "Consume${title(q)}Queue"
      Effect   = "Allow"
      Action   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]
      Resource = [local.arn["${q}_queue"]]
    }
  }
  table_rw_actions = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]

  # KMS statements per function: which operations, through which services.
  kms_specs = {
    # worker: secrets (read and write), queues (send and receive), table;
    # Parameter Store encrypts a standard SecureString with kms:Encrypt.
    worker = concat(
      [{ actions = ["kms:Decrypt", "kms:GenerateDataKey"], via = ["secrets", "sqs", "dynamodb"] }],
      [for spec in [{ actions = ["kms:Encrypt"], via = ["secrets"] }] : spec if local.use_ssm],
    )
    # signer: reads secrets (never writes one), sends and receives messages.
    signer = [
      { actions = ["kms:Decrypt"], via = ["secrets", "sqs", "dynamodb"] },
      { actions = ["kms:GenerateDataKey"], via = ["sqs", "dynamodb"] },
    ]
    # api and scheduler: send messages, use the table. Never via Secrets Manager.
    api       = [{ actions = ["kms:Decrypt", "kms:GenerateDataKey"], via = ["sqs", "dynamodb"] }]
    scheduler = [{ actions = ["kms:Decrypt", "kms:GenerateDataKey"], via = ["sqs", "dynamodb"] }]
    # http01: reads the table only.
    http01 = [{ actions = ["kms:Decrypt"], via = ["dynamodb"] }]
  }
  kms_statements = {
    for name, specs in local.kms_specs : name => [
      for i, spec in specs : {
        Sid      = "DeploymentKeyViaServices${i}"
        Effect   = "Allow"
        Action   = spec.actions
        Resource = [local.kms_resource]
        Condition = merge(
          { "StringEquals" = { "kms:ViaService" = [for s in spec.via : local.via[s]] } },
          local.kms_key_condition,
        )
      }
    ]
  }

  policy_statements = {
    api = concat([
      local.st_logs["api"],
      {
        Sid      = "Resources"
        Effect   = "Allow"
        Action   = local.table_rw_actions
        Resource = [local.arn.table, local.arn.index_kind_ns, local.arn.index_owner]
      },
      {
        Sid      = "EnqueueReconcileKeys"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [local.arn.worker_queue]
      },
      local.st_no_secret_values,
    ], local.kms_statements["api"])

    worker = concat([
      local.st_logs["worker"],
      {
        Sid      = "Resources"
        Effect   = "Allow"
        Action   = local.table_rw_actions
        Resource = [local.arn.table, local.arn.index_kind_ns, local.arn.index_owner]
      },
      local.st_consume["worker"],
      {
        Sid      = "Enqueue"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [local.arn.worker_queue, local.arn.signer_queue]
      },
      ],
      # Secrets Manager (secret_store = "secretsmanager"): by certfn-role tag.
      [for st in [
        {
          Sid    = "WorkerSecrets"
          Effect = "Allow"
          Action = [
            "secretsmanager:GetSecretValue",
            "secretsmanager:DescribeSecret",
            "secretsmanager:PutSecretValue",
            "secretsmanager:UpdateSecret",
            "secretsmanager:UpdateSecretVersionStage",
            "secretsmanager:DeleteSecret",
            "secretsmanager:RestoreSecret",
          ]
          Resource  = [local.arn.secrets]
          Condition = { "StringEquals" = { "secretsmanager:ResourceTag/${local.secret_role_tag}" = local.worker_secret_rw } }
        },
        {
          # A secret that does not exist yet has no tags, so the tag-scoped
          # statements cannot allow looking it up: this one lets the lookup
          # reach Secrets Manager, which answers ResourceNotFoundException (a
          # missing secret is how issuance starts). IAM cannot tell an
          # untagged secret from a missing one, so an untagged secret under
          # the prefix is readable too: tag every secret you install
          # (docs/deploy/aws.md, "Secrets").
          Sid       = "LookUpMissingSecrets"
          Effect    = "Allow"
          Action    = ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]
          Resource  = [local.arn.secrets]
          Condition = { "Null" = { "secretsmanager:ResourceTag/${local.secret_role_tag}" = "true" } }
        },
        {
          Sid       = "SolverCredentials"
          Effect    = "Allow"
          Action    = ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]
          Resource  = [local.arn.secrets]
          Condition = { "StringEquals" = { "secretsmanager:ResourceTag/${local.secret_role_tag}" = local.worker_secret_ro } }
        },
        {
          # A new secret must carry a worker role tag (TagResource too: tags
          # given to CreateSecret may be authorized as TagResource). A secret
          # already tagged with another role is refused by the IfExists
          # resource-tag condition.
          Sid      = "CreateWorkerSecrets"
          Effect   = "Allow"
          Action   = ["secretsmanager:CreateSecret", "secretsmanager:TagResource"]
          Resource = [local.arn.secrets]
          Condition = {
            "StringEquals"         = { "aws:RequestTag/${local.secret_role_tag}" = local.worker_secret_rw }
            "StringEqualsIfExists" = { "secretsmanager:ResourceTag/${local.secret_role_tag}" = local.worker_secret_rw }
          }
        },
        {
          # Re-tagging after a renewal (adapters/aws/secrets refreshes its
          # certfn.io/* tags): only secrets that already have a worker role,
          # and a certfn-role in the request, if any, must stay a worker role.
          Sid      = "RetagWorkerSecrets"
          Effect   = "Allow"
          Action   = ["secretsmanager:TagResource"]
          Resource = [local.arn.secrets]
          Condition = {
            "StringEquals"         = { "secretsmanager:ResourceTag/${local.secret_role_tag}" = local.worker_secret_rw }
            "StringEqualsIfExists" = { "aws:RequestTag/${local.secret_role_tag}" = local.worker_secret_rw }
          }
        },
        {
          Sid       = "NeverCAKeys"
          Effect    = "Deny"
          Action    = local.secret_value_actions
          Resource  = [local.arn.any_secret]
          Condition = { "StringEquals" = { "secretsmanager:ResourceTag/${local.secret_role_tag}" = local.worker_denied_roles } }
        },
        {
          Sid       = "NeverCreateCAKeys"
          Effect    = "Deny"
          Action    = ["secretsmanager:CreateSecret", "secretsmanager:TagResource"]
          Resource  = ["*"]
          Condition = { "StringEquals" = { "aws:RequestTag/${local.secret_role_tag}" = local.worker_denied_roles } }
        },
      ] : st if !local.use_ssm],
      # Parameter Store (secret_store = "ssm"): by class path.
      [for st in [
        {
          Sid      = "WorkerParametersRead"
          Effect   = "Allow"
          Action   = ["ssm:GetParameter", "ssm:GetParameters"]
          Resource = [for c in local.ssm_read.worker : local.arn.parameters[c]]
        },
        {
          Sid      = "WorkerParametersWrite"
          Effect   = "Allow"
          Action   = ["ssm:PutParameter", "ssm:DeleteParameter"]
          Resource = [for c in local.ssm_write.worker : local.arn.parameters[c]]
        },
      ] : st if local.use_ssm],
      local.kms_statements["worker"],
      # (for ... if: a conditional cannot choose between tuples of different lengths)
      [for s in [
        {
          Sid      = "Dns01Records"
          Effect   = "Allow"
          Action   = ["route53:ChangeResourceRecordSets"]
          Resource = local.zone_arns
          Condition = {
            "ForAllValues:StringEquals" = { "route53:ChangeResourceRecordSetsRecordTypes" = ["TXT"] }
            "ForAllValues:StringLike"   = { "route53:ChangeResourceRecordSetsNormalizedRecordNames" = var.route53_record_name_patterns }
          }
        },
        {
          Sid      = "Dns01ReadZones"
          Effect   = "Allow"
          Action   = ["route53:ListResourceRecordSets", "route53:GetHostedZone"]
          Resource = local.zone_arns
        },
        {
          Sid      = "Dns01Propagation"
          Effect   = "Allow"
          Action   = ["route53:GetChange"]
          Resource = [local.arn.route53_change]
        },
        {
          # Finding the zone of a name; Route53 has no resource-level
          # permission for this list call.
          Sid      = "Dns01FindZone"
          Effect   = "Allow"
          Action   = ["route53:ListHostedZonesByName"]
          Resource = ["*"]
        },
      ] : s if length(local.zone_arns) > 0],
      [for s in [
        {
          Sid       = "AcmImportNew"
          Effect    = "Allow"
          Action    = ["acm:ImportCertificate", "acm:AddTagsToCertificate"]
          Resource  = [local.arn.acm_certs]
          Condition = { "StringEquals" = { "aws:RequestTag/certfn-deployment" = local.prefix } }
        },
        {
          Sid       = "AcmReimportOwn"
          Effect    = "Allow"
          Action    = ["acm:ImportCertificate", "acm:DescribeCertificate", "acm:ListTagsForCertificate"]
          Resource  = [local.arn.acm_certs]
          Condition = { "StringEquals" = { "aws:ResourceTag/certfn-deployment" = local.prefix } }
        },
        {
          # Finding a previous import; ACM has no resource-level permission
          # for this list call.
          Sid      = "AcmFindOwn"
          Effect   = "Allow"
          Action   = ["acm:ListCertificates"]
          Resource = ["*"]
        },
      ] : s if var.enable_acm_import],
      [for s in [
        {
          # Notifications: the deployment's bus, with source certfn only
          # (a rule of another source's events cannot be fed from here).
          Sid       = "PublishNotifications"
          Effect    = "Allow"
          Action    = ["events:PutEvents"]
          Resource  = [local.arn.event_bus]
          Condition = { "StringEquals" = { "events:source" = ["certfn"] } }
        },
      ] : s if var.notifications],
      [for s in [
        {
          # The role field of route53 DNS-01 solvers: exactly the listed
          # roles; their own policies decide which records they may change.
          Sid      = "Dns01AssumeRoles"
          Effect   = "Allow"
          Action   = ["sts:AssumeRole"]
          Resource = var.route53_assume_role_arns
        },
      ] : s if length(var.route53_assume_role_arns) > 0],
    )

    signer = concat([
      local.st_logs["signer"],
      {
        # The request it signs, the issuer it signs for (CA issuers' readiness
        # is checked here, as it needs the CA key pair), and the Events that
        # record its failures on them.
        Sid       = "RequestsAndIssuers"
        Effect    = "Allow"
        Action    = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
        Resource  = [local.arn.table]
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["CertificateRequest/*", "CertificateSigningRequest/*", "Issuer/*", "ClusterIssuer/*", "Event/*"] } }
      },
      {
        # When a CA issuer becomes Ready, the requests waiting for it are
        # listed (kind_ns index, kinds CertificateRequest and
        # CertificateSigningRequest) and woken; the
        # items themselves are read with the BatchGetItem above.
        Sid       = "ListWaitingRequests"
        Effect    = "Allow"
        Action    = ["dynamodb:Query"]
        Resource  = [local.arn.index_kind_ns]
        Condition = { "ForAllValues:StringEquals" = { "dynamodb:LeadingKeys" = ["CertificateRequest", "CertificateSigningRequest"] } }
      },
      local.st_consume["signer"],
      {
        Sid      = "WakeOwners"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [local.arn.worker_queue]
      },
      ],
      # Secrets Manager (secret_store = "secretsmanager"): by certfn-role tag.
      [for st in [
        {
          # A secret that does not exist yet has no tags, so the tag-scoped
          # statements cannot allow looking it up: this one lets the lookup
          # reach Secrets Manager, which answers ResourceNotFoundException (a
          # missing CA secret makes the issuer not Ready). IAM cannot tell an
          # untagged secret from a missing one, so an untagged secret under
          # the prefix is readable too: tag every secret you install
          # (docs/deploy/aws.md, "Secrets").
          Sid       = "LookUpMissingSecrets"
          Effect    = "Allow"
          Action    = ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]
          Resource  = [local.arn.secrets]
          Condition = { "Null" = { "secretsmanager:ResourceTag/${local.secret_role_tag}" = "true" } }
        },
        {
          Sid       = "SigningKeys"
          Effect    = "Allow"
          Action    = ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]
          Resource  = [local.arn.secrets]
          Condition = { "StringEquals" = { "secretsmanager:ResourceTag/${local.secret_role_tag}" = local.signer_secret_ro } }
        },
      ] : st if !local.use_ssm],
      # Parameter Store (secret_store = "ssm"): by class path, read only.
      [for st in [
        {
          Sid      = "SigningKeyParameters"
          Effect   = "Allow"
          Action   = ["ssm:GetParameter", "ssm:GetParameters"]
          Resource = [for c in local.ssm_read.signer : local.arn.parameters[c]]
        },
      ] : st if local.use_ssm],
    local.kms_statements["signer"])

    scheduler = concat([
      local.st_logs["scheduler"],
      {
        Sid      = "DueIndex"
        Effect   = "Allow"
        Action   = ["dynamodb:Query"]
        Resource = [local.arn.index_due]
      },
      {
        Sid      = "EnqueueDueKeys"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage"]
        Resource = [local.arn.worker_queue]
      },
      local.st_no_secret_values,
    ], local.kms_statements["scheduler"])

    http01 = concat([
      local.st_logs["http01"],
      {
        Sid       = "ActiveChallenges"
        Effect    = "Allow"
        Action    = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"]
        Resource  = [local.arn.table, local.arn.index_kind_ns]
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["Challenge/*", "Challenge"] } }
      },
      local.st_no_secret_values,
    ], local.kms_statements["http01"])
  }

  # The documents attached below (one per deployed function).
  policy_documents = {
    for fn in local.function_names : fn => {
      Version   = "2012-10-17"
      Statement = local.policy_statements[fn]
    }
  }
}

resource "aws_iam_role" "fn" {
  for_each = local.functions

  name        = each.value.name
  description = "certfn ${each.key} function (docs/design/roles.md)"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
      Condition = { "StringEquals" = { "aws:SourceAccount" = local.account } }
    }]
  })
  tags = local.tags
}

resource "aws_iam_role_policy" "fn" {
  for_each = local.functions

  lifecycle {
    # Parameter Store's naming rules for the paths the policies name (a
    # variable validation cannot depend on another variable's validity).
    precondition {
      condition     = !local.use_ssm || (can(regex("^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", local.secret_prefix)) && !can(regex("^(?i)(aws|ssm)", local.secret_prefix)))
      error_message = "secret_prefix (or name_prefix when it is empty): with secret_store = \"ssm\", must be path segments of A-Z a-z 0-9 _.- separated by '/', not starting with aws or ssm (Parameter Store's rules)."
    }
  }

  name   = "${each.value.name}-least-privilege"
  role   = aws_iam_role.fn[each.key].name
  policy = jsonencode(local.policy_documents[each.key])
}

# The role EventBridge Scheduler assumes to start the scheduler function.
resource "aws_iam_role" "schedule" {
  name        = "${local.prefix}-schedule"
  description = "certfn: EventBridge Scheduler invokes the scheduler function"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "scheduler.amazonaws.com" }
      Action    = "sts:AssumeRole"
      Condition = { "StringEquals" = { "aws:SourceAccount" = local.account } }
    }]
  })
  tags = local.tags
}

resource "aws_iam_role_policy" "schedule" {
  name = "${local.prefix}-schedule-invoke"
  role = aws_iam_role.schedule.name
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid      = "InvokeScheduler"
      Effect   = "Allow"
      Action   = ["lambda:InvokeFunction"]
      Resource = [local.function_arn["scheduler"], "${local.function_arn["scheduler"]}:*"]
    }]
  })
}
