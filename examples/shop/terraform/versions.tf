terraform {
  required_version = ">= 1.9.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.70.0, < 7.0.0"
    }
  }
}

# `endpoint` sends every request to a local AWS (MiniStack) with its test credentials;
# left null, the provider uses your AWS configuration as usual.
provider "aws" {
  region                      = var.region
  access_key                  = var.endpoint == null ? null : "test"
  secret_key                  = var.endpoint == null ? null : "test"
  skip_credentials_validation = var.endpoint != null
  skip_requesting_account_id  = var.endpoint != null
  skip_metadata_api_check     = var.endpoint != null

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
