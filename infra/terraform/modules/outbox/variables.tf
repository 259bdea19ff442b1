# User settings; validated again in ../outbox-config, which computes everything shared.
variable "prefix" {
  description = "Prefix of every physical name (table, functions, queues, alarms)."
  type        = string
  default     = "outbox"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,30}[a-z0-9]$", var.prefix))
    error_message = "prefix must be 2-32 characters of a-z, 0-9 and \"-\", starting with a letter."
  }
}

variable "routes" {
  description = "Your routes, topic => destination (SQS queue URL, SNS topic ARN or EventBridge bus ARN) or { destination, max_message_bytes (SQS only: the queue's MaximumMessageSize when below 1 MiB), source (EventBridge only), raw_delivery (SNS only: true when every subscription of the topic uses raw delivery; messages are then sized without the notification envelope) }: OUTBOX_ROUTES, unchanged, and the functions' send grants. Nothing else is routed. Validated in ../outbox-config."
  type        = any
  default     = {}
  nullable    = false
}

variable "default_destination" {
  description = "Optional destination for topics without a route (OUTBOX_DEFAULT_DESTINATION)."
  type        = string
  default     = null
  validation {
    condition = var.default_destination == null || anytrue([
      can(regex("^https://sqs\\.[a-z0-9-]+\\.amazonaws\\.com(\\.cn)?/[0-9]{12}/[A-Za-z0-9_-]{1,75}(\\.fifo)?$", coalesce(var.default_destination, "-"))),
      can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\\.fifo)?$", coalesce(var.default_destination, "-"))),
      can(regex("^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]{1,256}$", coalesce(var.default_destination, "-"))),
    ])
    error_message = "default_destination must be an SQS queue URL, an SNS topic ARN or an EventBridge bus ARN."
  }
}

variable "max_attempts" {
  description = "OUTBOX_MAX_ATTEMPTS: sweeper attempts before a message becomes FAILED and goes to the DLQ."
  type        = number
  default     = 8
  validation {
    condition     = var.max_attempts >= 1 && var.max_attempts <= 100 && floor(var.max_attempts) == var.max_attempts
    error_message = "max_attempts must be an integer from 1 to 100."
  }
}

variable "sweep_rate_minutes" {
  description = "How often the sweeper runs, in minutes."
  type        = number
  default     = 1
  validation {
    condition     = var.sweep_rate_minutes >= 1 && var.sweep_rate_minutes <= 1440 && floor(var.sweep_rate_minutes) == var.sweep_rate_minutes
    error_message = "sweep_rate_minutes must be an integer from 1 to 1440."
  }
}

variable "sweep_grace_seconds" {
  description = "OUTBOX_SWEEP_GRACE_SECONDS: how long a message may stay PENDING before the sweeper takes it."
  type        = number
  default     = 60
  validation {
    condition     = var.sweep_grace_seconds >= 0 && var.sweep_grace_seconds <= 86400 && floor(var.sweep_grace_seconds) == var.sweep_grace_seconds
    error_message = "sweep_grace_seconds must be an integer from 0 to 86400."
  }
}

variable "sweep_scan_mode" {
  description = "OUTBOX_SWEEP_SCAN_MODE: how the sweeper looks for PENDING items no index knows about. \"off\": only the index; \"backstop\" (the default): one page of at most 100 items per sweep, from a cursor saved in the table -- a slow, cheap pass over the whole table; \"on\": 4 segments x 2 pages of 1000 items per sweep, for tables whose producers rarely index their items. Except under \"off\" the sweeper's role may Scan the table and PutItem its scan cursors (PK = OUTBOX#SWEEPER only). The old booleans still work: true is \"on\", false is \"off\" (no backstop). Validated in ../outbox-config."
  type        = string
  default     = "backstop"
  nullable    = false
}

variable "ttl_days" {
  description = "OUTBOX_TTL_DAYS: days a SENT item stays before TTL deletes it."
  type        = number
  default     = 7
  validation {
    condition     = var.ttl_days >= 1 && var.ttl_days <= 365 && floor(var.ttl_days) == var.ttl_days
    error_message = "ttl_days must be an integer from 1 to 365."
  }
}

variable "batch_size" {
  description = "Batch size of the stream event source mapping."
  type        = number
  default     = 100
  validation {
    condition     = var.batch_size >= 1 && var.batch_size <= 10000 && floor(var.batch_size) == var.batch_size
    error_message = "batch_size must be an integer from 1 to 10000."
  }
}

variable "stream_retry_attempts" {
  description = "Retries of a failed stream batch before it goes to the on-failure destination (the sweeper then recovers the items)."
  type        = number
  default     = 5
  validation {
    condition     = var.stream_retry_attempts >= 0 && var.stream_retry_attempts <= 10000 && floor(var.stream_retry_attempts) == var.stream_retry_attempts
    error_message = "stream_retry_attempts must be an integer from 0 to 10000."
  }
}

