# The recovery function (issue 11): the publisher's stream mapping sends an on-failure
# record (shard and sequence range only) to <prefix>-stream-failures when Lambda discards
# a batch; outbox-recovery consumes that queue, reads the range back from the stream and
# puts the pending items it finds into the sweeper's index.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

variables {
  # No bucket ARN was given to these checks: the offload's grants are checked in large_payloads.
  large_payloads = false
}

run "names_and_binary" {
  command = plan
  variables {
    prefix = "shop"
  }
  assert {
    condition     = local.names.recovery == "shop-recovery" && local.names.stream_failures_dlq == "shop-stream-failures-dlq"
    error_message = "The function is <prefix>-recovery, the failure queue's DLQ <prefix>-stream-failures-dlq."
  }
  assert {
    condition     = local.binaries.recovery == "outbox-recovery"
    error_message = "The function runs the cargo lambda binary outbox-recovery (infra/CONTRACT.md)."
  }
  assert {
    condition     = local.recovery_environment == { OUTBOX_DEPLOYMENT = "shop", OUTBOX_PARTITION_KEY = "PK", OUTBOX_SORT_KEY = "SK", OUTBOX_TTL_ATTRIBUTE = "ExpiresAt", OUTBOX_SWEEP_SHARDS = "16", OUTBOX_REGION = "eu-west-1", OUTBOX_DEFAULT_HOME_REGION = "eu-west-1" }
    error_message = "The recovery function gets OUTBOX_DEPLOYMENT = prefix, the key names and the home regions (modules/outbox adds OUTBOX_TABLE_NAME)."
  }
}

# One plan for 4 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "defaults_function_mapping_failure_queue_least_privilege_and_dashboard" {
  command = plan

  # function_and_mapping
  assert {
    condition     = local.function_settings.timeouts.recovery == 60 && local.function_settings.reserved_concurrency.recovery == null && local.function_settings.memory_size == 256
    error_message = "The recovery function: 60 s, unreserved, 256 MB."
  }
  assert {
    condition     = local.recovery_mapping == { batch_size = 10, function_response_types = ["ReportBatchItemFailures"] }
    error_message = "The SQS mapping on the failure queue takes 10 records at a time and reports partial batch failures."
  }

  # failure_queue_redrives_after_5_receives_by_default:
  # The orders example's queues have their own setting (consumer_max_receive_count, 10); this
  # one stays the failure queue's, 5.
  assert {
    condition     = local.queue_settings.max_receive_count == 5
    error_message = "The failure queue redrives after 5 receives by default."
  }

  # least_privilege
  assert {
    condition     = sort([for s in local.policies.recovery.Statement : s.Sid]) == sort(["ReadOutboxStream", "AdoptIntoSweepIndex", "CheckOutboxTable", "ConsumeStreamFailures", "WriteOwnLogs"])
    error_message = "The recovery role reads the stream, adopts items, checks the table, consumes the failure queue and writes its logs; nothing else (no KMS without a key)."
  }
  assert {
    condition = [for s in local.policies.recovery.Statement : s if s.Sid == "CheckOutboxTable"][0] == {
      Sid = "CheckOutboxTable", Effect = "Allow", Action = ["dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive"], Resource = local.r.outbox_table_arn
    }
    error_message = "The check of the table before work: DescribeTable and DescribeTimeToLive on the table's ARN only."
  }
  assert {
    condition = [for s in local.policies.recovery.Statement : s if s.Sid == "ReadOutboxStream"][0] == {
      Sid      = "ReadOutboxStream"
      Effect   = "Allow"
      Action   = ["dynamodb:GetRecords", "dynamodb:GetShardIterator"]
      Resource = local.r.outbox_stream_arn
    }
    error_message = "GetShardIterator and GetRecords on the table's stream ARN only (the record names the shard: no DescribeStream)."
  }
  assert {
    condition = [for s in local.policies.recovery.Statement : s if s.Sid == "AdoptIntoSweepIndex"][0] == {
      Sid = "AdoptIntoSweepIndex", Effect = "Allow", Action = "dynamodb:UpdateItem", Resource = local.r.outbox_table_arn
    }
    error_message = "UpdateItem on the outbox table only."
  }
  assert {
    condition = [for s in local.policies.recovery.Statement : s if s.Sid == "ConsumeStreamFailures"][0] == {
      Sid      = "ConsumeStreamFailures"
      Effect   = "Allow"
      Action   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
      Resource = local.r.stream_failures_queue_arn
    }
    error_message = "Receive, delete and get attributes (what its SQS mapping calls) on the failure queue only."
  }
  assert {
    condition     = [for s in local.policies.recovery.Statement : s.Resource if s.Sid == "WriteOwnLogs"][0] == "${local.r.log_group_arns.recovery}:*"
    error_message = "The recovery function writes only to its own log group."
  }
  assert {
    condition     = length(local.policy_json) == 3 && local.policy_json.recovery == jsonencode(local.policies.recovery)
    error_message = "Three functions, three policies."
  }

  # dashboard
  assert {
    condition = length([for w in local.dashboard.widgets : w if(
      contains(w.properties.metrics, ["DynamoDbOutbox", "RecoveredFromStream", "Service", "outbox"])
      && contains(w.properties.metrics, ["DynamoDbOutbox", "RecoveryRangeLost", "Service", "outbox"])
      && contains(w.properties.metrics, ["AWS/SQS", "NumberOfMessagesSent", "QueueName", "outbox-stream-failures"])
    )]) == 1
    error_message = "One widget shows the discards with RecoveredFromStream and RecoveryRangeLost."
  }
  assert {
    condition = length(setsubtract([
      ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "outbox-stream-failures-dlq"],
      ["AWS/Lambda", "Errors", "FunctionName", "outbox-recovery"],
      ["AWS/Lambda", "Duration", "FunctionName", "outbox-recovery"],
      ["AWS/Lambda", "Throttles", "FunctionName", "outbox-recovery"],
    ], concat([for w in local.dashboard.widgets : w.properties.metrics]...))) == 0
    error_message = "The dashboard shows the new DLQ's depth and the recovery function's errors, duration and throttles."
  }
}

