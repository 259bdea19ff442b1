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
  description = <<-EOT
    Your routes, topic => destination: OUTBOX_ROUTES (unchanged; nothing else is merged in).
    A destination is an SQS queue URL, an SNS topic ARN or an EventBridge bus ARN, or an object
    { destination = "...", max_message_bytes = N (SQS only: the queue's MaximumMessageSize
    when below 1 MiB), source = "..." (EventBridge only: the events' Source), raw_delivery =
    true (SNS only: every subscription of the topic uses raw delivery, so a message is sized as
    SNS counts it instead of in the notification envelope a subscriber queue receives) }.
  EOT
  type        = any
  default     = {}
  nullable    = false
  validation {
    condition = try(alltrue([for t, r in var.routes : can(tostring(r)) || (
      try(length(setsubtract(keys(r), ["destination", "max_message_bytes", "source", "raw_delivery"])) == 0, false) && can(tostring(r.destination))
    )]), false)
    error_message = "Every route is a destination text or an object { destination = \"...\", max_message_bytes = N, source = \"...\", raw_delivery = true } (no other keys)."
  }
  validation {
    condition = try(alltrue([for t, r in var.routes : can(regex(
      "^(https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/[0-9]{12}/[A-Za-z0-9_-]{1,75}(\\.fifo)?|arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\\.fifo)?|arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]{1,256})$",
      try(tostring(r), r.destination),
    ))]), false)
    error_message = "Every route destination must be an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>, or a local AWS's http://<host>:<port>/<account>/<name>), an SNS topic ARN or an EventBridge bus ARN."
  }
  validation {
    condition = try(alltrue([for t, r in var.routes : try(r.max_message_bytes, null) == null || try(
      tonumber(r.max_message_bytes) == r.max_message_bytes && floor(r.max_message_bytes) == r.max_message_bytes
      && r.max_message_bytes >= 1 && r.max_message_bytes <= 1048576 && can(regex("^https?://", r.destination)),
      false,
    )]), false)
    error_message = "A route's max_message_bytes must be a whole number from 1 to 1048576, and only on an SQS queue destination (SNS and EventBridge limits are fixed)."
  }
  validation {
    condition = try(alltrue([for t, r in var.routes : try(r.source, null) == null || try(
      length(r.source) >= 1 && length(r.source) <= 256 && can(regex("^arn:aws[a-z-]*:events:", r.destination)),
      false,
    )]), false)
    error_message = "A route's source (the events' Source) must be 1-256 characters, and only on an EventBridge bus destination."
  }
  # The functions refuse raw_delivery on a queue or a bus whatever its value (false too),
  # and anything but a boolean: so does the module, before deploying.
  validation {
    condition = try(alltrue([for t, r in var.routes : try(r.raw_delivery, null) == null || try(
      (r.raw_delivery == true || r.raw_delivery == false) && can(regex("^arn:aws[a-z-]*:sns:", r.destination)),
      false,
    )]), false)
    error_message = "Route ${try(join(", ", [for t, r in var.routes : "\"${t}\"" if !(try(r.raw_delivery, null) == null || try((r.raw_delivery == true || r.raw_delivery == false) && can(regex("^arn:aws[a-z-]*:sns:", r.destination)), false))]), "?")}: raw_delivery (true: every subscription of the topic uses raw delivery, so messages are sized without SNS's notification envelope) must be true or false, and only on an SNS topic destination (arn:aws:sns:...), not on an SQS queue or an EventBridge bus: remove it from that route."
  }
  validation {
    condition     = try(alltrue([for t in keys(var.routes) : can(regex("^[A-Za-z0-9._:-]{1,256}$", t))]), false)
    error_message = "Route topics may only use A-Z a-z 0-9 . _ : - (1-256 characters)."
  }
}