variable "stream_max_record_age_seconds" {
  description = "Oldest stream record (seconds) still delivered to the publisher. Bounded: -1 (infinite) is refused."
  type        = number
  default     = 3600
  validation {
    condition     = var.stream_max_record_age_seconds >= 60 && var.stream_max_record_age_seconds <= 86400 && floor(var.stream_max_record_age_seconds) == var.stream_max_record_age_seconds
    error_message = "stream_max_record_age_seconds must be an integer from 60 to 86400 (stream records live 24 h)."
  }
}

variable "max_receive_count" {
  description = "Receives of a stream-failure record before it moves to the stream-failure DLQ (the orders example's queues have their own consumer_max_receive_count)."
  type        = number
  default     = 5
  validation {
    condition     = var.max_receive_count >= 1 && var.max_receive_count <= 1000 && floor(var.max_receive_count) == var.max_receive_count
    error_message = "max_receive_count must be an integer from 1 to 1000."
  }
}

variable "max_message_bytes" {
  description = "MaximumMessageSize of the queues the module creates (the outbox DLQ, which gets a copy of each FAILED message, and the stream-failure queue and its DLQ). 262144 by default: hashicorp/aws before 6.8.0 refuses more at plan, and the module supports 5.x; with hashicorp/aws >= 6.8.0 set 1048576 (SQS's limit, the CDK construct's default). Validated in ../outbox-config."
  type        = number
  default     = 262144
  nullable    = false
}

variable "sweeper_reserved_concurrency" {
  description = "Reserved concurrency of the sweeper: 1 by default (one sweep at a time); null or 0 leaves it unreserved, for accounts whose concurrency quota cannot spare it. Concurrent sweeps are safe: a sweep claims each item with a lease. Validated in ../outbox-config."
  type        = number
  default     = 1
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection of the outbox table the module creates (and force_destroy of the large-payload bucket it creates: off while protected). On by default; turn it off (and apply) before `terraform destroy` of a throwaway deployment."
  type        = bool
  default     = true
  nullable    = false
}

variable "log_retention_days" {
  description = "CloudWatch Logs retention of the function log groups, in days."
  type        = number
  default     = 30
  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be a value CloudWatch Logs accepts (1, 3, 5, 7, 14, 30, 60, 90, ..., 3653)."
  }
}

variable "large_payloads" {
  description = "Create the large-payload bucket (S3 large-payload offload: payloads too large for a destination or a DynamoDB item are stored at outbox/<MessageId> and a pointer is sent) and pass its name to the publisher and the sweeper (OUTBOX_LARGE_PAYLOAD_BUCKET). false: no bucket, no S3 grants. An unused bucket costs nothing."
  type        = bool
  default     = true
  nullable    = false
}

variable "large_payload_bucket_name" {
  description = "Attach this existing bucket instead of creating one (its owner then sets its encryption, TLS-only policy and lifecycle). Validated in ../outbox-config."
  type        = string
  default     = null
}

variable "large_payload_retention_days" {
  description = "Days a large payload stays in the bucket (lifecycle expiration); longer than the queues' 14-day retention. Validated in ../outbox-config."
  type        = number
  default     = 30
  nullable    = false
}

variable "large_payload_threshold_bytes" {
  description = "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES for the publisher and the sweeper; null (the default) leaves it unset. Validated in ../outbox-config."
  type        = number
  default     = null
}

variable "architecture" {
  description = "Lambda architecture: arm64 (default, cargo lambda build --arm64) or x86_64."
  type        = string
  default     = "arm64"
  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key for the tables and queues. When null: AWS-managed SSE on the tables, SQS-managed SSE on the queues."
  type        = string
  default     = null
  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", coalesce(var.kms_key_arn, "-")))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)."
  }
}

variable "existing_table" {
  description = "Attach to your existing table instead of creating one: its name and its stream ARN (LatestStreamArn). Its stream must be enabled (NEW_IMAGE or NEW_AND_OLD_IMAGES), its keys must be the strings partition_key_name and sort_key_name, TTL on ttl_attribute_name, and it must have the OutboxSweepIndex GSI (SweepShard S hash, SweepDueAt N range, KEYS_ONLY or more). Checked at plan: the names, and that the stream ARN is the table's. Validated in ../outbox-config."
  type = object({
    table_name = string
    stream_arn = string
  })
  default = null
  validation {
    condition     = var.existing_table == null || can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/${try(var.existing_table.table_name, "")}/stream/[0-9A-Za-z:.T-]+$", try(var.existing_table.stream_arn, "")))
    error_message = "existing_table.stream_arn must be the stream ARN of existing_table.table_name."
  }
}

variable "alarm_topic_arn" {
  description = "SNS topic the alarms notify. When null the alarms have no action."
  type        = string
  default     = null
  validation {
    condition     = var.alarm_topic_arn == null || can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$", coalesce(var.alarm_topic_arn, "-")))
    error_message = "alarm_topic_arn must be an SNS topic ARN."
  }
}

