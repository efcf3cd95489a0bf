# Example root module: deploys certfn with infra/terraform/aws and declares,
# with certfn's Terraform provider (docs/deploy/terraform.md), what certfn should
# issue: a self-signed Issuer and a Certificate "web" (plus, with
# acme_server_url, an ACME Issuer and a Certificate validated over HTTP-01),
# and the CertificateRequestPolicy that approves their requests. `terraform
# apply` deploys the functions, then applies these objects through the api
# Function URL (SigV4, your AWS credentials) and waits until the
# Certificates are Ready; data.certfn_certificate.web then gives the
# certificate's secret and, with enable_acm_import, its ACM ARN to a
# listener (aws_lb_listener.https, with listener_load_balancer_arn).
#
# manage_certificates = false leaves certfn's objects out of Terraform: the
# output "manifests" holds them as YAML to send to the api by hand
# (docs/deploy/aws.md, "Apply the example manifests"; localstack/e2e.sh).

provider "aws" {
  region = var.region

  # LocalStack (or another emulator): no real credentials, no account lookup.
  skip_credentials_validation = var.aws_endpoint_url != null
  skip_requesting_account_id  = var.aws_endpoint_url != null
  skip_metadata_api_check     = var.aws_endpoint_url != null
  access_key                  = var.aws_endpoint_url != null ? "test" : null
  secret_key                  = var.aws_endpoint_url != null ? "test" : null

  # Every service the module uses; null keeps AWS's own endpoint.
  endpoints {
    acm            = var.aws_endpoint_url
    cloudformation = var.aws_endpoint_url
    cloudwatch     = var.aws_endpoint_url
    cloudwatchlogs = var.aws_endpoint_url
    dynamodb       = var.aws_endpoint_url
    events         = var.aws_endpoint_url
    iam            = var.aws_endpoint_url
    kms            = var.aws_endpoint_url
    lambda         = var.aws_endpoint_url
    route53        = var.aws_endpoint_url
    scheduler      = var.aws_endpoint_url
    secretsmanager = var.aws_endpoint_url
    sns            = var.aws_endpoint_url
    sqs            = var.aws_endpoint_url
    sts            = var.aws_endpoint_url
  }

  default_tags {
    tags = var.tags
  }
}

module "certfn" {
  source = "../.."

  name_prefix         = var.name_prefix
  account_id          = var.account_id != "" ? var.account_id : (var.aws_endpoint_url != null ? "000000000000" : "")
  lambda_zip_dir      = var.lambda_zip_dir
  lambda_architecture = var.lambda_architecture
  route53_zone_ids    = var.route53_zone_ids
  enable_http01       = true
  api_admin_arns      = var.api_admin_arns
  api_invoker_arns    = var.api_invoker_arns
  log_retention_days  = 14

  # Certificate events on the default EventBridge bus (on by default) and,
  # when asked, an SNS topic receiving them.
  notification_sns_topic = var.notification_sns_topic

  # ACM import of Certificates annotated certfn.io/acm-import (the web
  # Certificate when enable_acm_import is true).
  enable_acm_import = var.enable_acm_import

  # The example's ACME Issuer is namespaced: namespaced Issuers may use
  # only the servers listed, so its own server is; a server on a private
  # address (Pebble on LocalStack's network) must be allowed too.
  acme_server_allow           = var.acme_server_url != "" ? [var.acme_server_url] : []
  acme_allow_private_networks = var.acme_allow_private_networks
}

# certfn's API: the api Function URL, SigV4-signed with the same AWS
# credentials as the aws provider's (the SDK's default chain). The caller
# must be in api_admin_arns or hold RBAC bindings for these objects.
provider "certfn" {
  endpoint = module.certfn.api_url
  auth     = "aws-sigv4"
  region   = var.region
}

