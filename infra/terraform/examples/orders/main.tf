# The orders example beside the outbox module, as a user would add their own: the orders
# table, the destination queues of the topics orders (standard) and orders-events (FIFO)
# with their DLQs, and the reference consumer that applies each order exactly once. The
# roots pass `routes` to the outbox module and its dashboard lines; the outbox module
# knows nothing of this. Names and settings come from ../orders-config.

module "config" {
  source = "../orders-config"

  prefix                     = var.prefix
  consumer_batch_size        = var.consumer_batch_size
  consumer_max_receive_count = var.consumer_max_receive_count
  max_message_bytes          = var.max_message_bytes
  deletion_protection        = var.deletion_protection
  kms_key_arn                = var.kms_key_arn
  architecture               = var.architecture
  lambda_asset_dir           = var.lambda_asset_dir
  queue_urls                 = { standard = local.all_queues["orders_queue"].url, fifo = local.all_queues["fifo_queue"].url }
  resources = {
    orders_table_arn      = aws_dynamodb_table.orders.arn
    orders_queue_arn      = local.all_queues["orders_queue"].arn
    log_group_arn         = aws_cloudwatch_log_group.consumer.arn
    large_payload_objects = var.large_payload_objects
  }
}

locals {
  names    = module.config.names
  consumer = module.config.consumer
}

resource "aws_dynamodb_table" "orders" {
  name                        = local.names.orders_table
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = module.config.orders_table.hash_key
  deletion_protection_enabled = module.config.tables.deletion_protection

  dynamic "attribute" {
    for_each = module.config.orders_table.attributes
    content {
      name = attribute.value.name
      type = attribute.value.type
    }
  }

  ttl {
    attribute_name = module.config.orders_table.ttl_attribute
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = var.kms_key_arn
  }

  tags = var.tags
}
