# Defaults: names, table shape and mapping settings agree with infra/CONTRACT.md.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}


run "names_are_prefixed" {
  command = plan

  variables {
    prefix = "shop"
  }

  assert {
    condition     = local.names.outbox_table == "shop-table" && local.names.publisher == "shop-publisher" && local.names.sweeper == "shop-sweeper" && local.names.recovery == "shop-recovery"
    error_message = "Names must be <prefix>-table, <prefix>-publisher, <prefix>-sweeper, <prefix>-recovery."
  }
  assert {
    condition     = alltrue([for n in values(local.names) : startswith(n, "shop-")])
    error_message = "Every physical name must start with the prefix."
  }
  assert {
    condition     = length([for k in keys(local.names) : k if strcontains(k, "orders") || strcontains(k, "consumer") || strcontains(k, "fifo")]) == 0
    error_message = "The module names only the outbox's own resources: nothing of the orders example."
  }
}

# One plan for 7 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "defaults_table_filter_mapping_environment_sweeper_queues_protection" {
  command = plan

  # table_shape_follows_the_contract
  assert {
    condition     = local.outbox_table.hash_key == "PK" && local.outbox_table.range_key == "SK"
    error_message = "The outbox table keys are PK (hash) and SK (range)."
  }
  assert {
    condition     = local.outbox_table.stream_view_type == "NEW_IMAGE" && local.outbox_table.ttl_attribute == "ExpiresAt"
    error_message = "The outbox table streams NEW_IMAGE and expires on ExpiresAt."
  }
  assert {
    condition = local.outbox_table.sweep_index == {
      name            = "OutboxSweepIndex"
      hash_key        = "SweepShard"
      range_key       = "SweepDueAt"
      projection_type = "KEYS_ONLY"
    }
    error_message = "The sweeper index is OutboxSweepIndex: SweepShard (hash), SweepDueAt (range), KEYS_ONLY."
  }
  assert {
    condition     = contains(local.outbox_table.attributes, { name = "SweepDueAt", type = "N" }) && contains(local.outbox_table.attributes, { name = "SweepShard", type = "S" })
    error_message = "SweepShard is a string and SweepDueAt a number."
  }

  # stream_filter_is_the_shared_file
  assert {
    condition     = local.stream_filter == jsondecode(file("${path.module}/../../../stream-filter.json"))
    error_message = "The base of the stream filter must be infra/stream-filter.json, unchanged."
  }
  assert {
    condition     = jsondecode(local.home_stream_filter.Filters[0].Pattern).eventName == ["INSERT"]
    error_message = "The filter must select INSERT events only."
  }
  assert {
    condition     = jsondecode(local.home_stream_filter.Filters[0].Pattern).dynamodb.NewImage.Status.S == ["PENDING"]
    error_message = "The filter must select PENDING items only."
  }

  # stream_mapping_defaults
  assert {
    condition = local.stream_mapping == {
      starting_position              = "TRIM_HORIZON"
      batch_size                     = 100
      maximum_retry_attempts         = 5
      maximum_record_age_in_seconds  = 3600
      bisect_batch_on_function_error = true
      function_response_types        = ["ReportBatchItemFailures"]
      parallelization_factor         = 1
    }
    error_message = "Stream mapping: TRIM_HORIZON, batch 100, 5 retries, 1 h max age, bisect, partial batch responses."
  }
  assert {
    condition     = local.function_settings.runtime == "provided.al2023" && local.function_settings.architectures == ["arm64"] && local.function_settings.handler == "bootstrap"
    error_message = "Functions run the cargo lambda bootstrap on provided.al2023, arm64 by default."
  }
  assert {
    condition     = local.sweep_schedule == "rate(1 minute)"
    error_message = "The sweeper runs every minute by default."
  }

  # environment_defaults
  assert {
    condition = local.sweeper_environment == {
      OUTBOX_TTL_DAYS             = "7"
      OUTBOX_DEPLOYMENT           = "outbox"
      OUTBOX_MAX_ATTEMPTS         = "8"
      OUTBOX_SWEEP_GRACE_SECONDS  = "60"
      OUTBOX_SWEEP_PERIOD_SECONDS = "60"
      OUTBOX_SWEEP_SCAN_MODE      = "off"
      OUTBOX_PARTITION_KEY        = "PK"
      OUTBOX_SORT_KEY             = "SK"
      OUTBOX_TTL_ATTRIBUTE        = "ExpiresAt"
      OUTBOX_SWEEP_SHARDS         = "16"
      OUTBOX_REGION               = "eu-west-1"
      OUTBOX_DEFAULT_HOME_REGION  = "eu-west-1"
    }
    error_message = "Sweeper defaults: TTL 7 days, 8 attempts, 60 s grace, a 60 s schedule, no scan, the default key names and shard count (always set)."
  }
  assert {
    condition     = local.publisher_environment == { OUTBOX_TTL_DAYS = "7", OUTBOX_DEPLOYMENT = "outbox", OUTBOX_PARTITION_KEY = "PK", OUTBOX_SORT_KEY = "SK", OUTBOX_TTL_ATTRIBUTE = "ExpiresAt", OUTBOX_SWEEP_SHARDS = "16", OUTBOX_REGION = "eu-west-1", OUTBOX_DEFAULT_HOME_REGION = "eu-west-1" }
    error_message = "Publisher defaults: TTL 7 days, no default destination, the default key names and shard count (always set)."
  }

  # one_sweeper_worker_sweeps_the_whole_index
  assert {
    condition     = length(aws_cloudwatch_event_target.sweep) == 1 && aws_cloudwatch_event_target.sweep[0].input == null && local.function_settings.reserved_concurrency.sweeper == 1
    error_message = "By default one sweeper target, given no share (the whole index), one sweep at a time."
  }

  # queues_are_256_kib_unless_configured
  assert {
    condition     = local.queue_settings.max_message_size == 262144
    error_message = "Every queue sets MaximumMessageSize explicitly, 262144 by default (what hashicorp/aws before 6.8.0 accepts)."
  }

  # tables_are_protected_by_default
  assert {
    condition     = local.tables.deletion_protection == true
    error_message = "Deletion protection is on by default."
  }
}

