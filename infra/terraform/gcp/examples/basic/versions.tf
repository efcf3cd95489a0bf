terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 7.44.0, < 8.0.0"
    }
    # time_sleep: the wait for IAM propagation before the first call to the
    # api (main.tf).
    time = {
      source  = "hashicorp/time"
      version = ">= 0.9.0, < 1.0.0"
    }
    # certfn's provider: no registry entry; install it with `make provider`
    # (docs/deploy/terraform.md).
    certfn = {
      source = "certfn/certfn"
    }
  }
}
