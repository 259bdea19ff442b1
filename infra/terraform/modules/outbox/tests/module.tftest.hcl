# The provider-backed module, planned and applied against a mocked AWS provider (no
# account, no network: infra/check.sh runs this only when a filesystem mirror of
# hashicorp/aws is there). The values themselves are tested in the other files; this
# checks that the resources take them.
#
# max_message_bytes is the module's default, 262144: the mirrored provider (5.x) refuses
# larger values at plan; hashicorp/aws >= 6.8.0 accepts 1 MiB.

mock_provider "aws" {
  source = "./tests/mocks"
}

# The bucket and the alarms, off by default, are on here unless a run says otherwise (a plain
# configuration's resources: outbox_only.tftest.hcl).
variables {
  large_payloads = true
  alarms         = { topic_arn = "arn:aws:sns:eu-west-1:123456789012:ops" }
}

# One plan for 2 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "queues_set_their_size_and_sweeper_async_invocations_are_not_retried" {
  command = plan

  # queues_set_their_size_explicitly
  assert {
    condition     = alltrue([for q in merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination) : q.max_message_size == 262144]) && length(merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination)) == 3
    error_message = "Every queue sets max_message_size from max_message_bytes (the provider would otherwise send 262144 whatever the setting)."
  }

  # sweeper_async_invocations_are_not_retried
  assert {
    condition     = aws_lambda_function_event_invoke_config.sweeper.maximum_retry_attempts == 0 && aws_lambda_function_event_invoke_config.sweeper.maximum_event_age_in_seconds == 120
    error_message = "The sweeper's async invoke config: no retry, 2-minute event age."
  }
  assert {
    condition     = aws_lambda_function.this["sweeper"].reserved_concurrent_executions == 1 && aws_lambda_function.this["publisher"].reserved_concurrent_executions == -1
    error_message = "The sweeper reserves 1 by default; the others are unreserved."
  }
}

run "sweeper_unreserved" {
  command = plan
  variables {
    sweeper_reserved_concurrency = 0
  }
  assert {
    condition     = aws_lambda_function.this["sweeper"].reserved_concurrent_executions == -1
    error_message = "0 leaves the sweeper unreserved (-1), never throttled to zero."
  }
}

run "functions_know_their_deployment_and_routes" {
  command = apply
  variables {
    prefix = "shop"
    routes = {
      mail  = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 1024 }
      audit = { destination = "arn:aws:sns:eu-west-1:123456789012:audit", raw_delivery = true }
    }
  }
  assert {
    condition     = alltrue([for f in aws_lambda_function.this : f.environment[0].variables.OUTBOX_DEPLOYMENT == "shop"])
    error_message = "Every function gets OUTBOX_DEPLOYMENT = prefix."
  }
  assert {
    condition     = jsondecode(aws_lambda_function.this["sweeper"].environment[0].variables.OUTBOX_ROUTES).mail == { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 1024 }
    error_message = "A route object reaches OUTBOX_ROUTES unchanged."
  }
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : strcontains(
      aws_lambda_function.this[fn].environment[0].variables.OUTBOX_ROUTES,
      "\"audit\":{\"destination\":\"arn:aws:sns:eu-west-1:123456789012:audit\",\"raw_delivery\":true}",
    )])
    error_message = "raw_delivery on an SNS route reaches the publisher's and the sweeper's OUTBOX_ROUTES as the JSON boolean true."
  }
  assert {
    condition     = alltrue([for a in aws_cloudwatch_metric_alarm.this : startswith(a.alarm_name, "shop-")]) && length(aws_cloudwatch_metric_alarm.this) == 15
    error_message = "15 alarms, named with the prefix."
  }
  assert {
    condition = alltrue([for w in jsondecode(aws_cloudwatch_dashboard.outbox.dashboard_body).widgets : w.properties.region == "eu-west-1"]) && (
      aws_cloudwatch_dashboard.outbox.dashboard_name == "shop-dashboard"
    )
    error_message = "The dashboard is <prefix>-dashboard, every widget in the deployment's region."
  }
}

