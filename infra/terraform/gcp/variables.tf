# Inputs of the certfn Google Cloud module. README.md describes each group,
# the IAM model they feed (docs/design/roles.md) and the function environment.

# --- Project and naming ------------------------------------------------------

variable "project" {
  description = "ID of the project that holds every resource of the deployment (a plain project ID; domain-scoped projects are not supported)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project))
    error_message = "project: must be a project ID: 6-30 characters of a-z, 0-9 and '-', starting with a letter and not ending with '-'."
  }
}

variable "project_number" {
  description = "Number of the project. Secret Manager's IAM conditions name secrets by project number. Empty: read with the google_project data source (needs resourcemanager.projects.get)."
  type        = string
  default     = ""

  validation {
    condition     = var.project_number == "" || can(regex("^[1-9][0-9]{5,19}$", var.project_number))
    error_message = "project_number: must be empty or the project's number (digits only)."
  }
}

variable "region" {
  description = "Region of the Cloud Run services, the Cloud Tasks queue and the Cloud Scheduler job (and of the Firestore database unless firestore_location says otherwise)."
  type        = string
  default     = "us-central1"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region: must be a Google Cloud region such as us-central1 or europe-west1."
  }
}

variable "name_prefix" {
  description = "Prefix of every resource name (services, service accounts, topics, subscriptions, queue, job, metrics, custom roles). At most 20 characters: service account IDs are <name_prefix>-<function> and may not exceed 30."
  type        = string
  default     = "certfn"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,18}[a-z0-9]$", var.name_prefix))
    error_message = "name_prefix: must be 2-20 characters of a-z, 0-9 and '-', start with a letter and not end with '-'."
  }
}

variable "labels" {
  description = "Labels applied to every resource that takes labels."
  type        = map(string)
  default     = {}
}

variable "enable_apis" {
  description = "Enable the Google APIs the deployment uses (google_project_service; never disabled on destroy). Off: they must already be enabled."
  type        = bool
  default     = true
}

# --- Container and services ---------------------------------------------------

variable "image" {
  description = "Container image of certfn (one image for every function; CERTFN_FUNCTION selects the role), e.g. us-central1-docker.pkg.dev/my-project/certfn/certfn:v1.2.3. Cloud Run pulls from Artifact Registry, Container Registry or Docker Hub."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]*(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9_.-]+)?(@sha256:[a-f0-9]{64})?$", var.image))
    error_message = "image: must be a container image reference with a registry host, e.g. us-central1-docker.pkg.dev/my-project/certfn/certfn:v1.2.3 or ...@sha256:<digest>."
  }
}

variable "timeout_seconds" {
  description = "Request timeout of each Cloud Run service, in seconds. The push subscriptions' acknowledgement deadline is the consumer's timeout, so worker and signer may not exceed 600 (Pub/Sub's maximum)."
  type = object({
    worker    = optional(number, 120)
    signer    = optional(number, 60)
    scheduler = optional(number, 60)
    api       = optional(number, 30)
    http01    = optional(number, 10)
  })
  default = {}

  validation {
    condition     = alltrue([for v in values(var.timeout_seconds) : v >= 10 && v <= 3600 && floor(v) == v]) && var.timeout_seconds.worker <= 600 && var.timeout_seconds.signer <= 600
    error_message = "timeout_seconds: each value must be a whole number from 10 to 3600, and worker and signer at most 600 (the longest Pub/Sub acknowledgement deadline)."
  }
}

variable "max_instances" {
  description = "Maximum instance count of each service. worker and signer bound the ACME calls and CA signing in flight (max_instances × request_concurrency messages at once), the scheduler runs one sweep at a time."
  type = object({
    worker    = optional(number, 10)
    signer    = optional(number, 2)
    scheduler = optional(number, 1)
    api       = optional(number, 10)
    http01    = optional(number, 5)
  })
  default = {}

  validation {
    condition     = alltrue([for v in values(var.max_instances) : v >= 1 && v <= 1000 && floor(v) == v])
    error_message = "max_instances: each value must be a whole number from 1 to 1000."
  }
}

