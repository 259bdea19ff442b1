variable "endpoint" {
  description = "The local AWS, e.g. https://127.0.0.1:4566 (scripts/emulator start prints it; trust its certificate with `scripts/emulator trust`)."
  type        = string

  validation {
    condition     = can(regex("^https?://(127\\.0\\.0\\.1|localhost)(:[0-9]+)?/?$", var.endpoint))
    error_message = "This root deploys only to a local AWS on loopback; use examples/basic for an account."
  }
}

variable "region" {
  description = "Region the local AWS serves."
  type        = string
  default     = "us-east-1"
}

variable "prefix" {
  description = "Prefix of every physical name (several deployments can share one local AWS)."
  type        = string
  default     = "outbox"
}

variable "lambda_asset_dir" {
  description = "Directory holding <bin>/bootstrap.zip (scripts/package writes target/lambda)."
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

variable "sweep_grace_seconds" {
  description = "OUTBOX_SWEEP_GRACE_SECONDS for the sweeper."
  type        = number
  default     = 60
}

variable "sweep_scan_mode" {
  description = "OUTBOX_SWEEP_SCAN_MODE: \"off\", \"backstop\" or \"on\" (the old true is \"on\", false \"off\"); null (the default) takes the module's, \"off\". Except under \"off\" the sweeper may Scan the table and PutItem its scan cursors."
  type        = string
  default     = null
}

variable "max_message_bytes" {
  description = "MaximumMessageSize of every queue. 256 KiB here: hashicorp/aws accepts 1 MiB only from 6.8.0, and the machines this project runs on may have 5.x (set 1048576 with a newer provider)."
  type        = number
  default     = 262144
}

variable "large_payloads" {
  description = "Create the large-payload bucket (S3 large-payload offload); on here (the module's default is off), as the stack tests read it."
  type        = bool
  default     = true
}

variable "large_payload_bucket_name" {
  description = "Attach this existing bucket instead of creating one; null (the default) creates one."
  type        = string
  default     = null
}

variable "large_payload_retention_days" {
  description = "Days a large payload stays in the bucket; null (the default) takes the module's, 30."
  type        = number
  default     = null
}

variable "large_payload_threshold_bytes" {
  description = "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES for the publisher and the sweeper; null (the default) leaves it unset."
  type        = number
  default     = null
}
