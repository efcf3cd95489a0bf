terraform {
  required_version = ">= 1.5.0"

  # Floor: every resource and attribute the module uses exists from 5.60
  # on; the Function URL grants (lambda.tf) do not depend on the provider
  # version, so a fresh init that picks the newest 6.x works as 5.x does.
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.60.0, < 7.0.0"
    }
  }
}
