# Three functions, one role each, each with its own log group.
# Code (code.tf): var.function_code's, else target/lambda/<bin>/bootstrap.zip from `cargo lambda
# build --release --arm64 --output-format zip` (var.lambda_asset_dir points at target/lambda),
# checked at plan by modules/artifacts (refused by the precondition on aws_lambda_function.this).

locals {
  fn = local.function_settings
  functions = {
    publisher = {
      name        = local.names.publisher
      binary      = local.binaries.publisher
      description = "Publishes new PENDING outbox messages from the table stream and marks them SENT"
      timeout     = local.fn.timeouts.publisher
    }
    sweeper = {
      name        = local.names.sweeper
      binary      = local.binaries.sweeper
      description = "Recovers outbox messages still PENDING after the grace period; FAILED + DLQ after max attempts"
      timeout     = local.fn.timeouts.sweeper
    }
    recovery = {
      name        = local.names.recovery
      binary      = local.binaries.recovery
      description = "Reads the stream ranges of batches the stream mapping discarded and puts their PENDING items into the sweeper's index"
      timeout     = local.fn.timeouts.recovery
    }
  }
  # Apart from local.functions: OUTBOX_ROUTES needs the policies' inputs, which need the log groups.
  environment = {
    publisher = merge(local.common_environment, local.publisher_environment)
    sweeper   = merge(local.common_environment, local.sweeper_environment)
    recovery  = merge({ OUTBOX_TABLE_NAME = local.outbox_table_name }, local.recovery_environment)
  }
}

resource "aws_cloudwatch_log_group" "function" {
  #checkov:skip=CKV_AWS_338:Operational logs of the functions, not an audit record: their retention is var.log_retention_days (30 by default), a year or more where you need it.
  #checkov:skip=CKV_AWS_158:Log groups use CloudWatch Logs' default encryption at rest; a customer-managed key needs a key policy for the logs service that this module does not own (var.kms_key_arn covers tables and queues).
  for_each = local.functions

  name              = "/aws/lambda/${each.value.name}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

resource "aws_iam_role" "function" {
  for_each = local.functions

  name               = local.role_names[each.key] # <function>-role; on a global table <function>-<region>-role
  description        = "${var.prefix}: execution role of ${each.value.name} (least privilege)"
  assume_role_policy = local.assume_role_policy_json
  tags               = var.tags
}

resource "aws_iam_role_policy" "function" {
  for_each = local.functions

  name   = "least-privilege"
  role   = aws_iam_role.function[each.key].id
  policy = local.policy_json[each.key]
}

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_50:X-Ray tracing would need xray:PutTraceSegments on "*"; the functions emit EMF metrics and structured JSON logs instead.
  #checkov:skip=CKV_AWS_116:Only the sweeper is invoked asynchronously (EventBridge schedule) and it needs no DLQ: a failed or throttled sweep is dropped (no retry, 2-minute event age) and the next scheduled sweep does the same work, so nothing is lost; a dead sweeper shows in the OldestPendingTooOld (missing data breaching) and SweeperErrors alarms. The publisher's stream mapping has its on-failure queue, the recovery function's queue its DLQ.
  #checkov:skip=CKV_AWS_117:The functions call only DynamoDB, SQS, SNS and EventBridge public endpoints over TLS; a VPC would add NAT or endpoints and no protection for these calls.
  #checkov:skip=CKV_AWS_173:Environment variables hold only names, URLs and settings (no secrets); Lambda encrypts them at rest with its service key.
  #checkov:skip=CKV_AWS_272:Code signing needs an AWS Signer profile; the artifact comes from the team's own cargo lambda build, which is the trust boundary here.
  for_each = local.functions

  function_name                  = each.value.name
  description                    = each.value.description
  role                           = aws_iam_role.function[each.key].arn
  package_type                   = local.code[each.key].package_type
  runtime                        = local.code[each.key].package_type == "Zip" ? local.fn.runtime : null # an image has its own
  handler                        = local.code[each.key].package_type == "Zip" ? local.fn.handler : null
  architectures                  = local.fn.architectures
  memory_size                    = local.fn.memory_size
  timeout                        = each.value.timeout
  reserved_concurrent_executions = coalesce(local.function_settings.reserved_concurrency[each.key], -1) # -1: unreserved
  filename                       = local.code[each.key].filename
  source_code_hash               = local.code[each.key].source_code_hash
  s3_bucket                      = local.code[each.key].s3_bucket
  s3_key                         = local.code[each.key].s3_key
  s3_object_version              = local.code[each.key].s3_object_version
  image_uri                      = local.code[each.key].image_uri

  environment {
    variables = local.environment[each.key]
  }

  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.function[each.key].name
  }

  tags = var.tags

  depends_on = [aws_iam_role_policy.function]

  lifecycle {
    # A missing, non-ELF, wrong-architecture or stale artifact (modules/artifacts), or a given
    # zip not there (code.tf), refused at plan.
    precondition {
      condition     = length(local.code_problems) == 0
      error_message = join("\n", local.code_problems)
    }
  }
}

