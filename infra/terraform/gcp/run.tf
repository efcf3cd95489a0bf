# The five Cloud Run services, one container image: CERTFN_FUNCTION tells the
# binary which function it is, and each service runs as its own service
# account (iam.tf). README.md documents every CERTFN_* variable and the HTTP
# paths each service serves.
#
# Who may call them:
#   worker, signer  the push account only (Pub/Sub push, OIDC), ingress
#                   internal by default;
#   scheduler       the cron account only (Cloud Scheduler, OIDC), ingress
#                   internal by default;
#   api             IAM-authenticated: the members of api_invoker_members
#                   (Google ID tokens), ingress all;
#   http01          public (allUsers): ACME servers validate HTTP-01
#                   challenges without credentials; it answers only GET
#                   /.well-known/acme-challenge/{token} for current tokens.

locals {
  # Environment of each function: what its main needs to build its
  # adapters. Names follow the AWS module's (internal/awsmode/settings.go)
  # where the meaning is the same. Null values are left out.
  env_common = {
    CERTFN_PROJECT                    = local.project
    CERTFN_FIRESTORE_DATABASE         = local.firestore_database
    CERTFN_FIRESTORE_COLLECTION       = local.firestore_collection
    CERTFN_CLUSTER_RESOURCE_NAMESPACE = var.cluster_resource_namespace
    CERTFN_LOG_LEVEL                  = var.log_level
    CERTFN_METRICS                    = var.enable_metrics ? "log" : "none"
  }
  env_secrets = {
    CERTFN_SECRET_PREFIX = local.secret_prefix
  }
  env_delays = {
    CERTFN_TASKS_QUEUE           = local.tasks_queue_id
    CERTFN_TASKS_SERVICE_ACCOUNT = local.sa_email["tasks"]
  }
  env = {
    worker = merge(local.env_common, local.env_secrets, local.env_delays, local.env_notify, {
      CERTFN_TOPIC                        = local.topic_id["worker"]
      CERTFN_SIGNER_TOPIC                 = local.topic_id["signer"]
      CERTFN_KMS_KEY_ID                   = var.secret_kms_key_name != "" ? var.secret_kms_key_name : null
      CERTFN_MANAGE_CA_CERTIFICATES       = tostring(var.worker_manages_ca_certificates)
      CERTFN_APPROVER                     = var.approver
      CERTFN_AUTO_APPROVE                 = join(",", var.auto_approve_signers)
      CERTFN_CLOUDDNS_ZONES               = join(",", [for z in var.dns_zones : "${local.dns_project}/${z}"])
      CERTFN_CERTIFICATE_MANAGER_IMPORT   = tostring(var.enable_certificate_manager_import)
      CERTFN_CERTIFICATE_MANAGER_LOCATION = var.enable_certificate_manager_import ? var.certificate_manager_location : null
      CERTFN_HTTP01_ENABLED               = tostring(var.enable_http01)
      CERTFN_ACME_SERVER_ALLOW            = join(",", var.acme_server_allow)
      CERTFN_ACME_ALLOW_PRIVATE_NETWORKS  = join(",", var.acme_allow_private_networks)
      CERTFN_ACME_POLL_FIRST              = var.acme_poll_first != "" ? var.acme_poll_first : null
      CERTFN_ACME_POLL_MAX                = var.acme_poll_max != "" ? var.acme_poll_max : null
      # The worker holds back ACME requests (and hands off no CA request)
      # of a namespace at its issuance quota; the signer before signing.
      CERTFN_QUOTA_ISSUANCES_PER_HOUR = tostring(var.quota_issuances_per_hour_per_namespace)
    })
    signer = merge(local.env_common, local.env_secrets, local.env_delays, {
      CERTFN_TOPIC                    = local.topic_id["worker"]
      CERTFN_QUOTA_ISSUANCES_PER_HOUR = tostring(var.quota_issuances_per_hour_per_namespace)
    })
    scheduler = merge(local.env_common, {
      CERTFN_TOPIC = local.topic_id["worker"]
    })
    # The api holds no secret permission; CERTFN_SECRET_PREFIX only lets
    # the status route name a Certificate's secret (secret.reference).
    api = merge(local.env_common, local.env_secrets, {
      CERTFN_TOPIC         = local.topic_id["worker"]
      CERTFN_API_ADMINS    = join(",", var.api_admins)
      CERTFN_API_AUDIENCE  = join(",", local.api_audiences)
      CERTFN_QUOTA_OBJECTS = tostring(var.quota_objects_per_namespace)
    })
    http01 = local.env_common
  }

  public_functions = ["api", "http01"]
}

resource "google_cloud_run_v2_service" "fn" {
  for_each = toset(local.functions)

  project     = local.project
  name        = local.service_name[each.key]
  location    = local.region
  description = "certfn ${each.key}"
  labels      = merge(local.labels, { "certfn-function" = each.key })
  ingress     = contains(local.public_functions, each.key) ? "INGRESS_TRAFFIC_ALL" : local.private_ingress

  deletion_protection = var.deletion_protection

  template {
    service_account                  = local.sa_email[each.key]
    timeout                          = "${var.timeout_seconds[each.key]}s"
    max_instance_request_concurrency = var.request_concurrency[each.key]
    labels                           = merge(local.labels, { "certfn-function" = each.key })

    scaling {
      min_instance_count = 0
      max_instance_count = var.max_instances[each.key]
    }

    containers {
      image = var.image

      resources {
        limits = {
          cpu    = "1"
          memory = "${var.memory_mb}Mi"
        }
        cpu_idle = true
      }

      dynamic "env" {
        for_each = merge({ for k, v in local.env[each.key] : k => v if v != null }, { CERTFN_FUNCTION = each.key })
        content {
          name  = env.key
          value = env.value
        }
      }
    }
  }

  # A service must not start before its identity holds its grants.
  depends_on = [
    google_project_service.this,
    google_service_account.this,
    google_project_iam_member.fn,
    google_pubsub_topic_iam_member.notification_publisher,
  ]
}

# worker and signer: Pub/Sub push, as the push account.
resource "google_cloud_run_v2_service_iam_member" "push_invoker" {
  for_each = toset(keys(local.queues))

  project  = local.project
  location = local.region
  name     = local.service_name[each.key]
  role     = "roles/run.invoker"
  member   = local.sa_member["push"]

  depends_on = [google_cloud_run_v2_service.fn, google_service_account.this]
}

# scheduler: Cloud Scheduler, as the cron account.
resource "google_cloud_run_v2_service_iam_member" "cron_invoker" {
  project  = local.project
  location = local.region
  name     = local.service_name["scheduler"]
  role     = "roles/run.invoker"
  member   = local.sa_member["cron"]

  depends_on = [google_cloud_run_v2_service.fn, google_service_account.this]
}

# api: the listed members, with Google ID tokens.
resource "google_cloud_run_v2_service_iam_member" "api_invoker" {
  for_each = toset(var.api_invoker_members)

  project  = local.project
  location = local.region
  name     = local.service_name["api"]
  role     = "roles/run.invoker"
  member   = each.value

  depends_on = [google_cloud_run_v2_service.fn]
}

# http01: anyone (ACME validation is unauthenticated). An organization
# policy that restricts allUsers (Domain Restricted Sharing) refuses this
# binding: see README.md, "http01".
resource "google_cloud_run_v2_service_iam_member" "http01_public" {
  count = var.enable_http01 ? 1 : 0

  project  = local.project
  location = local.region
  name     = local.service_name["http01"]
  role     = "roles/run.invoker"
  member   = "allUsers"

  depends_on = [google_cloud_run_v2_service.fn]
}
