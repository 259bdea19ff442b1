# A table of the caller's own, declared beside the outbox as a user's root declares it, so
# the module's tests pass the real resource (and data source) whole as existing_table:
# run "<name>" { module { source = "./tests/existing-table" } } and then
# existing_table = run.<name>.table (table_check.tftest.hcl).

terraform {
  required_providers {
    aws = { source = "hashicorp/aws" }
  }
}

variable "hash_key" {
  type    = string
  default = "PK"
}
variable "range_key" {
  type    = string
  default = "SK"
}
variable "key_type" {
  type    = string
  default = "S"
}
variable "stream_view_type" {
  description = "null: no stream."
  type        = string
  default     = "NEW_IMAGE"
}
variable "ttl_attribute" {
  description = "null: TTL off."
  type        = string
  default     = "ExpiresAt"
}
variable "sweep_index" {
  type    = bool
  default = true
}

resource "aws_dynamodb_table" "app" {
  #checkov:skip=CKV_AWS_119:A test fixture planned against a mocked provider, never applied: the table a user passes as existing_table, with its key, stream, TTL and index settings varied; its encryption is the user's.
  name             = "app"
  billing_mode     = "PAY_PER_REQUEST"
  hash_key         = var.hash_key
  range_key        = var.range_key
  stream_enabled   = var.stream_view_type != null
  stream_view_type = var.stream_view_type

  dynamic "attribute" {
    for_each = concat(
      [{ name = var.hash_key, type = var.key_type }, { name = var.range_key, type = "S" }],
      var.sweep_index ? [{ name = "SweepShard", type = "S" }, { name = "SweepDueAt", type = "N" }] : [],
    )
    content {
      name = attribute.value.name
      type = attribute.value.type
    }
  }

  dynamic "global_secondary_index" {
    for_each = var.sweep_index ? ["OutboxSweepIndex"] : []
    content {
      name            = global_secondary_index.value
      hash_key        = "SweepShard"
      range_key       = "SweepDueAt"
      projection_type = "KEYS_ONLY"
    }
  }

  ttl {
    attribute_name = var.ttl_attribute == null ? "" : var.ttl_attribute
    enabled        = var.ttl_attribute != null
  }

  point_in_time_recovery {
    enabled = true
  }
}

# The same table read back, as a root whose table lives elsewhere passes it.
data "aws_dynamodb_table" "app" {
  name = "app"
}

output "table" {
  value = aws_dynamodb_table.app
}

output "read" {
  value = data.aws_dynamodb_table.app
}
