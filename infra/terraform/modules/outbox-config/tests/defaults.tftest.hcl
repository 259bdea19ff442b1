# Defaults: names, table shape and mapping settings agree with infra/CONTRACT.md.

variables {
  region = "eu-west-1"
}

run "names_are_prefixed" {
  command = apply

  variables {
    prefix = "shop"
  }

  assert {
    condition     = output.names.outbox_table == "shop-table" && output.names.publisher == "shop-publisher" && output.names.sweeper == "shop-sweeper" && output.names.recovery == "shop-recovery"
    error_message = "Names must be <prefix>-table, <prefix>-publisher, <prefix>-sweeper, <prefix>-recovery."
  }
  assert {
    condition     = alltrue([for n in values(output.names) : startswith(n, "shop-")])
    error_message = "Every physical name must start with the prefix."
  }
  assert {
    condition     = length([for k in keys(output.names) : k if strcontains(k, "orders") || strcontains(k, "consumer") || strcontains(k, "fifo")]) == 0
    error_message = "The module names only the outbox's own resources: nothing of the orders example."
  }
}

run "table_shape_follows_the_contract" {
  command = apply

  assert {
    condition     = output.outbox_table.hash_key == "PK" && output.outbox_table.range_key == "SK"
    error_message = "The outbox table keys are PK (hash) and SK (range)."
  }
  assert {
    condition     = output.outbox_table.stream_view_type == "NEW_IMAGE" && output.outbox_table.ttl_attribute == "ExpiresAt"
    error_message = "The outbox table streams NEW_IMAGE and expires on ExpiresAt."
  }
  assert {
    condition = output.outbox_table.sweep_index == {
      name            = "OutboxSweepIndex"
      hash_key        = "SweepShard"
      range_key       = "SweepDueAt"
      projection_type = "KEYS_ONLY"
    }
    error_message = "The sweeper index is OutboxSweepIndex: SweepShard (hash), SweepDueAt (range), KEYS_ONLY."
  }
  assert {
    condition     = contains(output.outbox_table.attributes, { name = "SweepDueAt", type = "N" }) && contains(output.outbox_table.attributes, { name = "SweepShard", type = "S" })
    error_message = "SweepShard is a string and SweepDueAt a number."
  }
}

run "stream_filter_is_the_shared_file" {
  command = apply

  assert {
    condition     = output.stream_filter_file == jsondecode(file("${path.module}/../../../stream-filter.json"))
    error_message = "The base of the stream filter must be infra/stream-filter.json, unchanged."
  }
  assert {
    condition     = jsondecode(output.stream_filter.Filters[0].Pattern).eventName == ["INSERT"]
    error_message = "The filter must select INSERT events only."
  }
  assert {
    condition     = jsondecode(output.stream_filter.Filters[0].Pattern).dynamodb.NewImage.Status.S == ["PENDING"]
    error_message = "The filter must select PENDING items only."
  }
}

