locals {
  # ---------------------------------------------------------------- names (same as infra/cdk/lib/config.ts)
  # The outbox's own resources only: the orders example names its own (examples/orders-config).
  names = {
    outbox_table        = "${var.prefix}-table"
    publisher           = "${var.prefix}-publisher"
    sweeper             = "${var.prefix}-sweeper"
    recovery            = "${var.prefix}-recovery"
    outbox_dlq          = "${var.prefix}-dlq"
    stream_failures     = "${var.prefix}-stream-failures"
    stream_failures_dlq = "${var.prefix}-stream-failures-dlq"
    sweep_rule          = "${var.prefix}-sweep-schedule"
    # Dashboards and IAM names are global to the account: on a global table (one deployment
    # per region, same prefix) they carry the region; the regional names stay as they are.
    dashboard       = "${var.prefix}-dashboard${local.global_suffix}"
    producer_policy = "${var.prefix}-producer${local.global_suffix}"
  }
  global_suffix = local.home.global_table ? "-${local.region}" : ""
  # The functions' execution roles (IAM: global names), modules/outbox's aws_iam_role names.
  role_names = { for fn in ["publisher", "sweeper", "recovery"] : fn => "${local.names[fn]}${local.global_suffix}-role" }

  # ---------------------------------------------------------------- home region (docs/global-tables.md)
  # A deployment acts on the messages it owns: HomeRegion = its region, or no HomeRegion when
  # its region is the default home region (the same value in every region of a global table).
  home = {
    region              = local.region
    default_home_region = coalesce(var.default_home_region, local.region)
    global_table        = length(var.global_table_regions) > 0
    regions             = var.global_table_regions
    attribute           = "HomeRegion"
    environment = {
      OUTBOX_REGION              = local.region
      OUTBOX_DEFAULT_HOME_REGION = coalesce(var.default_home_region, local.region)
    }
  }

  # ---------------------------------------------------------------- infra/CONTRACT.md
  binaries = {
    publisher = "outbox-publisher"
    sweeper   = "outbox-sweeper"
    recovery  = "outbox-recovery"
  }
  # The key names are settings (both keys strings); a created table uses them, an existing
  # table must have them. The sweeper's index and the other attributes are the outbox's own.
  outbox_table = {
    hash_key         = var.partition_key_name
    range_key        = var.sort_key_name
    stream_view_type = "NEW_IMAGE"
    ttl_attribute    = var.ttl_attribute_name
    attributes = [
      { name = var.partition_key_name, type = "S" },
      { name = var.sort_key_name, type = "S" },
      { name = "SweepShard", type = "S" },
      { name = "SweepDueAt", type = "N" },
    ]
    sweep_index = {
      name            = "OutboxSweepIndex"
      hash_key        = "SweepShard"
      range_key       = "SweepDueAt"
      projection_type = "KEYS_ONLY"
    }
    # Partition key of the sweeper's scan cursor items (SK = SCAN#<segment>): not outbox
    # items (no ItemType). The only items the sweeper may PutItem (unless the scan mode is off).
    scan_cursor_pk = "OUTBOX#SWEEPER"
  }
  # The attributes an outbox item has besides its keys and TTL (dynamodb-outbox-core's schema):
  # a key or TTL named like one would mix them up.
  outbox_attributes = [
    "ItemType", "Topic", "Payload", "Status", "RetryCount", "MessageId", "CreatedAt", "Sequence", "SweepShard", "SweepDueAt",
    "SentAt", "FailedAt", "LastError", "PayloadOn", "PayloadSize", "Segments", "Cursor",
  ]
  # Unless set, the sweeper's workers and the index's shards follow from the expected peak
  # (docs/scale.md; the CDK's SWEEP_SIZING, both checked against the contract's sweep_sizing):
  # enough workers to drain an outage's backlog within 20 times the outage, and enough shards
  # that in an outage at the peak every message entering the index (1 write unit: a KEYS_ONLY
  # item under 1 KB) and the workers' failed attempts (claim 2, reschedule 2) stay under 800 of
  # AWS's 1,000 write units a second per partition. The other 200 are room for uneven hashing:
  # an aggregate's items share a shard, and its own table partition passes at most 200
  # messages a second. Never below the 16 shards of before, so an upgrade keeps the count.
  sweep_sizing = {
    shard_write_units          = 800
    attempt_index_writes       = 4
    worker_attempts_per_second = 2222 # outbox_devkit::scale::sweep_worker_rate
    worker_drain_per_second    = 1778 # the same over a sweep's 48 s of each minute
    drain_within_outage        = 20
    min_shards                 = 16
  }
  sweep_workers = coalesce(var.sweep_workers, min(5, ceil(
    var.expected_peak_messages_per_second / (local.sweep_sizing.drain_within_outage * local.sweep_sizing.worker_drain_per_second)
  )))
  sweep_shards = coalesce(var.sweep_shards, max(local.sweep_sizing.min_shards, ceil(
    (var.expected_peak_messages_per_second + local.sweep_workers * local.sweep_sizing.worker_attempts_per_second * local.sweep_sizing.attempt_index_writes)
    / local.sweep_sizing.shard_write_units
  )))
  # What the functions are told of the table's attribute names and the sweeper index's shard count
  # (always set, so both stacks say it; the previous count only while a change of it is under way).
  key_environment = merge({
    OUTBOX_PARTITION_KEY = var.partition_key_name
    OUTBOX_SORT_KEY      = var.sort_key_name
    OUTBOX_TTL_ATTRIBUTE = var.ttl_attribute_name
    OUTBOX_SWEEP_SHARDS  = tostring(local.sweep_shards)
    }, var.sweep_shards_previous == null ? {} : {
    OUTBOX_SWEEP_SHARDS_PREVIOUS = tostring(var.sweep_shards_previous)
  })
  # The large-payload bucket (S3 large-payload offload): objects at <key_prefix><MessageId>, expiring after
  # the retention -- longer than any queue keeps a pointer (queue_retention_days).
  queue_retention_days = 14
  large_payloads = {
    enabled = var.large_payloads
    # The bucket is created unless an existing one is attached by name.
    create        = var.large_payloads && var.large_payload_bucket_name == null
    existing_name = var.large_payloads ? var.large_payload_bucket_name : null
    # Bucket names are global: the provider adds a unique suffix (bucket_prefix: at most 37 characters).
    bucket_prefix = "${trimsuffix(substr(var.prefix, 0, 27), "-")}-payloads-"
    key_prefix    = "outbox/"
    # A FAILED message's payload whose only copy was under outbox/ is copied here (CopyObject) and
    # its dead-letter copy and item point here: no lifecycle rule covers it, as no TTL ends a
    # FAILED item (docs/message-sizes.md).
    failed_key_prefix               = "failed/"
    lifecycle_rule_id               = "expire-large-payloads"
    abort_rule_id                   = "abort-incomplete-uploads"
    retention_days                  = var.large_payload_retention_days
    abort_incomplete_multipart_days = 1
    # SSE-KMS with the deployment's key (S3 Bucket Key on: fewer KMS requests), else SSE-S3.
    sse_algorithm      = var.kms_key_arn == null ? "AES256" : "aws:kms"
    kms_key_arn        = var.kms_key_arn
    bucket_key_enabled = var.kms_key_arn == null ? null : true
    env = {
      bucket          = "OUTBOX_LARGE_PAYLOAD_BUCKET"
      threshold_bytes = "OUTBOX_LARGE_PAYLOAD_THRESHOLD_BYTES"
    }
  }
  metrics = {
    namespace = "DynamoDbOutbox"
    # The functions emit Service = OUTBOX_DEPLOYMENT (the prefix): two deployments in one account stay apart.
    dimensions = { Service = var.prefix }
  }

  # ---------------------------------------------------------------- stream filter: read, never copied
  stream_filter_file = coalesce(var.stream_filter_file, "${path.module}/stream-filter.json")
  stream_filter      = jsondecode(file(local.stream_filter_file))
  stream_filter_ok = (
    can(length(local.stream_filter.Filters)) &&
    try(length(local.stream_filter.Filters) >= 1 && length(local.stream_filter.Filters) <= 5, false) &&
    try(alltrue([for f in local.stream_filter.Filters : can(jsondecode(f.Pattern)) && can(regex("^\\{", f.Pattern)) && length(f.Pattern) <= 4096]), false)
  )
  # The publisher's FilterCriteria: each filter of the file with its region clause,
  #   "dynamodb": {"NewImage": {"HomeRegion": {"S": ["<region>"]}}}
  # and each again for items without a HomeRegion, in every region:
  #   "dynamodb": {"NewImage": {"HomeRegion": {"S": [{"exists": false}]}}}
  # The filter does not name the default home: which region publishes an item without a
  # HomeRegion is decided by the publisher at run time from OUTBOX_DEFAULT_HOME_REGION (the
  # others skip it), so changing that variable needs no redeploy (issue 36, finding 9;
  # docs/global-tables.md). The cost: a region that is not the default home is invoked for a
  # minimal producer's inserts and drops them.
  # Lambda passes a record that matches any one filter. `exists` is tested on the leaf
  # (HomeRegion.S), not on HomeRegion: "Exists matching only works on leaf nodes. It does not
  # work on intermediate nodes" (Lambda filters with EventBridge's rule syntax,
  # https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax,
  # https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html#eb-filtering-exists-matching;
  # the DynamoDB page's "Using the Exists operator",
  # https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html#filtering-ddb-exists,
  # says the same of DynamoDB JSON: a NewImage attribute is an intermediate node, its type key
  # the leaf). jsonencode writes keys sorted; CDK writes the same text (config.ts canonicalJson).
  stream_filter_patterns = [for f in try(tolist(local.stream_filter.Filters), []) : try(jsondecode(f.Pattern), {})]
  home_stream_filter = {
    Filters = [for p in concat(
      [for p in local.stream_filter_patterns : merge(p, { dynamodb = merge(try(p.dynamodb, {}), {
        NewImage = merge(try(p.dynamodb.NewImage, {}), { (local.home.attribute) = { S = [local.region] } })
      }) })],
      [for p in local.stream_filter_patterns : merge(p, { dynamodb = merge(try(p.dynamodb, {}), {
        NewImage = merge(try(p.dynamodb.NewImage, {}), { (local.home.attribute) = { S = [{ exists = false }] } })
      }) })],
    ) : { Pattern = jsonencode(p) }]
  }

  # ---------------------------------------------------------------- event source mappings and functions
  stream_mapping = {
    # A table this module creates is read from its first record; an existing table from now on:
    # TRIM_HORIZON would replay up to 24 h of its stream on the first deploy (the sweeper finds
    # whatever was PENDING before the mapping existed).
    starting_position              = var.existing_table == null ? "TRIM_HORIZON" : "LATEST"
    batch_size                     = var.batch_size
    maximum_retry_attempts         = var.stream_retry_attempts
    maximum_record_age_in_seconds  = var.stream_max_record_age_seconds
    bisect_batch_on_function_error = true
    function_response_types        = ["ReportBatchItemFailures"]
    # Concurrent batches per stream shard. AWS keeps the order of each item (partition and sort key)
    # under a factor above 1, not of each partition key: the order fence defers a FIFO message
    # whose aggregate's earlier message is still PENDING, so order holds at a cost in retries.
    parallelization_factor = var.parallelization_factor
  }
  # The recovery function's mapping on <prefix>-stream-failures: a range it cannot read for
  # now is reported and retried; the others are deleted.
  recovery_mapping = {
    batch_size              = 10
    function_response_types = ["ReportBatchItemFailures"]
  }
  function_settings = {
    runtime       = "provided.al2023"
    handler       = "bootstrap"
    architectures = [var.architecture]
    memory_size   = 256
    timeouts = {
      publisher = 60
      sweeper   = min(300, var.sweep_rate_minutes * 60)
      recovery  = 60
    }
    # null: unreserved. 0 would stop the sweeper altogether, so 0 means unreserved too.
    reserved_concurrency = {
      publisher = null
      # Every worker of a tick runs at once (sweep_workers): never reserve fewer.
      sweeper = (var.sweeper_reserved_concurrency == null || var.sweeper_reserved_concurrency == 0
      ? null : max(var.sweeper_reserved_concurrency, local.sweep_workers))
      recovery = null
    }
  }
  # EventBridge invokes the sweeper asynchronously. A failed or throttled sweep is not worth
  # retrying for hours (Lambda's default: 2 retries, 6 h): the schedule sends the next one.
  sweeper_async_invoke = { maximum_retry_attempts = 0, maximum_event_age_in_seconds = 120 }
  sweep_target_retry   = { maximum_retry_attempts = 0, maximum_event_age_in_seconds = 60 }
  sweep_schedule       = var.sweep_rate_minutes == 1 ? "rate(1 minute)" : "rate(${var.sweep_rate_minutes} minutes)"

  # off | backstop | on; the old booleans (a bool variable value becomes "true"/"false") are on / off.
  sweep_scan_mode = lookup({ "true" = "on", "false" = "off" }, var.sweep_scan_mode, var.sweep_scan_mode)
  # backstop and on read the table from saved cursors: Scan, and PutItem of the cursors.
  sweep_scans = local.sweep_scan_mode != "off"

  # Environment that does not depend on deployed resources; main.tf adds table name, routes and DLQ URL.
  # The settings passed as they are come from local.settings_environment (variables.tf, generated
  # from infra/contract/settings.json); the derived ones are here.
  # OUTBOX_LARGE_PAYLOAD_BUCKET: an attached bucket's name here, a created one's in main.tf.
  attached_bucket_environment = local.large_payloads.existing_name == null ? {} : { (local.large_payloads.env.bucket) = local.large_payloads.existing_name }
  # local.key_environment: OUTBOX_SWEEP_SHARDS, derived, with what producers are told beside it.
  publisher_environment = merge(local.attached_bucket_environment, local.settings_environment.publisher, local.home.environment, local.key_environment)
  sweeper_environment = merge(local.attached_bucket_environment, local.settings_environment.sweeper, local.home.environment, local.key_environment, {
    # The schedule's period: a FIFO republish is timed to land inside SQS's 5-minute
    # deduplication window (policy/retry.rs), which needs to know how often sweeps run.
    OUTBOX_SWEEP_PERIOD_SECONDS = tostring(var.sweep_rate_minutes * 60)
    OUTBOX_SWEEP_SCAN_MODE      = local.sweep_scan_mode
  })
  recovery_environment = merge(local.settings_environment.recovery, local.home.environment, local.key_environment)

  # ---------------------------------------------------------------- tables
  # An existing table's ARN comes from its stream ARN (its own partition, region, account).
  existing_table = var.existing_table == null ? null : {
    name       = coalesce(var.existing_table.table_name, var.existing_table.name)
    arn        = regex("^(arn:[^:]+:dynamodb:[^:]+:[0-9]{12}:table/[^/]+)/stream/", var.existing_table.stream_arn)[0]
    stream_arn = var.existing_table.stream_arn
  }

  # ---------------------------------------------------------------- routes → IAM targets
  sqs_url_pattern = "^https://sqs\\.(?P<region>[a-z0-9-]+)\\.amazonaws\\.com(?P<cn>\\.cn)?/(?P<account>[0-9]{12})/(?P<name>[A-Za-z0-9_-]{1,75}(?:\\.fifo)?)$"
  # Any other endpoint (a local AWS, http://localhost:4566/<account>/<name>): the queue is in the deployment's region.
  sqs_other_url_pattern = "^https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?/(?P<account>[0-9]{12})/(?P<name>[A-Za-z0-9_-]{1,75}(?:\\.fifo)?)$"
  # A route is a destination text or an object with one; IAM comes from the destination.
  external_destinations = concat(
    [for r in values(var.routes) : try(tostring(r), r.destination)],
    var.default_destination == null ? [] : [var.default_destination],
  )
  external_sqs_arns = concat([
    for d in local.external_destinations : format("arn:%s:sqs:%s:%s:%s",
      regex(local.sqs_url_pattern, d).cn == ".cn" ? "aws-cn" : (startswith(regex(local.sqs_url_pattern, d).region, "us-gov-") ? "aws-us-gov" : "aws"),
      regex(local.sqs_url_pattern, d).region, regex(local.sqs_url_pattern, d).account, regex(local.sqs_url_pattern, d).name,
    ) if can(regex(local.sqs_url_pattern, d))
    ], [
    for d in local.external_destinations : format("arn:%s:sqs:%s:%s:%s",
      startswith(local.r.region, "cn-") ? "aws-cn" : (startswith(local.r.region, "us-gov-") ? "aws-us-gov" : "aws"),
      local.r.region, regex(local.sqs_other_url_pattern, d).account, regex(local.sqs_other_url_pattern, d).name,
    ) if !can(regex(local.sqs_url_pattern, d)) && can(regex(local.sqs_other_url_pattern, d)) && try(local.r.region != null, false)
  ])
  external_sns_arns = distinct([for d in local.external_destinations : d if can(regex("^arn:aws[a-z-]*:sns:", d))])
  external_bus_arns = distinct([for d in local.external_destinations : d if can(regex("^arn:aws[a-z-]*:events:", d))])

  # ---------------------------------------------------------------- IAM policy documents (least privilege, no wildcards)
  routed_queue_arns = local.r == null ? null : distinct(concat(local.external_sqs_arns, [local.r.outbox_dlq_arn]))
  send_statements = concat(
    [for arns in local.r == null ? [] : [local.routed_queue_arns] : { Sid = "SendToRoutedQueues", Effect = "Allow", Action = "sqs:SendMessage", Resource = arns }],
    # Each destination's real MaximumMessageSize, read at cold start: the same queues, nothing more.
    [for arns in local.r == null ? [] : [local.routed_queue_arns] : { Sid = "ReadRoutedQueueSizes", Effect = "Allow", Action = "sqs:GetQueueAttributes", Resource = arns }],
    # `[for ... if ...]` keeps 0 or 1 statement without a conditional of two tuple types.
    [for arns in [local.external_sns_arns] : { Sid = "PublishToRoutedTopics", Effect = "Allow", Action = "sns:Publish", Resource = arns } if length(arns) > 0],
    [for arns in [local.external_bus_arns] : { Sid = "PutToRoutedBuses", Effect = "Allow", Action = "events:PutEvents", Resource = arns } if length(arns) > 0],
    local.kms_statements,
  )
  # What a function needs of the key of a KMS-encrypted table, its stream, the queues and the
  # bucket (docs/iam.md): Decrypt for every read, GenerateDataKey for SQS sends, S3 puts and
  # DynamoDB writes, DescribeKey. No kms:Encrypt: no call encrypts with the key itself.
  kms_statements = [for key in compact([var.kms_key_arn]) : {
    Sid      = "UseKmsKey"
    Effect   = "Allow"
    Action   = ["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"]
    Resource = key
  }]
  # Backstop and on: the adoption scan's cursors (PK = OUTBOX#SWEEPER, SK = SCAN#<segment>), and no
  # other item: the leading key must be present and be the sweeper's.
  scan_cursor_statements = [for r in local.r == null ? [] : [local.r] : {
    Sid      = "SaveScanCursors"
    Effect   = "Allow"
    Action   = "dynamodb:PutItem"
    Resource = r.outbox_table_arn
    Condition = {
      "ForAllValues:StringEquals" = { "dynamodb:LeadingKeys" = [local.outbox_table.scan_cursor_pk] }
      Null                        = { "dynamodb:LeadingKeys" = "false" }
    }
  } if local.sweep_scans]
  # The large-payload offload: publisher and sweeper put objects under the key prefix of the
  # deployment's bucket only (one object per message id, so the prefix wildcard). Consumers get
  # them (large_payload_objects is an output, for their roles).
  large_payload_objects = var.large_payloads ? try("${local.r.large_payload_bucket_arn}/${local.large_payloads.key_prefix}*", null) : null
  # FAILED messages' payloads (failed/): the functions put them, copying from outbox/ (CopyObject
  # reads its source: GetObject there, nothing else of the bucket).
  failed_payload_objects = var.large_payloads ? try("${local.r.large_payload_bucket_arn}/${local.large_payloads.failed_key_prefix}*", null) : null
  large_payload_statements = { for fn in ["publisher", "sweeper"] : fn => flatten([
    for objects in compact([local.large_payload_objects]) : [
      { Sid = "PutLargePayloads", Effect = "Allow", Action = "s3:PutObject", Resource = [objects, local.failed_payload_objects] },
      { Sid = "KeepFailedPayloads", Effect = "Allow", Action = "s3:GetObject", Resource = objects },
    ]
  ]) }
  # The order fence reads the index shards a batch touches in one PartiQL select (`IN` on the
  # shard key: a query of each shard); never a scan of the index.
  select_pending_keys = flatten([for index in local.r == null ? [] : ["${local.r.outbox_table_arn}/index/${local.outbox_table.sweep_index.name}"] : [
    { Sid = "SelectPendingKeys", Effect = "Allow", Action = "dynamodb:PartiQLSelect", Resource = index },
    {
      Sid       = "NoFullIndexScan"
      Effect    = "Deny"
      Action    = "dynamodb:PartiQLSelect"
      Resource  = index
      Condition = { Bool = { "dynamodb:FullTableScan" = "true" } }
    },
  ]])

  logs_statement = { for fn in ["publisher", "sweeper", "recovery"] : fn => {
    Sid      = "WriteOwnLogs"
    Effect   = "Allow"
    Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    Resource = local.r == null ? null : "${local.r.log_group_arns[fn]}:*"
  } }

  policies = local.r == null ? null : {
    publisher = {
      Version = "2012-10-17"
      Statement = concat([
        # PartiQLUpdate: the marks are batched as PartiQL UPDATE statements (BatchExecuteStatement).
        { Sid = "MarkSentOrFailed", Effect = "Allow", Action = ["dynamodb:UpdateItem", "dynamodb:PartiQLUpdate"], Resource = local.r.outbox_table_arn },
        # GetItem: the item is read before it is dead-lettered (poison already FAILED is not copied
        # twice). BatchGetItem: the current status of a redelivered batch's records, in one
        # consistent read (what the first delivery already marked SENT is not sent again), and
        # the order fence's confirmation that the siblings a lagging index lists still pend.
        { Sid = "ReadOutboxItems", Effect = "Allow", Action = ["dynamodb:BatchGetItem", "dynamodb:GetItem"], Resource = local.r.outbox_table_arn },
        {
          Sid      = "ReadOutboxStream"
          Effect   = "Allow"
          Action   = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"]
          Resource = local.r.outbox_stream_arn
        },
        { Sid = "ReportDiscardedBatches", Effect = "Allow", Action = "sqs:SendMessage", Resource = local.r.stream_failures_queue_arn },
        # The order fence: an aggregate's pending messages, from the sweep index (keys only) or,
        # for another producer's aggregate, from its partition.
        { Sid = "ReadPendingSiblings", Effect = "Allow", Action = "dynamodb:Query", Resource = [local.r.outbox_table_arn, "${local.r.outbox_table_arn}/index/${local.outbox_table.sweep_index.name}"] },
        # Before its first piece of work each function compares the table's keys, sweeper index,
        # stream and TTL attribute with its configuration (a wrong key name refuses work, named).
        { Sid = "CheckOutboxTable", Effect = "Allow", Action = ["dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive"], Resource = local.r.outbox_table_arn },
        local.logs_statement.publisher,
      ], local.select_pending_keys, local.send_statements, local.large_payload_statements.publisher)
    }
    sweeper = {
      Version = "2012-10-17"
      Statement = concat([
        { Sid = "QuerySweepIndex", Effect = "Allow", Action = "dynamodb:Query", Resource = "${local.r.outbox_table_arn}/index/${local.outbox_table.sweep_index.name}" },
        # The order fence: another producer's aggregate is read from its partition.
        { Sid = "ReadPendingSiblings", Effect = "Allow", Action = "dynamodb:Query", Resource = local.r.outbox_table_arn },
        {
          Sid      = "UpdateOutboxItems"
          Effect   = "Allow"
          Action   = local.sweep_scans ? ["dynamodb:UpdateItem", "dynamodb:PartiQLUpdate", "dynamodb:Scan"] : ["dynamodb:UpdateItem", "dynamodb:PartiQLUpdate"]
          Resource = local.r.outbox_table_arn
        },
        # An item whose claim was refused (finished, or still pending), an item before it is
        # dead-lettered, and (backstop, on) the scan cursors. BatchGetItem: the order fence
        # confirms, in one consistent read, that the siblings the (lagging) index lists are
        # still pending.
        { Sid = "ReadOutboxItems", Effect = "Allow", Action = ["dynamodb:BatchGetItem", "dynamodb:GetItem"], Resource = local.r.outbox_table_arn },
        # Before its first piece of work each function compares the table's keys, sweeper index,
        # stream and TTL attribute with its configuration (a wrong key name refuses work, named).
        { Sid = "CheckOutboxTable", Effect = "Allow", Action = ["dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive"], Resource = local.r.outbox_table_arn },
        local.logs_statement.sweeper,
      ], local.scan_cursor_statements, local.select_pending_keys, local.send_statements, local.large_payload_statements.sweeper)
    }
    recovery = {
      Version = "2012-10-17"
      Statement = concat([
        {
          # GetShardIterator AT_SEQUENCE_NUMBER + GetRecords on the stream ARN of the on-failure
          # record (its shard id is in the record: no DescribeStream).
          Sid      = "ReadOutboxStream"
          Effect   = "Allow"
          Action   = ["dynamodb:GetRecords", "dynamodb:GetShardIterator"]
          Resource = local.r.outbox_stream_arn
        },
        # A conditional UpdateItem: still PENDING and not yet indexed -> the sweeper's index keys.
        { Sid = "AdoptIntoSweepIndex", Effect = "Allow", Action = "dynamodb:UpdateItem", Resource = local.r.outbox_table_arn },
        # Before its first piece of work each function compares the table's keys, sweeper index,
        # stream and TTL attribute with its configuration (a wrong key name refuses work, named).
        { Sid = "CheckOutboxTable", Effect = "Allow", Action = ["dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive"], Resource = local.r.outbox_table_arn },
        {
          # What its SQS mapping calls with the role (Lambda's documented three); the function
          # itself calls no SQS API.
          Sid      = "ConsumeStreamFailures"
          Effect   = "Allow"
          Action   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
          Resource = local.r.stream_failures_queue_arn
        },
        local.logs_statement.recovery,
      ], local.kms_statements)
    }
  }

  assume_role_policy = {
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = { Service = "lambda.amazonaws.com" }
    }]
  }

  # ---------------------------------------------------------------- routes (OUTBOX_ROUTES)
  # The caller's routes, objects unchanged: nothing of ours is merged in.
  routes_json = jsonencode(var.routes)

  # ---------------------------------------------------------------- producer policy
  # What an application role needs to write outbox messages: PutItem of the outbox items
  # (TransactWriteItems is authorised per action inside it: the business items' own actions are
  # the application's), GetItem (a retried commit whose first attempt may have landed reads its
  # items back), large payloads under outbox/ when the offload is on, and the deployment's KMS
  # key. Nothing else.
  producer_policy = local.r == null ? null : {
    Version = "2012-10-17"
    Statement = concat(
      [{ Sid = "WriteOutboxMessages", Effect = "Allow", Action = ["dynamodb:GetItem", "dynamodb:PutItem"], Resource = local.r.outbox_table_arn }],
      [for objects in compact([local.large_payload_objects]) : { Sid = "PutLargePayloads", Effect = "Allow", Action = "s3:PutObject", Resource = objects }],
      [for key in compact([var.kms_key_arn]) : { Sid = "UseOutboxKey", Effect = "Allow", Action = ["kms:Decrypt", "kms:GenerateDataKey"], Resource = key }],
    )
  }

  # ---------------------------------------------------------------- alarms, named <prefix>-<key>
  # Every alarm is the contract's (infra/contract/settings.json, "alarms"): alarms_contract.tf
  # is generated from it. The missing-data and period choices, and why StatusReadFailed,
  # RecoveryRangeUnfinished and AlreadySettledSkipped are on the dashboard only: infra/README.md, Alarms.
  alarms = local.contract_alarms

  # ---------------------------------------------------------------- dashboard <prefix>-dashboard
  # Widgets without "region": each stack adds its own.
  outbox_metric = [for m in ["Published", "PublishFailed", "Failed", "RecoveredBySweeper", "SweepRetries", "SweepErrors", "AlreadySettledSkipped"] : [local.metrics.namespace, m, "Service", var.prefix]]
  # The outbox's functions, then the caller's (var.dashboard_function_names: its consumers).
  function_metrics = { for metric in ["Errors", "Duration", "Throttles"] : metric => [
    for name in concat([for fn in ["publisher", "sweeper", "recovery"] : local.names[fn]], var.dashboard_function_names) : ["AWS/Lambda", metric, "FunctionName", name]
  ] }
  dashboard_widgets = [
    { title = "Outbox messages (sum per 5 minutes)", view = "timeSeries", stacked = false, stat = "Sum", period = 300, metrics = local.outbox_metric },
    {
      title       = "Oldest PENDING message (seconds)", view = "timeSeries", stacked = false, stat = "Maximum", period = 300
      metrics     = [[local.metrics.namespace, "OldestPendingAgeSeconds", "Service", var.prefix]]
      annotations = { horizontal = [{ label = "OldestPendingTooOld", value = var.oldest_pending_threshold_seconds }] }
    },
    {
      title       = "Publisher stream IteratorAge (ms)", view = "timeSeries", stacked = false, stat = "Maximum", period = 60
      metrics     = [["AWS/Lambda", "IteratorAge", "FunctionName", local.names.publisher]]
      annotations = { horizontal = [{ label = "PublisherIteratorAge", value = var.iterator_age_threshold_ms }] }
    },
    {
      title = "Stream discards and their recovery (sum per 5 minutes)", view = "timeSeries", stacked = false, stat = "Sum", period = 300
      metrics = [
        ["AWS/SQS", "NumberOfMessagesSent", "QueueName", local.names.stream_failures],
        [local.metrics.namespace, "RecoveredFromStream", "Service", var.prefix],
        [local.metrics.namespace, "RecoveryRangeLost", "Service", var.prefix],
        [local.metrics.namespace, "RecoveryRangeUnfinished", "Service", var.prefix],
        [local.metrics.namespace, "RecoveredByScan", "Service", var.prefix],
      ]
    },
    {
      title = "Dead-letter and failure queues (messages visible)", view = "timeSeries", stacked = false, stat = "Maximum", period = 300
      metrics = [for q in concat([local.names.outbox_dlq, local.names.stream_failures, local.names.stream_failures_dlq], var.dashboard_queue_names) : [
        "AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", q,
      ]]
    },
    { title = "Function errors", view = "timeSeries", stacked = false, stat = "Sum", period = 300, metrics = local.function_metrics.Errors },
    { title = "Function duration (ms, maximum)", view = "timeSeries", stacked = false, stat = "Maximum", period = 300, metrics = local.function_metrics.Duration },
    { title = "Function throttles", view = "timeSeries", stacked = false, stat = "Sum", period = 300, metrics = local.function_metrics.Throttles },
    {
      title   = "Denied calls and reads the functions could not make (sum per 5 minutes)", view = "timeSeries", stacked = false, stat = "Sum", period = 300
      metrics = [for m in ["AccessDenied", "FenceUnread", "StatusReadFailed"] : [local.metrics.namespace, m, "Service", var.prefix]]
    },
    {
      title   = "FIFO order fence and large payloads (sum per 5 minutes)", view = "timeSeries", stacked = false, stat = "Sum", period = 300
      metrics = [for m in ["FenceDeferred", "FenceReads", "PayloadsOffloaded"] : [local.metrics.namespace, m, "Service", var.prefix]]
    },
  ]
  dashboard = {
    name = local.names.dashboard
    # Two widgets per row, 12 x 6 each.
    widgets = [for i, p in local.dashboard_widgets : { type = "metric", x = (i % 2) * 12, y = floor(i / 2) * 6, width = 12, height = 6, properties = p }]
  }
}

