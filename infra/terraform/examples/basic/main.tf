# Example root: the outbox module with the orders example (../orders: the orders table, its
# queues and the reference consumer) in one region -- both used as a user would, by path.
# The example routes its topics through the module's `routes`, like any user.
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
  routes              = merge(module.orders.routes, var.routes)
  max_attempts        = var.max_attempts
  ttl_days            = var.ttl_days
  alarms              = var.alarm_topic_arn == null ? null : { topic_arn = var.alarm_topic_arn }
  deletion_protection = var.deletion_protection
  max_message_bytes   = var.max_message_bytes
  # The example's DLQs and consumer on the outbox's dashboard.
  dashboard_queue_names    = module.orders.dashboard_queue_names
  dashboard_function_names = module.orders.dashboard_function_names
}

module "orders" {
  source = "../orders"

  prefix                = var.prefix
  lambda_asset_dir      = var.lambda_asset_dir
  alarm_topic_arn       = var.alarm_topic_arn
  deletion_protection   = var.deletion_protection
  max_message_bytes     = var.max_message_bytes
  large_payload_objects = module.outbox.large_payload_bucket_arn == null ? null : "${module.outbox.large_payload_bucket_arn}/outbox/*"
}
