# The module is the outbox and nothing else (issue 21): what it plans for a user with their
# own table and one route, the key names reaching the table and the functions, the
# producer policy, and the checks of an existing table. Mocked provider:
# tests/mocks.

mock_provider "aws" {
  source = "./tests/mocks"
}

variables {
  # Only the outbox's three functions are built: the orders consumer's artifact is not needed.
  lambda_asset_dir = "tests/artifacts/outbox-only"
  existing_table = {
    table_name = "app"
    stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000"
  }
  routes = { orders = "https://sqs.eu-west-1.amazonaws.com/123456789012/app-orders" }
}

run "a_users_table_and_one_route_get_the_outbox_only" {
  command = apply
  assert {
    condition = (
      length(aws_dynamodb_table.outbox) == 0
      && toset(keys(aws_lambda_function.this)) == toset(["publisher", "recovery", "sweeper"])
      && toset(keys(aws_iam_role.function)) == toset(["publisher", "recovery", "sweeper"])
      && toset(keys(aws_iam_role_policy.function)) == toset(["publisher", "recovery", "sweeper"])
      && toset(keys(aws_cloudwatch_log_group.function)) == toset(["publisher", "recovery", "sweeper"])
      && toset(keys(merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination))) == toset(["outbox_dlq", "stream_failures", "stream_failures_dlq"])
      && toset(keys(aws_sqs_queue_policy.tls_only)) == toset(["outbox_dlq", "stream_failures", "stream_failures_dlq"])
      && length(aws_cloudwatch_metric_alarm.this) == 0
      && length(aws_s3_bucket.large_payloads) == 0
      && length(aws_iam_policy.producer) == 1
    )
    error_message = "An existing table and one route: three functions with their roles, policies and log groups, the outbox's three queues, the producer policy -- no table, no alarms without a topic, no bucket without large_payloads."
  }
  assert {
    condition = !anytrue(flatten([
      [for f in aws_lambda_function.this : strcontains(f.function_name, "orders")],
      [for q in merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination) : strcontains(q.name, "orders")],
      [for a in aws_cloudwatch_metric_alarm.this : strcontains(a.alarm_name, "Consumer") || strcontains(a.alarm_name, "OrdersEvents")],
      [strcontains(aws_cloudwatch_dashboard.outbox.dashboard_body, "orders")],
    ]))
    error_message = "Nothing of the orders example: no orders consumer, orders queues, their alarms or dashboard lines."
  }
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : jsondecode(aws_lambda_function.this[fn].environment[0].variables.OUTBOX_ROUTES) == {
      orders = "https://sqs.eu-west-1.amazonaws.com/123456789012/app-orders"
    }])
    error_message = "OUTBOX_ROUTES is the user's one route: a topic named orders goes to the user's queue."
  }
  assert {
    condition = [for s in jsondecode(aws_iam_role_policy.function["publisher"].policy).Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0] == [
      "arn:aws:sqs:eu-west-1:123456789012:app-orders", aws_sqs_queue.dead_letter["outbox_dlq"].arn,
    ]
    error_message = "The publisher sends to the user's queue and the outbox DLQ only."
  }
  assert {
    condition = (
      output.table_name == "app" && output.table_arn == "arn:aws:dynamodb:eu-west-1:123456789012:table/app"
      && output.stream_arn == var.existing_table.stream_arn
      && output.dlq_url == aws_sqs_queue.dead_letter["outbox_dlq"].url && output.dlq_arn == aws_sqs_queue.dead_letter["outbox_dlq"].arn
      && output.publisher_role_arn == aws_iam_role.function["publisher"].arn
      && output.sweeper_role_arn == aws_iam_role.function["sweeper"].arn
      && output.recovery_role_arn == aws_iam_role.function["recovery"].arn
      && output.producer_policy_arn == "arn:aws:iam::123456789012:policy/outbox-producer"
      && output.large_payload_bucket_name == null
    )
    error_message = "The outputs name the attached table, its stream, the DLQ, each role and the producer policy; no bucket."
  }
}

# Counts the planned resources of the module (mocked provider): the plain configuration above
# and the same with the two optional parts on.
run "a_topic_adds_the_15_alarms_and_large_payloads_the_6_bucket_resources" {
  command = plan
  variables {
    large_payloads = true
    alarms         = { topic_arn = "arn:aws:sns:eu-west-1:123456789012:ops" }
  }
  assert {
    condition = (
      length(aws_cloudwatch_metric_alarm.this) == 15
      && alltrue([for a in aws_cloudwatch_metric_alarm.this : a.alarm_actions == toset([var.alarms.topic_arn])])
      && length(concat(
        aws_s3_bucket.large_payloads, aws_s3_bucket_public_access_block.large_payloads, aws_s3_bucket_ownership_controls.large_payloads,
        aws_s3_bucket_server_side_encryption_configuration.large_payloads, aws_s3_bucket_lifecycle_configuration.large_payloads,
        aws_s3_bucket_policy.large_payloads_tls_only,
      )) == 6
    )
    error_message = "alarms: the 15 alarms, each notifying it; large_payloads: the bucket with its access block, ownership, encryption, lifecycle and policy."
  }
}

