# Inputs of the certfn AWS module. docs/deploy/aws.md describes each group
# and the IAM model they feed (docs/design/roles.md).

variable "name_prefix" {
  description = "Prefix of every resource name (functions, roles, queues, table, log groups, alarms, KMS alias)."
  type        = string
  default     = "certfn"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,27}[a-z0-9]$", var.name_prefix))
    error_message = "name_prefix: must be 2-29 characters of a-z, 0-9 and '-', start with a letter and not end with '-'."
  }
}

variable "secret_prefix" {
  description = "Prefix of the secret names: Secrets Manager secrets are <secret_prefix>/<namespace>/<secretName>, Parameter Store parameters (secret_store = \"ssm\") /<secret_prefix>/<class>/<namespace>/<secretName>. Empty means name_prefix."
  type        = string
  default     = ""

  validation {
    condition     = var.secret_prefix == "" || can(regex("^[A-Za-z0-9_+=.@-]+(/[A-Za-z0-9_+=.@-]+)*$", var.secret_prefix))
    error_message = "secret_prefix: must be path segments of A-Z a-z 0-9 _+=.@- separated by '/', with no leading or trailing '/'."
  }
}

variable "secret_store" {
  description = "Where the worker and signer keep private keys and certificates: \"secretsmanager\" (the default; $0.40 per secret and month) or \"ssm\" (Parameter Store SecureString parameters, /<secret_prefix>/<class>/<namespace>/<name>, with IAM separating classes by path; standard parameters cost nothing to store, payloads over 4 KB use the advanced tier at $0.05 per parameter and month). See docs/deploy/aws.md, \"Choosing the secret store\"."
  type        = string
  default     = "secretsmanager"

  validation {
    condition     = contains(["secretsmanager", "ssm"], var.secret_store)
    error_message = "secret_store: must be \"secretsmanager\" or \"ssm\"."
  }
}

variable "kms_key_arn" {
  description = "ARN of an existing KMS key that encrypts the secrets, the queues and the table. Empty: the module creates a key (with rotation) and the alias alias/<name_prefix>."
  type        = string
  default     = ""

  validation {
    condition     = var.kms_key_arn == "" || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn: must be empty or a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>); an alias ARN is not accepted."
  }
}

variable "account_id" {
  description = "AWS account ID used to build resource ARNs in the IAM policies. Empty: read from the caller identity (sts:GetCallerIdentity)."
  type        = string
  default     = ""

  validation {
    condition     = var.account_id == "" || can(regex("^[0-9]{12}$", var.account_id))
    error_message = "account_id: must be empty or 12 digits."
  }
}

variable "schedule_rate" {
  description = "EventBridge Scheduler expression of the scheduler function (the due-index sweep)."
  type        = string
  default     = "rate(1 minute)"

  validation {
    condition     = can(regex("^(rate\\([1-9][0-9]* (minute|minutes|hour|hours|day|days)\\)|cron\\(.+\\))$", var.schedule_rate))
    error_message = "schedule_rate: must be rate(<n> minute|minutes|hour|hours|day|days) or cron(...)."
  }
}

variable "reserved_concurrency" {
  description = "Reserved concurrent executions per function; -1 (the default for every function) reserves none. A reservation is carved out of the account's concurrency quota, and Lambda keeps at least 100 of it unreserved, so reserving needs a quota of 100 + the sum reserved (new accounts often have 10: the apply then fails with \"below its minimum value\"). The SQS pollers are bounded by queue_maximum_concurrency instead; reserve when other functions of the account could starve certfn, or to guarantee a function capacity (docs/deploy/aws.md, \"Concurrency\"). A worker or signer reservation of 2 or more also lowers its pollers' bound to the reservation; 0 stops the function."
  type = object({
    worker    = optional(number, -1)
    signer    = optional(number, -1)
    scheduler = optional(number, -1)
    api       = optional(number, -1)
    http01    = optional(number, -1)
  })
  default = {}

  validation {
    condition     = alltrue([for v in values(var.reserved_concurrency) : v == -1 || (v >= 0 && floor(v) == v)])
    error_message = "reserved_concurrency: each value must be -1 (unreserved) or a whole number >= 0."
  }
}