# Publisher: the outbox table stream, filtered by infra/stream-filter.json (verbatim).
resource "aws_lambda_event_source_mapping" "publisher" {
  function_name                  = aws_lambda_function.this["publisher"].arn
  event_source_arn               = local.outbox_stream_arn
  starting_position              = local.stream_mapping.starting_position
  batch_size                     = local.stream_mapping.batch_size
  maximum_retry_attempts         = local.stream_mapping.maximum_retry_attempts
  maximum_record_age_in_seconds  = local.stream_mapping.maximum_record_age_in_seconds
  bisect_batch_on_function_error = local.stream_mapping.bisect_batch_on_function_error
  function_response_types        = local.stream_mapping.function_response_types
  parallelization_factor         = local.stream_mapping.parallelization_factor

  filter_criteria {
    dynamic "filter" {
      for_each = local.home_stream_filter.Filters
      content {
        pattern = filter.value.Pattern
      }
    }
  }

  destination_config {
    on_failure {
      destination_arn = local.all_queues["stream_failures"].arn
    }
  }

  depends_on = [aws_iam_role_policy.function]

  lifecycle {
    # An existing table given whole that does not match the settings, one check each (existing_table.tf).
    precondition {
      condition     = local.table_mismatch.partition_key == null
      error_message = coalesce(local.table_mismatch.partition_key, "-")
    }
    precondition {
      condition     = local.table_mismatch.sort_key == null
      error_message = coalesce(local.table_mismatch.sort_key, "-")
    }
    precondition {
      condition     = local.table_mismatch.key_types == null
      error_message = coalesce(local.table_mismatch.key_types, "-")
    }
    precondition {
      condition     = local.table_mismatch.stream == null
      error_message = coalesce(local.table_mismatch.stream, "-")
    }
    precondition {
      condition     = local.table_mismatch.ttl == null
      error_message = coalesce(local.table_mismatch.ttl, "-")
    }
    precondition {
      condition     = local.table_mismatch.sweep_index == null
      error_message = coalesce(local.table_mismatch.sweep_index, "-")
    }
    precondition {
      condition     = local.stream_filter_ok
      error_message = "The stream filter file must hold {\"Filters\": [{\"Pattern\": \"<JSON object text>\"}, ...]} with 1 to 5 filters."
    }
    precondition {
      condition     = length(local.home_stream_filter.Filters) <= 5 && alltrue([for f in local.home_stream_filter.Filters : length(f.Pattern) <= 4096])
      error_message = "With the region clauses the stream filter has more than 5 filters (every region doubles the file's: its own and the unhomed clause) or a pattern over 4096 characters: shorten stream-filter.json."
    }
  }
}

# Sweeper: EventBridge schedule.
resource "aws_cloudwatch_event_rule" "sweep" {
  name                = local.names.sweep_rule
  description         = "Runs the outbox sweeper"
  schedule_expression = local.sweep_schedule
  tags                = var.tags
}

# One target per worker, each given its share of the index (one worker: no input, the
# whole index).
resource "aws_cloudwatch_event_target" "sweep" {
  count     = local.sweep_workers
  rule      = aws_cloudwatch_event_rule.sweep.name
  target_id = count.index == 0 ? null : "sweep-worker-${count.index}"
  arn       = aws_lambda_function.this["sweeper"].arn
  input     = local.sweep_workers == 1 ? null : jsonencode({ sweepGroup = count.index, sweepGroups = local.sweep_workers })

  retry_policy {
    maximum_retry_attempts       = local.sweep_target_retry.maximum_retry_attempts # the next tick is the retry
    maximum_event_age_in_seconds = local.sweep_target_retry.maximum_event_age_in_seconds
  }
}

# EventBridge invokes the sweeper asynchronously: never retry a failed or throttled sweep
# for hours (Lambda's default); the schedule sends the next one.
moved {
  from = aws_cloudwatch_event_target.sweep
  to   = aws_cloudwatch_event_target.sweep[0]
}

resource "aws_lambda_function_event_invoke_config" "sweeper" {
  function_name                = aws_lambda_function.this["sweeper"].function_name
  maximum_retry_attempts       = local.sweeper_async_invoke.maximum_retry_attempts
  maximum_event_age_in_seconds = local.sweeper_async_invoke.maximum_event_age_in_seconds
}

resource "aws_lambda_permission" "sweep" {
  statement_id  = "AllowEventBridgeSchedule"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this["sweeper"].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.sweep.arn
}

# Recovery: the stream mapping's on-failure records (shard and sequence range only) from
# the failure queue; a range it cannot read for now is reported and retried.
resource "aws_lambda_event_source_mapping" "recovery" {
  function_name           = aws_lambda_function.this["recovery"].arn
  event_source_arn        = local.all_queues["stream_failures"].arn
  batch_size              = local.recovery_mapping.batch_size
  function_response_types = local.recovery_mapping.function_response_types

  depends_on = [aws_iam_role_policy.function]
}
