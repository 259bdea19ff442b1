# The whole outbox system: outbox table, publisher (stream), sweeper (schedule),
# recovery (the stream mapping's on-failure records), destination queues, reference
# consumer and its table, least-privilege roles, alarms. Names, table shape, the
# stream filter (infra/stream-filter.json), mapping settings and policy documents
# come from ../outbox-config, the provider-free module that `terraform test` checks
# offline.

module "config" {
  source = "../outbox-config"

  prefix                           = var.prefix
  routes                           = var.routes
  default_destination              = var.default_destination
  max_attempts                     = var.max_attempts
  sweep_rate_minutes               = var.sweep_rate_minutes
  sweep_grace_seconds              = var.sweep_grace_seconds
  sweep_scan_mode                  = var.sweep_scan_mode
  ttl_days                         = var.ttl_days
  batch_size                       = var.batch_size
  stream_retry_attempts            = var.stream_retry_attempts
  stream_max_record_age_seconds    = var.stream_max_record_age_seconds
  consumer_batch_size              = var.consumer_batch_size
  max_receive_count                = var.max_receive_count
  max_message_bytes                = var.max_message_bytes
  sweeper_reserved_concurrency     = var.sweeper_reserved_concurrency
  deletion_protection              = var.deletion_protection
  lambda_asset_dir                 = var.lambda_asset_dir
  log_retention_days               = var.log_retention_days
  large_payloads                   = var.large_payloads
  large_payload_bucket_name        = var.large_payload_bucket_name
  large_payload_retention_days     = var.large_payload_retention_days
  large_payload_threshold_bytes    = var.large_payload_threshold_bytes
  architecture                     = var.architecture
  kms_key_arn                      = var.kms_key_arn
  existing_table                   = var.existing_table
  alarm_topic_arn                  = var.alarm_topic_arn
  iterator_age_threshold_ms        = var.iterator_age_threshold_ms
  oldest_pending_threshold_seconds = var.oldest_pending_threshold_seconds
  stream_filter_file               = var.stream_filter_file

  resources = {
    outbox_table_arn          = local.outbox_table_arn
    outbox_stream_arn         = local.outbox_stream_arn
    orders_table_arn          = aws_dynamodb_table.orders.arn
    outbox_dlq_arn            = local.all_queues["outbox_dlq"].arn
    stream_failures_queue_arn = local.all_queues["stream_failures"].arn
    orders_queue_arn          = local.all_queues["orders_queue"].arn
    example_route_queue_arns  = [local.all_queues["orders_queue"].arn, local.all_queues["fifo_queue"].arn]
    example_route_queue_urls  = { standard = local.all_queues["orders_queue"].url, fifo = local.all_queues["fifo_queue"].url }
    log_group_arns            = { for k, g in aws_cloudwatch_log_group.function : k => g.arn }
    large_payload_bucket_arn  = local.large_payload_bucket_arn
  }
}

locals {
  names = module.config.names
  table = module.config.outbox_table

  # An existing table's ARN comes from its stream ARN (module.config), not from this
  # deployment's region and account.
  outbox_table_name = var.existing_table == null ? aws_dynamodb_table.outbox[0].name : module.config.existing_table.name
  outbox_table_arn  = var.existing_table == null ? aws_dynamodb_table.outbox[0].arn : module.config.existing_table.arn
  outbox_stream_arn = var.existing_table == null ? aws_dynamodb_table.outbox[0].stream_arn : module.config.existing_table.stream_arn

  common_environment = merge(
    {
      OUTBOX_TABLE_NAME = local.outbox_table_name
      OUTBOX_ROUTES     = module.config.routes_json # the example routes and var.routes, objects unchanged
      OUTBOX_DLQ_URL    = local.all_queues["outbox_dlq"].url
    },
    # The large-payload offload's bucket when created here (publisher and sweeper; an attached one's name
    # comes with module.config's environment; the consumer reads what a pointer names).
    { for b in aws_s3_bucket.large_payloads : module.config.large_payloads.env.bucket => b.bucket },
  )
}