variable "iterator_age_threshold_ms" {
  description = "Publisher IteratorAge alarm threshold, milliseconds."
  type        = number
  default     = 60000
  validation {
    condition     = var.iterator_age_threshold_ms >= 1000
    error_message = "iterator_age_threshold_ms must be at least 1000."
  }
}

variable "oldest_pending_threshold_seconds" {
  description = "OldestPendingAgeSeconds alarm threshold, seconds."
  type        = number
  default     = 600
  validation {
    condition     = var.oldest_pending_threshold_seconds >= 60
    error_message = "oldest_pending_threshold_seconds must be at least 60."
  }
}

variable "stream_filter_file" {
  description = "The stream FilterCriteria JSON. Defaults to infra/stream-filter.json, the one source of truth shared with CDK and the local runner."
  type        = string
  default     = null
}

variable "lambda_asset_dir" {
  description = "Required (no default). Directory holding <bin>/bootstrap.zip and, when the zip is compressed (cargo lambda's are), the <bin>/bootstrap it was made from: `cargo lambda build --release --arm64` then the same with `--output-format zip`. Usually <repository>/target/lambda. Checked at plan: missing, non-ELF, wrong-architecture or stale artifacts are refused."
  type        = string
  nullable    = false
}

variable "tags" {
  description = "Tags for every resource."
  type        = map(string)
  default     = {}
}

variable "partition_key_name" {
  description = "Partition key attribute (a string) of the outbox table: a created table's hash key, an existing table's must be this. The functions get it as OUTBOX_PARTITION_KEY. Validated in ../outbox-config."
  type        = string
  default     = "PK"
  nullable    = false
}

variable "sort_key_name" {
  description = "Sort key attribute (a string) of the outbox table: a created table's range key, an existing table's must be this. The functions get it as OUTBOX_SORT_KEY. Validated in ../outbox-config (not the partition key)."
  type        = string
  default     = "SK"
  nullable    = false
}

variable "ttl_attribute_name" {
  description = "TTL attribute of the outbox table (SENT items expire ttl_days later): a created table's TTL, an existing table's TTL must be on it (a table has one). The functions get it as OUTBOX_TTL_ATTRIBUTE. Validated in ../outbox-config (not a key, not an attribute the outbox writes)."
  type        = string
  default     = "ExpiresAt"
  nullable    = false
}

variable "sweep_shards" {
  description = "OUTBOX_SWEEP_SHARDS: partition values of the sweeper's index (default 16, up to 1000): about 500 messages a second each (a message writes the index twice). Your producers must use the same count (output key_names). Change it on a live table with sweep_shards_previous: docs/operations.md. Validated in ../outbox-config."
  type        = number
  default     = 16
  nullable    = false
}

variable "sweep_shards_previous" {
  description = "OUTBOX_SWEEP_SHARDS_PREVIOUS: the count before, while sweep_shards changes (null: no change under way); drop it once `outbox-ops shards --move` reports nothing left. Validated in ../outbox-config."
  type        = number
  default     = null
}

variable "parallelization_factor" {
  description = "Concurrent batches per stream shard of the publisher's mapping (1-10, default 1). Above 1 AWS orders per item, not per partition key: the FIFO order fence defers a message whose aggregate has an earlier one PENDING (retries, not disorder). Keep 1 for FIFO-heavy tables. Validated in ../outbox-config; docs/scale.md has the trade."
  type        = number
  default     = 1
  nullable    = false
}

variable "create_producer_policy" {
  description = "Create the managed IAM policy <prefix>-producer (output producer_policy_arn) for your application's role. false: only the JSON (output producer_policy_json), to attach as you like."
  type        = bool
  default     = true
  nullable    = false
}

variable "dashboard_queue_names" {
  description = "More queues (by name) the dashboard's dead-letter widget shows after the outbox's own, e.g. your destinations' dead-letter queues."
  type        = list(string)
  default     = []
  nullable    = false
}

variable "dashboard_function_names" {
  description = "More functions (by name) whose errors, duration and throttles the dashboard shows after the outbox's own, e.g. your consumers."
  type        = list(string)
  default     = []
  nullable    = false
}

variable "default_home_region" {
  description = "OUTBOX_DEFAULT_HOME_REGION: the home region of outbox items without a HomeRegion attribute; null (the default): the provider's region. On a global table every region's deployment must set the same value (required there). docs/global-tables.md. Validated in ../outbox-config."
  type        = string
  default     = null
}

variable "global_table_regions" {
  description = "The regions of the global table (this one among them), one instance of this module per region with a provider of that region; empty (the default): a single-region table. When set: existing_table (the replica here) and default_home_region are required, and the IAM role, producer policy and dashboard names carry the region. infra/README.md, examples/global-table. Validated in ../outbox-config."
  type        = list(string)
  default     = []
  nullable    = false
}
