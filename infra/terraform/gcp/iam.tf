# One service account per function, each granted only what docs/design/roles.md
# gives that function (README.md, "IAM", has the table):
#
#   api       Firestore read/write on the deployment's database; publish on
#             the worker topic. No Secret Manager role at all.
#   worker    Firestore read/write; publish on the worker and signer topics;
#             enqueue delays (Cloud Tasks, as the tasks account); secrets of
#             classes tls and pk (read and write; ica too with
#             worker_manages_ca_certificates) and sc (read); create secrets;
#             DNS records in the listed Cloud DNS zones only; Certificate
#             Manager only with enable_certificate_manager_import. Never a
#             CA key: no grant names class ca (nor ica unless enabled).
#   signer    Firestore read/write; publish on the worker topic; enqueue
#             delays; read secrets of classes ca, ica and pk. Nothing else.
#   scheduler Firestore read on the database; publish on the worker topic.
#   http01    Firestore read on the database.
#   push      invokes worker and signer (Pub/Sub push OIDC identity).
#   cron      invokes the scheduler (Cloud Scheduler OIDC identity).
#   tasks     publishes on the two work topics (Cloud Tasks OAuth identity).
#
# Secret Manager IAM (docs/deploy/gcp.md): a secret's ID is
# <secret_prefix>_<class>_<namespace>_<name>, and each grant is conditioned
# on resource.name.startsWith("projects/<number>/secrets/<prefix>_<class>_"),
# which covers the secret and its versions. Firestore: IAM conditions can
# name a database (resource.name == "projects/<id>/databases/<db>") but not
# documents, so the signer, scheduler and http01 reach every record of the
# database (on AWS, IAM narrowed them to items and indexes; here the code
# is the only limit). No basic role and no unconditioned project-wide
# Firestore or Secret Manager role is granted to anyone.

locals {
  # Identities deployed: http01's only with enable_http01.
  deployed_identities = concat(local.functions, ["push", "cron", "tasks"])

  # Secret classes per function (docs/deploy/gcp.md, "Secret IDs and
  # classes").
  worker_secret_rw = concat(["tls", "pk"], var.worker_manages_ca_certificates ? ["ica"] : [])
  worker_secret_ro = ["sc"]
  signer_secret_ro = ["ca", "ica", "pk"]

  secret_name_prefix = "projects/${local.project_number}/secrets/${local.secret_prefix}"
  secret_condition = {
    for name, classes in {
      worker_rw = local.worker_secret_rw
      worker_ro = local.worker_secret_ro
      signer_ro = local.signer_secret_ro
      } : name => {
      title       = "certfn ${name} secrets"
      description = "Secrets of classes ${join(", ", classes)} under prefix ${local.secret_prefix}"
      expression  = join(" || ", [for c in classes : "resource.name.startsWith(\"${local.secret_name_prefix}_${c}_\")"])
    }
  }

  database_condition = {
    title       = "certfn database ${local.firestore_database}"
    description = "Only the deployment's Firestore database"
    expression  = "resource.name == \"${local.firestore_database_name}\""
  }

  # Project-level grants: name => identity, role, condition (null: none).
  project_grants_all = merge(
    {
      "worker-datastore" = { identity = "worker", role = "roles/datastore.user", condition = local.database_condition }
      "signer-datastore" = { identity = "signer", role = "roles/datastore.user", condition = local.database_condition }
      "api-datastore"    = { identity = "api", role = "roles/datastore.user", condition = local.database_condition }
      # The scheduler only reads the due index; http01 only Challenges.
      "scheduler-datastore" = { identity = "scheduler", role = "roles/datastore.viewer", condition = local.database_condition }
      "http01-datastore"    = { identity = "http01", role = "roles/datastore.viewer", condition = local.database_condition }

      "worker-secrets"            = { identity = "worker", role = local.custom_role.worker_secrets, condition = local.secret_condition.worker_rw }
      "worker-solver-credentials" = { identity = "worker", role = "roles/secretmanager.secretAccessor", condition = local.secret_condition.worker_ro }
      # secrets.create is checked on the project, before the new secret has
      # a name a condition could test: unconditioned, it lets the worker
      # create an empty secret under any ID, never add a version to, read
      # or relabel one outside its classes (docs/deploy/gcp.md,
      # "What the name cannot express").
      "worker-secret-create" = { identity = "worker", role = local.custom_role.secret_creator, condition = null }
      "signer-secrets"       = { identity = "signer", role = "roles/secretmanager.secretAccessor", condition = local.secret_condition.signer_ro }
    },
    var.enable_certificate_manager_import ? {
      # Certificate Manager checks certs.create on the location, before the
      # certificate exists: unconditioned (README.md, "IAM").
      "worker-certificate-import" = { identity = "worker", role = local.custom_role.certificate_import, condition = null }
    } : {},
  )
  project_grants = { for k, g in local.project_grants_all : k => g if contains(local.deployed_identities, g.identity) }

  # Publishing: "<identity>-<topic>" => identity and queue.
  topic_grants = {
    "worker-worker"    = { identity = "worker", queue = "worker" }
    "worker-signer"    = { identity = "worker", queue = "signer" }
    "signer-worker"    = { identity = "signer", queue = "worker" }
    "scheduler-worker" = { identity = "scheduler", queue = "worker" }
    "api-worker"       = { identity = "api", queue = "worker" }
    "tasks-worker"     = { identity = "tasks", queue = "worker" }
    "tasks-signer"     = { identity = "tasks", queue = "signer" }
  }

  # Who enqueues delays (Cloud Tasks), acting as the tasks account.
  tasks_enqueuers = ["worker", "signer"]
}

