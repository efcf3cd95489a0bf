# certfn on Google Cloud: five Cloud Run services from one image (worker,
# signer, scheduler, api, http01), Pub/Sub topics with push subscriptions and
# dead-letter topics, a Cloud Tasks queue for short delays, a Firestore
# database, secrets in Secret Manager, a Cloud Scheduler job, alert policies,
# and one service account per function with only the permissions docs/design/roles.md
# gives it (iam.tf).
#
# Every name that appears in an IAM grant (service account e-mails, topic,
# queue, service and custom role names, Secret Manager resource names) is
# built from inputs known at plan time, never read from the created
# resources, so that a plan shows complete bindings and tests/terraform can
# check them without a provider; depends_on keeps the order.

data "google_project" "this" {
  count      = var.project_number == "" ? 1 : 0
  project_id = var.project
}

locals {
  project        = var.project
  project_number = var.project_number != "" ? var.project_number : data.google_project.this[0].number
  region         = var.region
  prefix         = var.name_prefix
  secret_prefix  = var.secret_prefix != "" ? var.secret_prefix : var.name_prefix
  dns_project    = var.dns_project != "" ? var.dns_project : var.project
  labels         = merge(var.labels, { "certfn-deployment" = var.name_prefix })

  # The api's deterministic URL: the audience its ID tokens must carry
  # (CERTFN_API_AUDIENCE), fixed here, never read from a request.
  api_url       = "https://${var.name_prefix}-api-${local.project_number}.${var.region}.run.app"
  api_audiences = length(var.api_audiences) > 0 ? var.api_audiences : [local.api_url]

  # The functions deployed: http01 only when enabled. all_functions are
  # every function name, deployed or not (names are fixed).
  all_functions = ["worker", "signer", "scheduler", "api", "http01"]
  functions     = concat(["worker", "signer", "scheduler", "api"], var.enable_http01 ? ["http01"] : [])

  # One service account per function, and three that only carry tokens:
  #   push  — the OIDC identity of the Pub/Sub push subscriptions (invokes
  #           worker and signer);
  #   cron  — the OIDC identity of the Cloud Scheduler job (invokes the
  #           scheduler);
  #   tasks — the OAuth identity of delayed messages: a Cloud Task publishes
  #           its message to a topic when it is due.
  identities = concat(local.all_functions, ["push", "cron", "tasks"])
  sa_id      = { for id in local.identities : id => "${local.prefix}-${id}" }
  sa_email   = { for id in local.identities : id => "${local.prefix}-${id}@${local.project}.iam.gserviceaccount.com" }
  sa_member  = { for id in local.identities : id => "serviceAccount:${local.prefix}-${id}@${local.project}.iam.gserviceaccount.com" }

  # Google's service agents of the project.
  pubsub_agent         = "serviceAccount:service-${local.project_number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  secretmanager_agent  = "serviceAccount:service-${local.project_number}@gcp-sa-secretmanager.iam.gserviceaccount.com"
  firestore_database   = var.firestore_database != "" ? var.firestore_database : "${local.prefix}-state"
  firestore_location   = var.firestore_location != "" ? var.firestore_location : var.region
  firestore_collection = var.firestore_collection

  # Queues: a topic per consumer, each with a push subscription and a
  # dead-letter topic (with a pull subscription that keeps what arrives).
  queues = {
    worker = { topic = "${local.prefix}-worker", subscription = "${local.prefix}-worker-push", dlq = "${local.prefix}-worker-dlq" }
    signer = { topic = "${local.prefix}-signer", subscription = "${local.prefix}-signer-push", dlq = "${local.prefix}-signer-dlq" }
  }
  topic_id        = { for q, v in local.queues : q => "projects/${local.project}/topics/${v.topic}" }
  dlq_topic_id    = { for q, v in local.queues : q => "projects/${local.project}/topics/${v.dlq}" }
  tasks_queue     = "${local.prefix}-delays"
  tasks_queue_id  = "projects/${local.project}/locations/${local.region}/queues/${local.prefix}-delays"
  scheduler_job   = "${local.prefix}-sweep"
  service_name    = { for fn in local.all_functions : fn => "${local.prefix}-${fn}" }
  private_ingress = var.private_ingress ? "INGRESS_TRAFFIC_INTERNAL_ONLY" : "INGRESS_TRAFFIC_ALL"

  # HTTP paths of the services (README.md, "HTTP contract").
  push_path  = "/push"
  sweep_path = "/sweep"

  # Custom roles (iam.tf): IDs allow letters, digits, '_' and '.'.
  role_prefix = replace(local.prefix, "-", "_")
  custom_role = {
    worker_secrets     = "projects/${local.project}/roles/${local.role_prefix}_worker_secrets"
    secret_creator     = "projects/${local.project}/roles/${local.role_prefix}_secret_creator"
    dns_records        = "projects/${local.dns_project}/roles/${local.role_prefix}_dns01_records"
    dns_zone_list      = "projects/${local.dns_project}/roles/${local.role_prefix}_dns01_zone_list"
    certificate_import = "projects/${local.project}/roles/${local.role_prefix}_certificate_import"
  }

  # The APIs the deployment calls (Cloud DNS is called in dns_project, whose
  # zones exist, so its API is enabled there already).
  apis = concat(
    [
      "cloudresourcemanager.googleapis.com",
      "iam.googleapis.com",
      "run.googleapis.com",
      "firestore.googleapis.com",
      "pubsub.googleapis.com",
      "cloudtasks.googleapis.com",
      "cloudscheduler.googleapis.com",
      "secretmanager.googleapis.com",
      "logging.googleapis.com",
      "monitoring.googleapis.com",
    ],
    var.enable_certificate_manager_import ? ["certificatemanager.googleapis.com"] : [],
    var.secret_kms_key_name != "" ? ["cloudkms.googleapis.com"] : [],
  )
}

resource "google_project_service" "this" {
  for_each = var.enable_apis ? toset(local.apis) : toset([])

  project            = local.project
  service            = each.value
  disable_on_destroy = false
}
