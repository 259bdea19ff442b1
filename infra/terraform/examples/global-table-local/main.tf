# Local root: the outbox on a DynamoDB global table in two regions of the local AWS
# (MiniStack on loopback, which `scripts/emulator` starts). The same shape as
# examples/global-table — the table and its replica created once with the primary
# region's provider, the outbox module once per region with that region's provider —
# with every endpoint the emulator's, as examples/local does. `scripts/deploy-local
# terraform-global` runs it; `outbox-devkit regions` and tests/outbox-tests'
# stacks::global_table drive messages through it.
#
#   OUTBOX_LAMBDA_DIR=target/lambda-dev scripts/package --debug --features fault-injection
#   scripts/deploy-local terraform-global --prefix gt --assets target/lambda-dev
#
# MiniStack keeps every region of one account in one process and replicates a global
# table's writes synchronously (docs/local-aws.md): there is no replication lag here.
# Each region routes the topic "orders" to its own queue (<prefix>-orders-<region>),
# so that what each region published can be counted apart.

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
  alias                       = "primary"
  region                      = var.regions[0]
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

provider "aws" {
  alias                       = "secondary"
  region                      = var.regions[1]
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

locals {
  default_home_region = coalesce(var.default_home_region, var.regions[0])
  table_name          = "${var.prefix}-table"
}

# The global table, created with the primary region's provider with a replica in the
# secondary (examples/fixtures/global-table, shared with examples/global-table).
module "table" {
  source    = "../fixtures/global-table"
  providers = { aws = aws.primary }

  name                = local.table_name
  regions             = var.regions
  deletion_protection = false
  # The local AWS keeps neither a replica's point-in-time recovery nor its tags.
  replica_point_in_time_recovery = false
}

# The table was declared here before the fixture held it: same table, new address.
moved {
  from = aws_dynamodb_table.outbox
  to   = module.table.aws_dynamodb_table.this
}

# Each region's destination: its own orders queue, named for the region.
resource "aws_sqs_queue" "orders_primary" {
  provider                = aws.primary
  name                    = "${var.prefix}-orders-${var.regions[0]}"
  sqs_managed_sse_enabled = true
}

resource "aws_sqs_queue" "orders_secondary" {
  provider                = aws.secondary
  name                    = "${var.prefix}-orders-${var.regions[1]}"
  sqs_managed_sse_enabled = true
}

# What each region's alarms notify (the module creates alarms only with a topic), encrypted
# with SNS's AWS-managed key.
resource "aws_sns_topic" "alarms_primary" {
  provider          = aws.primary
  name              = "${var.prefix}-alarms"
  kms_master_key_id = "alias/aws/sns"
}

resource "aws_sns_topic" "alarms_secondary" {
  provider          = aws.secondary
  name              = "${var.prefix}-alarms"
  kms_master_key_id = "alias/aws/sns"
}

module "outbox_primary" {
  source    = "../../modules/outbox"
  providers = { aws = aws.primary }

  prefix           = var.prefix
  lambda_asset_dir = var.lambda_asset_dir
  architecture     = var.architecture
  routes           = { orders = aws_sqs_queue.orders_primary.url }
  # Its bucket's name is global to the account: one per region would need names of its
  # own, and the regions run does not send large payloads.
  large_payloads       = false
  alarms               = { topic_arn = aws_sns_topic.alarms_primary.arn }
  deletion_protection  = false
  sweep_grace_seconds  = var.sweep_grace_seconds
  global_table_regions = var.regions
  default_home_region  = local.default_home_region
  existing_table = {
    table_name = module.table.name
    stream_arn = module.table.stream_arns[var.regions[0]]
  }
}

module "outbox_secondary" {
  source    = "../../modules/outbox"
  providers = { aws = aws.secondary }

  prefix               = var.prefix
  lambda_asset_dir     = var.lambda_asset_dir
  architecture         = var.architecture
  routes               = { orders = aws_sqs_queue.orders_secondary.url }
  large_payloads       = false
  alarms               = { topic_arn = aws_sns_topic.alarms_secondary.arn }
  deletion_protection  = false
  sweep_grace_seconds  = var.sweep_grace_seconds
  global_table_regions = var.regions
  default_home_region  = local.default_home_region
  # The replica's own stream in this region.
  existing_table = {
    table_name = module.table.name
    stream_arn = module.table.stream_arns[var.regions[1]]
  }
}
