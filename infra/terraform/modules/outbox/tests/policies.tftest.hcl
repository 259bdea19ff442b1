# IAM policy documents: least privilege, no wildcard actions or resources.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

variables {
  # No bucket ARN was given to these checks: the offload's grants are checked in large_payloads.
  large_payloads = false
  # The user's routes (two queues of theirs); runs with their own routes replace them.
  routes = {
    orders          = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-queue"
    "orders-events" = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-events.fifo"
  }
}

# One plan for 5 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "defaults_no_wildcards_and_only_the_reads_writes_and_sends_each_function_needs" {
  command = plan

  # no_wildcards_anywhere
  assert {
    condition = alltrue(flatten([for p in values(local.policies) : [for s in p.Statement : [
      for a in flatten([s.Action]) : !strcontains(a, "*")
    ]]]))
    error_message = "No policy may allow a wildcard action."
  }
  assert {
    condition = alltrue(flatten([for p in values(local.policies) : [for s in p.Statement : [
      for r in flatten([s.Resource]) : r != "*" && !startswith(r, "*")
    ]]]))
    error_message = "No policy may allow a wildcard resource."
  }
  assert {
    condition     = alltrue([for k, v in local.policy_json : v == jsonencode(local.policies[k])]) && length(local.policy_json) == 3
    error_message = "policy_json must be the JSON text of policies."
  }

  # publisher_only_updates_and_reads_the_table_and_sends_to_routes
  assert {
    condition = [for s in local.policies.publisher.Statement : s if s.Sid == "MarkSentOrFailed"][0] == {
      Sid = "MarkSentOrFailed", Effect = "Allow", Action = ["dynamodb:UpdateItem", "dynamodb:PartiQLUpdate"], Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table"
    }
    error_message = "The publisher may UpdateItem (and PartiQL UPDATE, its batched marks) on the outbox table, and only that."
  }
  assert {
    condition = sort(distinct([for a in flatten([for s in local.policies.publisher.Statement : flatten([s.Action])]) : a if startswith(a, "dynamodb:")])) == sort([
      "dynamodb:UpdateItem", "dynamodb:PartiQLUpdate", "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:PartiQLSelect", "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams",
      "dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive"
    ])
    error_message = "The publisher's only DynamoDB actions are UpdateItem, GetItem, BatchGetItem (a redelivered batch), Query and PartiQLSelect (the order fence) the stream reads, and DescribeTable/DescribeTimeToLive (the check of the table before work)."
  }
  assert {
    condition = jsonencode([for s in local.policies.publisher.Statement : s if contains(["SelectPendingKeys", "NoFullIndexScan"], s.Sid)]) == jsonencode([
      { Sid = "SelectPendingKeys", Effect = "Allow", Action = "dynamodb:PartiQLSelect", Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/index/OutboxSweepIndex" },
      { Sid = "NoFullIndexScan", Effect = "Deny", Action = "dynamodb:PartiQLSelect", Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/index/OutboxSweepIndex", Condition = { Bool = { "dynamodb:FullTableScan" = "true" } } },
    ])
    error_message = "The order fence may PartiQL-select the sweep index, never scan it, and nothing else."
  }
  assert {
    condition = jsonencode([for s in local.policies.publisher.Statement : s.Resource if s.Sid == "ReadPendingSiblings"][0]) == jsonencode([
      "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/index/OutboxSweepIndex",
    ])
    error_message = "The order fence queries the sweep index and the table's partitions, nothing else."
  }
  assert {
    condition     = [for s in local.policies.publisher.Statement : s.Resource if s.Sid == "ReadOutboxStream"][0] == local.r.outbox_stream_arn
    error_message = "Stream reads are limited to the outbox stream ARN."
  }
  assert {
    condition = [for s in local.policies.publisher.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0] == tolist([
      "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue",
      "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-events.fifo",
      "arn:aws:sqs:eu-west-1:123456789012:outbox-dlq",
    ])
    error_message = "The publisher sends only to the routed queues and the outbox DLQ."
  }

  # publisher_and_sweeper_read_outbox_items:
  # What the publisher and the sweeper read and write besides publishing and marking: the
  # item read before dead-lettering it, the sweeper's read of an item whose claim was
  # refused, its scan cursors (unless the scan mode is off, PK = OUTBOX#SWEEPER only), and each SQS
  # destination's MaximumMessageSize at cold start.
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : [
      for s in local.policies[fn].Statement : { Resource = s.Resource, Condition = try(s.Condition, null) } if contains(flatten([s.Action]), "dynamodb:GetItem")
    ] == [{ Resource = local.r.outbox_table_arn, Condition = null }]])
    error_message = "The publisher (before dead-lettering) and the sweeper (after a refused claim) may GetItem on the outbox table, unconditioned, in one statement."
  }
  assert {
    condition     = !contains(flatten([for s in local.policies.recovery.Statement : flatten([s.Action])]), "dynamodb:GetItem")
    error_message = "The recovery function reads no items."
  }

  # destination_sizes_are_read_where_messages_are_sent
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : [
      for s in local.policies[fn].Statement : s.Resource if contains(flatten([s.Action]), "sqs:GetQueueAttributes")
      ] == [tolist([
        "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue",
        "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-events.fifo",
        "arn:aws:sqs:eu-west-1:123456789012:outbox-dlq",
    ])]])
    error_message = "The publisher and the sweeper may GetQueueAttributes on the routed queues and the outbox DLQ (not the stream-failure queue), in one statement."
  }
  assert {
    condition     = flatten([for s in local.policies.recovery.Statement : flatten([s.Resource]) if contains(flatten([s.Action]), "sqs:GetQueueAttributes")]) == [local.r.stream_failures_queue_arn]
    error_message = "The recovery function reads the attributes of its own trigger queue only (the orders consumer's: examples/orders-config)."
  }

  # the_publisher_and_the_sweeper_batch_get_only_the_outbox_table:
  # Each role's exact actions under the default settings: contract.tftest.hcl, against
  # infra/contract/settings.json (the CDK construct's test/contract.test.ts reads the same).
  # A redelivered stream batch (the publisher) and the order fence's confirmation of what a
  # lagging index lists (the publisher and the sweeper): one consistent BatchGetItem, on the
  # outbox table only.
  assert {
    condition     = alltrue([for fn in ["publisher", "sweeper"] : flatten([for s in local.policies[fn].Statement : flatten([s.Resource]) if contains(flatten([s.Action]), "dynamodb:BatchGetItem")]) == [local.r.outbox_table_arn]])
    error_message = "BatchGetItem on the outbox table, nothing else."
  }
  assert {
    condition     = !contains(flatten([for s in local.policies.recovery.Statement : flatten([s.Action])]), "dynamodb:BatchGetItem")
    error_message = "The recovery function reads no item."
  }
}

