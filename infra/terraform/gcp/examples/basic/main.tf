# Example root module: deploys certfn with infra/terraform/gcp and declares a
# self-signed Issuer and a Certificate (plus, with acme_server_url and a
# Cloud DNS zone, an ACME ClusterIssuer solving DNS-01 in that zone and a
# Certificate from it) as certfn manifests.
#
# How the manifests reach certfn: Terraform renders them (output
# "manifests") and does not apply them itself — certfn resources are not
# Google Cloud resources, and only the api records the requester's identity.
# After `terraform apply`, send them to the api with a Google ID token (see
# README.md).

provider "google" {
  project        = var.project
  region         = var.region
  default_labels = var.labels
}

module "certfn" {
  source = "../.."

  project     = var.project
  region      = var.region
  name_prefix = var.name_prefix
  image       = var.image

  dns_zones             = var.dns_zones
  enable_http01         = true
  api_invoker_members   = var.api_invoker_members
  api_admins            = var.api_admins
  notification_channels = var.notification_channels

  # An example: destroy may delete the database.
  firestore_deletion_protection = false
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
