# The module against the deployment's contract (infra/contract/settings.json), which the CDK
# construct is checked against too (infra/cdk/test/contract.test.ts): with the default settings,
# each setting's environment variable in exactly the functions it names, with its default value;
# each role's actions; each alarm's metric and evaluation. variables.tf is generated from the
# same file (infra/contract/contract.py), so defaults and limits are the contract's by construction.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

# One plan for 2 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "defaults_table_mappings_queues_and_schedule_match_the_contract" {
  command = plan
  # The alarms exist only with a topic to notify; nothing else reads it.
  variables {
    alarms = { topic_arn = "arn:aws:sns:eu-west-1:123456789012:ops" }
  }

  # defaults_match_the_contract
  assert {
    condition = length(flatten([for s in jsondecode(file("../../../contract/settings.json")).settings : [
      for fn in ["publisher", "sweeper", "recovery"] : fn
      if contains(s.env.functions, fn) ? lookup(local.environment[fn], s.env.name, null) != try(s.env.default, tostring(s.default)) : contains(keys(local.environment[fn]), s.env.name)
    ] if can(s.env.name) && (can(s.env.default) || (try(s.default, null) != null && !can(s.env.value)))])) == 0
    error_message = "Each setting's variable, in exactly its functions, with its default: ${jsonencode({ for fn, e in local.environment : fn => e })}"
  }
  assert {
    condition = alltrue([for fn, f in jsondecode(file("../../../contract/settings.json")).functions :
      sort(distinct(flatten([for s in local.policies[fn].Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) == sort(f.iam_default)
    ])
    error_message = "Each role's actions are the contract's, no more, no fewer: ${jsonencode({ for fn, p in local.policies : fn => sort(distinct(flatten([for s in p.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) })}"
  }
  assert {
    condition = alltrue([for fn, f in jsondecode(file("../../../contract/settings.json")).functions :
      local.function_settings.timeouts[fn] == f.timeout_seconds && local.function_settings.memory_size == f.memory_mb && local.binaries[fn] == f.binary
    ])
    error_message = "Each function's binary, timeout and memory are the contract's."
  }
  assert {
    condition     = sort(keys(aws_cloudwatch_metric_alarm.this)) == sort(keys(jsondecode(file("../../../contract/settings.json")).alarms))
    error_message = "The alarms are the contract's, no more, no fewer: ${jsonencode(sort(keys(aws_cloudwatch_metric_alarm.this)))}"
  }
  assert {
    condition = alltrue([for k, a in jsondecode(file("../../../contract/settings.json")).alarms : (
      local.alarms[k].namespace == a.namespace && local.alarms[k].metric_name == a.metric && local.alarms[k].statistic == a.statistic
      && local.alarms[k].period == try(tonumber(a.period), 300) && local.alarms[k].evaluation_periods == a.evaluation_periods
      && local.alarms[k].datapoints_to_alarm == a.datapoints_to_alarm && local.alarms[k].treat_missing_data == a.missing_data
      && local.alarms[k].threshold == try(tonumber(a.threshold), lookup({ iterator_age_threshold_ms = var.iterator_age_threshold_ms, oldest_pending_threshold_seconds = var.oldest_pending_threshold_seconds }, a.threshold))
      && local.alarms[k].comparison_operator == "GreaterThanThreshold"
      && join(" ", flatten([for d, v in local.alarms[k].dimensions : [d, v]])) == replace(a.dimension, "<prefix>", var.prefix)
    )])
    error_message = "Each alarm's metric, dimension, statistic, period, evaluation, threshold (above it) and missing data are the contract's."
  }

  # table_mappings_queues_and_schedule_match_the_contract
  assert {
    condition = (
      aws_dynamodb_table.outbox[0].stream_view_type == jsondecode(file("../../../contract/settings.json")).table.stream_view_type
      && one(aws_dynamodb_table.outbox[0].global_secondary_index).name == jsondecode(file("../../../contract/settings.json")).table.sweep_index.name
      && one(aws_dynamodb_table.outbox[0].global_secondary_index).hash_key == jsondecode(file("../../../contract/settings.json")).table.sweep_index.hash_key
      && one(aws_dynamodb_table.outbox[0].global_secondary_index).range_key == jsondecode(file("../../../contract/settings.json")).table.sweep_index.range_key
      && one(aws_dynamodb_table.outbox[0].global_secondary_index).projection_type == jsondecode(file("../../../contract/settings.json")).table.sweep_index.projection
      && alltrue([for n, ty in jsondecode(file("../../../contract/settings.json")).table.attribute_types : contains([for a in aws_dynamodb_table.outbox[0].attribute : "${a.name} ${a.type}"], "${n} ${ty}")])
    )
    error_message = "The created table's stream view and sweeper index are the contract's."
  }
  assert {
    condition = (
      aws_lambda_event_source_mapping.publisher.starting_position == jsondecode(file("../../../contract/settings.json")).stream_mapping.starting_position_created_table
      && aws_lambda_event_source_mapping.publisher.bisect_batch_on_function_error == jsondecode(file("../../../contract/settings.json")).stream_mapping.bisect_batch_on_function_error
      && tolist(aws_lambda_event_source_mapping.publisher.function_response_types) == tolist(jsondecode(file("../../../contract/settings.json")).stream_mapping.function_response_types)
      && aws_lambda_event_source_mapping.recovery.batch_size == jsondecode(file("../../../contract/settings.json")).recovery_mapping.batch_size
      && tolist(aws_lambda_event_source_mapping.recovery.function_response_types) == tolist(jsondecode(file("../../../contract/settings.json")).recovery_mapping.function_response_types)
    )
    error_message = "The stream and recovery mappings are the contract's."
  }
  assert {
    condition = (
      alltrue([for q in merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination) : q.message_retention_seconds == jsondecode(file("../../../contract/settings.json")).queues.retention_days * 86400])
      && aws_sqs_queue.destination["stream_failures"].visibility_timeout_seconds == jsondecode(file("../../../contract/settings.json")).queues.stream_failures_visibility_seconds
    )
    error_message = "Every queue's retention and the failure queue's visibility are the contract's."
  }
  assert {
    condition = (
      aws_lambda_function_event_invoke_config.sweeper.maximum_retry_attempts == jsondecode(file("../../../contract/settings.json")).sweeper_invocation.async_maximum_retry_attempts
      && aws_lambda_function_event_invoke_config.sweeper.maximum_event_age_in_seconds == jsondecode(file("../../../contract/settings.json")).sweeper_invocation.async_maximum_event_age_seconds
      && aws_cloudwatch_event_target.sweep[0].retry_policy[0].maximum_retry_attempts == jsondecode(file("../../../contract/settings.json")).sweeper_invocation.schedule_target_maximum_retry_attempts
      && aws_cloudwatch_event_target.sweep[0].retry_policy[0].maximum_event_age_in_seconds == jsondecode(file("../../../contract/settings.json")).sweeper_invocation.schedule_target_maximum_event_age_seconds
    )
    error_message = "The sweeper's asynchronous invocation and its schedule target give up as the contract says."
  }
}

run "an_existing_table_is_read_from_now_on" {
  command = plan
  variables {
    existing_table = { table_name = "app", stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000" }
  }
  assert {
    condition     = aws_lambda_event_source_mapping.publisher.starting_position == jsondecode(file("../../../contract/settings.json")).stream_mapping.starting_position_existing_table
    error_message = "An existing table's stream is read from the contract's starting position."
  }
}
