# Example root module: deploys certfn with infra/terraform/gcp and declares,
# with certfn's Terraform provider (docs/deploy/terraform.md), a self-signed Issuer
# and a Certificate (plus, with acme_server_url and a Cloud DNS zone, an ACME
# ClusterIssuer solving DNS-01 in that zone and a Certificate from it) and
# the CertificateRequestPolicy that approves their requests.
#
# The manifests (manifests/*.tftpl) are rendered into local.manifests; each
# document becomes a certfn_manifest resource, applied through the api
# service with a Google ID token (Application Default Credentials: a
# service account, see docs/deploy/terraform.md), the Certificates waited for
# until Ready. manage_certificates = false leaves them out of Terraform: the
# output "manifests" holds them to send to the api by hand (README.md).

provider "google" {
  project        = var.project
  region         = var.region
  default_labels = var.labels
}

module "certfn" {
  source = "../.."

  project        = var.project
  project_number = var.project_number
  region         = var.region
  name_prefix    = var.name_prefix
  image          = var.image

  dns_zones             = var.dns_zones
  enable_http01         = true
  api_invoker_members   = var.api_invoker_members
  api_admins            = var.api_admins
  notification_channels = var.notification_channels

  # An example: destroy may delete the database.
  firestore_deletion_protection = false
}

# The objects below are applied through the api in the same apply that
# deploys it. module.certfn.api_endpoint is unknown until the api service
# exists (certfn's provider then skips its plan-time dry run: there is no
# api to ask yet) and comes after its invoker grants and the rest of the
# deployment. The grants just made (run.invoker for you; Firestore, Pub/Sub
# and Secret Manager for the functions) "typically propagate in 2 minutes,
# but could potentially take 7 minutes or longer" (Google Cloud IAM, access
# change propagation), and certfn's provider does not retry a 403: the
# first apply waits the 7 minutes before the first call. It runs alongside
# the module's own 10-minute wait for its alert policies, so it makes the
# first apply hardly longer; later applies do not wait (a time_sleep waits
# on creation, and again only when the endpoint changes).
resource "time_sleep" "api_access" {
  create_duration = "7m"

  triggers = {
    endpoint = module.certfn.api_endpoint
  }
}

# certfn's API: the api Cloud Run service, with a Google ID token for its
# URL (the audience the api accepts, api_url) from Application Default
# Credentials (a service account's: a person's own gcloud login is not
# enough, see docs/deploy/terraform.md). The token's e-mail must be in
# api_invoker_members and api_admins (or hold RBAC bindings).
provider "certfn" {
  endpoint = time_sleep.api_access.triggers["endpoint"]
  audience = module.certfn.api_url
  auth     = "google-id-token"
}

locals {
  acme_enabled = var.acme_server_url != "" && length(var.dns_zones) > 0 && length(var.acme_dns_names) > 0

  manifests = join("---\n", concat(
    [templatefile("${path.module}/manifests/selfsigned.yaml.tftpl", {
      dns_names = var.web_dns_names
    })],
    local.acme_enabled ? [templatefile("${path.module}/manifests/acme-dns01.yaml.tftpl", {
      server    = var.acme_server_url
      email     = var.acme_email
      project   = var.project
      zone      = var.dns_zones[0]
      dns_names = var.acme_dns_names
    })] : [],
    [templatefile("${path.module}/manifests/policy.yaml.tftpl", {
      common_name = var.web_dns_names[0]
      dns_names   = concat(var.web_dns_names, local.acme_enabled ? var.acme_dns_names : [])
    })],
  ))
}

locals {
  # The manifests one document each, by kind/name (known at plan).
  documents = { for d in split("\n---\n", local.manifests) : "${yamldecode(d).kind}/${yamldecode(d).metadata.name}" => d }
  # Issuers, the policy and its binding first; then the Certificates.
  config_documents      = { for k, d in local.documents : k => d if var.manage_certificates && !startswith(k, "Certificate/") }
  certificate_documents = { for k, d in local.documents : k => d if var.manage_certificates && startswith(k, "Certificate/") }
}

resource "certfn_manifest" "config" {
  for_each = local.config_documents
  manifest = each.value

  dynamic "wait" {
    for_each = strcontains(each.key, "Issuer/") ? [1] : []
    content {
      condition = "Ready"
      timeout   = "5m"
    }
  }
}

# Applied once the issuers are Ready; apply returns when each Certificate is
# issued, or fails naming what blocks it.
resource "certfn_manifest" "certificate" {
  for_each   = local.certificate_documents
  manifest   = each.value
  depends_on = [certfn_manifest.config]

  wait {
    condition = "Ready"
    timeout   = "10m"
  }
}

# What certfn made of "web": validity and the secret's Secret Manager name.
data "certfn_certificate" "web" {
  count     = var.manage_certificates ? 1 : 0
  namespace = certfn_manifest.certificate["Certificate/web"].namespace
  name      = certfn_manifest.certificate["Certificate/web"].name
}