resource "google_service_account" "this" {
  for_each = toset(local.deployed_identities)

  project      = local.project
  account_id   = local.sa_id[each.key]
  display_name = "certfn ${local.prefix} ${each.key}"
  description  = contains(local.all_functions, each.key) ? "certfn ${each.key} function (docs/design/roles.md)" : "certfn ${each.key}: token identity only"

  depends_on = [google_project_service.this]
}

# --- Custom roles -------------------------------------------------------------

resource "google_project_iam_custom_role" "worker_secrets" {
  project     = local.project
  role_id     = "${local.role_prefix}_worker_secrets"
  title       = "certfn ${local.prefix} worker secrets"
  description = "Read, write and rotate the versions of the worker's secrets (granted with a condition on the secret name)."
  permissions = [
    "secretmanager.secrets.delete",
    "secretmanager.secrets.get",
    "secretmanager.secrets.update",
    "secretmanager.versions.access",
    "secretmanager.versions.add",
    "secretmanager.versions.destroy",
    "secretmanager.versions.list",
  ]

  # Custom roles are the IAM API's (iam.googleapis.com, enable_apis).
  depends_on = [google_project_service.this]
}

resource "google_project_iam_custom_role" "secret_creator" {
  project     = local.project
  role_id     = "${local.role_prefix}_secret_creator"
  title       = "certfn ${local.prefix} secret creator"
  description = "Create (empty) secrets; their versions need the worker secrets role."
  permissions = ["secretmanager.secrets.create"]

  depends_on = [google_project_service.this]
}

resource "google_project_iam_custom_role" "dns_records" {
  count = length(var.dns_zones) > 0 ? 1 : 0

  project     = local.dns_project
  role_id     = "${local.role_prefix}_dns01_records"
  title       = "certfn ${local.prefix} DNS-01 records"
  description = "Change record sets of a managed zone (granted on the listed zones only)."
  permissions = [
    "dns.changes.create",
    "dns.changes.get",
    "dns.managedZones.get",
    "dns.resourceRecordSets.create",
    "dns.resourceRecordSets.delete",
    "dns.resourceRecordSets.list",
    "dns.resourceRecordSets.update",
  ]

  depends_on = [google_project_service.this]
}

resource "google_project_iam_custom_role" "dns_zone_list" {
  count = length(var.dns_zones) > 0 ? 1 : 0

  project     = local.dns_project
  role_id     = "${local.role_prefix}_dns01_zone_list"
  title       = "certfn ${local.prefix} DNS-01 zone discovery"
  description = "List the managed zones of the project (names and DNS names, no records) to find a record's zone."
  permissions = ["dns.managedZones.list"]

  depends_on = [google_project_service.this]
}