run "stream_mapping_defaults" {
  command = apply

  assert {
    condition = output.stream_mapping == {
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
    condition     = output.functions.runtime == "provided.al2023" && output.functions.architectures == ["arm64"] && output.functions.handler == "bootstrap"
    error_message = "Functions run the cargo lambda bootstrap on provided.al2023, arm64 by default."
  }
  assert {
    condition     = output.sweep_schedule == "rate(1 minute)"
    error_message = "The sweeper runs every minute by default."
  }
}

run "environment_defaults" {
  command = apply

  assert {
    condition = output.sweeper_environment == {
      OUTBOX_TTL_DAYS             = "7"
      OUTBOX_DEPLOYMENT           = "outbox"
      OUTBOX_MAX_ATTEMPTS         = "8"
      OUTBOX_SWEEP_GRACE_SECONDS  = "60"
      OUTBOX_SWEEP_PERIOD_SECONDS = "60"
      OUTBOX_SWEEP_SCAN_MODE      = "backstop"
      OUTBOX_PARTITION_KEY        = "PK"
      OUTBOX_SORT_KEY             = "SK"
      OUTBOX_TTL_ATTRIBUTE        = "ExpiresAt"
      OUTBOX_SWEEP_SHARDS         = "16"
      OUTBOX_REGION               = "eu-west-1"
      OUTBOX_DEFAULT_HOME_REGION  = "eu-west-1"
    }
    error_message = "Sweeper defaults: TTL 7 days, 8 attempts, 60 s grace, a 60 s schedule, the backstop scan, the default key names and shard count (always set)."
  }
  assert {
    condition     = output.publisher_environment == { OUTBOX_TTL_DAYS = "7", OUTBOX_DEPLOYMENT = "outbox", OUTBOX_PARTITION_KEY = "PK", OUTBOX_SORT_KEY = "SK", OUTBOX_TTL_ATTRIBUTE = "ExpiresAt", OUTBOX_SWEEP_SHARDS = "16", OUTBOX_REGION = "eu-west-1", OUTBOX_DEFAULT_HOME_REGION = "eu-west-1" }
    error_message = "Publisher defaults: TTL 7 days, no default destination, the default key names and shard count (always set)."
  }
  assert {
    condition     = output.policies == null
    error_message = "Without resources there are no policies."
  }
}

run "parameters_reach_the_settings" {
  command = apply

  variables {
    batch_size                    = 25
    stream_retry_attempts         = 2
    stream_max_record_age_seconds = 600
    max_attempts                  = 4
    ttl_days                      = 3
    sweep_rate_minutes            = 5
    sweep_scan_mode               = true
    architecture                  = "x86_64"
    default_destination           = "arn:aws:sns:eu-west-1:123456789012:catch-all"
  }

  assert {
    condition     = output.stream_mapping.batch_size == 25 && output.stream_mapping.maximum_retry_attempts == 2 && output.stream_mapping.maximum_record_age_in_seconds == 600
    error_message = "batch_size, stream_retry_attempts and stream_max_record_age_seconds must reach the mapping."
  }
  assert {
    condition     = output.sweeper_environment.OUTBOX_MAX_ATTEMPTS == "4" && output.sweeper_environment.OUTBOX_TTL_DAYS == "3" && output.sweeper_environment.OUTBOX_SWEEP_SCAN_MODE == "on"
    error_message = "max_attempts, ttl_days and sweep_scan_mode must reach the sweeper environment."
  }
  assert {
    condition     = output.publisher_environment.OUTBOX_DEFAULT_DESTINATION == "arn:aws:sns:eu-west-1:123456789012:catch-all"
    error_message = "default_destination must reach the publisher environment."
  }
  assert {
    condition     = output.sweep_schedule == "rate(5 minutes)" && output.sweeper_environment.OUTBOX_SWEEP_PERIOD_SECONDS == "300" && output.functions.architectures == ["x86_64"]
    error_message = "sweep_rate_minutes (the schedule, and the period the sweeper times FIFO republishes by) and architecture must be applied."
  }
}

run "queues_are_1_mib_unless_configured" {
  command = apply
  assert {
    condition     = output.queue_settings.max_message_size == 1048576
    error_message = "Every queue sets MaximumMessageSize explicitly, 1 MiB by default (the AWS provider would otherwise send 262144)."
  }
}

run "queue_size_setting" {
  command = apply
  variables {
    max_message_bytes = 262144
  }
  assert {
    condition     = output.queue_settings.max_message_size == 262144
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

run "tables_are_protected_by_default" {
  command = apply
  assert {
    condition     = output.tables.deletion_protection == true
    error_message = "Deletion protection is on by default."
  }
}

run "deletion_protection_can_be_turned_off" {
  command = apply
  variables {
    deletion_protection = false
  }
  assert {
    condition     = output.tables.deletion_protection == false
    error_message = "A throwaway deployment can turn deletion protection off (terraform destroy then works)."
  }
}
