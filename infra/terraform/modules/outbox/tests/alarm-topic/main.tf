# A root that creates its alarm topic in the same apply as the outbox, as a user's does:
# the topic's ARN is unknown at plan, and the module must still plan its alarms
# (alarms.tftest.hcl). The ARN once given as the for_each switch failed here with
# "Invalid for_each argument".

terraform {
  required_providers {
    aws = { source = "hashicorp/aws" }
  }
}

variable "lambda_asset_dir" {
  type = string
}

resource "aws_sns_topic" "ops" {
  name              = "ops-alarms"
  kms_master_key_id = "alias/aws/sns"
}

module "outbox" {
  source           = "../.."
  lambda_asset_dir = var.lambda_asset_dir
  alarms           = { topic_arn = aws_sns_topic.ops.arn }
}

output "alarm_names" {
  value = module.outbox.alarm_names
}
