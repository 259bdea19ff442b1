locals {
  # ---------------------------------------------------------------- names (the same as before the outbox module was split off)
  names = {
    orders_table = "${var.prefix}-orders"
    consumer     = "${var.prefix}-orders-consumer"
    orders_queue = "${var.prefix}-orders-queue"
    orders_dlq   = "${var.prefix}-orders-queue-dlq"
    fifo_queue   = "${var.prefix}-orders-events.fifo"
    fifo_dlq     = "${var.prefix}-orders-events-dlq.fifo"
  }
  binaries = { consumer = "orders-consumer" } # infra/CONTRACT.md
  topics   = { standard = "orders", fifo = "orders-events" }

  # The reference consumer's table: one item per order, keyed by id; its idempotency marks
  # (MSG#<MessageId>) expire on ExpiresAt.
  orders_table = {
    hash_key      = "id"
    attributes    = [{ name = "id", type = "S" }]
    ttl_attribute = "ExpiresAt"
  }

  consumer = {
    runtime              = "provided.al2023"
    handler              = "bootstrap"
    architectures        = [var.architecture]
    memory_size          = 256
    timeout              = 30
    reserved_concurrency = null
    description          = "Reference consumer: applies each order exactly once (idempotent conditional writes)"
    environment          = { OUTBOX_DEPLOYMENT = var.prefix } # ../orders adds ORDERS_TABLE_NAME
  }
  consumer_mapping = {
    batch_size              = var.consumer_batch_size
    function_response_types = ["ReportBatchItemFailures"]
  }

  # Both destination queues redrive to their own DLQ; the orders queue is the consumer's
  # trigger (visibility 6 x its timeout). 14 days retention, like the outbox's queues.
  queue_settings = {
    max_message_size          = var.max_message_bytes
    message_retention_seconds = 14 * 86400
    max_receive_count         = var.consumer_max_receive_count
  }
  queues = {
    orders_dlq   = { name = local.names.orders_dlq, fifo = false, dlq = null, visibility = 30 }
    fifo_dlq     = { name = local.names.fifo_dlq, fifo = true, dlq = null, visibility = 30 }
    orders_queue = { name = local.names.orders_queue, fifo = false, dlq = "orders_dlq", visibility = local.consumer.timeout * 6 }
    fifo_queue   = { name = local.names.fifo_queue, fifo = true, dlq = "fifo_dlq", visibility = 30 }
  }

  # ---------------------------------------------------------------- routes, added to the outbox module's `routes`
  # Below 1 MiB the routes say the queues' size, so the publisher treats a larger message as
  # poison instead of failing the call. (jsonencode/jsondecode: a conditional cannot return a
  # string on one side and an object on the other.)
  routes = var.queue_urls == null ? null : {
    for kind, topic in local.topics : topic => jsondecode(
      var.max_message_bytes < 1048576
      ? jsonencode({ destination = var.queue_urls[kind], max_message_bytes = var.max_message_bytes })
      : jsonencode(var.queue_urls[kind])
    )
  }

  # ---------------------------------------------------------------- the consumer's policy (least privilege)
  r = var.resources
  # What a function needs of the key of a KMS-encrypted table, queue and bucket (as the outbox's
  # functions, docs/iam.md); no kms:Encrypt.
  kms_statements = [for key in compact([var.kms_key_arn]) : {
    Sid      = "UseKmsKey"
    Effect   = "Allow"
    Action   = ["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"]
    Resource = key
  }]
  # The large-payload bucket of the objects ARN (<bucket ARN>/outbox/*: a bucket name has no "/").
  large_payload_bucket = try(split("/", local.r.large_payload_objects)[0], null)
  policy = local.r == null ? null : {
    Version = "2012-10-17"
    Statement = concat([
      {
        # BusinessKeyGuard: one conditional PutItem per order (attribute_not_exists, the stored
        # item returned on a refused condition: ReturnValuesOnConditionCheckFailure needs no GetItem).
        Sid      = "ApplyOrdersOnce"
        Effect   = "Allow"
        Action   = "dynamodb:PutItem"
        Resource = local.r.orders_table_arn
      },
      {
        # What its SQS mapping calls with the role (Lambda's documented three).
        Sid      = "ConsumeOrdersQueue"
        Effect   = "Allow"
        Action   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
        Resource = local.r.orders_queue_arn
      },
      { Sid = "WriteOwnLogs", Effect = "Allow", Action = ["logs:CreateLogStream", "logs:PutLogEvents"], Resource = "${local.r.log_group_arn}:*" },
      ],
      # A pointer's payload, under outbox/ of the outbox's bucket, or failed/ for a redriven FAILED
      # message (its payload kept there, docs/message-sizes.md); ListBucket on the bucket so that a
      # missing object reads as NoSuchKey ("the object does not exist"), not AccessDenied.
      [for objects in compact([try(local.r.large_payload_objects, null)]) : { Sid = "GetLargePayloads", Effect = "Allow", Action = "s3:GetObject", Resource = [objects, "${local.large_payload_bucket}/failed/*"] }],
      [for bucket in compact([local.large_payload_bucket]) : { Sid = "TellMissingPayloads", Effect = "Allow", Action = "s3:ListBucket", Resource = bucket }],
      local.kms_statements,
    )
  }

  # ---------------------------------------------------------------- alarms, named <prefix>-<key> (the outbox module's shape)
  queue_alarm = {
    namespace           = "AWS/SQS"
    metric_name         = "ApproximateNumberOfMessagesVisible"
    statistic           = "Maximum"
    period              = 300
    evaluation_periods  = 1
    datapoints_to_alarm = 1
    threshold           = 0
    comparison_operator = "GreaterThanThreshold"
    treat_missing_data  = "notBreaching"
  }
  function_alarm = {
    namespace           = "AWS/Lambda"
    dimensions          = tomap({ FunctionName = local.names.consumer })
    statistic           = "Sum"
    period              = 300
    evaluation_periods  = 3
    datapoints_to_alarm = 3
    threshold           = 0
    comparison_operator = "GreaterThanThreshold"
    treat_missing_data  = "notBreaching"
  }
  alarms = {
    ConsumerDlqNotEmpty     = merge(local.queue_alarm, { dimensions = tomap({ QueueName = local.names.orders_dlq }), description = "The orders consumer gave up on messages (conflicts or bugs); inspect and redrive." })
    OrdersEventsDlqNotEmpty = merge(local.queue_alarm, { dimensions = tomap({ QueueName = local.names.fifo_dlq }), description = "Messages of the FIFO orders-events queue were received maxReceiveCount times without being deleted; inspect and redrive." })
    ConsumerErrors          = merge(local.function_alarm, { metric_name = "Errors", description = "${local.names.consumer} fails invocations in 3 consecutive 5-minute periods (a crash, a timeout, a bad configuration): read its log group." })
    ConsumerThrottles       = merge(local.function_alarm, { metric_name = "Throttles", description = "${local.names.consumer} is throttled in 3 consecutive 5-minute periods: raise its reserved concurrency or the account's concurrency quota." })
  }

  # What the outbox module's dashboard shows of the example (dashboard_queue_names, dashboard_function_names).
  dashboard = {
    queue_names    = [local.names.orders_dlq, local.names.fifo_dlq]
    function_names = [local.names.consumer]
  }
}

# The consumer's code, checked at plan like the outbox's functions.
module "artifacts" {
  source = "../../modules/outbox/modules/artifacts"

  lambda_asset_dir = var.lambda_asset_dir
  binaries         = local.binaries
  architecture     = var.architecture
}
