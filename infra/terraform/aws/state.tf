# The state table. Its layout is adapters/aws/dynamo's (table.go, TableInput):
# partition key pk (the resource key "Kind/namespace/name"), and three
# KEYS_ONLY global secondary indexes:
#   due     (due_shard N, next_run_at N) — sparse, what the scheduler reads;
#   kind_ns (kind S, pk S)               — List by kind and namespace;
#   owner   (owner S, pk S)              — List by owner, sparse.
# Records older than their TTL (expires_at, Unix seconds) are removed by
# DynamoDB.
resource "aws_dynamodb_table" "state" {
  name         = local.table_name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "pk"

  attribute {
    name = "pk"
    type = "S"
  }
  attribute {
    name = "kind"
    type = "S"
  }
  attribute {
    name = "owner"
    type = "S"
  }
  attribute {
    name = "due_shard"
    type = "N"
  }
  attribute {
    name = "next_run_at"
    type = "N"
  }

  global_secondary_index {
    name            = "due"
    hash_key        = "due_shard"
    range_key       = "next_run_at"
    projection_type = "KEYS_ONLY"
  }
  global_secondary_index {
    name            = "kind_ns"
    hash_key        = "kind"
    range_key       = "pk"
    projection_type = "KEYS_ONLY"
  }
  global_secondary_index {
    name            = "owner"
    hash_key        = "owner"
    range_key       = "pk"
    projection_type = "KEYS_ONLY"
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = local.kms_key_arn
  }

  deletion_protection_enabled = false

  tags = local.tags
}