variable "queue_maximum_concurrency" {
  description = "Most concurrent invocations the SQS event source mappings of worker and signer start (scaling_config maximum_concurrency, 2 to 1000): bounds the ACME calls and CA signing in flight without reserving account concurrency. A reservation of 2 or more in reserved_concurrency lowers it to the reservation."
  type = object({
    worker = optional(number, 10)
    signer = optional(number, 2)
  })
  default = {}

  validation {
    condition     = alltrue([for v in values(var.queue_maximum_concurrency) : v >= 2 && v <= 1000 && floor(v) == v])
    error_message = "queue_maximum_concurrency: each value must be a whole number from 2 to 1000 (the range of Lambda's maximum concurrency for SQS)."
  }
}

variable "log_retention_days" {
  description = "Retention of the functions' CloudWatch log groups, in days."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days: must be one of the values CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)."
  }
}

variable "enable_http01" {
  description = "Deploy the http01 function behind a public Function URL (auth NONE) that serves /.well-known/acme-challenge/{token}."
  type        = bool
  default     = true
}

variable "acme_server_allow" {
  description = "ACME directory URL prefixes that namespaced Issuers may use (CERTFN_ACME_SERVER_ALLOW), e.g. https://acme-v02.api.letsencrypt.org/directory. A namespaced Issuer with another server is not Ready (ACMEServerNotAllowed) and the worker makes no ACME request for it; [\"*\"] allows any server; ClusterIssuers are not restricted. Empty (the default): namespaced Issuers may use no ACME server."
  type        = list(string)
  default     = []

  validation {
    condition     = var.acme_server_allow == ["*"] || alltrue([for u in var.acme_server_allow : can(regex("^https?://[^/?#@,\\s]+(/[^?#,\\s]*)?$", u))])
    error_message = "acme_server_allow: each entry must be an http(s) URL of an ACME directory or a prefix of one (scheme, host, optional path; no user information, query, fragment or comma), or the single entry * for any server, e.g. https://acme-v02.api.letsencrypt.org/directory."
  }
}

variable "acme_allow_private_networks" {
  description = "CIDR prefixes, IP addresses or host names (CERTFN_ACME_ALLOW_PRIVATE_NETWORKS) that the worker's connections for namespaced Issuers (their ACME server and every URL it hands out, acmeDNS hosts, rfc2136 nameservers) may reach although they are loopback, link-local, private or reserved, e.g. [\"10.0.0.0/8\", \"ca.internal.example\"]. ClusterIssuers are not restricted. Empty (the default): none."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for e in var.acme_allow_private_networks : can(cidrhost(e, 0)) || can(regex("^[A-Za-z0-9._:-]+$", e))])
    error_message = "acme_allow_private_networks: each entry must be a CIDR prefix (10.0.0.0/8), an IP address or a host name."
  }
}

variable "acme_poll_first" {
  description = "Wait before the first poll of an accepted ACME challenge or a finalized order (CERTFN_ACME_POLL_FIRST, a Go duration such as 150ms); the wait doubles up to acme_poll_max, and a Retry-After from the CA always wins. Empty: certfn's default (150ms)."
  type        = string
  default     = ""

  validation {
    condition     = var.acme_poll_first == "" || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))+$", var.acme_poll_first))
    error_message = "acme_poll_first: must be empty or a Go duration such as 150ms or 2s (10ms to 1h)."
  }
}

variable "acme_poll_max" {
  description = "Longest wait between two ACME polls (CERTFN_ACME_POLL_MAX, a Go duration such as 2s); not below acme_poll_first. Empty: certfn's default (2s)."
  type        = string
  default     = ""

  validation {
    condition     = var.acme_poll_max == "" || can(regex("^([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))+$", var.acme_poll_max))
    error_message = "acme_poll_max: must be empty or a Go duration such as 150ms or 2s (10ms to 1h)."
  }
}

