# The state store: one Firestore (native mode) database, records in one
# collection, as adapters/gcp/firestore writes them — one
# document per resource with the fields
#
#   kind, namespace   strings, List filters (equalities)
#   owner             string, List by owner (absent when none)
#   nextRunAt         timestamp, present only while the record is due
#                     sometime: the sparse due index
#   expireAt          timestamp, the TTL (absent unless a TTL policy sets it)
#   data, enc,        the resource JSON (possibly gzip) and its encoding,
#   version           the version number: read only with their document
#
# Queries and the indexes that serve them:
#
#   List(kind)                    kind's single-field ascending index
#   List(kind, namespace)         composite kind_namespace
#   List(kind, owner)             composite kind_owner
#   List(kind, namespace, owner)  both composites merged on kind (Firestore
#                                 merges indexes for equality filters)
#   Due: nextRunAt <= now ORDER BY nextRunAt LIMIT n
#                                 nextRunAt's single-field ascending index
#                                 (single-field orders need no composite)
#
# Single-field indexes: Firestore indexes every field both ways (and for
# array-contains) by default. The fields queries use keep their ascending
# index only (firestore.AscendingOnlyFields); the others are exempt from
# indexing (firestore.IndexExemptFields): data is large (index entries would
# cost storage and write latency for nothing), expireAt is a TTL timestamp
# (Google's advice: exempt it against hotspots), version and enc are never
# queried. tests/terraform/gcp_test.go checks these lists against the
# adapter's.

locals {
  firestore_ascending_only = ["kind", "namespace", "owner", "nextRunAt"]
  firestore_index_exempt   = ["data", "enc", "version", "expireAt"]
  firestore_ttl_field      = "expireAt"

  # Composite indexes: name => fields, all ascending (__name__ is appended
  # by Firestore).
  firestore_composite_indexes = {
    kind_namespace = ["kind", "namespace"]
    kind_owner     = ["kind", "owner"]
  }

  firestore_database_name = "projects/${local.project}/databases/${local.firestore_database}"
}

resource "google_firestore_database" "state" {
  project     = local.project
  name        = local.firestore_database
  location_id = local.firestore_location
  type        = "FIRESTORE_NATIVE"

  point_in_time_recovery_enablement = var.firestore_point_in_time_recovery ? "POINT_IN_TIME_RECOVERY_ENABLED" : "POINT_IN_TIME_RECOVERY_DISABLED"
  delete_protection_state           = var.firestore_deletion_protection ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  deletion_policy                   = var.firestore_deletion_protection ? "ABANDON" : "DELETE"

  depends_on = [google_project_service.this]
}

resource "google_firestore_index" "composite" {
  for_each = local.firestore_composite_indexes

  project     = local.project
  database    = google_firestore_database.state.name
  collection  = local.firestore_collection
  query_scope = "COLLECTION"

  dynamic "fields" {
    for_each = each.value
    content {
      field_path = fields.value
      order      = "ASCENDING"
    }
  }
}

# Queried fields: the ascending single-field index only.
resource "google_firestore_field" "ascending_only" {
  for_each = toset(local.firestore_ascending_only)

  project    = local.project
  database   = google_firestore_database.state.name
  collection = local.firestore_collection
  field      = each.value

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION"
    }
  }
}

# Never-queried fields: no index at all (an empty index_config). The TTL
# field is declared below, with its TTL policy, in the same resource (one
# google_firestore_field per field).
resource "google_firestore_field" "index_exempt" {
  for_each = toset([for f in local.firestore_index_exempt : f if f != local.firestore_ttl_field])

  project    = local.project
  database   = google_firestore_database.state.name
  collection = local.firestore_collection
  field      = each.value

  index_config {}
}

# The TTL policy: Firestore deletes a document some time (typically within
# a day) after its expireAt; adapters/gcp/firestore treats expired documents as absent
# meanwhile.
resource "google_firestore_field" "ttl" {
  project    = local.project
  database   = google_firestore_database.state.name
  collection = local.firestore_collection
  field      = local.firestore_ttl_field

  ttl_config {}

  index_config {}
}