run "the_producer_policy_grants_writing_outbox_items_and_nothing_else" {
  command = apply
  variables {
    large_payloads = true
  }
  assert {
    condition = jsondecode(output.producer_policy_json) == {
      Version = "2012-10-17"
      Statement = [
        { Sid = "WriteOutboxMessages", Effect = "Allow", Action = ["dynamodb:GetItem", "dynamodb:PutItem"], Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/app" },
        { Sid = "PutLargePayloads", Effect = "Allow", Action = "s3:PutObject", Resource = "arn:aws:s3:::outbox-payloads-20240101/outbox/*" },
      ]
    }
    error_message = "PutItem and GetItem on the table and PutObject under outbox/ of the bucket; nothing else."
  }
  assert {
    condition     = aws_iam_policy.producer[0].name == "outbox-producer" && aws_iam_policy.producer[0].policy == output.producer_policy_json
    error_message = "The managed policy <prefix>-producer holds the producer policy."
  }
}

run "the_producer_policy_with_a_kms_key_and_no_bucket" {
  command = apply
  variables {
    large_payloads         = false
    kms_key_arn            = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    create_producer_policy = false
  }
  assert {
    condition = jsondecode(output.producer_policy_json).Statement == [
      { Sid = "WriteOutboxMessages", Effect = "Allow", Action = ["dynamodb:GetItem", "dynamodb:PutItem"], Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/app" },
      { Sid = "UseOutboxKey", Effect = "Allow", Action = ["kms:Decrypt", "kms:GenerateDataKey"], Resource = var.kms_key_arn },
    ]
    error_message = "No bucket: no S3; a KMS key: GenerateDataKey and Decrypt on it."
  }
  assert {
    condition     = length(aws_iam_policy.producer) == 0 && output.producer_policy_arn == null
    error_message = "create_producer_policy = false: the JSON only, no managed policy."
  }
}

run "key_names_reach_the_created_table_and_the_functions" {
  command = apply
  variables {
    existing_table     = null
    partition_key_name = "pk"
    sort_key_name      = "sk"
    ttl_attribute_name = "expires_at"
  }
  assert {
    condition = (
      aws_dynamodb_table.outbox[0].hash_key == "pk" && aws_dynamodb_table.outbox[0].range_key == "sk"
      && one(aws_dynamodb_table.outbox[0].ttl).attribute_name == "expires_at"
      && toset([for a in aws_dynamodb_table.outbox[0].attribute : "${a.name}:${a.type}"]) == toset(["pk:S", "sk:S", "SweepShard:S", "SweepDueAt:N"])
    )
    error_message = "A created table is keyed pk/sk (strings) and expires items on expires_at."
  }
  assert {
    condition = alltrue([for f in aws_lambda_function.this : (
      f.environment[0].variables.OUTBOX_PARTITION_KEY == "pk"
      && f.environment[0].variables.OUTBOX_SORT_KEY == "sk"
      && f.environment[0].variables.OUTBOX_TTL_ATTRIBUTE == "expires_at"
    )])
    error_message = "The publisher, the sweeper and the recovery function get the key names."
  }
}

run "the_shard_count_and_the_parallelization_factor_reach_the_functions_and_the_mapping" {
  command = apply
  variables {
    sweep_shards           = 64
    sweep_shards_previous  = 16
    parallelization_factor = 3
  }
  assert {
    condition = alltrue([for f in aws_lambda_function.this : (
      f.environment[0].variables.OUTBOX_SWEEP_SHARDS == "64" && f.environment[0].variables.OUTBOX_SWEEP_SHARDS_PREVIOUS == "16"
    )])
    error_message = "The publisher, the sweeper and the recovery function read the index under 64 shards and the previous 16."
  }
  assert {
    condition     = aws_lambda_event_source_mapping.publisher.parallelization_factor == 3
    error_message = "The publisher's stream mapping runs 3 batches per shard."
  }
  assert {
    condition     = output.key_names.environment.OUTBOX_SWEEP_SHARDS == "64" && output.key_names.sweep_shards_previous == 16
    error_message = "The key_names output gives producers the same layout."
  }
}

run "default_key_names_are_always_set" {
  command = plan
  assert {
    condition = alltrue([for f in aws_lambda_function.this : (
      f.environment[0].variables.OUTBOX_PARTITION_KEY == "PK" && f.environment[0].variables.OUTBOX_SORT_KEY == "SK" && f.environment[0].variables.OUTBOX_TTL_ATTRIBUTE == "ExpiresAt"
      && f.environment[0].variables.OUTBOX_SWEEP_SHARDS == "16" && !contains(keys(f.environment[0].variables), "OUTBOX_SWEEP_SHARDS_PREVIOUS")
    )])
    error_message = "The defaults PK/SK/ExpiresAt are set explicitly on every function."
  }
}

# The checks an existing table gets at plan (the key names' own: key_names.tftest.hcl).
run "an_existing_table_without_its_stream_arn" {
  command = plan
  variables {
    existing_table = { table_name = "app", stream_arn = "" }
  }
  expect_failures = [var.existing_table]
}

run "an_existing_table_given_by_its_arn" {
  command = plan
  variables {
    existing_table = {
      table_name = "arn:aws:dynamodb:eu-west-1:123456789012:table/app"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  expect_failures = [var.existing_table]
}
