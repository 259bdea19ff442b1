variable "prefix" {
  description = "The outbox deployment's prefix: the example's names start with it."
  type        = string
  nullable    = false
}

variable "lambda_asset_dir" {
  description = "Directory holding orders-consumer/bootstrap.zip (and its bootstrap): cargo lambda's target/lambda."
  type        = string
  nullable    = false
}

variable "architecture" {
  description = "Lambda architecture of the consumer: arm64 or x86_64."
  type        = string
  default     = "arm64"
}

variable "consumer_batch_size" {
  description = "Batch size of the consumer's SQS event source mapping."
  type        = number
  default     = 10
}

variable "consumer_max_receive_count" {
  description = "Receives of a message of the orders queue or the FIFO orders-events queue before it moves to that queue's DLQ; 10 (see ../orders-config). The outbox module's max_receive_count is its stream-failure queue's."
  type        = number
  default     = 10
}

# The example's old name for consumer_max_receive_count, refused with the new name: it was 5
# by default and read like the outbox module's max_receive_count (the stream-failure queue).
variable "max_receive_count" {
  description = "Replaced by consumer_max_receive_count; refused when set."
  type        = number
  default     = null
  validation {
    condition     = var.max_receive_count == null
    error_message = "The orders example's max_receive_count is now consumer_max_receive_count (default 10): rename the argument. The outbox module's max_receive_count (the stream-failure queue, default 5) is unchanged."
  }
}

variable "max_message_bytes" {
  description = "MaximumMessageSize of the example queues (hashicorp/aws before 6.8.0 accepts at most 262144)."
  type        = number
  default     = 262144
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection of the orders table."
  type        = bool
  default     = true
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key for the orders table and queues, or null (AWS-managed)."
  type        = string
  default     = null
}

variable "log_retention_days" {
  description = "Retention of the consumer's log group."
  type        = number
  default     = 30
}

variable "alarm_topic_arn" {
  description = "SNS topic the example's alarms notify, or null."
  type        = string
  default     = null
}

variable "large_payload_objects" {
  description = "The outbox's large payloads (<bucket ARN>/outbox/*: the module's large_payload_bucket_arn), which the consumer may read (s3:GetObject there, s3:ListBucket on the bucket); null when off."
  type        = string
  default     = null
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}
