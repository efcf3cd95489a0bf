terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source = "hashicorp/google"
      # 6.1: queue-level http_target of google_cloud_tasks_queue (queues.tf).
      version = ">= 6.1.0, < 8.0.0"
    }
  }
}
