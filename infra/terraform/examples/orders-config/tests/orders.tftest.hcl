# The orders example's configuration (moved out of the outbox module, issue 21): the same
# names, table, queues, routes, consumer and alarms as before the split.

variables {
  resources = {
    orders_table_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-orders"
    orders_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue"
    log_group_arn    = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-orders-consumer"
  }
  queue_urls = {
    standard = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-queue"
    fifo     = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-events.fifo"
  }
}

run "names_are_todays" {
  command = apply
  variables {
    prefix = "shop"
  }
  assert {
    condition = output.names == {
      orders_table = "shop-orders", consumer = "shop-orders-consumer", orders_queue = "shop-orders-queue",
      orders_dlq   = "shop-orders-queue-dlq", fifo_queue = "shop-orders-events.fifo", fifo_dlq = "shop-orders-events-dlq.fifo",
    }
    error_message = "The example's resources keep their names."
  }
  assert {
    condition     = endswith(output.names.fifo_queue, ".fifo") && endswith(output.names.fifo_dlq, ".fifo")
    error_message = "FIFO queue names must end with .fifo."
  }
}

run "orders_table_and_consumer" {
  command = apply
  assert {
    condition     = output.orders_table.hash_key == "id" && output.orders_table.ttl_attribute == "ExpiresAt"
    error_message = "The orders table is keyed by id and expires on ExpiresAt."
  }
  assert {
    condition     = output.consumer_mapping.function_response_types == ["ReportBatchItemFailures"] && output.consumer_mapping.batch_size == 10
    error_message = "The consumer reports partial batch failures, batch 10."
  }
  assert {
    condition     = output.consumer.timeout == 30 && output.consumer.reserved_concurrency == null && output.consumer.environment == { OUTBOX_DEPLOYMENT = "outbox" }
    error_message = "The consumer: 30 s, unreserved, OUTBOX_DEPLOYMENT."
  }
  assert {
    condition     = output.queues.orders_queue.visibility == 6 * output.consumer.timeout && output.queues.orders_queue.dlq == "orders_dlq" && output.queues.fifo_queue.dlq == "fifo_dlq"
    error_message = "The orders queue's visibility is 6 x the consumer's timeout; both queues redrive to their DLQ."
  }
}

run "consumer_writes_only_its_table" {
  command = apply
  assert {
    condition     = [for s in output.policy.Statement : s if s.Sid == "ApplyOrdersOnce"][0].Resource == var.resources.orders_table_arn && [for s in output.policy.Statement : s if s.Sid == "ApplyOrdersOnce"][0].Action == "dynamodb:PutItem"
    error_message = "The consumer may PutItem (BusinessKeyGuard's conditional put) on the orders table only."
  }
  assert {
    condition     = [for s in output.policy.Statement : s.Resource if s.Sid == "ConsumeOrdersQueue"][0] == var.resources.orders_queue_arn
    error_message = "The consumer receives only from the orders queue."
  }
  assert {
    condition     = !anytrue([for a in flatten([for s in output.policy.Statement : flatten([s.Action])]) : startswith(a, "sqs:Send")])
    error_message = "The consumer sends nothing."
  }
  assert {
    condition     = flatten([for s in output.policy.Statement : flatten([s.Resource]) if contains(flatten([s.Action]), "sqs:GetQueueAttributes")]) == [var.resources.orders_queue_arn]
    error_message = "The consumer reads the attributes of its own trigger queue only."
  }
  assert {
    condition     = output.policy_json == jsonencode(output.policy)
    error_message = "policy_json is the policy's JSON text."
  }
}

run "large_payloads_and_the_kms_key" {
  command = apply
  variables {
    resources   = merge(var.resources, { large_payload_objects = "arn:aws:s3:::outbox-payloads-20240101/outbox/*" })
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }
  assert {
    condition = [for s in output.policy.Statement : s if s.Sid == "GetLargePayloads"] == [
      { Sid = "GetLargePayloads", Effect = "Allow", Action = "s3:GetObject", Resource = ["arn:aws:s3:::outbox-payloads-20240101/outbox/*", "arn:aws:s3:::outbox-payloads-20240101/failed/*"] }
    ]
    error_message = "The orders consumer may GetObject under outbox/ and failed/ (a redriven FAILED message) of the bucket, nothing else of it."
  }
  assert {
    condition     = contains(flatten([for s in output.policy.Statement : flatten([s.Action]) if s.Resource == var.kms_key_arn]), "kms:Decrypt")
    error_message = "The consumer may Decrypt (GetObject, the encrypted queue and table) with the key."
  }
}

