# Example root: the whole outbox system in one region.
#
#   cargo lambda build --release --arm64 && cargo lambda build --release --arm64 --output-format zip   # at the repository root
#   terraform -chdir=infra/terraform/examples/basic init
#   terraform -chdir=infra/terraform/examples/basic apply -var region=eu-west-1

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
  region = var.region
  default_tags {
    tags = { Project = "dynamodb-outbox" }
  }
}

module "outbox" {
  source = "../../modules/outbox"

  prefix              = var.prefix
  lambda_asset_dir    = var.lambda_asset_dir
  routes              = var.routes
  max_attempts        = var.max_attempts
  ttl_days            = var.ttl_days
  alarm_topic_arn     = var.alarm_topic_arn
  deletion_protection = var.deletion_protection
  max_message_bytes   = var.max_message_bytes
}