# One plan for 2 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "scan_mode_off_the_sweeper_queries_the_index_and_neither_scans_nor_writes_cursors" {
  command = plan

  variables {
    sweep_scan_mode = "off"
  }

  # sweeper_queries_the_index_and_scans_only_in_scan_mode
  assert {
    condition     = [for s in local.policies.sweeper.Statement : s.Resource if s.Sid == "QuerySweepIndex"][0] == "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/index/OutboxSweepIndex"
    error_message = "The sweeper queries only OutboxSweepIndex."
  }
  assert {
    condition     = [for s in local.policies.sweeper.Statement : s.Resource if s.Sid == "ReadPendingSiblings"][0] == "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table"
    error_message = "The sweeper's order fence queries the table's partitions."
  }
  assert {
    condition     = [for s in local.policies.sweeper.Statement : s.Resource if s.Sid == "SelectPendingKeys"][0] == "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/index/OutboxSweepIndex"
    error_message = "The sweeper's order fence PartiQL-selects the sweep index only."
  }
  assert {
    condition     = [for s in local.policies.sweeper.Statement : s.Effect if s.Sid == "NoFullIndexScan"][0] == "Deny"
    error_message = "The sweeper may never scan the sweep index with PartiQL."
  }
  assert {
    condition     = !contains(flatten([for s in local.policies.sweeper.Statement : flatten([s.Action])]), "dynamodb:Scan")
    error_message = "The sweeper may not Scan with the scan mode off."
  }

  # sweeper_writes_no_scan_cursor_without_scan_mode
  assert {
    condition     = alltrue([for fn in ["publisher", "sweeper", "recovery"] : !contains(flatten([for s in local.policies[fn].Statement : flatten([s.Action])]), "dynamodb:PutItem")])
    error_message = "With the scan mode off no function may PutItem on the outbox table."
  }
}

