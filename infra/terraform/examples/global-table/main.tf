# Example root: the outbox on a DynamoDB global table (docs/global-tables.md) in two regions.
# The table and its replica are created once, here, with the primary region's provider
# (replica {}: UpdateTable ReplicaUpdates, global tables version 2019.11.21); the outbox
# module is instantiated once per region with that region's provider, attached to the
# table's replica there (its stream ARN). Each region's publisher publishes the messages
# homed in its region (HomeRegion), the default home region (OUTBOX_DEFAULT_HOME_REGION, read at
# run time) also those without HomeRegion;
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
  default_home_region = coalesce(var.default_home_region, var.regions[0])
  table_name          = "${var.prefix}-table"
}

# The global table: created in the primary region, replicated to the secondary
# (examples/fixtures/global-table, shared with examples/global-table-local). Global tables
# stream NEW_AND_OLD_IMAGES (the outbox reads NewImage of either view type).
module "table" {
  source    = "../fixtures/global-table"
  providers = { aws = aws.primary }

  name                = local.table_name
  regions             = var.regions
  deletion_protection = var.deletion_protection
  kms_key_arns        = var.kms_key_arns
}

# The table was declared here before the fixture held it: same table, new address.
moved {
  from = aws_dynamodb_table.outbox
  to   = module.table.aws_dynamodb_table.this
}

module "outbox_primary" {
  source    = "../../modules/outbox"
  providers = { aws = aws.primary }

  prefix           = var.prefix
  lambda_asset_dir = var.lambda_asset_dir
  routes           = var.routes
  alarms           = contains(keys(var.alarm_topic_arns), var.regions[0]) ? { topic_arn = var.alarm_topic_arns[var.regions[0]] } : null
  kms_key_arn      = lookup(var.kms_key_arns, var.regions[0], null)
  # A bucket per region for messages too large for their destination (off by default).
  large_payloads = true
  # The same in every region: items without HomeRegion are the default home region's.
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
  routes               = var.routes
  alarms               = contains(keys(var.alarm_topic_arns), var.regions[1]) ? { topic_arn = var.alarm_topic_arns[var.regions[1]] } : null
  kms_key_arn          = lookup(var.kms_key_arns, var.regions[1], null)
  large_payloads       = true
  global_table_regions = var.regions
  default_home_region  = local.default_home_region
  # The replica's stream in this region: each replica streams every write, its own and the
  # replicated ones; the publisher's filter keeps this region's.
  existing_table = {
    table_name = module.table.name
    stream_arn = module.table.stream_arns[var.regions[1]]
  }
}