resource "google_project_iam_custom_role" "certificate_import" {
  count = var.enable_certificate_manager_import ? 1 : 0

  project     = local.project
  role_id     = "${local.role_prefix}_certificate_import"
  title       = "certfn ${local.prefix} Certificate Manager import"
  description = "Import certificates into Certificate Manager and update them on renewal."
  permissions = [
    "certificatemanager.certs.create",
    "certificatemanager.certs.get",
    "certificatemanager.certs.list",
    "certificatemanager.certs.update",
    "certificatemanager.operations.get",
  ]

  depends_on = [google_project_service.this]
}

# --- Grants ---------------------------------------------------------------------

resource "google_project_iam_member" "fn" {
  for_each = local.project_grants

  project = local.project
  role    = each.value.role
  member  = local.sa_member[each.value.identity]

  dynamic "condition" {
    for_each = each.value.condition == null ? [] : [each.value.condition]
    content {
      title       = condition.value.title
      description = condition.value.description
      expression  = condition.value.expression
    }
  }

  depends_on = [
    google_service_account.this,
    google_project_iam_custom_role.worker_secrets,
    google_project_iam_custom_role.secret_creator,
    google_project_iam_custom_role.certificate_import,
  ]
}

resource "google_pubsub_topic_iam_member" "publisher" {
  for_each = local.topic_grants

  project = local.project
  topic   = local.queues[each.value.queue].topic
  role    = "roles/pubsub.publisher"
  member  = local.sa_member[each.value.identity]

  depends_on = [google_pubsub_topic.work, google_service_account.this]
}

resource "google_cloud_tasks_queue_iam_member" "enqueuer" {
  for_each = toset(local.tasks_enqueuers)

  project  = local.project
  location = local.region
  name     = local.tasks_queue
  role     = "roles/cloudtasks.enqueuer"
  member   = local.sa_member[each.value]

  depends_on = [google_cloud_tasks_queue.delays, google_service_account.this]
}

# A task carries an OAuth token of the tasks account: its creator must be
# allowed to act as that account (and only that one).
resource "google_service_account_iam_member" "tasks_user" {
  for_each = toset(local.tasks_enqueuers)

  service_account_id = "projects/${local.project}/serviceAccounts/${local.sa_email["tasks"]}"
  role               = "roles/iam.serviceAccountUser"
  member             = local.sa_member[each.value]

  depends_on = [google_service_account.this]
}

# Pub/Sub's service agent mints the push subscriptions' OIDC tokens as the
# push account.
resource "google_service_account_iam_member" "pubsub_agent_token_creator" {
  service_account_id = "projects/${local.project}/serviceAccounts/${local.sa_email["push"]}"
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_agent

  depends_on = [google_service_account.this, google_project_service.this]
}

# DNS-01: record changes on the listed zones only (zone-level IAM), and the
# list of zones of dns_project to find a record's zone by name.
resource "google_dns_managed_zone_iam_member" "worker_records" {
  for_each = toset(var.dns_zones)

  project      = local.dns_project
  managed_zone = each.value
  role         = local.custom_role.dns_records
  member       = local.sa_member["worker"]

  depends_on = [google_project_iam_custom_role.dns_records, google_service_account.this]
}

resource "google_project_iam_member" "worker_dns_zone_list" {
  count = length(var.dns_zones) > 0 ? 1 : 0

  project = local.dns_project
  role    = local.custom_role.dns_zone_list
  member  = local.sa_member["worker"]

  depends_on = [google_project_iam_custom_role.dns_zone_list, google_service_account.this]
}

# With a customer-managed key, Secret Manager's service agent encrypts and
# decrypts; the functions need nothing on the key.
resource "google_kms_crypto_key_iam_member" "secret_manager_agent" {
  count = var.secret_kms_key_name != "" ? 1 : 0

  crypto_key_id = var.secret_kms_key_name
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = local.secretmanager_agent

  depends_on = [google_project_service.this]
}