run "existing_table_arn_from_its_stream" {
  command = apply
  variables {
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws:dynamodb:us-east-2:210987654321:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition     = [for s in jsondecode(aws_iam_role_policy.function["publisher"].policy).Statement : s.Resource if s.Sid == "MarkSentOrFailed"][0] == "arn:aws:dynamodb:us-east-2:210987654321:table/app"
    error_message = "The table ARN comes from the stream ARN (us-east-2, 210987654321), not from the deployment's region and account."
  }
  assert {
    condition     = aws_lambda_event_source_mapping.publisher.starting_position == "LATEST"
    error_message = "An existing table's stream starts at LATEST."
  }
  assert {
    condition = {
      for s in jsondecode(aws_iam_role_policy.function["recovery"].policy).Statement : s.Sid => s.Resource if contains(["ReadOutboxStream", "AdoptIntoSweepIndex"], s.Sid)
      } == {
      ReadOutboxStream    = "arn:aws:dynamodb:us-east-2:210987654321:table/app/stream/2024-01-01T00:00:00.000"
      AdoptIntoSweepIndex = "arn:aws:dynamodb:us-east-2:210987654321:table/app"
    }
    error_message = "The recovery function reads the existing table's stream and updates that table (its ARN from the stream ARN)."
  }
  assert {
    condition     = aws_lambda_function.this["recovery"].environment[0].variables.OUTBOX_TABLE_NAME == "app"
    error_message = "The recovery function gets the existing table's name."
  }
}

# Applied, then destroyed by the test's teardown: prevent_destroy would stop that.
run "deletion_protection_off_lets_destroy_run" {
  command = apply
  variables {
    deletion_protection = false
  }
  assert {
    condition     = aws_dynamodb_table.outbox[0].deletion_protection_enabled == false
    error_message = "deletion_protection = false reaches the table."
  }
}

run "deletion_protection_on_by_default" {
  command = plan
  assert {
    condition     = aws_dynamodb_table.outbox[0].deletion_protection_enabled == true
    error_message = "The table is protected by default."
  }
}

