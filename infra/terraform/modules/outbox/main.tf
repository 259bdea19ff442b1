# The outbox and nothing else: the outbox table (or the caller's, existing_table), the
# publisher (stream), sweeper (schedule) and recovery (the stream mapping's on-failure
# records) functions with least-privilege roles, the outbox DLQ and the stream-failure
# queue, the large-payload bucket, alarms, the dashboard and the producer policy. Messages
# go to the caller's routes only. Names, table shape, the
# stream filter (stream-filter.json, beside this file), mapping settings and policy
# documents are computed in config.tf, from the settings alone where they can be, and
# `terraform test` checks them offline against a mocked provider (tests/).

data "aws_region" "current" {}

# The deployed resources' ARNs, for the IAM policy documents (config.tf).
locals {
  r = {
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
  table = local.outbox_table
  # The deployment's region: the provider's (aws_region reads the provider's configuration, no
  # AWS call), known at plan. It is the region the deployment owns (OUTBOX_REGION, the
  # publisher's filter); names that are global to the account carry it on a global table.
  region = data.aws_region.current.name

  # An existing table's ARN comes from its stream ARN (module.config), not from this
  # deployment's region and account.
  outbox_table_name = var.existing_table == null ? aws_dynamodb_table.outbox[0].name : local.existing_table.name
  outbox_table_arn  = var.existing_table == null ? aws_dynamodb_table.outbox[0].arn : local.existing_table.arn
  outbox_stream_arn = var.existing_table == null ? aws_dynamodb_table.outbox[0].stream_arn : local.existing_table.stream_arn

  common_environment = merge(
    {
      OUTBOX_TABLE_NAME = local.outbox_table_name
      OUTBOX_ROUTES     = local.routes_json # var.routes, objects unchanged
      OUTBOX_DLQ_URL    = local.all_queues["outbox_dlq"].url
    },
    # The large-payload offload's bucket when created here (publisher and sweeper; an attached one's name
    # comes with module.config's environment; consumers read what a pointer names).
    { for b in aws_s3_bucket.large_payloads : local.large_payloads.env.bucket => b.bucket },
  )
}
