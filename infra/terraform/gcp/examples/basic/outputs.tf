output "api_url" {
  description = "The api service URL (IAM-authenticated)."
  value       = module.certfn.api_url
}

output "http01_url" {
  description = "The public http01 service URL."
  value       = module.certfn.http01_url
}

output "service_account_emails" {
  description = "The deployment's service accounts, by identity."
  value       = module.certfn.service_account_emails
}

output "topics" {
  description = "The work topics, by queue."
  value       = module.certfn.topics
}

output "firestore_database" {
  description = "The Firestore database."
  value       = module.certfn.firestore_database
}

output "secret_prefix" {
  description = "First segment of the Secret Manager secret IDs."
  value       = module.certfn.secret_prefix
}

output "manifests" {
  description = "The example's certfn manifests (multi-document YAML): what the certfn provider applies, or, with manage_certificates = false, what to send to the api after apply."
  value       = local.manifests
}

output "certificates" {
  description = "namespace/name of the Certificates the manifests declare (what to wait for)."
  value       = concat(["default/web"], local.acme_enabled ? ["default/acme-web"] : [])
}

output "web_certificate" {
  description = "The web Certificate as certfn reports it (data.certfn_certificate): ready, revision, not_after and the secret's Secret Manager resource name; null with manage_certificates = false."
  value = var.manage_certificates ? {
    ready            = data.certfn_certificate.web[0].ready
    revision         = data.certfn_certificate.web[0].revision
    not_after        = data.certfn_certificate.web[0].not_after
    secret_reference = data.certfn_certificate.web[0].secret_reference
  } : null
}