# The recovery function (issue 11) on the stream mapping's failure queue.
run "recovery_function_consumes_the_failure_queue" {
  command   = apply
  state_key = "recovery" # fresh resources: the override below applies when they are created
  variables {
    prefix            = "shop"
    max_receive_count = 3
  }
  # The dead-letter queues get an ARN of their own (the other mocked queues share one), so
  # the mapping is seen to read a queue with a DLQ and the redrive to point at a DLQ.
  override_resource {
    target = aws_sqs_queue.dead_letter
    values = { arn = "arn:aws:sqs:eu-west-1:123456789012:a-dead-letter-queue", url = "https://sqs.eu-west-1.amazonaws.com/123456789012/a-dead-letter-queue" }
  }
  assert {
    condition = (
      aws_lambda_function.this["recovery"].function_name == "shop-recovery"
      && aws_lambda_function.this["recovery"].runtime == "provided.al2023"
      && aws_lambda_function.this["recovery"].architectures == tolist(["arm64"])
      && aws_lambda_function.this["recovery"].memory_size == 256
      && aws_lambda_function.this["recovery"].timeout == 60
      && aws_lambda_function.this["recovery"].filename == "tests/artifacts/arm64/outbox-recovery/bootstrap.zip"
    )
    error_message = "shop-recovery: outbox-recovery's zip on provided.al2023, the architecture setting, 256 MB, 60 s."
  }
  assert {
    condition     = aws_lambda_function.this["recovery"].reserved_concurrent_executions == -1
    error_message = "The recovery function is unreserved (-1)."
  }
  assert {
    condition     = keys(aws_lambda_function.this["recovery"].environment[0].variables) == tolist(["OUTBOX_DEFAULT_HOME_REGION", "OUTBOX_DEPLOYMENT", "OUTBOX_PARTITION_KEY", "OUTBOX_REGION", "OUTBOX_SORT_KEY", "OUTBOX_SWEEP_SHARDS", "OUTBOX_TABLE_NAME", "OUTBOX_TTL_ATTRIBUTE"]) && aws_lambda_function.this["recovery"].environment[0].variables.OUTBOX_DEPLOYMENT == "shop"
    error_message = "The recovery function gets OUTBOX_TABLE_NAME, OUTBOX_DEPLOYMENT the key names and the shard count, nothing else."
  }
  assert {
    condition = (
      aws_lambda_function.this["recovery"].logging_config[0].log_format == "JSON"
      && aws_lambda_function.this["recovery"].logging_config[0].log_group == "/aws/lambda/shop-recovery"
      && aws_cloudwatch_log_group.function["recovery"].retention_in_days == 30
    )
    error_message = "JSON logs to its own log group, with retention."
  }
  assert {
    condition = (
      aws_lambda_event_source_mapping.recovery.function_name == aws_lambda_function.this["recovery"].arn
      && aws_lambda_event_source_mapping.recovery.event_source_arn == aws_sqs_queue.destination["stream_failures"].arn
      && aws_lambda_event_source_mapping.recovery.event_source_arn != "arn:aws:sqs:eu-west-1:123456789012:a-dead-letter-queue"
      && aws_lambda_event_source_mapping.recovery.batch_size == 10
      && aws_lambda_event_source_mapping.recovery.function_response_types == toset(["ReportBatchItemFailures"])
    )
    error_message = "The recovery function's SQS mapping: the failure queue, 10 at a time, partial batch responses."
  }
  assert {
    condition = (
      aws_sqs_queue.destination["stream_failures"].name == "shop-stream-failures"
      && aws_sqs_queue.destination["stream_failures"].visibility_timeout_seconds >= 6 * aws_lambda_function.this["recovery"].timeout
      && jsondecode(aws_sqs_queue.destination["stream_failures"].redrive_policy) == {
        deadLetterTargetArn = "arn:aws:sqs:eu-west-1:123456789012:a-dead-letter-queue"
        maxReceiveCount     = 3
      }
      && local.queues.stream_failures.dlq == "stream_failures_dlq"
    )
    error_message = "The failure queue: visibility >= 6 x the recovery timeout, redrive to its DLQ after max_receive_count receives."
  }
  assert {
    condition = (
      aws_sqs_queue.dead_letter["stream_failures_dlq"].name == "shop-stream-failures-dlq"
      && aws_sqs_queue.dead_letter["stream_failures_dlq"].sqs_managed_sse_enabled == true
      && aws_sqs_queue.dead_letter["stream_failures_dlq"].max_message_size == 262144
      && aws_sqs_queue.dead_letter["stream_failures_dlq"].message_retention_seconds == 1209600
      && strcontains(aws_sqs_queue_policy.tls_only["stream_failures_dlq"].policy, "aws:SecureTransport")
    )
    error_message = "The new DLQ is encrypted, TLS only, keeps 14 days and states its MaximumMessageSize."
  }
  assert {
    condition     = length(setsubtract(["ReadOutboxStream", "AdoptIntoSweepIndex", "ConsumeStreamFailures", "WriteOwnLogs"], [for s in jsondecode(aws_iam_role_policy.function["recovery"].policy).Statement : s.Sid])) == 0
    error_message = "The recovery role gets the policy of module.config."
  }
  assert {
    condition     = contains(keys(aws_cloudwatch_metric_alarm.this), "StreamDiscards") && contains(keys(aws_cloudwatch_metric_alarm.this), "RecoveryRangeLost") && !contains(keys(aws_cloudwatch_metric_alarm.this), "StreamFailuresNotEmpty")
    error_message = "StreamDiscards and RecoveryRangeLost replace StreamFailuresNotEmpty."
  }
}

# The sweeper's scan mode reaches its environment and its role: no scan by default (a scan
# reads business items too), the backstop scan when asked (Scan, and PutItem of the scan
# cursors), neither with "off" (or the old false).
run "the_sweeper_scans_nothing_by_default" {
  command = apply
  assert {
    condition     = aws_lambda_function.this["sweeper"].environment[0].variables.OUTBOX_SWEEP_SCAN_MODE == "off"
    error_message = "The sweeper runs no scan by default (OUTBOX_SWEEP_SCAN_MODE = off)."
  }
  assert {
    condition     = !anytrue([for a in flatten([for s in jsondecode(aws_iam_role_policy.function["sweeper"].policy).Statement : flatten([s.Action])]) : contains(["dynamodb:Scan", "dynamodb:PutItem"], a)])
    error_message = "By default the sweeper may neither Scan nor PutItem."
  }
}