# One plan for 2 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "scan_mode_on_the_sweeper_scans_and_writes_cursors_under_its_own_partition_key" {
  command = plan

  variables {
    sweep_scan_mode = "on"
  }

  # sweeper_scan_mode
  assert {
    condition     = [for s in local.policies.sweeper.Statement : s.Action if s.Sid == "UpdateOutboxItems"][0] == tolist(["dynamodb:UpdateItem", "dynamodb:PartiQLUpdate", "dynamodb:Scan"])
    error_message = "Scan mode adds dynamodb:Scan on the table."
  }

  # sweeper_writes_scan_cursors_under_its_own_partition_key
  assert {
    condition = jsonencode([for s in local.policies.sweeper.Statement : s if contains(flatten([s.Action]), "dynamodb:PutItem")]) == jsonencode([{
      Sid      = "SaveScanCursors"
      Effect   = "Allow"
      Action   = "dynamodb:PutItem"
      Resource = local.r.outbox_table_arn
      Condition = {
        "ForAllValues:StringEquals" = { "dynamodb:LeadingKeys" = ["OUTBOX#SWEEPER"] }
        Null                        = { "dynamodb:LeadingKeys" = "false" }
      }
    }])
    error_message = "Scan mode: PutItem on the outbox table only for items whose partition key is OUTBOX#SWEEPER (the scan cursors), in a statement of its own."
  }
  assert {
    condition     = local.outbox_table.scan_cursor_pk == "OUTBOX#SWEEPER"
    error_message = "The scan cursors' partition key is infra/CONTRACT.md's."
  }
  assert {
    condition     = alltrue([for fn in ["publisher", "recovery"] : !contains(flatten([for s in local.policies[fn].Statement : flatten([s.Action])]), "dynamodb:PutItem")])
    error_message = "Only the sweeper writes scan cursors."
  }
}

