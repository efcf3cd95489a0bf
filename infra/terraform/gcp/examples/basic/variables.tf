variable "project" {
  description = "Project to deploy to (module input project)."
  type        = string
}

variable "project_number" {
  description = "The project's number (module input project_number). Empty: the module reads it with the google_project data source, which needs the Cloud Resource Manager API enabled before the first plan."
  type        = string
  default     = ""
}

variable "region" {
  description = "Region of the services, queue and job (module input region)."
  type        = string
  default     = "us-central1"
}

variable "name_prefix" {
  description = "Prefix of every resource name (module input name_prefix)."
  type        = string
  default     = "certfn"
}

variable "image" {
  description = "certfn's container image (module input image), e.g. us-central1-docker.pkg.dev/my-project/certfn/certfn:v1.2.3."
  type        = string
}

variable "labels" {
  description = "Labels of every resource (provider default_labels)."
  type        = map(string)
  default     = { "project" = "certfn-example" }
}

variable "dns_zones" {
  description = "Cloud DNS managed zones (names, in project) in which the worker may write DNS-01 records (module input dns_zones). The first is the ACME example's zone."
  type        = list(string)
  default     = []
}

variable "api_invoker_members" {
  description = "IAM members that may call the api (module input api_invoker_members), e.g. [\"user:you@example.com\"]."
  type        = list(string)
  default     = []
}

variable "api_admins" {
  description = "E-mail addresses the api treats as administrators (module input api_admins): who applies the manifests below."
  type        = list(string)
  default     = []
}

variable "notification_channels" {
  description = "Cloud Monitoring notification channels of the alert policies (module input notification_channels)."
  type        = list(string)
  default     = []
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
  description = "ACME directory URL. Non-empty (with dns_zones and acme_dns_names): the manifests also declare an ACME ClusterIssuer solving DNS-01 in the first zone of dns_zones and a Certificate \"acme-web\" from it. Let's Encrypt staging is https://acme-staging-v02.api.letsencrypt.org/directory."
  type        = string
  default     = ""
}

variable "acme_email" {
  description = "Contact e-mail of the ACME account."
  type        = string
  default     = "admin@example.com"
}

variable "acme_dns_names" {
  description = "DNS names of the ACME Certificate: names inside the first zone of dns_zones."
  type        = list(string)
  default     = []
}

variable "manage_certificates" {
  description = "Declare the example's Issuers, policy and Certificates with certfn's provider (applied through the api during terraform apply, which waits until they are Ready). false: Terraform deploys certfn only; send the output manifests to the api yourself."
  type        = bool
  default     = true
}
