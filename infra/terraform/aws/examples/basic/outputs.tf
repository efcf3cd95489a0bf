output "api_url" {
  description = "The api Function URL (AWS_IAM auth)."
  value       = module.certfn.api_url
}

output "http01_url" {
  description = "The public http01 Function URL."
  value       = module.certfn.http01_url
}

output "table_name" {
  description = "Name of the DynamoDB state table (module output table_name)."
  value       = module.certfn.table_name
}

output "queue_name" {
  description = "Name of the worker queue (module output queue_name)."
  value       = module.certfn.queue_name
}

output "dead_letter_queue_name" {
  description = "Name of the worker queue's dead-letter queue; a message there is a reconcile that kept failing (module output dead_letter_queue_name)."
  value       = module.certfn.dead_letter_queue_name
}

output "secret_prefix" {
  description = "Secrets Manager name prefix: the example Certificate web is stored as <secret_prefix>/default/web-tls (module output secret_prefix)."
  value       = module.certfn.secret_prefix
}

output "manifests" {
  description = "The example's certfn objects as multi-document YAML: what the certfn provider applies, or, with manage_certificates = false, what to send to the api after apply."
  value       = local.manifests
}

output "certificates" {
  description = "namespace/name of the Certificates the manifests declare (what to wait for)."
  value       = concat(["default/web"], local.acme_enabled ? ["default/acme-web"] : [])
}

output "notification_sns_topic_arn" {
  description = "The SNS topic of the deployment's certificate events, or null (module output notification_sns_topic_arn)."
  value       = module.certfn.notification_sns_topic_arn
}

output "web_certificate" {
  description = "The web Certificate as certfn reports it (data.certfn_certificate): ready, revision, not_after, the secret's Secrets Manager name and the ACM ARN; null with manage_certificates = false."
  value = var.manage_certificates ? {
    ready               = data.certfn_certificate.web[0].ready
    revision            = data.certfn_certificate.web[0].revision
    not_after           = data.certfn_certificate.web[0].not_after
    secret_reference    = data.certfn_certificate.web[0].secret_reference
    acm_certificate_arn = data.certfn_certificate.web[0].acm_certificate_arn
  } : null
}