locals {
  acme_enabled = var.acme_server_url != ""
  # The http01 Function URL's host, e.g. abc.lambda-url.us-east-1.on.aws.
  http01_host    = regex("^https?://([^/:]+)", module.certfn.http01_url)[0]
  acme_dns_names = length(var.acme_dns_names) > 0 ? var.acme_dns_names : [local.http01_host]

  # certfn's objects as HCL values (cert-manager's YAML field names), by
  # role. The keys are known at plan; the ACME names may not be.
  policy = {
    # Policy approval (approver-policy's CertificateRequestPolicy): the
    # example's requests are approved only for its own names, server usages
    # and at most 90 days. certfn requests certificates as cert-manager's
    # controller identity, system:serviceaccount:cert-manager:cert-manager,
    # which is bound to the policy with `use`.
    policy = {
      apiVersion = "policy.cert-manager.io/v1alpha1"
      kind       = "CertificateRequestPolicy"
      metadata   = { name = "example" }
      spec = {
        allowed = {
          commonName = { value = var.web_dns_names[0] }
          dnsNames   = { required = true, values = concat(var.web_dns_names, local.acme_enabled ? local.acme_dns_names : []) }
          usages     = ["digital signature", "key encipherment", "server auth"]
        }
        constraints = {
          maxDuration = "2160h"
          privateKey  = { algorithm = "ECDSA", minSize = 256 }
        }
        selector = {
          issuerRef = { group = "cert-manager.io", kind = "Issuer" }
          namespace = { matchNames = ["default"] }
        }
      }
    }
    role = {
      apiVersion = "rbac.authorization.k8s.io/v1"
      kind       = "ClusterRole"
      metadata   = { name = "use-example-policy" }
      rules = [{
        apiGroups     = ["policy.cert-manager.io"]
        resources     = ["certificaterequestpolicies"]
        verbs         = ["use"]
        resourceNames = ["example"]
      }]
    }
    binding = {
      apiVersion = "rbac.authorization.k8s.io/v1"
      kind       = "ClusterRoleBinding"
      metadata   = { name = "certfn-controller-uses-example-policy" }
      roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "use-example-policy" }
      subjects   = [{ kind = "ServiceAccount", name = "cert-manager", namespace = "cert-manager" }]
    }
  }

  issuers = merge(
    {
      # A namespaced self-signed Issuer.
      selfsigned = {
        apiVersion = "cert-manager.io/v1"
        kind       = "Issuer"
        metadata   = { name = "selfsigned", namespace = "default" }
        spec       = { selfSigned = {} }
      }
    },
    { for k, v in {
      # An ACME Issuer whose HTTP-01 challenges are answered by certfn's
      # http01 function. The account key is stored as
      # <secret_prefix>/default/acme-account-key (certfn-role=acme-account).
      acme = {
        apiVersion = "cert-manager.io/v1"
        kind       = "Issuer"
        metadata   = { name = "acme", namespace = "default" }
        spec = {
          acme = {
            server              = var.acme_server_url
            email               = var.acme_email
            skipTLSVerify       = var.acme_skip_tls_verify ? true : null
            privateKeySecretRef = { name = "acme-account-key" }
            solvers             = [{ http01 = {} }]
          }
        }
      }
    } : k => v if local.acme_enabled },
  )

  certificates = merge(
    {
      # The key pair is stored in Secrets Manager as
      # <secret_prefix>/default/web-tls, tagged certfn-role=certificate, and
      # with enable_acm_import also imported into ACM.
      web = {
        apiVersion = "cert-manager.io/v1"
        kind       = "Certificate"
        metadata = {
          name        = "web"
          namespace   = "default"
          annotations = var.enable_acm_import ? { "certfn.io/acm-import" = "true" } : null
        }
        spec = {
          secretName  = "web-tls"
          commonName  = var.web_dns_names[0]
          dnsNames    = var.web_dns_names
          duration    = "2160h"
          renewBefore = "720h"
          usages      = ["digital signature", "key encipherment", "server auth"]
          privateKey  = { algorithm = "ECDSA", size = 256, rotationPolicy = "Always" }
          issuerRef   = { name = "selfsigned", kind = "Issuer", group = "cert-manager.io" }
        }
      }
    },
    { for k, v in {
      acme-web = {
        apiVersion = "cert-manager.io/v1"
        kind       = "Certificate"
        metadata   = { name = "acme-web", namespace = "default" }
        spec = {
          secretName = "acme-web-tls"
          duration   = "2160h" # the example policy's maxDuration: a request without one is denied
          dnsNames   = local.acme_dns_names
          privateKey = { algorithm = "ECDSA", size = 256 }
          issuerRef  = { name = "acme", kind = "Issuer", group = "cert-manager.io" }
        }
      }
    } : k => v if local.acme_enabled },
  )

  # The same objects as multi-document YAML (output "manifests").
  manifests = join("---\n", [for o in concat(values(local.issuers), values(local.certificates), values(local.policy)) : yamlencode(o)])
}

# The policy and its binding first: a Certificate's request is approved
# when it is created.
resource "certfn_manifest" "policy" {
  for_each = { for k, v in local.policy : k => v if var.manage_certificates }
  object   = each.value
}

resource "certfn_manifest" "issuer" {
  for_each = { for k, v in local.issuers : k => v if var.manage_certificates }
  object   = each.value

  wait {
    condition = "Ready"
    timeout   = "5m"
  }
}

# Created once the issuers are Ready; apply returns when each Certificate
# is issued (or fails naming what blocks it: a denied request, a failed
# challenge, an issuer that is not ready).
resource "certfn_manifest" "certificate" {
  for_each   = { for k, v in local.certificates : k => v if var.manage_certificates }
  object     = each.value
  depends_on = [certfn_manifest.policy, certfn_manifest.issuer]

  wait {
    # With ACM import, web is waited for until it is in ACM (its ARN feeds
    # the listener below); the others until they are issued.
    condition = var.enable_acm_import && each.key == "web" ? "ACMImported" : "Ready"
    timeout   = "10m"
  }
}

# What certfn made of "web": validity, the secret's Secrets Manager name and
# the ACM ARN.
data "certfn_certificate" "web" {
  count     = var.manage_certificates ? 1 : 0
  namespace = certfn_manifest.certificate["web"].namespace
  name      = certfn_manifest.certificate["web"].name
}

# A listener-style consumer of the ACM ARN: an HTTPS listener on an existing
# load balancer serving the "web" certificate (renewals are re-imported into
# the same ARN, so the listener never changes).
resource "aws_lb_listener" "https" {
  count             = var.manage_certificates && var.listener_load_balancer_arn != "" ? 1 : 0
  load_balancer_arn = var.listener_load_balancer_arn
  port              = 443
  protocol          = "HTTPS"
  ssl_policy        = "ELBSecurityPolicy-TLS13-1-2-2021-06"
  certificate_arn   = data.certfn_certificate.web[0].acm_certificate_arn

  default_action {
    type = "fixed-response"
    fixed_response {
      content_type = "text/plain"
      message_body = "served with certfn's certificate"
      status_code  = "200"
    }
  }

  lifecycle {
    precondition {
      condition     = var.enable_acm_import
      error_message = "listener_load_balancer_arn needs enable_acm_import = true: the listener serves the certificate certfn imports into ACM."
    }
  }
}
