# Operating the deployment: how the sweeper is invoked, its concurrency, the alarms
# that see a dead or failing function, the deployment's metric dimension, the dashboard.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}


# One plan for 5 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "defaults_sweeper_invocation_and_concurrency_and_the_dashboards_metrics" {
  command = plan

  # sweeper_async_invocations_are_not_retried
  assert {
    condition     = local.sweeper_async_invoke == { maximum_retry_attempts = 0, maximum_event_age_in_seconds = 120 }
    error_message = "An asynchronous sweep is never retried and is dropped after 2 minutes: the schedule sends the next one."
  }
  assert {
    condition     = local.sweep_target_retry == { maximum_retry_attempts = 0, maximum_event_age_in_seconds = 60 }
    error_message = "The schedule target gives up at once too."
  }

  # sweeper_reserves_one_by_default
  assert {
    condition     = local.function_settings.reserved_concurrency == { publisher = null, sweeper = 1, recovery = null }
    error_message = "Only the sweeper reserves concurrency, 1 by default."
  }

  # dashboard_shows_sweep_errors
  assert {
    condition = contains(
      [for w in local.dashboard.widgets : w.properties.metrics if w.properties.title == "Outbox messages (sum per 5 minutes)"][0],
      ["DynamoDbOutbox", "SweepErrors", "Service", "outbox"],
    )
    error_message = "The outbox messages widget shows SweepErrors (store requests a sweep could not make), per deployment."
  }

  # status_read_failed_and_recovery_range_unfinished_are_on_the_dashboard_not_alarmed:
  # StatusReadFailed (a redelivered batch reported for retry: Lambda redelivers it; a lasting
  # cause shows as AccessDenied, PublisherIteratorAge or StreamDiscards) and
  # RecoveryRangeUnfinished (a range read again on the retry; a lasting cause ends on the
  # recovery DLQ, RecoveryDlqNotEmpty) need no one: on the dashboard, not alarmed.
  assert {
    condition     = length([for a in values(local.alarms) : a if contains(["StatusReadFailed", "RecoveryRangeUnfinished", "AlreadySettledSkipped"], a.metric_name)]) == 0
    error_message = "No alarm on StatusReadFailed, RecoveryRangeUnfinished or AlreadySettledSkipped: each repairs itself, and a lasting cause has its own alarm."
  }
  assert {
    condition = length(setsubtract([
      ["DynamoDbOutbox", "AccessDenied", "Service", "outbox"],
      ["DynamoDbOutbox", "FenceUnread", "Service", "outbox"],
      ["DynamoDbOutbox", "StatusReadFailed", "Service", "outbox"],
      ["DynamoDbOutbox", "RecoveryRangeUnfinished", "Service", "outbox"],
      ["DynamoDbOutbox", "AlreadySettledSkipped", "Service", "outbox"],
    ], concat([for w in local.dashboard.widgets : w.properties.metrics]...))) == 0
    error_message = "The dashboard shows AccessDenied, FenceUnread, StatusReadFailed, RecoveryRangeUnfinished and AlreadySettledSkipped."
  }
  assert {
    condition = contains(
      [for w in local.dashboard.widgets : w.properties.metrics if w.properties.title == "Stream discards and their recovery (sum per 5 minutes)"][0],
      ["DynamoDbOutbox", "RecoveryRangeUnfinished", "Service", "outbox"],
    )
    error_message = "RecoveryRangeUnfinished is beside the discards and their recovery."
  }

  # fence_offload_and_scan_recovery_metrics_are_on_the_dashboard:
  # The functions' cost and hand-off counts (no alarm: none is a fault by itself): the
  # fence's deferrals and reads and the S3 offloads in one widget, the scan's recoveries
  # beside the stream's.
  assert {
    condition = [for w in local.dashboard.widgets : w.properties.metrics if w.properties.title == "FIFO order fence and large payloads (sum per 5 minutes)"] == [[
      ["DynamoDbOutbox", "FenceDeferred", "Service", "outbox"],
      ["DynamoDbOutbox", "FenceReads", "Service", "outbox"],
      ["DynamoDbOutbox", "PayloadsOffloaded", "Service", "outbox"],
    ]]
    error_message = "One widget shows FenceDeferred, FenceReads and PayloadsOffloaded."
  }
  assert {
    condition = contains(
      [for w in local.dashboard.widgets : w.properties.metrics if w.properties.title == "Stream discards and their recovery (sum per 5 minutes)"][0],
      ["DynamoDbOutbox", "RecoveredByScan", "Service", "outbox"],
    )
    error_message = "RecoveredByScan is beside RecoveredFromStream."
  }
  assert {
    condition     = length([for a in values(local.alarms) : a if contains(["FenceDeferred", "FenceReads", "PayloadsOffloaded", "RecoveredByScan"], a.metric_name)]) == 0
    error_message = "No alarm on FenceDeferred, FenceReads, PayloadsOffloaded or RecoveredByScan."
  }
}

run "sweeper_reserved_concurrency_off" {
  command = plan
  variables {
    sweeper_reserved_concurrency = 0
  }
  assert {
    condition     = local.function_settings.reserved_concurrency.sweeper == null
    error_message = "0 means unreserved (accounts with a low concurrency quota)."
  }
}