variable "default_destination" {
  description = "Optional destination for topics without a route (OUTBOX_DEFAULT_DESTINATION)."
  type        = string
  default     = null
  validation {
    condition = var.default_destination == null || anytrue([
      can(regex("^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/[0-9]{12}/[A-Za-z0-9_-]{1,75}(\\.fifo)?$", coalesce(var.default_destination, "-"))),
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
  description = "OUTBOX_SWEEP_SCAN_MODE: how the sweeper looks for PENDING items no index knows about. \"off\": only the index; \"backstop\" (the default): one page of at most 100 items per sweep, from a cursor saved in the table -- a slow, cheap pass over the whole table; \"on\": 4 segments x 2 pages of 1000 items per sweep, for tables whose producers rarely index their items. Except under \"off\" the sweeper's role may Scan the table and PutItem its scan cursors (PK = OUTBOX#SWEEPER only). The old booleans still work: true is \"on\", false is \"off\" (no backstop)."
  type        = string
  default     = "backstop"
  nullable    = false
  validation {
    condition     = contains(["off", "backstop", "on", "true", "false"], var.sweep_scan_mode)
    error_message = "sweep_scan_mode must be \"off\", \"backstop\" or \"on\" (or the old true = \"on\", false = \"off\"), got \"${var.sweep_scan_mode}\"."
  }
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

variable "parallelization_factor" {
  description = "Concurrent batches per stream shard of the publisher's mapping (1-10; default 1). AWS keeps the order of each item (partition and sort key), not of each partition key, above 1: batches of one shard run at once, so two messages of one aggregate may reach the publisher together. The FIFO order fence then defers the later message while the earlier one is PENDING (it is retried, and counted as deferred): order holds, at the cost of retries. Keep 1 for FIFO-heavy tables; raise it when one shard's batches cannot keep up (IteratorAge grows) and most routes are standard queues, topics or buses. docs/scale.md has the trade."
  type        = number
  default     = 1
  nullable    = false
  validation {
    condition     = var.parallelization_factor >= 1 && var.parallelization_factor <= 10 && floor(var.parallelization_factor) == var.parallelization_factor
    error_message = "parallelization_factor must be an integer from 1 to 10 (what Lambda allows for a stream)."
  }
}

variable "sweep_shards" {
  description = "OUTBOX_SWEEP_SHARDS: partition values of the sweeper's index (1-1000; default 16). Each takes about 1,000 index writes a second, and a message writes the index twice: 16 shards hold about 8,000 messages a second. Your producers must write with the same count (OutboxWriter::sweep_shards, or KeyNames::from_env with the key_names output's environment). To change it on a live table set sweep_shards_previous to the old count first: docs/operations.md."
  type        = number
  default     = 16
  nullable    = false
  validation {
    condition     = var.sweep_shards >= 1 && var.sweep_shards <= 1000 && floor(var.sweep_shards) == var.sweep_shards
    error_message = "sweep_shards must be an integer from 1 to 1000."
  }
}

variable "sweep_shards_previous" {
  description = "OUTBOX_SWEEP_SHARDS_PREVIOUS: while the shard count changes, the count before (null: no change under way). The functions then also read the old shards, so items written under the old count are still swept and fenced; drop it once `outbox-ops shards --move` reports nothing left (docs/operations.md)."
  type        = number
  default     = null
  validation {
    condition     = var.sweep_shards_previous == null || try(var.sweep_shards_previous >= 1 && var.sweep_shards_previous <= 1000 && floor(var.sweep_shards_previous) == var.sweep_shards_previous && var.sweep_shards_previous != var.sweep_shards, false)
    error_message = "sweep_shards_previous must be null or an integer from 1 to 1000 that differs from sweep_shards (the count being changed from)."
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
  description = "MaximumMessageSize of every queue the module creates (its DLQ, the stream-failure queue and its DLQ): 1 MiB unless set."
  type        = number
  default     = 1048576
  validation {
    condition     = var.max_message_bytes >= 1024 && var.max_message_bytes <= 1048576 && floor(var.max_message_bytes) == var.max_message_bytes
    error_message = "max_message_bytes must be a whole number from 1024 to 1048576 (what SQS allows)."
  }
}

variable "sweeper_reserved_concurrency" {
  description = "Reserved concurrency of the sweeper: 1 (one sweep at a time) by default; null or 0 leaves it unreserved, for accounts whose concurrency quota cannot spare it. Concurrent sweeps are safe: a sweep claims each item with a lease."
  type        = number
  default     = 1
  validation {
    condition     = var.sweeper_reserved_concurrency == null || try(var.sweeper_reserved_concurrency >= 0 && var.sweeper_reserved_concurrency <= 10000 && floor(var.sweeper_reserved_concurrency) == var.sweeper_reserved_concurrency, false)
    error_message = "sweeper_reserved_concurrency must be null, 0 (both: unreserved) or a whole number up to 10000."
  }
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection of the outbox table the module creates. On by default; turn it off for throwaway deployments (terraform destroy then deletes the table)."
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
  description = "Create the large-payload bucket (S3 large-payload offload: payloads too large for a destination or a DynamoDB item are stored at outbox/<MessageId> and a pointer is sent) and pass its name to the publisher and the sweeper (OUTBOX_LARGE_PAYLOAD_BUCKET). false: no bucket, no S3 grants."
  type        = bool
  default     = true
  nullable    = false
}

variable "large_payload_bucket_name" {
  description = "Attach this existing bucket instead of creating one (its owner then sets its encryption, TLS-only policy and lifecycle; see infra/README.md). The grants and OUTBOX_LARGE_PAYLOAD_BUCKET name it. Needs large_payloads."
  type        = string
  default     = null
  validation {
    condition = var.large_payload_bucket_name == null || try(
      can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.large_payload_bucket_name)) && !strcontains(var.large_payload_bucket_name, "..") && var.large_payloads,
      false,
    )
    error_message = "large_payload_bucket_name must be an S3 bucket name (3-63 characters of a-z, 0-9, \".\" and \"-\"), and needs large_payloads = true."
  }
}

variable "large_payload_retention_days" {
  description = "Days a large payload stays in the bucket (lifecycle expiration). Must be longer than the queues' 14-day retention, so no message outlives its payload."
  type        = number
  default     = 30
  nullable    = false
  validation {
    condition     = var.large_payload_retention_days > local.queue_retention_days && var.large_payload_retention_days <= 3650 && floor(var.large_payload_retention_days) == var.large_payload_retention_days
    error_message = "large_payload_retention_days must be a whole number longer than the queues' ${local.queue_retention_days}-day retention (${local.queue_retention_days + 1} to 3650)."
  }
}

variable "large_payload_threshold_bytes" {
  description = "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES for the publisher and the sweeper; null (the default) leaves it unset. Needs large_payloads."
  type        = number
  default     = null
  validation {
    condition = var.large_payload_threshold_bytes == null || try(
      var.large_payload_threshold_bytes >= 1 && var.large_payload_threshold_bytes <= 1048576 && floor(var.large_payload_threshold_bytes) == var.large_payload_threshold_bytes && var.large_payloads,
      false,
    )
    error_message = "large_payload_threshold_bytes must be null or a whole number from 1 to 1048576, and needs large_payloads = true (there is no bucket otherwise)."
  }
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
  description = "Attach to this existing table instead of creating one. Its stream must be enabled (NEW_IMAGE or NEW_AND_OLD_IMAGES), its keys must be the strings partition_key_name and sort_key_name, TTL on ttl_attribute_name, and it must have the OutboxSweepIndex GSI (SweepShard S, SweepDueAt N)."
  type = object({
    table_name = string
    stream_arn = string
  })
  default = null
  validation {
    condition     = var.existing_table == null || try(length(var.existing_table.table_name) >= 3 && length(var.existing_table.stream_arn) > 0, false)
    error_message = "existing_table needs table_name and stream_arn (the table's LatestStreamArn: its stream must be enabled)."
  }
  validation {
    condition     = var.existing_table == null || can(regex("^[A-Za-z0-9_.-]{3,255}$", try(var.existing_table.table_name, "")))
    error_message = "existing_table.table_name must be a DynamoDB table name (3-255 characters of A-Z a-z 0-9 _ . -), not an ARN."
  }
  validation {
    condition     = var.existing_table == null || can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/${try(var.existing_table.table_name, "")}/stream/[0-9A-Za-z:.T-]+$", try(var.existing_table.stream_arn, "")))
    error_message = "existing_table.stream_arn must be the stream ARN of existing_table.table_name."
  }
}

variable "partition_key_name" {
  description = "Partition key attribute (a string) of the outbox table: a created table's HASH key; an existing table's must be this. The functions get it as OUTBOX_PARTITION_KEY."
  type        = string
  default     = "PK"
  nullable    = false
  validation {
    condition     = length(var.partition_key_name) >= 1 && length(var.partition_key_name) <= 255
    error_message = "partition_key_name must be 1-255 characters."
  }
}

variable "sort_key_name" {
  description = "Sort key attribute (a string) of the outbox table: a created table's RANGE key; an existing table's must be this. The functions get it as OUTBOX_SORT_KEY."
  type        = string
  default     = "SK"
  nullable    = false
  validation {
    condition     = length(var.sort_key_name) >= 1 && length(var.sort_key_name) <= 255 && var.sort_key_name != var.partition_key_name
    error_message = "sort_key_name must be 1-255 characters and differ from partition_key_name (the outbox table has both keys)."
  }
}

variable "ttl_attribute_name" {
  description = "TTL attribute of the outbox table (epoch seconds; a SENT item expires ttl_days later): a created table's TTL; an existing table's TTL must be on this attribute (a table has one). The functions get it as OUTBOX_TTL_ATTRIBUTE."
  type        = string
  default     = "ExpiresAt"
  nullable    = false
  validation {
    condition     = length(var.ttl_attribute_name) >= 1 && length(var.ttl_attribute_name) <= 255 && !contains([var.partition_key_name, var.sort_key_name], var.ttl_attribute_name)
    error_message = "ttl_attribute_name must be 1-255 characters and not a key attribute (a key cannot expire items)."
  }
  validation {
    # The outbox's own attributes (infra/CONTRACT.md): a key or TTL named like one would mix them up.
    condition     = length(setintersection([var.partition_key_name, var.sort_key_name, var.ttl_attribute_name], local.outbox_attributes)) == 0
    error_message = "partition_key_name, sort_key_name and ttl_attribute_name must not be attributes the outbox writes itself (${join(", ", local.outbox_attributes)})."
  }
  validation {
    # The functions rename the three to PK, SK and ExpiresAt when they read an item: one of those
    # names in another role (partition key "SK") would overwrite a key.
    condition = alltrue([
      for role, name in { PK = var.partition_key_name, SK = var.sort_key_name, ExpiresAt = var.ttl_attribute_name } :
      !contains(["PK", "SK", "ExpiresAt"], name) || name == role
    ])
    error_message = "PK, SK and ExpiresAt may each name only its own role (partition key, sort key, TTL attribute): the functions read items under those names."
  }
}

variable "dashboard_queue_names" {
  description = "More queues (by name) whose visible messages the dashboard's dead-letter widget shows after the outbox's own, e.g. your destinations' dead-letter queues."
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

variable "lambda_asset_dir" {
  description = "Directory holding <bin>/bootstrap.zip (cargo lambda output). When set, each artifact is checked at plan (see output \"artifacts\"); null skips the check (names and settings only)."
  type        = string
  default     = null
}

variable "stream_filter_file" {
  description = "The stream FilterCriteria JSON. Defaults to infra/stream-filter.json, the one source of truth shared with CDK and the local runner."
  type        = string
  default     = null
}

variable "resources" {
  description = "ARNs of the deployed resources, for the IAM policy documents. modules/outbox passes them; leave null to compute names and settings only."
  type = object({
    outbox_table_arn          = string
    outbox_stream_arn         = string
    outbox_dlq_arn            = string
    stream_failures_queue_arn = string
    log_group_arns            = map(string)      # publisher, sweeper, recovery
    large_payload_bucket_arn  = optional(string) # null when large_payloads is off
    region                    = optional(string) # the deployment's: queues whose URL names no region (a local AWS) are there
  })
  default = null
}

# ---------------------------------------------------------------- regions (docs/global-tables.md)
variable "region" {
  description = "The region this deployment runs in and owns (OUTBOX_REGION): the publisher's filter passes the inserts whose HomeRegion is this region. modules/outbox passes its provider's region."
  type        = string
  nullable    = false
  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]+$", var.region))
    error_message = "region must be an AWS region name (e.g. eu-west-1)."
  }
}

variable "default_home_region" {
  description = "OUTBOX_DEFAULT_HOME_REGION: the home region of outbox items without a HomeRegion attribute (minimal producers'); null (the default): this deployment's region. On a global table every region's deployment must set the same value (required there)."
  type        = string
  default     = null
  validation {
    condition     = var.default_home_region == null || can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]+$", coalesce(var.default_home_region, "-")))
    error_message = "default_home_region must be null or an AWS region name (e.g. us-east-1)."
  }
  validation {
    condition     = length(var.global_table_regions) == 0 || try(contains(var.global_table_regions, var.default_home_region), false)
    error_message = "On a global table (global_table_regions set) default_home_region is required and must be one of global_table_regions: every region's deployment must name the same one."
  }
}

variable "global_table_regions" {
  description = "The regions of the global table the outbox runs on (this one among them), one deployment in each; empty (the default): a single-region table. When set, the outbox attaches to existing_table (the replica in this region), default_home_region is required, and the account-global names (IAM roles, the producer policy, the dashboard) carry the region."
  type        = list(string)
  default     = []
  nullable    = false
  validation {
    condition     = alltrue([for r in var.global_table_regions : can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]+$", r))]) && length(distinct(var.global_table_regions)) == length(var.global_table_regions)
    error_message = "global_table_regions must be distinct AWS region names."
  }
  validation {
    condition     = length(var.global_table_regions) == 0 || (contains(var.global_table_regions, var.region) && length(var.global_table_regions) >= 2)
    error_message = "global_table_regions must hold this deployment's region and at least one other."
  }
  validation {
    condition     = length(var.global_table_regions) == 0 || var.existing_table != null
    error_message = "On a global table the outbox attaches to the table's replica in this region (existing_table): create the table with its replicas once, beside the deployments (examples/global-table)."
  }
}
