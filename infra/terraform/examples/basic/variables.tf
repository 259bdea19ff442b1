variable "region" {
  description = "AWS region to deploy to."
  type        = string
  default     = "eu-west-1"
}

variable "prefix" {
  description = "Prefix of every physical name."
  type        = string
  default     = "outbox"
}

variable "lambda_asset_dir" {
  description = "cargo lambda output directory holding <bin>/bootstrap.zip and <bin>/bootstrap: the repository's target/lambda (relative to this directory)."
  type        = string
  default     = "../../../../target/lambda"
}

variable "routes" {
  description = "Extra routes, topic => SQS queue URL, SNS topic ARN or EventBridge bus ARN, or { destination, max_message_bytes, source, raw_delivery }; added to the example's orders and orders-events."
  type        = any
  default     = {}
  validation {
    condition     = try(!contains(keys(var.routes), "orders") && !contains(keys(var.routes), "orders-events"), false)
    error_message = "The topics \"orders\" and \"orders-events\" are routed to the example's queues."
  }
}

variable "max_attempts" {
  description = "Sweeper attempts before a message becomes FAILED."
  type        = number
  default     = 8
}

variable "ttl_days" {
  description = "Days a SENT outbox item is kept."
  type        = number
  default     = 7
}

variable "alarm_topic_arn" {
  description = "SNS topic the alarms notify; none: no alarms (the outbox module creates them only with a topic)."
  type        = string
  default     = null
}

variable "deletion_protection" {
  description = "Deletion protection of the tables. Set false for a throwaway deployment (apply, then terraform destroy)."
  type        = bool
  default     = true
}

variable "max_message_bytes" {
  description = "MaximumMessageSize of the queues (1 MiB; hashicorp/aws before 6.8.0 accepts at most 262144)."
  type        = number
  default     = 1048576
}