variable "request_concurrency" {
  description = "Requests one instance of each service handles at once (Cloud Run's max_instance_request_concurrency). Each Pub/Sub push request carries one message."
  type = object({
    worker    = optional(number, 8)
    signer    = optional(number, 4)
    scheduler = optional(number, 1)
    api       = optional(number, 40)
    http01    = optional(number, 80)
  })
  default = {}

  validation {
    condition     = alltrue([for v in values(var.request_concurrency) : v >= 1 && v <= 1000 && floor(v) == v])
    error_message = "request_concurrency: each value must be a whole number from 1 to 1000."
  }
}

variable "memory_mb" {
  description = "Memory of each service's container, in MiB (one CPU each)."
  type        = number
  default     = 512

  validation {
    condition     = var.memory_mb >= 512 && var.memory_mb <= 32768 && floor(var.memory_mb) == var.memory_mb
    error_message = "memory_mb: must be a whole number of MiB from 512 to 32768."
  }
}

variable "private_ingress" {
  description = "Serve worker, signer and scheduler with ingress INGRESS_TRAFFIC_INTERNAL_ONLY (Pub/Sub push and Cloud Scheduler of the same project count as internal). Off: INGRESS_TRAFFIC_ALL; either way only the push and scheduler service accounts may invoke them."
  type        = bool
  default     = true
}

variable "deletion_protection" {
  description = "Terraform deletion protection of the Cloud Run services (the provider's deletion_protection)."
  type        = bool
  default     = false
}

variable "log_level" {
  description = "Log level of every function (CERTFN_LOG_LEVEL): debug, info, warn or error."
  type        = string
  default     = "info"

  validation {
    condition     = contains(["debug", "info", "warn", "error"], var.log_level)
    error_message = "log_level: must be debug, info, warn or error."
  }
}

# --- Firestore -------------------------------------------------------------------

variable "firestore_database" {
  description = "ID of the Firestore database the module creates (FIRESTORE_NATIVE). Empty: <name_prefix>-state."
  type        = string
  default     = ""

  validation {
    condition     = var.firestore_database == "" || (can(regex("^[a-z][a-z0-9-]{2,61}[a-z0-9]$", var.firestore_database)) && !can(regex("^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$", var.firestore_database)))
    error_message = "firestore_database: must be empty or 4-63 characters of a-z, 0-9 and '-', starting with a letter, ending with a letter or digit, and not UUID-like."
  }
}

variable "firestore_location" {
  description = "Location of the Firestore database: a region (us-central1) or a multi-region (nam5, eur3). Empty: region."
  type        = string
  default     = ""

  validation {
    condition     = var.firestore_location == "" || can(regex("^[a-z][a-z0-9-]*[a-z0-9]$", var.firestore_location))
    error_message = "firestore_location: must be empty or a Firestore location such as us-central1, nam5 or eur3."
  }
}

variable "firestore_collection" {
  description = "Collection that holds certfn's records (CERTFN_FIRESTORE_COLLECTION). The indexes, index exemptions and the TTL policy are declared on it."
  type        = string
  default     = "certfn"

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,100}$", var.firestore_collection)) && !can(regex("^__.*__$", var.firestore_collection))
    error_message = "firestore_collection: must be 1-100 characters of A-Z, a-z, 0-9, '_' and '-', and not of the reserved form __name__."
  }
}

variable "firestore_deletion_protection" {
  description = "Protect the Firestore database: delete protection on, and Terraform abandons it on destroy instead of deleting it. Off: destroy deletes the database and every record."
  type        = bool
  default     = true
}

variable "firestore_point_in_time_recovery" {
  description = "Enable Firestore point-in-time recovery (7 days of versions) on the database."
  type        = bool
  default     = true
}

# --- Secret Manager ---------------------------------------------------------------

