# The outbox and nothing else: the outbox table (or the caller's, existing_table), the
# publisher (stream), sweeper (schedule) and recovery (the stream mapping's on-failure
# records) functions with least-privilege roles, the outbox DLQ and the stream-failure
# queue, the large-payload bucket, alarms, the dashboard and the producer policy. Messages
# go to the caller's routes only. Names, table shape, the
# stream filter (infra/stream-filter.json), mapping settings and policy documents
# come from ../outbox-config, the provider-free module that `terraform test` checks
# offline.

data "aws_region" "current" {}

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
  partition_key_name               = var.partition_key_name
  sort_key_name                    = var.sort_key_name
  ttl_attribute_name               = var.ttl_attribute_name
  sweep_shards                     = var.sweep_shards
  sweep_shards_previous            = var.sweep_shards_previous
  parallelization_factor           = var.parallelization_factor
  dashboard_queue_names            = var.dashboard_queue_names
  dashboard_function_names         = var.dashboard_function_names
  region                           = local.region
  default_home_region              = var.default_home_region
  global_table_regions             = var.global_table_regions

  resources = {
    outbox_table_arn          = local.outbox_table_arn
    outbox_stream_arn         = local.outbox_stream_arn
    outbox_dlq_arn            = local.all_queues["outbox_dlq"].arn
    stream_failures_queue_arn = local.all_queues["stream_failures"].arn
    log_group_arns            = { for k, g in aws_cloudwatch_log_group.function : k => g.arn }
    large_payload_bucket_arn  = local.large_payload_bucket_arn
    region                    = local.region
  }
}

locals {
  names = module.config.names
  table = module.config.outbox_table
  # The deployment's region: the provider's (aws_region reads the provider's configuration, no
  # AWS call), known at plan. It is the region the deployment owns (OUTBOX_REGION, the
  # publisher's filter); names that are global to the account carry it on a global table.
  region = data.aws_region.current.name

  # An existing table's ARN comes from its stream ARN (module.config), not from this
  # deployment's region and account.
  outbox_table_name = var.existing_table == null ? aws_dynamodb_table.outbox[0].name : module.config.existing_table.name
  outbox_table_arn  = var.existing_table == null ? aws_dynamodb_table.outbox[0].arn : module.config.existing_table.arn
  outbox_stream_arn = var.existing_table == null ? aws_dynamodb_table.outbox[0].stream_arn : module.config.existing_table.stream_arn

  common_environment = merge(
    {
      OUTBOX_TABLE_NAME = local.outbox_table_name
      OUTBOX_ROUTES     = module.config.routes_json # var.routes, objects unchanged
      OUTBOX_DLQ_URL    = local.all_queues["outbox_dlq"].url
    },
    # The large-payload offload's bucket when created here (publisher and sweeper; an attached one's name
    # comes with module.config's environment; consumers read what a pointer names).
    { for b in aws_s3_bucket.large_payloads : module.config.large_payloads.env.bucket => b.bucket },
  )
}