run "the_sweeper_runs_the_backstop_scan_when_asked" {
  command = apply
  variables {
    sweep_scan_mode = "backstop"
  }
  assert {
    condition     = aws_lambda_function.this["sweeper"].environment[0].variables.OUTBOX_SWEEP_SCAN_MODE == "backstop"
    error_message = "The sweeper runs the backstop scan (OUTBOX_SWEEP_SCAN_MODE = backstop)."
  }
  assert {
    condition = (
      [for s in jsondecode(aws_iam_role_policy.function["sweeper"].policy).Statement : s.Resource if contains(flatten([s.Action]), "dynamodb:Scan")] == [aws_dynamodb_table.outbox[0].arn]
      && [for s in jsondecode(aws_iam_role_policy.function["sweeper"].policy).Statement : s.Resource if contains(flatten([s.Action]), "dynamodb:PutItem")] == [aws_dynamodb_table.outbox[0].arn]
    )
    error_message = "The backstop scan: the sweeper may Scan the outbox table and PutItem its scan cursors."
  }
}

run "scan_mode_off_and_the_old_false_grant_no_scan" {
  command = apply
  variables {
    sweep_scan_mode = false
  }
  assert {
    condition     = aws_lambda_function.this["sweeper"].environment[0].variables.OUTBOX_SWEEP_SCAN_MODE == "off"
    error_message = "The old false is \"off\": no backstop."
  }
  assert {
    condition     = !anytrue([for a in flatten([for s in jsondecode(aws_iam_role_policy.function["sweeper"].policy).Statement : flatten([s.Action])]) : contains(["dynamodb:Scan", "dynamodb:PutItem"], a)])
    error_message = "With the scan mode off the sweeper may neither Scan nor PutItem."
  }
}

# The publisher's and the sweeper's reads and the sweeper's scan cursors reach the roles
# (the documents themselves are tested in policies.tftest.hcl).
run "roles_read_items_write_scan_cursors_and_read_queue_sizes" {
  command = apply
  variables {
    sweep_scan_mode = "on"
  }
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : [
      for s in jsondecode(aws_iam_role_policy.function[fn].policy).Statement : s.Resource if contains(flatten([s.Action]), "dynamodb:GetItem")
    ] == [aws_dynamodb_table.outbox[0].arn]])
    error_message = "The publisher and the sweeper may GetItem on the outbox table."
  }
  assert {
    condition = [for s in jsondecode(aws_iam_role_policy.function["sweeper"].policy).Statement : { Resource = s.Resource, Condition = s.Condition } if contains(flatten([s.Action]), "dynamodb:PutItem")] == [{
      Resource = aws_dynamodb_table.outbox[0].arn
      Condition = {
        "ForAllValues:StringEquals" = { "dynamodb:LeadingKeys" = ["OUTBOX#SWEEPER"] }
        Null                        = { "dynamodb:LeadingKeys" = "false" }
      }
    }]
    error_message = "Scanning, the sweeper may PutItem on the outbox table, for PK = OUTBOX#SWEEPER only."
  }
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : (
      [for s in jsondecode(aws_iam_role_policy.function[fn].policy).Statement : s.Resource if contains(flatten([s.Action]), "sqs:GetQueueAttributes")]
      == [for s in jsondecode(aws_iam_role_policy.function[fn].policy).Statement : s.Resource if s.Sid == "SendToRoutedQueues"]
    )])
    error_message = "The publisher and the sweeper read the attributes of the queues they send outbox messages to."
  }
}

