# Three functions, one role each, each with its own log group.
# Code: target/lambda/<bin>/bootstrap.zip from `cargo lambda build --release --arm64
# --output-format zip` (var.lambda_asset_dir points at target/lambda), checked at plan by
# module.config (see ../outbox-config/artifacts.tf).

locals {
  fn = module.config.functions
  functions = {
    publisher = {
      name        = local.names.publisher
      binary      = module.config.binaries.publisher
      description = "Publishes new PENDING outbox messages from the table stream and marks them SENT"
      timeout     = local.fn.timeouts.publisher
    }
    sweeper = {
      name        = local.names.sweeper
      binary      = module.config.binaries.sweeper
      description = "Recovers outbox messages still PENDING after the grace period; FAILED + DLQ after max attempts"
      timeout     = local.fn.timeouts.sweeper
    }
    recovery = {
      name        = local.names.recovery
      binary      = module.config.binaries.recovery
      description = "Reads the stream ranges of batches the stream mapping discarded and puts their PENDING items into the sweeper's index"
      timeout     = local.fn.timeouts.recovery
    }
  }
  # Apart from local.functions: OUTBOX_ROUTES needs the policies' inputs, which need the log groups.
  environment = {
    publisher = merge(local.common_environment, module.config.publisher_environment)
    sweeper   = merge(local.common_environment, module.config.sweeper_environment)
    recovery  = merge({ OUTBOX_TABLE_NAME = local.outbox_table_name }, module.config.recovery_environment)
  }
}

resource "aws_cloudwatch_log_group" "function" {
  #checkov:skip=CKV_AWS_158:Log groups use CloudWatch Logs' default encryption at rest; a customer-managed key needs a key policy for the logs service that this module does not own (var.kms_key_arn covers tables and queues).
  for_each = local.functions

  name              = "/aws/lambda/${each.value.name}"
  retention_in_days = module.config.log_retention_days
  tags              = var.tags
}

resource "aws_iam_role" "function" {
  for_each = local.functions

  name               = module.config.role_names[each.key] # <function>-role; on a global table <function>-<region>-role
  description        = "${var.prefix}: execution role of ${each.value.name} (least privilege)"
  assume_role_policy = module.config.assume_role_policy_json
  tags               = var.tags
}

resource "aws_iam_role_policy" "function" {
  for_each = local.functions

  name   = "least-privilege"
  role   = aws_iam_role.function[each.key].id
  policy = module.config.policy_json[each.key]
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
  runtime                        = local.fn.runtime
  handler                        = local.fn.handler
  architectures                  = local.fn.architectures
  memory_size                    = local.fn.memory_size
  timeout                        = each.value.timeout
  reserved_concurrent_executions = coalesce(module.config.functions.reserved_concurrency[each.key], -1) # -1: unreserved
  filename                       = module.config.artifacts[each.key].zip
  source_code_hash               = filebase64sha256(module.config.artifacts[each.key].zip)

  environment {
    variables = local.environment[each.key]
  }

  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.function[each.key].name
  }

  tags = var.tags

  depends_on = [aws_iam_role_policy.function]
}

# Publisher: the outbox table stream, filtered by infra/stream-filter.json (verbatim).
resource "aws_lambda_event_source_mapping" "publisher" {
  function_name                  = aws_lambda_function.this["publisher"].arn
  event_source_arn               = local.outbox_stream_arn
  starting_position              = module.config.stream_mapping.starting_position
  batch_size                     = module.config.stream_mapping.batch_size
  maximum_retry_attempts         = module.config.stream_mapping.maximum_retry_attempts
  maximum_record_age_in_seconds  = module.config.stream_mapping.maximum_record_age_in_seconds
  bisect_batch_on_function_error = module.config.stream_mapping.bisect_batch_on_function_error
  function_response_types        = module.config.stream_mapping.function_response_types
  parallelization_factor         = module.config.stream_mapping.parallelization_factor

  filter_criteria {
    dynamic "filter" {
      for_each = module.config.stream_filter.Filters
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
}

# Sweeper: EventBridge schedule.
resource "aws_cloudwatch_event_rule" "sweep" {
  name                = local.names.sweep_rule
  description         = "Runs the outbox sweeper"
  schedule_expression = module.config.sweep_schedule
  tags                = var.tags
}

resource "aws_cloudwatch_event_target" "sweep" {
  rule = aws_cloudwatch_event_rule.sweep.name
  arn  = aws_lambda_function.this["sweeper"].arn

  retry_policy {
    maximum_retry_attempts       = module.config.sweep_target_retry.maximum_retry_attempts # the next tick is the retry
    maximum_event_age_in_seconds = module.config.sweep_target_retry.maximum_event_age_in_seconds
  }
}

# EventBridge invokes the sweeper asynchronously: never retry a failed or throttled sweep
# for hours (Lambda's default); the schedule sends the next one.
resource "aws_lambda_function_event_invoke_config" "sweeper" {
  function_name                = aws_lambda_function.this["sweeper"].function_name
  maximum_retry_attempts       = module.config.sweeper_async_invoke.maximum_retry_attempts
  maximum_event_age_in_seconds = module.config.sweeper_async_invoke.maximum_event_age_in_seconds
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
  batch_size              = module.config.recovery_mapping.batch_size
  function_response_types = module.config.recovery_mapping.function_response_types

  depends_on = [aws_iam_role_policy.function]
}
