locals {
  # ---------------------------------------------------------------- names (same as infra/cdk/lib/config.ts)
  names = {
    outbox_table    = "${var.prefix}-table"
    orders_table    = "${var.prefix}-orders"
    publisher       = "${var.prefix}-publisher"
    sweeper         = "${var.prefix}-sweeper"
    consumer        = "${var.prefix}-orders-consumer"
    outbox_dlq      = "${var.prefix}-dlq"
    stream_failures = "${var.prefix}-stream-failures"
    orders_queue    = "${var.prefix}-orders-queue"
    orders_dlq      = "${var.prefix}-orders-queue-dlq"
    fifo_queue      = "${var.prefix}-orders-events.fifo"
    fifo_dlq        = "${var.prefix}-orders-events-dlq.fifo"
    sweep_rule      = "${var.prefix}-sweep-schedule"
  }

  # ---------------------------------------------------------------- infra/CONTRACT.md
  binaries = {
    publisher = "outbox-publisher"
    sweeper   = "outbox-sweeper"
    consumer  = "orders-consumer"
  }
  example_topics = {
    standard = "orders"
    fifo     = "orders-events"
  }
  outbox_table = {
    hash_key         = "PK"
    range_key        = "SK"
    stream_view_type = "NEW_IMAGE"
    ttl_attribute    = "ExpiresAt"
    attributes = [
      { name = "PK", type = "S" },
      { name = "SK", type = "S" },
      { name = "SweepShard", type = "S" },
      { name = "SweepDueAt", type = "N" },
    ]
    sweep_index = {
      name            = "OutboxSweepIndex"
      hash_key        = "SweepShard"
      range_key       = "SweepDueAt"
      projection_type = "KEYS_ONLY"
    }
  }
  orders_table = {
    hash_key      = "id"
    attributes    = [{ name = "id", type = "S" }]
    ttl_attribute = "ExpiresAt"
  }
  metrics = {
    namespace  = "DynamoDbOutbox"
    dimensions = { Service = "outbox" }
  }

  # ---------------------------------------------------------------- stream filter: read, never copied
  stream_filter_file = coalesce(var.stream_filter_file, "${path.module}/../../../stream-filter.json")
  stream_filter      = jsondecode(file(local.stream_filter_file))
  stream_filter_ok = (
    can(length(local.stream_filter.Filters)) &&
    try(length(local.stream_filter.Filters) >= 1 && length(local.stream_filter.Filters) <= 5, false) &&
    try(alltrue([for f in local.stream_filter.Filters : can(jsondecode(f.Pattern)) && can(regex("^\\{", f.Pattern)) && length(f.Pattern) <= 4096]), false)
  )

  # ---------------------------------------------------------------- event source mappings and functions
  stream_mapping = {
    starting_position              = "TRIM_HORIZON"
    batch_size                     = var.batch_size
    maximum_retry_attempts         = var.stream_retry_attempts
    maximum_record_age_in_seconds  = var.stream_max_record_age_seconds
    bisect_batch_on_function_error = true
    function_response_types        = ["ReportBatchItemFailures"]
    parallelization_factor         = 1
  }
  consumer_mapping = {
    batch_size              = var.consumer_batch_size
    function_response_types = ["ReportBatchItemFailures"]
  }
  functions = {
    runtime       = "provided.al2023"
    handler       = "bootstrap"
    architectures = [var.architecture]
    memory_size   = 256
    timeouts = {
      publisher = 60
      sweeper   = min(300, var.sweep_rate_minutes * 60)
      consumer  = 30
    }
  }
  sweep_schedule = var.sweep_rate_minutes == 1 ? "rate(1 minute)" : "rate(${var.sweep_rate_minutes} minutes)"

  # Environment that does not depend on deployed resources; modules/outbox adds table name, routes and DLQ URL.
  publisher_environment = merge(
    { OUTBOX_TTL_DAYS = tostring(var.ttl_days) },
    var.default_destination == null ? {} : { OUTBOX_DEFAULT_DESTINATION = var.default_destination },
  )
  sweeper_environment = merge(local.publisher_environment, {
    OUTBOX_MAX_ATTEMPTS        = tostring(var.max_attempts)
    OUTBOX_SWEEP_GRACE_SECONDS = tostring(var.sweep_grace_seconds)
    OUTBOX_SWEEP_SCAN_MODE     = var.sweep_scan_mode ? "on" : "off"
  })

  # ---------------------------------------------------------------- routes → IAM targets
  sqs_url_pattern       = "^https://sqs\\.(?P<region>[a-z0-9-]+)\\.amazonaws\\.com(?P<cn>\\.cn)?/(?P<account>[0-9]{12})/(?P<name>[A-Za-z0-9_-]{1,75}(?:\\.fifo)?)$"
  external_destinations = concat(values(var.routes), var.default_destination == null ? [] : [var.default_destination])
  external_sqs_arns = [
    for d in local.external_destinations : format("arn:%s:sqs:%s:%s:%s",
      regex(local.sqs_url_pattern, d).cn == ".cn" ? "aws-cn" : (startswith(regex(local.sqs_url_pattern, d).region, "us-gov-") ? "aws-us-gov" : "aws"),
      regex(local.sqs_url_pattern, d).region, regex(local.sqs_url_pattern, d).account, regex(local.sqs_url_pattern, d).name,
    ) if can(regex(local.sqs_url_pattern, d))
  ]
  external_sns_arns = distinct([for d in local.external_destinations : d if can(regex("^arn:aws[a-z-]*:sns:", d))])
  external_bus_arns = distinct([for d in local.external_destinations : d if can(regex("^arn:aws[a-z-]*:events:", d))])

  # ---------------------------------------------------------------- IAM policy documents (least privilege, no wildcards)
  r = var.resources
  send_statements = concat(
    [for r in local.r == null ? [] : [local.r] : {
      Sid      = "SendToRoutedQueues"
      Effect   = "Allow"
      Action   = "sqs:SendMessage"
      Resource = distinct(concat(r.example_route_queue_arns, [r.outbox_dlq_arn], local.external_sqs_arns))
    }],
    # `[for ... if ...]` keeps 0 or 1 statement without a conditional of two tuple types.
    [for arns in [local.external_sns_arns] : { Sid = "PublishToRoutedTopics", Effect = "Allow", Action = "sns:Publish", Resource = arns } if length(arns) > 0],
    [for arns in [local.external_bus_arns] : { Sid = "PutToRoutedBuses", Effect = "Allow", Action = "events:PutEvents", Resource = arns } if length(arns) > 0],
    local.kms_statements,
  )
  kms_statements = [for key in compact([var.kms_key_arn]) : { Sid = "UseKmsKey", Effect = "Allow", Action = ["kms:Decrypt", "kms:GenerateDataKey"], Resource = key }]
  logs_statement = { for fn in ["publisher", "sweeper", "consumer"] : fn => {
    Sid      = "WriteOwnLogs"
    Effect   = "Allow"
    Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    Resource = local.r == null ? null : "${local.r.log_group_arns[fn]}:*"
  } }

  policies = local.r == null ? null : {
    publisher = {
      Version = "2012-10-17"
      Statement = concat([
        { Sid = "MarkSentOrFailed", Effect = "Allow", Action = "dynamodb:UpdateItem", Resource = local.r.outbox_table_arn },
        {
          Sid      = "ReadOutboxStream"
          Effect   = "Allow"
          Action   = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"]
          Resource = local.r.outbox_stream_arn
        },
        { Sid = "ReportDiscardedBatches", Effect = "Allow", Action = "sqs:SendMessage", Resource = local.r.stream_failures_queue_arn },
        local.logs_statement.publisher,
      ], local.send_statements)
    }
    sweeper = {
      Version = "2012-10-17"
      Statement = concat([
        { Sid = "QuerySweepIndex", Effect = "Allow", Action = "dynamodb:Query", Resource = "${local.r.outbox_table_arn}/index/${local.outbox_table.sweep_index.name}" },
        {
          Sid      = "UpdateOutboxItems"
          Effect   = "Allow"
          Action   = var.sweep_scan_mode ? ["dynamodb:UpdateItem", "dynamodb:Scan"] : ["dynamodb:UpdateItem"]
          Resource = local.r.outbox_table_arn
        },
        local.logs_statement.sweeper,
      ], local.send_statements)
    }
    consumer = {
      Version = "2012-10-17"
      Statement = concat([
        {
          # TransactWriteItems is authorized per action inside it: Put/Update/Delete/ConditionCheck.
          Sid      = "ApplyOrdersOnce"
          Effect   = "Allow"
          Action   = ["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"]
          Resource = local.r.orders_table_arn
        },
        {
          Sid      = "ConsumeOrdersQueue"
          Effect   = "Allow"
          Action   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]
          Resource = local.r.orders_queue_arn
        },
        local.logs_statement.consumer,
      ], local.kms_statements)
    }
  }

  assume_role_policy = {
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = { Service = "lambda.amazonaws.com" }
    }]
  }

  # ---------------------------------------------------------------- alarms
  alarms = {
    queue_not_empty = {
      OutboxDlqNotEmpty      = { queue = local.names.outbox_dlq, description = "Outbox messages became FAILED (see LastError on the item); inspect, fix, redrive." }
      ConsumerDlqNotEmpty    = { queue = local.names.orders_dlq, description = "The orders consumer gave up on messages (conflicts or bugs); inspect and redrive." }
      StreamFailuresNotEmpty = { queue = local.names.stream_failures, description = "The stream mapping discarded batches after retries; the sweeper will recover the items." }
    }
    iterator_age_threshold_ms        = var.iterator_age_threshold_ms
    oldest_pending_threshold_seconds = var.oldest_pending_threshold_seconds
  }
}