run "parameters_reach_the_settings" {
  command = plan

  variables {
    batch_size                    = 25
    stream_retry_attempts         = 2
    stream_max_record_age_seconds = 600
    max_attempts                  = 4
    ttl_days                      = 3
    sweep_rate_minutes            = 5
    sweep_scan_mode               = true
    architecture                  = "x86_64"
    lambda_asset_dir              = "tests/artifacts/x86_64"
    default_destination           = "arn:aws:sns:eu-west-1:123456789012:catch-all"
  }

  assert {
    condition     = local.stream_mapping.batch_size == 25 && local.stream_mapping.maximum_retry_attempts == 2 && local.stream_mapping.maximum_record_age_in_seconds == 600
    error_message = "batch_size, stream_retry_attempts and stream_max_record_age_seconds must reach the mapping."
  }
  assert {
    condition     = local.sweeper_environment.OUTBOX_MAX_ATTEMPTS == "4" && local.sweeper_environment.OUTBOX_TTL_DAYS == "3" && local.sweeper_environment.OUTBOX_SWEEP_SCAN_MODE == "on"
    error_message = "max_attempts, ttl_days and sweep_scan_mode must reach the sweeper environment."
  }
  assert {
    condition     = local.publisher_environment.OUTBOX_DEFAULT_DESTINATION == "arn:aws:sns:eu-west-1:123456789012:catch-all"
    error_message = "default_destination must reach the publisher environment."
  }
  assert {
    condition     = local.sweep_schedule == "rate(5 minutes)" && local.sweeper_environment.OUTBOX_SWEEP_PERIOD_SECONDS == "300" && local.function_settings.architectures == ["x86_64"]
    error_message = "sweep_rate_minutes (the schedule, and the period the sweeper times FIFO republishes by) and architecture must be applied."
  }
}

run "each_sweeper_worker_is_given_its_share_and_the_concurrency_to_run" {
  command = plan

  variables {
    sweep_workers = 3
  }

  assert {
    condition = [for t in aws_cloudwatch_event_target.sweep : jsondecode(t.input)] == [
      { sweepGroup = 0, sweepGroups = 3 }, { sweepGroup = 1, sweepGroups = 3 }, { sweepGroup = 2, sweepGroups = 3 },
    ]
    error_message = "Each of the sweep_workers targets names its share of the index, as the sweeper reads it (SweepGroup::of_event)."
  }
  assert {
    condition     = local.function_settings.reserved_concurrency.sweeper == 3
    error_message = "The sweeper's reserved concurrency must be raised to the workers of one tick."
  }
}

run "sweep_workers_beyond_one_rule_are_refused" {
  command = plan

  variables {
    sweep_workers = 6
  }

  expect_failures = [var.sweep_workers]
}

run "queue_size_setting" {
  command = plan
  variables {
    max_message_bytes = 131072
  }
  assert {
    condition     = local.queue_settings.max_message_size == 131072
    error_message = "max_message_bytes sets every queue's MaximumMessageSize."
  }
}

run "queue_size_sqs_refuses" {
  command = plan
  variables {
    max_message_bytes = 1048577
  }
  expect_failures = [var.max_message_bytes]
}

run "deletion_protection_can_be_turned_off" {
  command = plan
  variables {
    deletion_protection = false
  }
  assert {
    condition     = local.tables.deletion_protection == false
    error_message = "A throwaway deployment can turn deletion protection off (terraform destroy then works)."
  }
}
