# Example root: the outbox on a DynamoDB global table (docs/global-tables.md) in two regions.
# The table and its replica are created once, here, with the primary region's provider
# (replica {}: UpdateTable ReplicaUpdates, global tables version 2019.11.21); the outbox
# module is instantiated once per region with that region's provider, attached to the
# table's replica there (its stream ARN). Each region's publisher publishes the messages
# homed in its region (HomeRegion), the default home region also those without HomeRegion;
# each region has its own functions, queues, alarms and dashboard.
#
#   cargo lambda build --release --arm64 && cargo lambda build --release --arm64 --output-format zip   # at the repository root
#   terraform -chdir=infra/terraform/examples/global-table init
#   terraform -chdir=infra/terraform/examples/global-table apply -var 'regions=["us-east-1","eu-west-1"]'
#
# Failover when a region is down: `outbox-ops failover --from REGION` against the surviving
# region, then `outbox-ops failback --to REGION` (docs/global-tables.md, infra/README.md).

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
  alias  = "primary"
  region = var.regions[0]
  default_tags {
    tags = { Project = "dynamodb-outbox" }
  }
}

provider "aws" {
  alias  = "secondary"
  region = var.regions[1]
  default_tags {
    tags = { Project = "dynamodb-outbox" }
  }
}

locals {
  # The outbox table's shape (infra/CONTRACT.md), with the module's defaults: PK/SK strings,
  # the OutboxSweepIndex GSI (SweepShard S, SweepDueAt N, KEYS_ONLY), TTL on ExpiresAt.
  default_home_region = coalesce(var.default_home_region, var.regions[0])
  table_name          = "${var.prefix}-table"
}

# The global table: created in the primary region, replicated to the secondary. Global tables
# stream NEW_AND_OLD_IMAGES (the outbox reads NewImage of either view type).
resource "aws_dynamodb_table" "outbox" {
  provider = aws.primary

  name                        = local.table_name
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "PK"
  range_key                   = "SK"
  stream_enabled              = true
  stream_view_type            = "NEW_AND_OLD_IMAGES"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "PK"
    type = "S"
  }
  attribute {
    name = "SK"
    type = "S"
  }
  attribute {
    name = "SweepShard"
    type = "S"
  }
  attribute {
    name = "SweepDueAt"
    type = "N"
  }

  global_secondary_index {
    name            = "OutboxSweepIndex"
    hash_key        = "SweepShard"
    range_key       = "SweepDueAt"
    projection_type = "KEYS_ONLY"
  }

  ttl {
    attribute_name = "ExpiresAt"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  # AWS-managed key (aws/dynamodb) unless a customer-managed key is given per region.
  server_side_encryption {
    enabled     = true
    kms_key_arn = lookup(var.kms_key_arns, var.regions[0], null)
  }

  # One replica per other region (ReplicaUpdates Create): its own stream, its own ARN.
  replica {
    region_name            = var.regions[1]
    point_in_time_recovery = true
    propagate_tags         = true
    kms_key_arn            = lookup(var.kms_key_arns, var.regions[1], null)
  }
}

module "outbox_primary" {
  source    = "../../modules/outbox"
  providers = { aws = aws.primary }

  prefix           = var.prefix
  lambda_asset_dir = var.lambda_asset_dir
  routes           = var.routes
  alarm_topic_arn  = lookup(var.alarm_topic_arns, var.regions[0], null)
  kms_key_arn      = lookup(var.kms_key_arns, var.regions[0], null)
  # The same in every region: items without HomeRegion are the default home region's.
  global_table_regions = var.regions
  default_home_region  = local.default_home_region
  existing_table = {
    table_name = aws_dynamodb_table.outbox.name
    stream_arn = aws_dynamodb_table.outbox.stream_arn
  }
}

module "outbox_secondary" {
  source    = "../../modules/outbox"
  providers = { aws = aws.secondary }

  prefix               = var.prefix
  lambda_asset_dir     = var.lambda_asset_dir
  routes               = var.routes
  alarm_topic_arn      = lookup(var.alarm_topic_arns, var.regions[1], null)
  kms_key_arn          = lookup(var.kms_key_arns, var.regions[1], null)
  global_table_regions = var.regions
  default_home_region  = local.default_home_region
  # The replica's stream in this region: each replica streams every write, its own and the
  # replicated ones; the publisher's filter keeps this region's.
  existing_table = {
    table_name = aws_dynamodb_table.outbox.name
    stream_arn = one([for r in aws_dynamodb_table.outbox.replica : r.stream_arn if r.region_name == var.regions[1]])
  }
}