run "an_existing_tables_items_and_scan_cursors" {
  command = apply
  variables {
    sweep_scan_mode = true
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws:dynamodb:us-east-2:210987654321:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition = (
      [for s in jsondecode(aws_iam_role_policy.function["publisher"].policy).Statement : s.Resource if contains(flatten([s.Action]), "dynamodb:GetItem")] == ["arn:aws:dynamodb:us-east-2:210987654321:table/app"]
      && [for s in jsondecode(aws_iam_role_policy.function["sweeper"].policy).Statement : s.Resource if contains(flatten([s.Action]), "dynamodb:GetItem")] == ["arn:aws:dynamodb:us-east-2:210987654321:table/app"]
      && [for s in jsondecode(aws_iam_role_policy.function["sweeper"].policy).Statement : s.Resource if contains(flatten([s.Action]), "dynamodb:PutItem")] == ["arn:aws:dynamodb:us-east-2:210987654321:table/app"]
    )
    error_message = "GetItem (publisher, sweeper) and the scan cursors' PutItem (sweeper) are on the existing table's ARN, derived from its stream ARN."
  }
}

# The large-payload bucket (S3 claim check): the resources take module.config's settings, the
# functions get its name and the grants on its outbox/ objects.
run "large_payload_bucket_is_private_encrypted_tls_only_and_expires_payloads" {
  command = apply
  assert {
    condition     = length(aws_s3_bucket.large_payloads) == 1 && aws_s3_bucket.large_payloads[0].bucket_prefix == "outbox-payloads-" && aws_s3_bucket.large_payloads[0].force_destroy == false
    error_message = "One bucket, named from the prefix; protected deployments do not delete payloads on destroy."
  }
  assert {
    condition = alltrue([for k in ["block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"] : aws_s3_bucket_public_access_block.large_payloads[0][k]]) && (
      aws_s3_bucket_ownership_controls.large_payloads[0].rule[0].object_ownership == "BucketOwnerEnforced"
    )
    error_message = "All public access blocked, ACLs disabled (bucket owner enforced)."
  }
  assert {
    condition     = one([for r in aws_s3_bucket_server_side_encryption_configuration.large_payloads[0].rule : one(r.apply_server_side_encryption_by_default).sse_algorithm]) == "AES256"
    error_message = "SSE-S3 without a KMS key."
  }
  assert {
    condition = jsonencode([for r in aws_s3_bucket_lifecycle_configuration.large_payloads[0].rule : {
      id = r.id, status = r.status, expiration = try(r.expiration[0].days, null), abort = try(r.abort_incomplete_multipart_upload[0].days_after_initiation, null)
      }]) == jsonencode([
      { id = "expire-large-payloads", status = "Enabled", expiration = 30, abort = null },
      { id = "abort-incomplete-uploads", status = "Enabled", expiration = null, abort = 1 },
    ]) && aws_s3_bucket_lifecycle_configuration.large_payloads[0].rule[0].filter[0].prefix == "outbox/"
    error_message = "Lifecycle: outbox/ expires after 30 days; incomplete multipart uploads anywhere in the bucket (an empty filter) are aborted after 1 day."
  }
  assert {
    condition = jsondecode(aws_s3_bucket_policy.large_payloads_tls_only[0].policy).Statement == [{
      Sid       = "DenyWithoutTls"
      Effect    = "Deny"
      Principal = { AWS = "*" }
      Action    = "s3:*"
      Resource  = ["arn:aws:s3:::outbox-payloads-20240101", "arn:aws:s3:::outbox-payloads-20240101/*"]
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
    error_message = "The bucket policy refuses every request without TLS, on the bucket and its objects."
  }
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : aws_lambda_function.this[fn].environment[0].variables.OUTBOX_LARGE_PAYLOAD_BUCKET == "outbox-payloads-20240101"]) && (
      !contains(keys(aws_lambda_function.this["recovery"].environment[0].variables), "OUTBOX_LARGE_PAYLOAD_BUCKET")
    )
    error_message = "The publisher and the sweeper get OUTBOX_LARGE_PAYLOAD_BUCKET, the others do not."
  }
  assert {
    condition = [for s in jsondecode(aws_iam_role_policy.function["publisher"].policy).Statement : s.Resource if s.Sid == "PutLargePayloads"] == [["arn:aws:s3:::outbox-payloads-20240101/outbox/*", "arn:aws:s3:::outbox-payloads-20240101/failed/*"]] && (
      output.large_payload_bucket_arn == "arn:aws:s3:::outbox-payloads-20240101"
    )
    error_message = "PutObject on the deployed bucket's outbox/ and failed/ objects; the bucket's ARN is an output (for consumers' GetObject)."
  }
  assert {
    condition     = output.large_payload_bucket_name == "outbox-payloads-20240101"
    error_message = "The bucket's name is an output."
  }
}

