# The shop's own resources — its single table, its queue, its consumer — and the
# outbox attached to them with the module, as any user of dynamodb-outbox would.

locals {
  keys = { partition = "pk", sort = "sk", ttl = "expires_at" }
}

# The shop's single table. What the outbox needs of it: a stream with new images,
# the sparse sweeper index, and a TTL attribute (here the shop's own `expires_at`).
resource "aws_dynamodb_table" "shop" {
  name             = "${var.name}-table"
  billing_mode     = "PAY_PER_REQUEST"
  hash_key         = local.keys.partition
  range_key        = local.keys.sort
  stream_enabled   = true
  stream_view_type = "NEW_IMAGE"

  attribute {
    name = local.keys.partition
    type = "S"
  }
  attribute {
    name = local.keys.sort
    type = "S"
  }
  attribute {
    name = "SweepShard"
    type = "S"
  }
  attribute {
    name = "SweepDueAt"
    type = "N"
  }

  global_secondary_index {
    name            = "OutboxSweepIndex"
    hash_key        = "SweepShard"
    range_key       = "SweepDueAt"
    projection_type = "KEYS_ONLY"
  }

  ttl {
    attribute_name = local.keys.ttl
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled = true
  }
}

module "outbox" {
  source = "../../../infra/terraform/modules/outbox"

  prefix       = "${var.name}-outbox"
  architecture = var.architecture
  function_code = {
    for fn in ["publisher", "sweeper", "recovery"] : fn => { filename = "${var.lambda_dir}/shop-${fn}/bootstrap.zip" }
  }
  existing_table     = aws_dynamodb_table.shop
  partition_key_name = local.keys.partition
  sort_key_name      = local.keys.sort
  ttl_attribute_name = local.keys.ttl
  routes = {
    "order-placed" = aws_sqs_queue.orders.url
  }
}
