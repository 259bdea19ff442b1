# The reference consumer: the orders queue, exactly once per order (its own log group,
# role and least-privilege policy from ../orders-config).

resource "aws_cloudwatch_log_group" "consumer" {
  #checkov:skip=CKV_AWS_158:Log groups use CloudWatch Logs' default encryption at rest, as the outbox module's.
  #checkov:skip=CKV_AWS_338:Retention is log_retention_days, the outbox module's setting (30 days by default): operational logs of the example consumer, not an audit record.
  name              = "/aws/lambda/${local.names.consumer}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

resource "aws_iam_role" "consumer" {
  name        = "${local.names.consumer}-role"
  description = "${var.prefix}: execution role of ${local.names.consumer} (least privilege)"
  assume_role_policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Action = "sts:AssumeRole", Principal = { Service = "lambda.amazonaws.com" } }]
  })
  tags = var.tags
}

resource "aws_iam_role_policy" "consumer" {
  name   = "least-privilege"
  role   = aws_iam_role.consumer.id
  policy = module.config.policy_json
}

resource "aws_lambda_function" "consumer" {
  #checkov:skip=CKV_AWS_50:X-Ray tracing would need xray:PutTraceSegments on "*"; the consumer logs structured JSON instead.
  #checkov:skip=CKV_AWS_116:Invoked by its SQS mapping only; the orders queue has its DLQ.
  #checkov:skip=CKV_AWS_117:The consumer calls only DynamoDB, SQS and S3 public endpoints over TLS.
  #checkov:skip=CKV_AWS_173:Environment variables hold only names (no secrets); Lambda encrypts them at rest with its service key.
  #checkov:skip=CKV_AWS_272:Code signing needs an AWS Signer profile; the artifact comes from the team's own cargo lambda build.
  function_name                  = local.names.consumer
  description                    = local.consumer.description
  role                           = aws_iam_role.consumer.arn
  runtime                        = local.consumer.runtime
  handler                        = local.consumer.handler
  architectures                  = local.consumer.architectures
  memory_size                    = local.consumer.memory_size
  timeout                        = local.consumer.timeout
  reserved_concurrent_executions = coalesce(local.consumer.reserved_concurrency, -1) # -1: unreserved
  filename                       = module.config.artifacts.consumer.zip
  source_code_hash               = filebase64sha256(module.config.artifacts.consumer.zip)

  environment {
    variables = merge({ ORDERS_TABLE_NAME = aws_dynamodb_table.orders.name }, local.consumer.environment)
  }

  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.consumer.name
  }

  tags = var.tags

  depends_on = [aws_iam_role_policy.consumer]
}

resource "aws_lambda_event_source_mapping" "consumer" {
  function_name           = aws_lambda_function.consumer.arn
  event_source_arn        = local.all_queues["orders_queue"].arn
  batch_size              = module.config.consumer_mapping.batch_size
  function_response_types = module.config.consumer_mapping.function_response_types

  depends_on = [aws_iam_role_policy.consumer]
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each = module.config.alarms

  alarm_name          = "${var.prefix}-${each.key}"
  alarm_description   = each.value.description
  namespace           = each.value.namespace
  metric_name         = each.value.metric_name
  dimensions          = each.value.dimensions
  statistic           = each.value.statistic
  period              = each.value.period
  evaluation_periods  = each.value.evaluation_periods
  datapoints_to_alarm = each.value.datapoints_to_alarm
  threshold           = each.value.threshold
  comparison_operator = each.value.comparison_operator
  treat_missing_data  = each.value.treat_missing_data
  alarm_actions       = compact([var.alarm_topic_arn])
  tags                = var.tags
}
