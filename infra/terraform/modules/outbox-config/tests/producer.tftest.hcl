# The producer policy: what an application role needs to write outbox messages, nothing else.

variables {
  region = "eu-west-1"
  resources = {
    outbox_table_arn          = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table"
    outbox_stream_arn         = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/stream/2024-01-01T00:00:00.000"
    outbox_dlq_arn            = "arn:aws:sqs:eu-west-1:123456789012:outbox-dlq"
    stream_failures_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:outbox-stream-failures"
    log_group_arns            = { publisher = "l", sweeper = "l", recovery = "l" }
    large_payload_bucket_arn  = "arn:aws:s3:::outbox-payloads-20240101"
  }
}

run "items_and_large_payloads" {
  command = apply
  assert {
    condition = output.producer_policy == {
      Version = "2012-10-17"
      Statement = [
        { Sid = "WriteOutboxMessages", Effect = "Allow", Action = ["dynamodb:GetItem", "dynamodb:PutItem"], Resource = var.resources.outbox_table_arn },
        { Sid = "PutLargePayloads", Effect = "Allow", Action = "s3:PutObject", Resource = "arn:aws:s3:::outbox-payloads-20240101/outbox/*" },
      ]
    }
    error_message = "PutItem and GetItem on the table (TransactWriteItems is authorised per action; a retried commit reads its items back); PutObject under outbox/."
  }
  assert {
    condition     = output.producer_policy_json == jsonencode(output.producer_policy)
    error_message = "producer_policy_json is the policy's JSON text."
  }
}

run "a_kms_key_and_no_large_payloads" {
  command = apply
  variables {
    large_payloads = false
    kms_key_arn    = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }
  assert {
    condition = output.producer_policy.Statement == [
      { Sid = "WriteOutboxMessages", Effect = "Allow", Action = ["dynamodb:GetItem", "dynamodb:PutItem"], Resource = var.resources.outbox_table_arn },
      { Sid = "UseOutboxKey", Effect = "Allow", Action = ["kms:Decrypt", "kms:GenerateDataKey"], Resource = var.kms_key_arn },
    ]
    error_message = "No S3 without large payloads; GenerateDataKey and Decrypt on the KMS key."
  }
}

run "no_wildcards_no_listing_reads_or_deletes" {
  command = apply
  assert {
    condition     = !anytrue([for s in output.producer_policy.Statement : anytrue([for a in flatten([s.Action]) : strcontains(a, "*") || contains(["dynamodb:UpdateItem", "dynamodb:ConditionCheckItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:DeleteItem", "s3:GetObject"], a)])])
    error_message = "The producer may put outbox items and read them back by key, nothing more: no update, query, scan, delete, payload read or wildcard action."
  }
}