# The function code from lambda_asset_dir, checked at plan (modules/artifacts): missing, non-ELF,
# wrong-architecture or stale artifacts are refused by aws_lambda_function.this's precondition.
module "artifacts" {
  source = "./modules/artifacts"

  lambda_asset_dir = var.lambda_asset_dir
  binaries         = local.asset_binaries # those function_code does not give (code.tf)
  architecture     = var.architecture
}

# Values the resources take whole (and tests/ check).
locals {
  tables = { deletion_protection = var.deletion_protection }
  queue_settings = {
    max_message_size          = var.max_message_bytes
    message_retention_seconds = local.queue_retention_days * 86400
    max_receive_count         = var.max_receive_count
    # The failure queue is the recovery function's trigger: 6 x its timeout.
    stream_failures_visibility = local.function_settings.timeouts.recovery * 6
  }
  artifacts               = module.artifacts.artifacts
  artifact_problems       = module.artifacts.problems
  policy_json             = { for k, v in local.policies : k => jsonencode(v) }
  assume_role_policy_json = jsonencode(local.assume_role_policy)
  producer_policy_json    = jsonencode(local.producer_policy)
  key_names = {
    partition_key         = var.partition_key_name
    sort_key              = var.sort_key_name
    ttl_attribute         = var.ttl_attribute_name
    sweep_shards          = local.sweep_shards
    sweep_shards_previous = var.sweep_shards_previous
    environment           = local.key_environment
  }
}
