terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.1.0, < 8.0.0"
    }
    # certfn's provider: no registry entry; install it with `make provider`
    # (docs/deploy/terraform.md).
    certfn = {
      source = "certfn/certfn"
    }
  }
}