# The consumer's exact actions (docs/iam.md: the calls it makes). A grant added or removed
# without changing this run fails here (the CDK example's: infra/cdk/test/grants.test.ts).
run "the_consumer_is_granted_exactly_the_actions_its_calls_need" {
  command = apply
  variables {
    resources   = merge(var.resources, { large_payload_objects = "arn:aws:s3:::outbox-payloads-20240101/outbox/*" })
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }
  assert {
    condition = sort(distinct(flatten([for s in output.policy.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) == sort([
      "Allow dynamodb:PutItem",
      "Allow sqs:ReceiveMessage", "Allow sqs:DeleteMessage", "Allow sqs:GetQueueAttributes",
      "Allow s3:GetObject", "Allow s3:ListBucket",
      "Allow kms:Decrypt", "Allow kms:DescribeKey", "Allow kms:GenerateDataKey",
      "Allow logs:CreateLogStream", "Allow logs:PutLogEvents",
    ])
    error_message = "The orders consumer's actions are those of docs/iam.md, no more, no fewer: ${jsonencode(sort(distinct(flatten([for s in output.policy.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))))}"
  }
  # Without s3:ListBucket a missing object reads as AccessDenied, and the consumer's "the object
  # does not exist" never shows. On the bucket itself (ListBucket is a bucket action), nothing else.
  assert {
    condition = [for s in output.policy.Statement : s if contains(flatten([s.Action]), "s3:ListBucket")] == [
      { Sid = "TellMissingPayloads", Effect = "Allow", Action = "s3:ListBucket", Resource = "arn:aws:s3:::outbox-payloads-20240101" }
    ]
    error_message = "The consumer may ListBucket on the large-payload bucket, in a statement of its own."
  }
}

run "no_large_payloads_no_s3" {
  command = apply
  assert {
    condition     = !anytrue([for s in output.policy.Statement : anytrue([for a in flatten([s.Action]) : startswith(a, "s3:")])])
    error_message = "Without the outbox's bucket the consumer gets no S3 action."
  }
}

run "routes_name_the_example_queues" {
  command = apply
  assert {
    condition = output.routes == {
      orders          = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-queue"
      "orders-events" = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-events.fifo"
    }
    error_message = "The example routes: orders to the standard queue, orders-events to the FIFO queue."
  }
}

run "example_routes_carry_a_smaller_queue_size" {
  command = apply
  variables {
    max_message_bytes = 262144
  }
  assert {
    condition = output.routes == {
      orders          = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-queue", max_message_bytes = 262144 }
      "orders-events" = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-events.fifo", max_message_bytes = 262144 }
    }
    error_message = "Below 1 MiB the example routes tell the publisher the queues' MaximumMessageSize."
  }
}

run "the_example_alarms_its_queues_and_consumer" {
  command = apply
  assert {
    condition = (
      toset(keys(output.alarms)) == toset(["ConsumerDlqNotEmpty", "OrdersEventsDlqNotEmpty", "ConsumerErrors", "ConsumerThrottles"])
      && output.alarms.ConsumerDlqNotEmpty.dimensions == tomap({ QueueName = "outbox-orders-queue-dlq" })
      && output.alarms.OrdersEventsDlqNotEmpty.dimensions == tomap({ QueueName = "outbox-orders-events-dlq.fifo" })
      && alltrue([for k in ["ConsumerErrors", "ConsumerThrottles"] : output.alarms[k].dimensions == tomap({ FunctionName = "outbox-orders-consumer" }) && output.alarms[k].evaluation_periods == 3])
    )
    error_message = "Its two DLQs not empty, the consumer's Errors and Throttles."
  }
  assert {
    condition     = output.dashboard == { queue_names = ["outbox-orders-queue-dlq", "outbox-orders-events-dlq.fifo"], function_names = ["outbox-orders-consumer"] }
    error_message = "The outbox's dashboard shows the example's DLQs and consumer."
  }
}

run "consumer_artifact_is_checked" {
  command = plan
  variables {
    lambda_asset_dir = "../../modules/outbox/tests/artifacts/arm64"
  }
  assert {
    condition     = output.artifacts.consumer.architecture == "arm64"
    error_message = "The consumer's bootstrap is read like the outbox's."
  }
}

run "consumer_artifact_missing" {
  command = plan
  variables {
    lambda_asset_dir = "../../modules/outbox/tests/artifacts/outbox-only"
  }
  expect_failures = [output.artifacts]
}

run "consumer_batch_too_large" {
  command = plan
  variables {
    consumer_batch_size = 11
  }
  expect_failures = [var.consumer_batch_size]
}

# The orders queues' receive budget is their own (consumer_max_receive_count), 10 by default:
# with frequent random consumer crashes 5 dead-letters innocent messages
# (functions/lib/dynamodb-outbox-idempotency/README.md, "A message that kills the process").
run "the_orders_queues_redrive_after_10_receives" {
  command = apply
  assert {
    condition     = output.queue_settings.max_receive_count == 10
    error_message = "The orders queues redrive after 10 receives by default, got ${output.queue_settings.max_receive_count}."
  }
  assert {
    condition     = [for k, q in output.queues : k if q.dlq != null] == ["fifo_queue", "orders_queue"]
    error_message = "Both orders queues (standard and FIFO), and only they, redrive to a DLQ with that count."
  }
}

run "consumer_max_receive_count_is_the_orders_queues" {
  command = apply
  variables {
    consumer_max_receive_count = 20
  }
  assert {
    condition     = output.queue_settings.max_receive_count == 20
    error_message = "consumer_max_receive_count is the orders queues' maxReceiveCount."
  }
}

run "consumer_max_receive_count_zero" {
  command = plan
  variables {
    consumer_max_receive_count = 0
  }
  expect_failures = [var.consumer_max_receive_count]
}

run "consumer_max_receive_count_too_large" {
  command = plan
  variables {
    consumer_max_receive_count = 1001
  }
  expect_failures = [var.consumer_max_receive_count]
}

run "consumer_max_receive_count_fractional" {
  command = plan
  variables {
    consumer_max_receive_count = 2.5
  }
  expect_failures = [var.consumer_max_receive_count]
}