run "failure_queue_visibility_and_redrive" {
  command = plan
  variables {
    max_receive_count = 3
  }
  assert {
    condition     = local.queue_settings.stream_failures_visibility >= 6 * local.function_settings.timeouts.recovery && local.queue_settings.stream_failures_visibility == 360
    error_message = "The failure queue's visibility timeout is 6 x the recovery function's timeout."
  }
  assert {
    condition     = local.queue_settings.max_receive_count == 3
    error_message = "The failure queue redrives after max_receive_count receives."
  }
}

run "kms_key" {
  command = plan
  variables {
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }
  assert {
    condition = [for s in local.policies.recovery.Statement : s if s.Sid == "UseKmsKey"] == [{
      Sid      = "UseKmsKey"
      Effect   = "Allow"
      Action   = ["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"]
      Resource = var.kms_key_arn
    }]
    error_message = "With a KMS key (encrypted stream and queue) the recovery function may use that key, and only that key."
  }
}

run "artifact_is_checked" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/arm64"
  }
  assert {
    condition     = local.artifacts.recovery == { zip = "./tests/artifacts/arm64/outbox-recovery/bootstrap.zip", architecture = "arm64" }
    error_message = "The module deploys outbox-recovery/bootstrap.zip, its architecture read from the ELF header."
  }
}

run "artifact_missing" {
  command = plan
  variables {
    lambda_asset_dir = "./tests/artifacts/no-recovery"
  }
  expect_failures = [aws_lambda_function.this]
  assert {
    condition = local.artifact_problems == [
      "./tests/artifacts/no-recovery/outbox-recovery/bootstrap.zip not found. Build it with `cargo lambda build --release --arm64` and then `cargo lambda build --release --arm64 --output-format zip` at the repository root (the second zips the first's binary), or set architecture to the one you built.",
    ]
    error_message = "A build without outbox-recovery (an older scripts/package) is refused, naming the file."
  }
}
