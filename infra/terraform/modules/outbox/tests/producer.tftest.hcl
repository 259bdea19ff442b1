# The producer policy: what an application role needs to write outbox messages, nothing else.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}


# One plan for 2 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "items_and_large_payloads_no_wildcards_no_listing_reads_or_deletes" {
  command = plan
  variables {
    large_payloads = true
  }

  # items_and_large_payloads
  assert {
    condition = local.producer_policy == {
      Version = "2012-10-17"
      Statement = [
        { Sid = "WriteOutboxMessages", Effect = "Allow", Action = ["dynamodb:GetItem", "dynamodb:PutItem"], Resource = local.r.outbox_table_arn },
        { Sid = "PutLargePayloads", Effect = "Allow", Action = "s3:PutObject", Resource = "arn:aws:s3:::outbox-payloads-20240101/outbox/*" },
      ]
    }
    error_message = "PutItem and GetItem on the table (TransactWriteItems is authorised per action; a retried commit reads its items back); PutObject under outbox/."
  }
  assert {
    condition     = local.producer_policy_json == jsonencode(local.producer_policy)
    error_message = "producer_policy_json is the policy's JSON text."
  }

  # no_wildcards_no_listing_reads_or_deletes
  assert {
    condition     = !anytrue([for s in local.producer_policy.Statement : anytrue([for a in flatten([s.Action]) : strcontains(a, "*") || contains(["dynamodb:UpdateItem", "dynamodb:ConditionCheckItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:DeleteItem", "s3:GetObject"], a)])])
    error_message = "The producer may put outbox items and read them back by key, nothing more: no update, query, scan, delete, payload read or wildcard action."
  }
}

run "a_kms_key_and_no_large_payloads" {
  command = plan
  variables {
    large_payloads = false
    kms_key_arn    = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }
  assert {
    condition = local.producer_policy.Statement == [
      { Sid = "WriteOutboxMessages", Effect = "Allow", Action = ["dynamodb:GetItem", "dynamodb:PutItem"], Resource = local.r.outbox_table_arn },
      { Sid = "UseOutboxKey", Effect = "Allow", Action = ["kms:Decrypt", "kms:GenerateDataKey"], Resource = var.kms_key_arn },
    ]
    error_message = "No S3 without large payloads; GenerateDataKey and Decrypt on the KMS key."
  }
}