variable "quota_objects_per_namespace" {
  description = "Objects quota (CERTFN_QUOTA_OBJECTS, set on the api function): the most Certificates, CertificateRequests, Issuers, Roles and RoleBindings one namespace may hold; an apply that would create more is refused with 403 exceeded quota. 0: unlimited."
  type        = number
  default     = 0

  validation {
    condition     = var.quota_objects_per_namespace >= 0 && floor(var.quota_objects_per_namespace) == var.quota_objects_per_namespace && var.quota_objects_per_namespace <= 2147483647
    error_message = "quota_objects_per_namespace: must be a whole number of 0 (unlimited) to 2147483647."
  }
}

variable "quota_issuances_per_hour_per_namespace" {
  description = "Issuance quota (CERTFN_QUOTA_ISSUANCES_PER_HOUR, set on the worker and signer functions): the most certificates signed per namespace in any rolling hour; further requests stay Pending until the oldest issuance is an hour old. 0: unlimited."
  type        = number
  default     = 0

  validation {
    condition     = var.quota_issuances_per_hour_per_namespace >= 0 && floor(var.quota_issuances_per_hour_per_namespace) == var.quota_issuances_per_hour_per_namespace && var.quota_issuances_per_hour_per_namespace <= 2147483647
    error_message = "quota_issuances_per_hour_per_namespace: must be a whole number of 0 (unlimited) to 2147483647."
  }
}

variable "route53_zone_ids" {
  description = "Route53 hosted zone IDs in which the worker may write DNS-01 records. Empty: no Route53 permission at all."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for z in var.route53_zone_ids : can(regex("^(/hostedzone/)?[A-Z0-9]{1,32}$", z))])
    error_message = "route53_zone_ids: each entry must be a hosted zone ID such as Z0123456789ABCDEFGHIJ (optionally prefixed with /hostedzone/)."
  }
}

variable "route53_record_name_patterns" {
  description = "Record names (normalized: lower case, no trailing dot; IAM wildcards allowed) the worker may change in route53_zone_ids. The default allows ACME challenge TXT records only."
  type        = list(string)
  default     = ["_acme-challenge.*"]

  validation {
    condition     = length(var.route53_record_name_patterns) > 0 && alltrue([for p in var.route53_record_name_patterns : p != "*" && p != ""])
    error_message = "route53_record_name_patterns: must hold at least one pattern, and \"*\" or \"\" is not allowed."
  }
}

variable "route53_assume_role_arns" {
  description = "IAM role ARNs that route53 DNS-01 solvers name in their role field: the worker may sts:AssumeRole exactly these (and no other role) before changing records with the role's permissions, e.g. a role that holds the zones in another account. Empty: no sts:AssumeRole permission."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.route53_assume_role_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/([A-Za-z0-9+=,.@_-]+/)*[A-Za-z0-9+=,.@_-]{1,64}$", a))])
    error_message = "route53_assume_role_arns: each entry must be an IAM role ARN, arn:<partition>:iam::<account>:role/[<path>/]<name>, without wildcards."
  }
}

variable "enable_acm_import" {
  description = "Let the worker import issued certificates into ACM (and re-import them on renewal), limited to certificates it tagged itself."
  type        = bool
  default     = false
}

variable "worker_manages_ca_certificates" {
  description = "Let the worker read and write secrets tagged certfn-role=issued-ca: the key pairs of Certificates with isCA: true that certfn issues and renews itself (examples/02-ca.yaml). Off (the default), the worker cannot read any CA key; CA key pairs are installed by an operator with the tag certfn-role=ca. See docs/deploy/aws.md."
  type        = bool
  default     = false
}

variable "tags" {
  description = "Tags applied to every resource that takes tags."
  type        = map(string)
  default     = {}
}

variable "lambda_zip_dir" {
  description = "Directory holding <function>.zip (a bootstrap binary each, as `make lambda` writes them). Empty: dist/lambda at the repository root."
  type        = string
  default     = ""
}

