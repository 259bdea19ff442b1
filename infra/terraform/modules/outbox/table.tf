# The outbox table, unless attaching to an existing one (var.existing_table), keyed by the
# key-name settings. Deletion protection (var.deletion_protection, on by default) is
# DynamoDB's own: with it on, `terraform destroy` stops at the table; turn it off (apply)
# first for a throwaway deployment.

resource "aws_dynamodb_table" "outbox" {
  count = var.existing_table == null ? 1 : 0

  name                        = local.names.outbox_table
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = local.table.hash_key
  range_key                   = local.table.range_key
  stream_enabled              = true
  stream_view_type            = local.table.stream_view_type
  deletion_protection_enabled = local.tables.deletion_protection

  dynamic "attribute" {
    for_each = local.table.attributes
    content {
      name = attribute.value.name
      type = attribute.value.type
    }
  }

  global_secondary_index {
    name            = local.table.sweep_index.name
    hash_key        = local.table.sweep_index.hash_key
    range_key       = local.table.sweep_index.range_key
    projection_type = local.table.sweep_index.projection_type
  }

  ttl {
    attribute_name = local.table.ttl_attribute
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  # AWS-managed key (aws/dynamodb) unless a customer-managed key is given.
  server_side_encryption {
    enabled     = true
    kms_key_arn = var.kms_key_arn
  }

  tags = var.tags
}
