terraform {
  required_version = ">= 1.5.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.60.0, < 7.0.0"
    }
    # certfn's provider: no registry entry; install it with `make provider`
    # (docs/deploy/terraform.md).
    certfn = {
      source = "certfn/certfn"
    }
  }
}