run "large_payload_bucket_with_the_kms_key_and_deleted_with_unprotected_deployments" {
  command = apply
  variables {
    kms_key_arn                  = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    deletion_protection          = false
    large_payload_retention_days = 45
  }
  assert {
    condition = one([for r in aws_s3_bucket_server_side_encryption_configuration.large_payloads[0].rule : one(r.apply_server_side_encryption_by_default)]) == {
      sse_algorithm = "aws:kms", kms_master_key_id = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    } && one(aws_s3_bucket_server_side_encryption_configuration.large_payloads[0].rule).bucket_key_enabled == true
    error_message = "SSE-KMS with the deployment's key, S3 Bucket Key on."
  }
  assert {
    condition     = aws_s3_bucket.large_payloads[0].force_destroy == true && aws_s3_bucket_lifecycle_configuration.large_payloads[0].rule[0].expiration[0].days == 45
    error_message = "An unprotected deployment's destroy deletes the payloads; the retention follows the setting."
  }
}

run "no_large_payload_bucket" {
  command = apply
  variables {
    large_payloads = false
  }
  assert {
    condition = length(aws_s3_bucket.large_payloads) + length(aws_s3_bucket_policy.large_payloads_tls_only) + length(aws_s3_bucket_lifecycle_configuration.large_payloads) == 0 && (
      output.large_payload_bucket_name == null
    )
    error_message = "large_payloads = false: no bucket, no policy, no lifecycle."
  }
  assert {
    condition = alltrue([for fn, f in aws_lambda_function.this : !contains(keys(f.environment[0].variables), "OUTBOX_LARGE_PAYLOAD_BUCKET")]) && (
      !anytrue([for p in aws_iam_role_policy.function : strcontains(p.policy, "s3:")])
    )
    error_message = "large_payloads = false: no bucket name in any environment, no S3 action in any policy."
  }
}

run "an_existing_large_payload_bucket_is_attached_not_created" {
  command = apply
  variables {
    large_payload_bucket_name = "shop-payloads"
  }
  assert {
    condition     = length(aws_s3_bucket.large_payloads) + length(aws_s3_bucket_policy.large_payloads_tls_only) + length(aws_s3_bucket_lifecycle_configuration.large_payloads) == 0
    error_message = "An attached bucket is its owner's: nothing created or configured."
  }
  assert {
    condition     = alltrue([for fn in ["publisher", "sweeper"] : aws_lambda_function.this[fn].environment[0].variables.OUTBOX_LARGE_PAYLOAD_BUCKET == "shop-payloads"]) && output.large_payload_bucket_name == "shop-payloads"
    error_message = "The writers get the attached bucket's name; it is the output."
  }
  assert {
    condition = [for s in jsondecode(aws_iam_role_policy.function["sweeper"].policy).Statement : s.Resource if s.Sid == "PutLargePayloads"] == [["arn:aws:s3:::shop-payloads/outbox/*", "arn:aws:s3:::shop-payloads/failed/*"]] && (
      output.large_payload_bucket_arn == "arn:aws:s3:::shop-payloads"
    )
    error_message = "The grants name the attached bucket's outbox/ and failed/ objects, in the deployment's partition."
  }
}

