# The outbox's queues -- its DLQ, the stream-failure queue and that queue's DLQ: SSE (SQS-managed, or the customer-managed key), 14 days retention, an
# explicit MaximumMessageSize (the AWS provider would otherwise send 262144), a queue
# policy that refuses requests without TLS.

locals {
  # Order matters only for readability; DLQs are plain queues (aws_sqs_queue.dead_letter), the
  # queues with a DLQ (aws_sqs_queue.destination) redrive to them. The stream-failure queue is
  # the recovery function's trigger: its visibility is 6 x that function's timeout.
  queues = {
    outbox_dlq          = { name = local.names.outbox_dlq, fifo = false, dlq = null, visibility = 30 }
    stream_failures_dlq = { name = local.names.stream_failures_dlq, fifo = false, dlq = null, visibility = 30 }
    stream_failures     = { name = local.names.stream_failures, fifo = false, dlq = "stream_failures_dlq", visibility = local.queue_settings.stream_failures_visibility }
  }
}

# The stream-failure queue got a DLQ (issue 11): same queue, new address, nothing replaced.
moved {
  from = aws_sqs_queue.dead_letter["stream_failures"]
  to   = aws_sqs_queue.destination["stream_failures"]
}

resource "aws_sqs_queue" "dead_letter" {
  for_each = { for k, q in local.queues : k => q if q.dlq == null }

  name                       = each.value.name
  fifo_queue                 = each.value.fifo
  max_message_size           = local.queue_settings.max_message_size
  message_retention_seconds  = local.queue_settings.message_retention_seconds
  visibility_timeout_seconds = each.value.visibility
  sqs_managed_sse_enabled    = var.kms_key_arn == null ? true : null
  kms_master_key_id          = var.kms_key_arn
  tags                       = var.tags
}

resource "aws_sqs_queue" "destination" {
  for_each = { for k, q in local.queues : k => q if q.dlq != null }

  name                        = each.value.name
  fifo_queue                  = each.value.fifo
  content_based_deduplication = each.value.fifo ? false : null # the outbox sets MessageDeduplicationId = MessageId
  max_message_size            = local.queue_settings.max_message_size
  message_retention_seconds   = local.queue_settings.message_retention_seconds
  visibility_timeout_seconds  = each.value.visibility
  sqs_managed_sse_enabled     = var.kms_key_arn == null ? true : null
  kms_master_key_id           = var.kms_key_arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dead_letter[each.value.dlq].arn
    maxReceiveCount     = local.queue_settings.max_receive_count
  })
  tags = var.tags
}

locals {
  # One map of every queue, whatever its role.
  all_queues = merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination)
}

resource "aws_sqs_queue_policy" "tls_only" {
  for_each = local.queues

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