variable "secret_prefix" {
  description = "First segment of every Secret Manager secret ID: <secret_prefix>_<class>_<namespace>_<name> (docs/deploy/gcp.md). Empty: name_prefix. No '_' (it separates the segments)."
  type        = string
  default     = ""

  validation {
    condition     = var.secret_prefix == "" || can(regex("^[a-z][a-z0-9-]{0,29}$", var.secret_prefix))
    error_message = "secret_prefix: must be empty or 1-30 characters of a-z, 0-9 and '-' starting with a letter (no '_')."
  }
}

variable "secret_kms_key_name" {
  description = "Customer-managed key of new secrets (CERTFN_KMS_KEY_ID), projects/<p>/locations/global/keyRings/<r>/cryptoKeys/<k>: Secret Manager's automatic replication wants a key in location global. The module grants Secret Manager's service agent roles/cloudkms.cryptoKeyEncrypterDecrypter on it. Empty: Google-managed encryption."
  type        = string
  default     = ""

  validation {
    condition     = var.secret_kms_key_name == "" || can(regex("^projects/[^/]+/locations/global/keyRings/[^/]+/cryptoKeys/[^/]+$", var.secret_kms_key_name))
    error_message = "secret_kms_key_name: must be empty or projects/<project>/locations/global/keyRings/<ring>/cryptoKeys/<key>."
  }
}

variable "worker_manages_ca_certificates" {
  description = "Let the worker read and write secrets of class ica: the key pairs of Certificates with isCA: true that certfn issues and renews itself. Off (the default), the worker cannot read any CA key; CA key pairs are installed by an operator in class ca, which only the signer reads."
  type        = bool
  default     = false
}

# --- Queues and schedule ---------------------------------------------------------

variable "max_delivery_attempts" {
  description = "Deliveries of a message before Pub/Sub moves it to the dead-letter topic (dead_letter_policy of both push subscriptions)."
  type        = number
  default     = 5

  validation {
    condition     = var.max_delivery_attempts >= 5 && var.max_delivery_attempts <= 100 && floor(var.max_delivery_attempts) == var.max_delivery_attempts
    error_message = "max_delivery_attempts: must be a whole number from 5 to 100 (Pub/Sub's limits)."
  }
}

variable "retry_backoff_seconds" {
  description = "Retry policy of the push subscriptions: the delay before redelivering a message that failed (exponential from minimum to maximum)."
  type = object({
    minimum = optional(number, 10)
    maximum = optional(number, 600)
  })
  default = {}

  validation {
    condition     = var.retry_backoff_seconds.minimum >= 0 && var.retry_backoff_seconds.maximum <= 600 && var.retry_backoff_seconds.minimum <= var.retry_backoff_seconds.maximum
    error_message = "retry_backoff_seconds: minimum and maximum must be from 0 to 600 seconds, minimum <= maximum."
  }
}

variable "dead_letter_retention_seconds" {
  description = "How long the dead-letter subscriptions keep messages (7 days by default; Pub/Sub allows 600 to 2678400)."
  type        = number
  default     = 604800

  validation {
    condition     = var.dead_letter_retention_seconds >= 600 && var.dead_letter_retention_seconds <= 2678400
    error_message = "dead_letter_retention_seconds: must be from 600 to 2678400 (31 days)."
  }
}

variable "schedule" {
  description = "Cron schedule (five fields, unix-cron) of the Cloud Scheduler job that runs the scheduler service's sweep of the due index. Every minute by default."
  type        = string
  default     = "* * * * *"

  validation {
    condition     = length(split(" ", trimspace(var.schedule))) == 5
    error_message = "schedule: must be a unix-cron expression of five fields, e.g. \"* * * * *\"."
  }
}

variable "schedule_time_zone" {
  description = "Time zone of schedule (tz database name)."
  type        = string
  default     = "Etc/UTC"
}

# --- Functions' behaviour -------------------------------------------------------

