variable "region" {
  description = "AWS region to deploy to."
  type        = string
  default     = "us-east-1"
}

variable "name_prefix" {
  description = "Prefix of every resource name (module input name_prefix)."
  type        = string
  default     = "certfn"
}

variable "aws_endpoint_url" {
  description = "One endpoint for every AWS service, e.g. http://localhost:4566 for LocalStack (localstack/). Null: the real AWS endpoints. When set, the provider skips credential and account checks and the account ID is LocalStack's 000000000000 unless account_id says otherwise."
  type        = string
  default     = null
}

variable "account_id" {
  description = "AWS account ID for the IAM policies' ARNs (module input account_id). Empty: the caller's account (or 000000000000 with aws_endpoint_url)."
  type        = string
  default     = ""
}

variable "lambda_zip_dir" {
  description = "Directory holding the functions' zips (module input lambda_zip_dir). Empty: dist/lambda at the repository root."
  type        = string
  default     = ""
}

variable "lambda_architecture" {
  description = "arm64 (default) or x86_64 (module input lambda_architecture)."
  type        = string
  default     = "arm64"
}

variable "route53_zone_ids" {
  description = "Route53 hosted zones in which the worker may write DNS-01 records."
  type        = list(string)
  default     = []
}

variable "tags" {
  description = "Tags of every resource (provider default_tags)."
  type        = map(string)
  default     = { "project" = "certfn-example" }
}

variable "web_dns_names" {
  description = "DNS names of the example's self-signed Certificate \"web\"."
  type        = list(string)
  default     = ["www.example.internal"]

  validation {
    condition     = length(var.web_dns_names) > 0
    error_message = "web_dns_names: at least one name is required (the first is also the common name)."
  }
}

variable "acme_server_url" {
  description = "ACME directory URL. Non-empty: the manifests also declare an ACME Issuer with an HTTP-01 solver (served by the http01 function) and a Certificate \"acme-web\" from it. Pebble in localstack/ is https://pebble:14000/dir; Let's Encrypt staging is https://acme-staging-v02.api.letsencrypt.org/directory."
  type        = string
  default     = ""
}

variable "acme_allow_private_networks" {
  description = "Private addresses or host names the worker may reach for the example's ACME Issuer (the module's acme_allow_private_networks), e.g. [\"10.77.0.20\"] for Pebble on LocalStack's network. Empty: none."
  type        = list(string)
  default     = []
}

variable "acme_email" {
  description = "Contact e-mail of the ACME account."
  type        = string
  default     = "admin@example.com"
}

variable "acme_dns_names" {
  description = "DNS names of the ACME Certificate. Empty: the http01 Function URL's own host name (what the LocalStack end-to-end test validates, since Pebble resolves every name to LocalStack)."
  type        = list(string)
  default     = []
}

variable "acme_skip_tls_verify" {
  description = "Skip TLS verification of the ACME server (Pebble's self-signed test certificate only; never for a real CA)."
  type        = bool
  default     = false
}

variable "api_admin_arns" {
  description = "Administrators of the api (module input api_admin_arns), e.g. the role that applies the manifests below. LocalStack: arn:aws:iam::000000000000:root, the identity of its test credentials."
  type        = list(string)
  default     = []
}

variable "api_invoker_arns" {
  description = "Principals granted lambda:InvokeFunctionUrl on the api URL by resource policy (module input api_invoker_arns)."
  type        = list(string)
  default     = []
}

variable "notification_sns_topic" {
  description = "Create an SNS topic receiving the deployment's certificate events (module input notification_sns_topic); subscribe to it after apply."
  type        = bool
  default     = false
}

variable "manage_certificates" {
  description = "Declare the example's Issuers, policy and Certificates with certfn's provider (applied through the api during terraform apply, which waits until they are Ready). false: Terraform deploys certfn only; send the output manifests to the api yourself (localstack/e2e.sh does)."
  type        = bool
  default     = true
}

variable "enable_acm_import" {
  description = "Import the web Certificate into ACM (module input enable_acm_import and the certfn.io/acm-import annotation); data.certfn_certificate.web.acm_certificate_arn then names it."
  type        = bool
  default     = false
}

variable "listener_load_balancer_arn" {
  description = "An existing Application Load Balancer: non-empty adds an HTTPS listener on it serving the web certificate from ACM (needs enable_acm_import)."
  type        = string
  default     = ""
}
