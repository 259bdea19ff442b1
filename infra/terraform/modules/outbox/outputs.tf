output "outbox_table_name" {
  description = "The outbox table (created or attached); the same as table_name."
  value       = local.outbox_table_name
}

output "table_name" {
  description = "The outbox table (created or attached). Your producers write their outbox items here (OutboxWriter), in the same transaction as their business items."
  value       = local.outbox_table_name
}

output "table_arn" {
  description = "The outbox table's ARN (an attached table's, from its stream ARN)."
  value       = local.outbox_table_arn
}

output "stream_arn" {
  description = "The outbox table's stream, which the publisher reads."
  value       = local.outbox_stream_arn
}

output "dlq_url" {
  description = "The outbox dead-letter queue: a copy of each FAILED message; the same as outbox_dlq_url."
  value       = local.all_queues["outbox_dlq"].url
}

output "dlq_arn" {
  description = "The outbox dead-letter queue's ARN."
  value       = local.all_queues["outbox_dlq"].arn
}

output "outbox_dlq_url" {
  description = "Dead-letter queue of FAILED outbox messages."
  value       = local.all_queues["outbox_dlq"].url
}

output "large_payload_bucket_name" {
  description = "The large-payload bucket, created or attached. Null when large_payloads is off; objects under outbox/ and failed/ (S3 large-payload offload)."
  value       = try(coalesce(local.large_payloads.existing_name, one(aws_s3_bucket.large_payloads[*].bucket)), null)
}

output "function_names" {
  description = "Function names by role: publisher, sweeper, recovery."
  value       = { for k, f in aws_lambda_function.this : k => f.function_name }
}

output "routes" {
  description = "OUTBOX_ROUTES as deployed."
  value       = jsondecode(local.routes_json)
}

output "dashboard_name" {
  description = "The CloudWatch dashboard of the deployment."
  value       = aws_cloudwatch_dashboard.outbox.dashboard_name
}

output "large_payload_bucket_arn" {
  description = "The large-payload bucket's ARN (created or attached); null when large_payloads is off. A consumer of large payloads needs s3:GetObject on <arn>/outbox/* and <arn>/failed/* (a redriven FAILED message) and s3:ListBucket on <arn> (without it a missing object reads as AccessDenied, not NoSuchKey)."
  value       = local.large_payload_bucket_arn
}

output "publisher_role_arn" {
  description = "The publisher's execution role."
  value       = aws_iam_role.function["publisher"].arn
}

output "sweeper_role_arn" {
  description = "The sweeper's execution role."
  value       = aws_iam_role.function["sweeper"].arn
}

output "recovery_role_arn" {
  description = "The recovery function's execution role."
  value       = aws_iam_role.function["recovery"].arn
}

output "producer_policy_json" {
  description = "What your application's role needs to write outbox messages (IAM policy JSON). dynamodb:PutItem and GetItem on the table; s3:PutObject on <bucket>/outbox/* when large payloads are on; kms:GenerateDataKey and kms:Decrypt on kms_key_arn when given."
  value       = local.producer_policy_json
}

output "producer_policy_arn" {
  description = "The managed policy <prefix>-producer holding producer_policy_json. Attach it to your application's role; null when create_producer_policy is false."
  value       = one(aws_iam_policy.producer[*].arn)
}

output "key_names" {
  description = "The table's key names and the sweeper's shard count, as the functions get them. The key and TTL attribute names and the sweeper index's shard count (and the previous one while it changes), with `environment`: the OUTBOX_* variables the functions get. Give your producers the same (dynamodb_outbox::KeyNames::from_env reads them): a producer writing with another shard count puts items where the sweeper does not look."
  value       = local.key_names
}

output "alarm_names" {
  description = "The alarms' names; empty without alarms."
  value       = sort([for a in aws_cloudwatch_metric_alarm.this : a.alarm_name])
}
