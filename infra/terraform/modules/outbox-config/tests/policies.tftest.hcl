# IAM policy documents: least privilege, no wildcard actions or resources.

variables {
  resources = {
    outbox_table_arn          = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table"
    outbox_stream_arn         = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/stream/2024-01-01T00:00:00.000"
    orders_table_arn          = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-orders"
    outbox_dlq_arn            = "arn:aws:sqs:eu-west-1:123456789012:outbox-dlq"
    stream_failures_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:outbox-stream-failures"
    orders_queue_arn          = "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue"
    example_route_queue_arns = [
      "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue",
      "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-events.fifo",
    ]
    log_group_arns = {
      publisher = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-publisher"
      sweeper   = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-sweeper"
      consumer  = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-orders-consumer"
      recovery  = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-recovery"
    }
  }
}

run "no_wildcards_anywhere" {
  command = apply

  assert {
    condition = alltrue(flatten([for p in values(output.policies) : [for s in p.Statement : [
      for a in flatten([s.Action]) : !strcontains(a, "*")
    ]]]))
    error_message = "No policy may allow a wildcard action."
  }
  assert {
    condition = alltrue(flatten([for p in values(output.policies) : [for s in p.Statement : [
      for r in flatten([s.Resource]) : r != "*" && !startswith(r, "*")
    ]]]))
    error_message = "No policy may allow a wildcard resource."
  }
  assert {
    condition     = alltrue([for k, v in output.policy_json : v == jsonencode(output.policies[k])]) && length(output.policy_json) == 4
    error_message = "policy_json must be the JSON text of policies."
  }
}

run "publisher_only_updates_the_table_and_sends_to_routes" {
  command = apply

  assert {
    condition = [for s in output.policies.publisher.Statement : s if s.Sid == "MarkSentOrFailed"][0] == {
      Sid = "MarkSentOrFailed", Effect = "Allow", Action = ["dynamodb:UpdateItem", "dynamodb:PartiQLUpdate"], Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table"
    }
    error_message = "The publisher may UpdateItem (and PartiQL UPDATE, its batched marks) on the outbox table, and only that."
  }
  assert {
    condition = sort(distinct([for a in flatten([for s in output.policies.publisher.Statement : flatten([s.Action])]) : a if startswith(a, "dynamodb:")])) == sort([
      "dynamodb:UpdateItem", "dynamodb:PartiQLUpdate", "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"
    ])
    error_message = "The publisher's only DynamoDB actions are UpdateItem and the stream reads."
  }
  assert {
    condition     = [for s in output.policies.publisher.Statement : s.Resource if s.Sid == "ReadOutboxStream"][0] == var.resources.outbox_stream_arn
    error_message = "Stream reads are limited to the outbox stream ARN."
  }
  assert {
    condition = [for s in output.policies.publisher.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0] == tolist([
      "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue",
      "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-events.fifo",
      "arn:aws:sqs:eu-west-1:123456789012:outbox-dlq",
    ])
    error_message = "The publisher sends only to the routed queues and the outbox DLQ."
  }
}

run "sweeper_queries_the_index_and_scans_only_in_scan_mode" {
  command = apply

  assert {
    condition     = [for s in output.policies.sweeper.Statement : s.Resource if s.Sid == "QuerySweepIndex"][0] == "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/index/OutboxSweepIndex"
    error_message = "The sweeper queries only OutboxSweepIndex."
  }
  assert {
    condition     = !contains(flatten([for s in output.policies.sweeper.Statement : flatten([s.Action])]), "dynamodb:Scan")
    error_message = "The sweeper may not Scan unless scan mode is on."
  }
}

run "sweeper_scan_mode" {
  command = apply

  variables {
    sweep_scan_mode = true
  }

  assert {
    condition     = [for s in output.policies.sweeper.Statement : s.Action if s.Sid == "UpdateOutboxItems"][0] == tolist(["dynamodb:UpdateItem", "dynamodb:PartiQLUpdate", "dynamodb:Scan"])
    error_message = "Scan mode adds dynamodb:Scan on the table."
  }
}

run "consumer_writes_only_its_table" {
  command = apply

  assert {
    condition = [for s in output.policies.consumer.Statement : s if s.Sid == "ApplyOrdersOnce"][0].Resource == var.resources.orders_table_arn && sort([for s in output.policies.consumer.Statement : s if s.Sid == "ApplyOrdersOnce"][0].Action) == sort([
      "dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"
    ])
    error_message = "The consumer may Put/Get/Update/Delete/ConditionCheck on the orders table only."
  }
  assert {
    condition     = [for s in output.policies.consumer.Statement : s.Resource if s.Sid == "ConsumeOrdersQueue"][0] == var.resources.orders_queue_arn
    error_message = "The consumer receives only from the orders queue."
  }
  assert {
    condition     = !anytrue([for a in flatten([for s in output.policies.consumer.Statement : flatten([s.Action])]) : startswith(a, "sqs:Send")])
    error_message = "The consumer sends nothing."
  }
}

run "extra_routes_grant_exactly_their_targets" {
  command = apply

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
    condition     = contains([for s in output.policies.sweeper.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws:sqs:eu-west-1:123456789012:billing")
    error_message = "An SQS route URL becomes sqs:SendMessage on its queue ARN."
  }
  assert {
    condition     = contains([for s in output.policies.sweeper.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws-cn:sqs:cn-north-1:123456789012:cn-queue")
    error_message = "A China-region queue URL maps to the aws-cn partition."
  }
  assert {
    condition     = jsonencode([for s in output.policies.publisher.Statement : s if s.Sid == "PublishToRoutedTopics"][0]) == jsonencode({ Sid = "PublishToRoutedTopics", Effect = "Allow", Action = "sns:Publish", Resource = ["arn:aws:sns:eu-west-1:123456789012:audit"] })
    error_message = "An SNS route grants sns:Publish on that topic only."
  }
  assert {
    condition     = [for s in output.policies.publisher.Statement : s.Resource if s.Sid == "PutToRoutedBuses"][0] == tolist(["arn:aws:events:eu-west-1:123456789012:event-bus/analytics"])
    error_message = "An EventBridge route grants events:PutEvents on that bus only."
  }
  assert {
    condition     = alltrue([for fn in ["publisher", "sweeper", "consumer", "recovery"] : length([for s in output.policies[fn].Statement : s if s.Sid == "UseKmsKey" && s.Resource == var.kms_key_arn]) == 1])
    error_message = "With a KMS key every function may use that key, and only that key."
  }
}

run "kms_key_grants_what_an_encrypted_table_needs" {
  command = apply

  variables {
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition = alltrue([for fn in ["publisher", "sweeper", "consumer", "recovery"] : sort(distinct(flatten([
      for s in output.policies[fn].Statement : flatten([s.Action]) if s.Sid == "UseKmsKey"
    ]))) == tolist(["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"])])
    error_message = "Each function reading or writing a KMS-encrypted table (and stream, and queue) may Decrypt, Encrypt, GenerateDataKey and DescribeKey with the key."
  }
}