run "extra_routes_grant_exactly_their_targets" {
  command = plan

  variables {
    routes = {
      billing   = "https://sqs.eu-west-1.amazonaws.com/123456789012/billing"
      cn        = "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/cn-queue"
      audit     = "arn:aws:sns:eu-west-1:123456789012:audit"
      analytics = "arn:aws:events:eu-west-1:123456789012:event-bus/analytics"
    }
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition     = contains([for s in local.policies.sweeper.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws:sqs:eu-west-1:123456789012:billing")
    error_message = "An SQS route URL becomes sqs:SendMessage on its queue ARN."
  }
  assert {
    condition     = contains([for s in local.policies.sweeper.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws-cn:sqs:cn-north-1:123456789012:cn-queue")
    error_message = "A China-region queue URL maps to the aws-cn partition."
  }
  assert {
    condition     = jsonencode([for s in local.policies.publisher.Statement : s if s.Sid == "PublishToRoutedTopics"][0]) == jsonencode({ Sid = "PublishToRoutedTopics", Effect = "Allow", Action = "sns:Publish", Resource = ["arn:aws:sns:eu-west-1:123456789012:audit"] })
    error_message = "An SNS route grants sns:Publish on that topic only."
  }
  assert {
    condition     = [for s in local.policies.publisher.Statement : s.Resource if s.Sid == "PutToRoutedBuses"][0] == tolist(["arn:aws:events:eu-west-1:123456789012:event-bus/analytics"])
    error_message = "An EventBridge route grants events:PutEvents on that bus only."
  }
  assert {
    condition     = alltrue([for fn in ["publisher", "sweeper", "recovery"] : length([for s in local.policies[fn].Statement : s if s.Sid == "UseKmsKey" && s.Resource == var.kms_key_arn]) == 1])
    error_message = "With a KMS key every function may use that key, and only that key."
  }
}

run "kms_key_grants_what_an_encrypted_table_needs" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition = alltrue([for fn in ["publisher", "sweeper", "recovery"] : sort(distinct(flatten([
      for s in local.policies[fn].Statement : flatten([s.Action]) if s.Sid == "UseKmsKey"
    ]))) == tolist(["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"])])
    error_message = "Each function reading or writing a KMS-encrypted table (and stream, and queue) may Decrypt, GenerateDataKey and DescribeKey with the key (no Encrypt: no call needs it)."
  }
}

run "destination_sizes_follow_the_routes" {
  command = plan

  variables {
    routes = {
      mail    = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 262144 }
      billing = "https://sqs.eu-west-1.amazonaws.com/123456789012/billing"
      audit   = "arn:aws:sns:eu-west-1:123456789012:audit"
      shop    = { destination = "arn:aws:events:eu-west-1:123456789012:event-bus/shop", source = "shop.orders" }
    }
    default_destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/catch-all"
  }

  assert {
    condition = alltrue([for fn in ["publisher", "sweeper"] : (
      flatten([for s in local.policies[fn].Statement : flatten([s.Resource]) if contains(flatten([s.Action]), "sqs:GetQueueAttributes")])
      == flatten([for s in local.policies[fn].Statement : flatten([s.Resource]) if contains(flatten([s.Action]), "sqs:SendMessage") && s.Sid != "ReportDiscardedBatches"])
    )])
    error_message = "GetQueueAttributes goes to exactly the queues outbox messages are sent to (derived the same way)."
  }
  assert {
    condition = alltrue([for q in ["mail", "billing", "catch-all"] : contains(
      flatten([for s in local.policies.sweeper.Statement : flatten([s.Resource]) if contains(flatten([s.Action]), "sqs:GetQueueAttributes")]),
      "arn:aws:sqs:eu-west-1:123456789012:${q}",
    )])
    error_message = "Routed queues and the default destination's queue are read."
  }
  assert {
    condition = alltrue([for r in flatten([for s in local.policies.publisher.Statement : flatten([s.Resource]) if contains(flatten([s.Action]), "sqs:GetQueueAttributes")]) :
    startswith(r, "arn:aws:sqs:")])
    error_message = "No GetQueueAttributes on a topic or a bus."
  }
}

# The key's actions: Decrypt (every read of the table, stream, queues, objects), GenerateDataKey
# (SQS sends, S3 puts, DynamoDB writes), DescribeKey; never Encrypt (no call encrypts with it).
run "the_kms_key_is_used_without_encrypt" {
  command = plan

  variables {
    large_payloads  = true
    kms_key_arn     = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    sweep_scan_mode = "off"
    routes = {
      audit = "arn:aws:sns:eu-west-1:123456789012:audit"
      shop  = { destination = "arn:aws:events:eu-west-1:123456789012:event-bus/shop", source = "shop.orders" }
    }
  }

  assert {
    condition = alltrue([for fn in ["publisher", "sweeper", "recovery"] : sort(distinct(flatten([
      for s in local.policies[fn].Statement : flatten([s.Action]) if contains(flatten([s.Resource]), var.kms_key_arn)
    ]))) == tolist(["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"])])
    error_message = "Each function may Decrypt, GenerateDataKey and DescribeKey with the deployment's key, and never Encrypt."
  }
  assert {
    condition = sort(distinct(flatten([for s in local.policies.sweeper.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) == sort([
      "Allow dynamodb:BatchGetItem", "Allow dynamodb:GetItem", "Allow dynamodb:UpdateItem", "Allow dynamodb:PartiQLUpdate",
      "Allow dynamodb:Query", "Allow dynamodb:PartiQLSelect", "Deny dynamodb:PartiQLSelect",
      "Allow dynamodb:DescribeTable", "Allow dynamodb:DescribeTimeToLive",
      "Allow sqs:SendMessage", "Allow sqs:GetQueueAttributes", "Allow sns:Publish", "Allow events:PutEvents", "Allow s3:PutObject", "Allow s3:GetObject",
      "Allow kms:Decrypt", "Allow kms:DescribeKey", "Allow kms:GenerateDataKey",
      "Allow logs:CreateLogStream", "Allow logs:PutLogEvents",
    ])
    error_message = "Scan mode off, SNS and EventBridge routes, a KMS key: the sweeper's actions are those of docs/iam.md: ${jsonencode(sort(distinct(flatten([for s in local.policies.sweeper.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))))}"
  }
}