# The functions' own alarms (AccessDenied, FenceUnread) are real alarms of the deployment and
# notify the topic every other alarm notifies.
run "access_denied_and_fence_unread_alarms_notify_the_alarm_topic" {
  command = plan
  variables {
    prefix = "shop"
    alarms = { topic_arn = "arn:aws:sns:eu-west-1:123456789012:ops" }
  }
  assert {
    condition = alltrue([for k in ["AccessDenied", "FenceUnread"] : (
      aws_cloudwatch_metric_alarm.this[k].alarm_name == "shop-${k}"
      && aws_cloudwatch_metric_alarm.this[k].metric_name == k
      && aws_cloudwatch_metric_alarm.this[k].namespace == "DynamoDbOutbox"
      && aws_cloudwatch_metric_alarm.this[k].dimensions == tomap({ Service = "shop" })
    )])
    error_message = "shop-AccessDenied and shop-FenceUnread watch the deployment's own metrics."
  }
  assert {
    condition     = alltrue([for a in aws_cloudwatch_metric_alarm.this : a.alarm_actions == toset(["arn:aws:sns:eu-west-1:123456789012:ops"])])
    error_message = "Every alarm, the new ones included, notifies alarms.topic_arn."
  }
}

# Global tables (docs/global-tables.md): the region is the provider's; the mapping reads the
# region's inserts and those without HomeRegion (in every region); the names
# global to the account carry the region.
run "the_provider_region_owns_its_messages" {
  command = plan
  assert {
    condition = [for f in aws_lambda_event_source_mapping.publisher.filter_criteria[0].filter : jsondecode(f.pattern).dynamodb.NewImage.HomeRegion] == [
      { S = ["eu-west-1"] }, { S = [{ exists = false }] },
    ]
    error_message = "A single-region deployment reads its region's inserts and those without HomeRegion."
  }
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper", "recovery"] :
      aws_lambda_function.this[fn].environment[0].variables.OUTBOX_REGION == "eu-west-1" && aws_lambda_function.this[fn].environment[0].variables.OUTBOX_DEFAULT_HOME_REGION == "eu-west-1"
    ])
    error_message = "Every function gets OUTBOX_REGION (the provider's region) and OUTBOX_DEFAULT_HOME_REGION."
  }
  assert {
    condition     = aws_iam_role.function["publisher"].name == "outbox-publisher-role" && aws_cloudwatch_dashboard.outbox.dashboard_name == "outbox-dashboard"
    error_message = "A single-region deployment keeps its names."
  }
}

run "one_region_of_a_global_table" {
  command = plan
  variables {
    prefix               = "shop"
    global_table_regions = ["us-east-1", "eu-west-1"]
    default_home_region  = "us-east-1"
    existing_table = {
      table_name = "orders"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition     = [for f in aws_lambda_event_source_mapping.publisher.filter_criteria[0].filter : jsondecode(f.pattern).dynamodb.NewImage.HomeRegion] == [{ S = ["eu-west-1"] }, { S = [{ exists = false }] }]
    error_message = "Outside the default home region the mapping reads the inserts homed in its region and those without HomeRegion (its publisher skips them while another region is the default home)."
  }
  assert {
    condition     = aws_lambda_event_source_mapping.publisher.event_source_arn == "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000"
    error_message = "The mapping reads the replica's stream in this region."
  }
  assert {
    condition     = aws_lambda_function.this["sweeper"].environment[0].variables.OUTBOX_DEFAULT_HOME_REGION == "us-east-1" && aws_lambda_function.this["sweeper"].environment[0].variables.OUTBOX_REGION == "eu-west-1"
    error_message = "The sweeper is told its region and the global table's default home region."
  }
  assert {
    condition = [for fn in ["publisher", "sweeper", "recovery"] : aws_iam_role.function[fn].name] == ["shop-publisher-eu-west-1-role", "shop-sweeper-eu-west-1-role", "shop-recovery-eu-west-1-role"] && (
      aws_iam_policy.producer[0].name == "shop-producer-eu-west-1" && aws_cloudwatch_dashboard.outbox.dashboard_name == "shop-dashboard-eu-west-1"
    )
    error_message = "IAM names and the dashboard's are global to the account: each region's carry the region."
  }
  assert {
    condition     = aws_lambda_function.this["publisher"].function_name == "shop-publisher" && aws_cloudwatch_metric_alarm.this["OutboxDlqNotEmpty"].alarm_name == "shop-OutboxDlqNotEmpty"
    error_message = "Functions and alarms are regional: the same names in every region."
  }
}
