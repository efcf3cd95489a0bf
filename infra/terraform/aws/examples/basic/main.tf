# Example root module: deploys certfn with infra/terraform/aws and declares an
# Issuer and a Certificate (plus, with acme_server_url, an ACME Issuer and a
# Certificate validated over HTTP-01) as certfn manifests.
#
# How the manifests reach certfn: Terraform renders them (output
# "manifests") and does not apply them itself. Only the hashicorp/aws provider
# is assumed, and certfn resources are not AWS resources: a Terraform
# resource that pushed them would either need a certfn provider or an
# aws_lambda_invocation that bypasses the api's IAM authentication and
# requester identity. After `terraform apply`, send them to the api with a
# SigV4-signed request (docs/deploy-aws.md, "Apply the example manifests";
# localstack/e2e.sh does exactly that).

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
}

locals {
  acme_enabled = var.acme_server_url != ""
  # The http01 Function URL's host, e.g. abc.lambda-url.us-east-1.on.aws.
  http01_host    = regex("^https?://([^/:]+)", module.certfn.http01_url)[0]
  acme_dns_names = length(var.acme_dns_names) > 0 ? var.acme_dns_names : [local.http01_host]

  manifests = join("---\n", concat(
    [templatefile("${path.module}/manifests/selfsigned.yaml.tftpl", {
      dns_names = var.web_dns_names
    })],
    local.acme_enabled ? [templatefile("${path.module}/manifests/acme.yaml.tftpl", {
      server          = var.acme_server_url
      email           = var.acme_email
      skip_tls_verify = var.acme_skip_tls_verify
      dns_names       = local.acme_dns_names
    })] : [],
    [templatefile("${path.module}/manifests/policy.yaml.tftpl", {
      common_name = var.web_dns_names[0]
      dns_names   = concat(var.web_dns_names, local.acme_enabled ? local.acme_dns_names : [])
    })],
  ))
}
