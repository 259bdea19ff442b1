# The example's destination queues and their DLQs: SSE, 14 days, an explicit
# MaximumMessageSize, TLS only (as the outbox module's queues).

resource "aws_sqs_queue" "dead_letter" {
  for_each = { for k, q in module.config.queues : k => q if q.dlq == null }

  name                       = each.value.name
  fifo_queue                 = each.value.fifo
  max_message_size           = module.config.queue_settings.max_message_size
  message_retention_seconds  = module.config.queue_settings.message_retention_seconds
  visibility_timeout_seconds = each.value.visibility
  sqs_managed_sse_enabled    = var.kms_key_arn == null ? true : null
  kms_master_key_id          = var.kms_key_arn
  tags                       = var.tags
}

resource "aws_sqs_queue" "destination" {
  for_each = { for k, q in module.config.queues : k => q if q.dlq != null }

  name                        = each.value.name
  fifo_queue                  = each.value.fifo
  content_based_deduplication = each.value.fifo ? false : null # the outbox sets MessageDeduplicationId = MessageId
  max_message_size            = module.config.queue_settings.max_message_size
  message_retention_seconds   = module.config.queue_settings.message_retention_seconds
  visibility_timeout_seconds  = each.value.visibility
  sqs_managed_sse_enabled     = var.kms_key_arn == null ? true : null
  kms_master_key_id           = var.kms_key_arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dead_letter[each.value.dlq].arn
    maxReceiveCount     = module.config.queue_settings.max_receive_count
  })
  tags = var.tags
}

locals {
  all_queues = merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination)
}

resource "aws_sqs_queue_policy" "tls_only" {
  for_each = module.config.queues

  queue_url = local.all_queues[each.key].url
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DenyWithoutTls"
      Effect    = "Deny"
      Principal = { AWS = "*" }
      Action    = "sqs:*"
      Resource  = local.all_queues[each.key].arn
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
  })
}