variable "enable_http01" {
  description = "Deploy the http01 service, public (allUsers may invoke it), which answers GET /.well-known/acme-challenge/{token}. Route http://<domain>/.well-known/acme-challenge/ to it: a load balancer that keeps the Host header, or a redirect to <url>/hosts/<domain>/.well-known/acme-challenge/<token> (a token is served only for its Challenge's host)."
  type        = bool
  default     = true
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

variable "acme_server_allow" {
  description = "ACME directory URL prefixes that namespaced Issuers may use (CERTFN_ACME_SERVER_ALLOW); [\"*\"] allows any server; ClusterIssuers are not restricted. Empty (the default): namespaced Issuers may use no ACME server."
  type        = list(string)
  default     = []

  validation {
    condition     = var.acme_server_allow == ["*"] || alltrue([for u in var.acme_server_allow : can(regex("^https?://[^/?#@,\\s]+(/[^?#,\\s]*)?$", u))])
    error_message = "acme_server_allow: each entry must be an http(s) URL of an ACME directory or a prefix of one (scheme, host, optional path; no user information, query, fragment or comma), or the single entry * for any server."
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
  description = "Objects quota (CERTFN_QUOTA_OBJECTS, set on the api): the most Certificates, CertificateRequests, Issuers, Roles and RoleBindings one namespace may hold. 0: unlimited."
  type        = number
  default     = 0

  validation {
    condition     = var.quota_objects_per_namespace >= 0 && floor(var.quota_objects_per_namespace) == var.quota_objects_per_namespace && var.quota_objects_per_namespace <= 2147483647
    error_message = "quota_objects_per_namespace: must be a whole number of 0 (unlimited) to 2147483647."
  }
}

variable "quota_issuances_per_hour_per_namespace" {
  description = "Issuance quota (CERTFN_QUOTA_ISSUANCES_PER_HOUR, set on the worker and signer): the most certificates signed per namespace in any rolling hour. 0: unlimited."
  type        = number
  default     = 0

  validation {
    condition     = var.quota_issuances_per_hour_per_namespace >= 0 && floor(var.quota_issuances_per_hour_per_namespace) == var.quota_issuances_per_hour_per_namespace && var.quota_issuances_per_hour_per_namespace <= 2147483647
    error_message = "quota_issuances_per_hour_per_namespace: must be a whole number of 0 (unlimited) to 2147483647."
  }
}

# --- DNS-01 and Certificate Manager ---------------------------------------------

variable "dns_zones" {
  description = "Names (not DNS names) of the Cloud DNS managed zones, in dns_project, in which the worker may write DNS-01 records (CERTFN_CLOUDDNS_ZONES). The worker's record permissions are granted on these zones only. Empty: no Cloud DNS permission at all."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for z in var.dns_zones : can(regex("^[a-z][a-z0-9-]{0,61}[a-z0-9]$|^[a-z]$", z))]) && length(distinct(var.dns_zones)) == length(var.dns_zones)
    error_message = "dns_zones: each entry must be a managed zone name (1-63 characters of a-z, 0-9 and '-', starting with a letter, e.g. example-com), without duplicates."
  }
}

variable "dns_project" {
  description = "Project that holds dns_zones. Empty: project. The module creates the worker's DNS custom roles there."
  type        = string
  default     = ""

  validation {
    condition     = var.dns_project == "" || can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.dns_project))
    error_message = "dns_project: must be empty or a project ID."
  }
}

variable "enable_certificate_manager_import" {
  description = "Let the worker import issued certificates into Certificate Manager (CERTFN_CERTIFICATE_MANAGER_IMPORT) and re-import them on renewal. Off: the worker has no Certificate Manager permission."
  type        = bool
  default     = false
}

variable "certificate_manager_location" {
  description = "Location of the certificates the worker imports into Certificate Manager (CERTFN_CERTIFICATE_MANAGER_LOCATION): global, or a region for regional load balancers."
  type        = string
  default     = "global"

  validation {
    condition     = var.certificate_manager_location == "global" || can(regex("^[a-z]+-[a-z]+[0-9]+$", var.certificate_manager_location))
    error_message = "certificate_manager_location: must be global or a region."
  }
}

# --- api ------------------------------------------------------------------------