run "sweeper_reserved_concurrency_null" {
  command = plan
  variables {
    sweeper_reserved_concurrency = null
  }
  assert {
    condition     = local.function_settings.reserved_concurrency.sweeper == null
    error_message = "null means unreserved."
  }
}

run "sweeper_reserved_concurrency_negative" {
  command = plan
  variables {
    sweeper_reserved_concurrency = -1
  }
  expect_failures = [var.sweeper_reserved_concurrency]
}

# One plan for 2 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "the_prefix_reaches_every_function_metric_and_alarm" {
  command = plan
  variables {
    prefix = "shop"
  }

  # every_function_knows_its_deployment
  assert {
    condition = (
      local.publisher_environment.OUTBOX_DEPLOYMENT == "shop"
      && local.sweeper_environment.OUTBOX_DEPLOYMENT == "shop"
      && local.recovery_environment.OUTBOX_DEPLOYMENT == "shop"
    )
    error_message = "OUTBOX_DEPLOYMENT is the prefix, for every function."
  }
  assert {
    condition     = local.metrics.dimensions == { Service = "shop" }
    error_message = "The metrics dimension Service is the deployment's name."
  }
  assert {
    condition = alltrue([for a in values(local.alarms) : a.dimensions == tomap({ Service = "shop" }) if a.namespace == "DynamoDbOutbox"]) && length([
      for a in values(local.alarms) : a if a.namespace == "DynamoDbOutbox"
    ]) == 5
    error_message = "Every alarm on the outbox namespace selects Service = prefix."
  }
  assert {
    condition = alltrue([for w in local.dashboard.widgets : alltrue([
      for m in w.properties.metrics : slice(m, 2, 4) == ["Service", "shop"] if m[0] == "DynamoDbOutbox"
    ])])
    error_message = "Every dashboard metric on the outbox namespace selects Service = prefix."
  }

  # access_denied_and_fence_unread_say_what_to_do:
  # The functions' own signals an operator must act on: any AccessDenied (a role lacks a grant;
  # emitted only when a call is denied, so missing data is no breach) and any FenceUnread (FIFO
  # messages held and charged because the order fence could not read; 0 on every run). Every
  # alarm's metric and evaluation: contract.tftest.hcl.
  assert {
    condition     = strcontains(local.alarms.AccessDenied.description, "docs/iam.md") && strcontains(local.alarms.FenceUnread.description, "FAILED")
    error_message = "Each description says what to do (AccessDenied: the grant, docs/iam.md) or what follows (FenceUnread: FAILED)."
  }
}

run "oldest_pending_period_follows_a_slow_schedule" {
  command = plan
  variables {
    sweep_rate_minutes = 10
  }
  assert {
    condition     = local.alarms.OldestPendingTooOld.period == 600
    error_message = "The period is never shorter than the sweep schedule (else every period without a sweep would breach)."
  }
}

run "dashboard_shows_the_pipeline" {
  command = plan
  variables {
    dashboard_queue_names    = ["outbox-orders-queue-dlq", "outbox-orders-events-dlq.fifo"]
    dashboard_function_names = ["outbox-orders-consumer"]
  }
  assert {
    condition     = local.dashboard.name == "outbox-dashboard"
    error_message = "The dashboard is <prefix>-dashboard."
  }
  assert {
    condition = length(setsubtract([
      ["DynamoDbOutbox", "Published", "Service", "outbox"],
      ["DynamoDbOutbox", "Failed", "Service", "outbox"],
      ["DynamoDbOutbox", "RecoveredBySweeper", "Service", "outbox"],
      ["DynamoDbOutbox", "SweepRetries", "Service", "outbox"],
      ["DynamoDbOutbox", "OldestPendingAgeSeconds", "Service", "outbox"],
      ["AWS/Lambda", "IteratorAge", "FunctionName", "outbox-publisher"],
      ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "outbox-dlq"],
      ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "outbox-stream-failures"],
      ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "outbox-stream-failures-dlq"],
      ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "outbox-orders-queue-dlq"],
      ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "outbox-orders-events-dlq.fifo"],
      ["AWS/Lambda", "Errors", "FunctionName", "outbox-publisher"],
      ["AWS/Lambda", "Errors", "FunctionName", "outbox-sweeper"],
      ["AWS/Lambda", "Errors", "FunctionName", "outbox-orders-consumer"],
      ["AWS/Lambda", "Duration", "FunctionName", "outbox-publisher"],
      ["AWS/Lambda", "Duration", "FunctionName", "outbox-sweeper"],
      ["AWS/Lambda", "Duration", "FunctionName", "outbox-orders-consumer"],
      ["AWS/Lambda", "Errors", "FunctionName", "outbox-recovery"],
      ["AWS/Lambda", "Duration", "FunctionName", "outbox-recovery"],
    ], concat([for w in local.dashboard.widgets : w.properties.metrics]...))) == 0
    error_message = "The dashboard shows the outbox metrics, IteratorAge, every DLQ depth (with the caller's), Errors and Duration of the functions (with the caller's)."
  }
}
