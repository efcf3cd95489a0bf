terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source = "hashicorp/google"
      # 7.44: older releases in 6.1-7.43 plan permanent diffs on attributes
      # this module sets; 6.1 brought the queue-level http_target of
      # google_cloud_tasks_queue (queues.tf). tests/terraform plans with
      # 7.45.0.
      version = ">= 7.44.0, < 8.0.0"
    }
    # time_sleep (monitoring.tf): the wait between the log-based metrics and
    # their alert policies. tests/terraform plans with 0.14.2.
    time = {
      source  = "hashicorp/time"
      version = ">= 0.9.0, < 1.0.0"
    }
  }
}