variable "api_invoker_members" {
  description = "IAM members granted roles/run.invoker on the api service (user:, group:, serviceAccount:, domain:, principal:, principalSet:). Callers send a Google ID token whose audience is the api URL."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for m in var.api_invoker_members : can(regex("^(user|group|serviceAccount|domain|principal|principalSet):.+$", m))])
    error_message = "api_invoker_members: each entry must be an IAM member such as user:alice@example.com, group:team@example.com or serviceAccount:ci@p.iam.gserviceaccount.com (allUsers and allAuthenticatedUsers are refused)."
  }
}

variable "api_admins" {
  description = "E-mail addresses of users or service accounts that the api treats as administrators (CERTFN_API_ADMINS, group system:masters): they apply the first RBAC bindings. They also need roles/run.invoker on the api (api_invoker_members)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.api_admins : can(regex("^[^@,\\s:]+@[^@,\\s:]+\\.[^@,\\s:]+$", a))])
    error_message = "api_admins: each entry must be an e-mail address (no member prefix such as user:)."
  }
}

variable "api_audiences" {
  description = "Audiences the api accepts in Google ID tokens (CERTFN_API_AUDIENCE), e.g. a custom domain's URL. Empty: the api's deterministic URL, https://<name_prefix>-api-<project number>.<region>.run.app (the api_url output). Never taken from a request's Host."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.api_audiences : a != "" && !can(regex("[\\s,]", a))])
    error_message = "api_audiences: each entry must be non-empty, without white space or commas."
  }
}

# --- Monitoring -------------------------------------------------------------------

variable "enable_metrics" {
  description = "Have the functions log their metrics as structured log lines (CERTFN_METRICS=log), from which the log-based metric of the certificate expiry alert is extracted. Off: CERTFN_METRICS=none."
  type        = bool
  default     = true
}

variable "certificate_expiry_alert_days" {
  description = "Alert when a certificate (reported daily by the worker for every Certificate) has fewer days left than this. 0 disables; needs enable_metrics."
  type        = number
  default     = 14

  validation {
    condition     = var.certificate_expiry_alert_days >= 0 && var.certificate_expiry_alert_days <= 365
    error_message = "certificate_expiry_alert_days: must be 0 (off) to 365."
  }
}

variable "enable_error_log_alert" {
  description = "Alert when the functions write more than error_log_alert_threshold log entries of severity ERROR or worse within 5 minutes."
  type        = bool
  default     = true
}

variable "error_log_alert_threshold" {
  description = "Error log entries (per service, in 5 minutes) tolerated before the error alert fires."
  type        = number
  default     = 0

  validation {
    condition     = var.error_log_alert_threshold >= 0 && floor(var.error_log_alert_threshold) == var.error_log_alert_threshold
    error_message = "error_log_alert_threshold: must be a whole number >= 0."
  }
}

variable "notification_channels" {
  description = "Cloud Monitoring notification channels (projects/<p>/notificationChannels/<id>) of every alert policy (dead-letter topics, certificate expiry, error logs)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.notification_channels : can(regex("^projects/[^/]+/notificationChannels/[0-9]+$", c))])
    error_message = "notification_channels: each entry must be projects/<project>/notificationChannels/<id>."
  }
}

# --- Notifications ------------------------------------------------------------------

variable "notifications" {
  description = "Create the Pub/Sub topic <name_prefix>-notifications, let the worker publish on it, and have the worker publish the Certificates' events there (CERTFN_NOTIFY_TOPIC): issued, renewed, issuance failed, and approaching expiration from certificate_expiry_alert_days before (CERTFN_NOTIFY_EXPIRY_DAYS; 0: none)."
  type        = bool
  default     = true
}

variable "notification_retention_seconds" {
  description = "How long the notifications topic keeps published messages, so that a subscription created later can seek back to them (Pub/Sub topic retention: 600 to 2678400 seconds)."
  type        = number
  default     = 604800

  validation {
    condition     = var.notification_retention_seconds >= 600 && var.notification_retention_seconds <= 2678400 && floor(var.notification_retention_seconds) == var.notification_retention_seconds
    error_message = "notification_retention_seconds: must be a whole number of seconds from 600 (10 minutes) to 2678400 (31 days)."
  }
}
