# Local root: the same outbox module and orders example as examples/basic, deployed into
# the local AWS (MiniStack on loopback) that `scripts/emulator` starts. `scripts/deploy-local terraform` runs it;
# by hand:
#
#   scripts/package --debug                      # or scripts/package (release)
#   terraform -chdir=infra/terraform/examples/local init
#   terraform -chdir=infra/terraform/examples/local apply -var endpoint=http://127.0.0.1:4566
#
# Nothing here reaches AWS: every service endpoint is the emulator, with its dummy
# credentials, and the provider skips the account checks the emulator cannot answer.

terraform {
  required_version = ">= 1.9.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.70.0, < 7.0.0"
    }
  }
}

provider "aws" {
  region                      = var.region
  access_key                  = "test"
  secret_key                  = "test"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true

  endpoints {
    cloudwatch = var.endpoint
    dynamodb   = var.endpoint
    events     = var.endpoint
    iam        = var.endpoint
    lambda     = var.endpoint
    logs       = var.endpoint
    s3         = var.endpoint
    sns        = var.endpoint
    sqs        = var.endpoint
    sts        = var.endpoint
  }
}

module "outbox" {
  source = "../../modules/outbox"

  prefix              = var.prefix
  lambda_asset_dir    = var.lambda_asset_dir
  architecture        = "x86_64"
  routes              = merge(module.orders.routes, var.routes)
  sweep_grace_seconds = var.sweep_grace_seconds
  max_message_bytes   = var.max_message_bytes
  sweep_scan_mode     = var.sweep_scan_mode
  # The claim check on (the module's default is off), as in the CDK app; null takes the
  # module's 30 days and no threshold.
  large_payloads                = var.large_payloads
  large_payload_bucket_name     = var.large_payload_bucket_name
  large_payload_retention_days  = var.large_payload_retention_days
  large_payload_threshold_bytes = var.large_payload_threshold_bytes
  # Alarms exist only with a topic to notify (tests/it/stacks/alarms.rs reads them).
  alarms = { topic_arn = aws_sns_topic.alarms.arn }
  # A local deployment is thrown away with its emulator; let destroy work.
  deletion_protection = false
  # The example's DLQs and consumer on the outbox's dashboard.
  dashboard_queue_names    = module.orders.dashboard_queue_names
  dashboard_function_names = module.orders.dashboard_function_names
}

# What the alarms notify, encrypted with SNS's AWS-managed key as the queues are with SQS's.
resource "aws_sns_topic" "alarms" {
  name              = "${var.prefix}-alarms"
  kms_master_key_id = "alias/aws/sns"
}

module "orders" {
  source = "../orders"

  prefix                = var.prefix
  lambda_asset_dir      = var.lambda_asset_dir
  architecture          = "x86_64"
  max_message_bytes     = var.max_message_bytes
  deletion_protection   = false
  alarm_topic_arn       = aws_sns_topic.alarms.arn
  large_payload_objects = module.outbox.large_payload_bucket_arn == null ? null : "${module.outbox.large_payload_bucket_arn}/outbox/*"
}