variable "lambda_architecture" {
  description = "Instruction set of the functions: arm64 (the default, what `make lambda` builds) or x86_64."
  type        = string
  default     = "arm64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.lambda_architecture)
    error_message = "lambda_architecture: must be arm64 or x86_64."
  }
}

variable "lambda_memory_mb" {
  description = "Memory of each function, in MB."
  type        = number
  default     = 256

  validation {
    condition     = var.lambda_memory_mb >= 128 && var.lambda_memory_mb <= 10240
    error_message = "lambda_memory_mb: must be between 128 and 10240."
  }
}

variable "lambda_timeout_seconds" {
  description = "Timeout of each function, in seconds. The queues' visibility timeout is six times the consumer's timeout (the AWS recommendation for SQS triggers)."
  type = object({
    worker    = optional(number, 120)
    signer    = optional(number, 60)
    scheduler = optional(number, 60)
    api       = optional(number, 30)
    http01    = optional(number, 10)
  })
  default = {}

  validation {
    condition     = alltrue([for v in values(var.lambda_timeout_seconds) : v >= 1 && v <= 900])
    error_message = "lambda_timeout_seconds: each value must be between 1 and 900."
  }
}

variable "max_receive_count" {
  description = "Receives of a message before SQS moves it to the dead-letter queue (redrive policy of both queues)."
  type        = number
  default     = 5

  validation {
    condition     = var.max_receive_count >= 1 && var.max_receive_count <= 1000
    error_message = "max_receive_count: must be between 1 and 1000."
  }
}

variable "dlq_retention_seconds" {
  description = "How long the dead-letter queues keep messages (the maximum, 14 days, by default)."
  type        = number
  default     = 1209600

  validation {
    condition     = var.dlq_retention_seconds >= 60 && var.dlq_retention_seconds <= 1209600
    error_message = "dlq_retention_seconds: must be between 60 and 1209600."
  }
}

variable "enable_metrics" {
  description = "Export a few CloudWatch metrics (namespace certfn: CertificateExpirySeconds, PermanentErrors, TransientErrors; dimension Function) as Embedded Metric Format log lines: no API calls, billed as custom metrics (about 3 per function that emits them)."
  type        = bool
  default     = true
}

variable "certificate_expiry_alarm_days" {
  description = "Alarm when the soonest-expiring certificate (CertificateExpirySeconds, minimum over a day; every Certificate reports daily) has fewer days left than this; needs enable_metrics. Also the window of the \"Certificate Approaching Expiration\" events (CERTFN_NOTIFY_EXPIRY_DAYS, with notifications). 0 disables both."
  type        = number
  default     = 14

  validation {
    condition     = var.certificate_expiry_alarm_days >= 0 && var.certificate_expiry_alarm_days <= 365
    error_message = "certificate_expiry_alarm_days: must be 0 (off) to 365."
  }
}

variable "notifications" {
  description = "Let the worker publish EventBridge events on the account's default event bus (source certfn; detail-types Certificate Issued, Certificate Renewed, Certificate Issuance Failed, Certificate Approaching Expiration; docs/deploy/aws.md, \"Notifications\"): IAM events:PutEvents on that bus with source certfn only. Route them with your own rules, or set notification_sns_topic."
  type        = bool
  default     = true
}

variable "notification_sns_topic" {
  description = "Create an SNS topic <name_prefix>-notifications and an EventBridge rule that sends it this deployment's events (the topic policy lets only that rule publish); subscribe e-mail addresses, chat webhooks or queues to it (output notification_sns_topic_arn). Needs notifications."
  type        = bool
  default     = false
}

variable "alarm_actions" {
  description = "ARNs notified when an alarm (dead-letter queues, certificate expiry) fires or clears (for example an SNS topic)."
  type        = list(string)
  default     = []
}

variable "cluster_resource_namespace" {
  description = "Namespace that holds ClusterIssuer secrets (CA key pairs, ACME account keys), as cert-manager's --cluster-resource-namespace."
  type        = string
  default     = "cert-manager"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", var.cluster_resource_namespace)) && length(var.cluster_resource_namespace) <= 63
    error_message = "cluster_resource_namespace: must be a DNS label (lower-case alphanumerics and '-', at most 63 characters)."
  }
}

