# The orders consumer's exact set of actions (docs/iam.md: the calls it makes). A grant
# added or removed without changing this file fails here; infra/terraform/parity/check_parity.py
# holds the CDK example to the same grants.

variables {
  resources = {
    orders_table_arn      = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-orders"
    orders_queue_arn      = "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue"
    log_group_arn         = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-orders-consumer"
    large_payload_objects = "arn:aws:s3:::outbox-payloads-20240101/outbox/*"
  }
  kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
}

run "the_consumer_is_granted_exactly_the_actions_its_calls_need" {
  command = apply
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
}

# Without s3:ListBucket a missing object reads as AccessDenied, and the consumer's "the object
# does not exist" never shows. On the bucket itself (ListBucket is a bucket action), nothing else.
run "a_missing_large_payload_reads_as_missing" {
  command = apply
  assert {
    condition = [for s in output.policy.Statement : s if contains(flatten([s.Action]), "s3:ListBucket")] == [
      { Sid = "TellMissingPayloads", Effect = "Allow", Action = "s3:ListBucket", Resource = "arn:aws:s3:::outbox-payloads-20240101" }
    ]
    error_message = "The consumer may ListBucket on the large-payload bucket, in a statement of its own."
  }
}
