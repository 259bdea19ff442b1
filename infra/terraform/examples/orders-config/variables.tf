variable "prefix" {
  description = "The deployment's prefix (the outbox module's): every name here starts with it."
  type        = string
  default     = "outbox"
  nullable    = false
}

variable "consumer_batch_size" {
  description = "Batch size of the orders consumer's SQS event source mapping."
  type        = number
  default     = 10
  validation {
    condition     = var.consumer_batch_size >= 1 && var.consumer_batch_size <= 10 && floor(var.consumer_batch_size) == var.consumer_batch_size
    error_message = "consumer_batch_size must be an integer from 1 to 10."
  }
}

# 10, not the outbox's 5 (its stream-failure queue's max_receive_count): a consumer crash
# charges every neighbour still in the batch a receive, and with frequent random crashes 5
# dead-letters innocent messages (functions/lib/dynamodb-outbox-idempotency/README.md,
# "A message that kills the process").
variable "consumer_max_receive_count" {
  description = "Receives of a message of the orders queue or the FIFO orders-events queue before it moves to that queue's DLQ (the outbox module's max_receive_count is its stream-failure queue's)."
  type        = number
  default     = 10
  nullable    = false
  validation {
    condition     = var.consumer_max_receive_count >= 1 && var.consumer_max_receive_count <= 1000 && floor(var.consumer_max_receive_count) == var.consumer_max_receive_count
    error_message = "consumer_max_receive_count must be an integer from 1 to 1000."
  }
}

variable "max_message_bytes" {
  description = "MaximumMessageSize of the example queues; below 1 MiB the example routes tell the publisher (max_message_bytes in OUTBOX_ROUTES)."
  type        = number
  default     = 1048576
  nullable    = false
  validation {
    condition     = var.max_message_bytes >= 1024 && var.max_message_bytes <= 1048576 && floor(var.max_message_bytes) == var.max_message_bytes
    error_message = "max_message_bytes must be a whole number from 1024 to 1048576 (what SQS allows)."
  }
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection of the orders table."
  type        = bool
  default     = true
  nullable    = false
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key of the tables and queues (the outbox module's), or null."
  type        = string
  default     = null
}

variable "architecture" {
  description = "Lambda architecture of the consumer: arm64 or x86_64."
  type        = string
  default     = "arm64"
  nullable    = false
}

variable "lambda_asset_dir" {
  description = "Directory holding orders-consumer/bootstrap.zip (cargo lambda output); checked at plan when set."
  type        = string
  default     = null
}

variable "resources" {
  description = "ARNs of the deployed resources, for the consumer's policy (../orders passes them); null for names and settings only."
  type = object({
    orders_table_arn      = string
    orders_queue_arn      = string
    log_group_arn         = string
    large_payload_objects = optional(string) # the outbox module's <bucket ARN>/outbox/*, null when off
  })
  default = null
}

variable "queue_urls" {
  description = "URLs of the two example queues (standard, fifo), for the routes; null until known."
  type        = object({ standard = string, fifo = string })
  default     = null
}