variable "due_shards" {
  description = "Number of shards of the table's due index. Fixed for the life of a table: every function must use the same value."
  type        = number
  default     = 16

  validation {
    condition     = var.due_shards >= 1 && var.due_shards <= 256
    error_message = "due_shards: must be between 1 and 256."
  }
}

variable "approver" {
  description = "Who approves CertificateRequests (CERTFN_APPROVER): \"policy\" (CertificateRequestPolicies only, as with approver-policy; the default) or \"cert-manager\" (cert-manager's built-in approver: every request for a cert-manager issuer is approved, narrowed by auto_approve_signers when set)."
  type        = string
  default     = "policy"
  validation {
    condition     = contains(["policy", "cert-manager"], var.approver)
    error_message = "approver must be \"policy\" or \"cert-manager\"."
  }
}

variable "auto_approve_signers" {
  description = "Signer names whose CertificateRequests are approved without a CertificateRequestPolicy (CERTFN_AUTO_APPROVE), e.g. clusterissuers.cert-manager.io/selfsigned. Empty: every request needs a policy."
  type        = list(string)
  default     = []
}

variable "api_admin_arns" {
  description = "IAM user or role ARNs (or an account's root ARN) that the api treats as administrators (CERTFN_API_ADMINS, group system:masters): they apply the first RBAC bindings. Name a role by its ARN without path. They still need the permissions of an api caller (api_invoker_role_names, api_invoker_policy_json or api_invoker_arns)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.api_admin_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:(root|user/.+|role/[^/]+)$", a))])
    error_message = "api_admin_arns: each entry must be arn:<partition>:iam::<account>:root, :user/<name> or :role/<name> (a role without its path)."
  }
}

variable "api_invoker_arns" {
  description = "IAM principal ARNs (roles, users) or account IDs, typically of other accounts, allowed to call the api Function URL by its resource policy: lambda:InvokeFunctionUrl (aws_lambda_permission) and lambda:InvokeFunction only via the URL (condition lambda:InvokedViaFunctionUrl, added through a CloudFormation stack or, with function_url_invoke_permissions_via_cli, the AWS CLI). Each caller also needs both actions in its own identity policy (the api_invoker_policy_json output). Same-account roles can use api_invoker_role_names instead."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.api_invoker_arns : can(regex("^([0-9]{12}|arn:aws[a-z-]*:iam::[0-9]{12}:(root|user/.+|role/.+))$", a))])
    error_message = "api_invoker_arns: each entry must be an account ID (12 digits) or an IAM ARN arn:<partition>:iam::<account>:root, :user/<name> or :role/<name>; \"*\" is not allowed (the api URL is never public)."
  }
}

variable "api_invoker_role_names" {
  description = "Names (not ARNs) of IAM roles of this account that call the api: each gets an inline policy (the api_invoker_policy_json output) granting lambda:InvokeFunctionUrl on the api URL and lambda:InvokeFunction only via the Function URL, which a Function URL created since October 2025 requires."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for n in var.api_invoker_role_names : can(regex("^[A-Za-z0-9+=,.@_-]{1,64}$", n))])
    error_message = "api_invoker_role_names: each entry must be a role name (1-64 of A-Za-z0-9+=,.@_-), not an ARN or path."
  }
}

variable "function_url_invoke_permissions_via_cli" {
  description = "Add the lambda:InvokeFunction resource-policy statements conditioned on lambda:InvokedViaFunctionUrl (public for the http01 URL, one per api_invoker_arns entry) by running the AWS CLI (`aws lambda add-permission --invoked-via-function-url`) on the applying machine instead of through the CloudFormation stack <name_prefix>-invoke-via-url (the default, which needs no CLI). For accounts where CloudFormation is denied; the CLI statements stay on the functions when the option is turned off."
  type        = bool
  default     = false
}
