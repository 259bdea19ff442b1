# Each role's exact set of actions (docs/iam.md: the calls each function makes, and the
# action each is authorised as). A grant added or removed without changing this file
# fails here; infra/terraform/parity/check_parity.py holds CDK to the same grants.

variables {
  resources = {
    outbox_table_arn          = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table"
    outbox_stream_arn         = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/stream/2024-01-01T00:00:00.000"
    outbox_dlq_arn            = "arn:aws:sqs:eu-west-1:123456789012:outbox-dlq"
    stream_failures_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:outbox-stream-failures"
    log_group_arns = {
      publisher = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-publisher"
      sweeper   = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-sweeper"
      recovery  = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-recovery"
    }
    large_payload_bucket_arn = "arn:aws:s3:::outbox-payloads-20240101"
  }
  routes = {
    orders = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-queue"
  }
}

# The defaults: the backstop scan, large payloads on, no KMS key, SQS routes only.
run "each_role_is_granted_exactly_the_actions_its_calls_need" {
  command = apply

  assert {
    condition = sort(distinct(flatten([for s in output.policies.publisher.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) == sort([
      "Allow dynamodb:BatchGetItem", "Allow dynamodb:GetItem", "Allow dynamodb:UpdateItem", "Allow dynamodb:PartiQLUpdate",
      "Allow dynamodb:Query", "Allow dynamodb:PartiQLSelect", "Deny dynamodb:PartiQLSelect",
      "Allow dynamodb:DescribeStream", "Allow dynamodb:GetRecords", "Allow dynamodb:GetShardIterator", "Allow dynamodb:ListStreams",
      "Allow sqs:SendMessage", "Allow sqs:GetQueueAttributes", "Allow s3:PutObject",
      "Allow logs:CreateLogStream", "Allow logs:PutLogEvents",
    ])
    error_message = "The publisher's actions are those of docs/iam.md, no more, no fewer: ${jsonencode(sort(distinct(flatten([for s in output.policies.publisher.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))))}"
  }
  assert {
    condition = sort(distinct(flatten([for s in output.policies.sweeper.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) == sort([
      "Allow dynamodb:GetItem", "Allow dynamodb:UpdateItem", "Allow dynamodb:PartiQLUpdate", "Allow dynamodb:PutItem", "Allow dynamodb:Scan",
      "Allow dynamodb:Query", "Allow dynamodb:PartiQLSelect", "Deny dynamodb:PartiQLSelect",
      "Allow sqs:SendMessage", "Allow sqs:GetQueueAttributes", "Allow s3:PutObject",
      "Allow logs:CreateLogStream", "Allow logs:PutLogEvents",
    ])
    error_message = "The sweeper's actions are those of docs/iam.md, no more, no fewer: ${jsonencode(sort(distinct(flatten([for s in output.policies.sweeper.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))))}"
  }
  assert {
    condition = sort(distinct(flatten([for s in output.policies.recovery.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) == sort([
      "Allow dynamodb:GetRecords", "Allow dynamodb:GetShardIterator", "Allow dynamodb:UpdateItem",
      "Allow sqs:ReceiveMessage", "Allow sqs:DeleteMessage", "Allow sqs:GetQueueAttributes",
      "Allow logs:CreateLogStream", "Allow logs:PutLogEvents",
    ])
    error_message = "The recovery function's actions are those of docs/iam.md, no more, no fewer: ${jsonencode(sort(distinct(flatten([for s in output.policies.recovery.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))))}"
  }
}

# A redelivered stream batch: the publisher reads the current status of its records in one
# consistent BatchGetItem, on the outbox table only.
run "the_publisher_reads_a_redelivered_batch_on_the_outbox_table" {
  command = apply

  assert {
    condition     = flatten([for s in output.policies.publisher.Statement : flatten([s.Resource]) if contains(flatten([s.Action]), "dynamodb:BatchGetItem")]) == [var.resources.outbox_table_arn]
    error_message = "BatchGetItem on the outbox table, nothing else."
  }
  assert {
    condition     = alltrue([for fn in ["sweeper", "recovery"] : !contains(flatten([for s in output.policies[fn].Statement : flatten([s.Action])]), "dynamodb:BatchGetItem")])
    error_message = "Only the publisher reads redelivered batches."
  }
}

# The key's actions: Decrypt (every read of the table, stream, queues, objects), GenerateDataKey
# (SQS sends, S3 puts, DynamoDB writes), DescribeKey; never Encrypt (no call encrypts with it).
run "the_kms_key_is_used_without_encrypt" {
  command = apply

  variables {
    kms_key_arn     = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    sweep_scan_mode = "off"
    routes = {
      audit = "arn:aws:sns:eu-west-1:123456789012:audit"
      shop  = { destination = "arn:aws:events:eu-west-1:123456789012:event-bus/shop", source = "shop.orders" }
    }
  }

  assert {
    condition = alltrue([for fn in ["publisher", "sweeper", "recovery"] : sort(distinct(flatten([
      for s in output.policies[fn].Statement : flatten([s.Action]) if contains(flatten([s.Resource]), var.kms_key_arn)
    ]))) == tolist(["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey"])])
    error_message = "Each function may Decrypt, GenerateDataKey and DescribeKey with the deployment's key, and never Encrypt."
  }
  assert {
    condition = sort(distinct(flatten([for s in output.policies.sweeper.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) == sort([
      "Allow dynamodb:GetItem", "Allow dynamodb:UpdateItem", "Allow dynamodb:PartiQLUpdate",
      "Allow dynamodb:Query", "Allow dynamodb:PartiQLSelect", "Deny dynamodb:PartiQLSelect",
      "Allow sqs:SendMessage", "Allow sqs:GetQueueAttributes", "Allow sns:Publish", "Allow events:PutEvents", "Allow s3:PutObject",
      "Allow kms:Decrypt", "Allow kms:DescribeKey", "Allow kms:GenerateDataKey",
      "Allow logs:CreateLogStream", "Allow logs:PutLogEvents",
    ])
    error_message = "Scan mode off, SNS and EventBridge routes, a KMS key: the sweeper's actions are those of docs/iam.md: ${jsonencode(sort(distinct(flatten([for s in output.policies.sweeper.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))))}"
  }
}
