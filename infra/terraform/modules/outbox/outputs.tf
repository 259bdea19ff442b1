output "outbox_table_name" {
  description = "The outbox table (created or attached)."
  value       = local.outbox_table_name
}

output "outbox_dlq_url" {
  description = "Dead-letter queue of FAILED outbox messages."
  value       = local.all_queues["outbox_dlq"].url
}

output "orders_queue_url" {
  description = "Standard destination queue (topic \"orders\"), consumed by the reference consumer."
  value       = local.all_queues["orders_queue"].url
}

output "orders_events_queue_url" {
  description = "FIFO destination queue (topic \"orders-events\")."
  value       = local.all_queues["fifo_queue"].url
}

output "orders_table_name" {
  description = "Orders table of the reference consumer."
  value       = aws_dynamodb_table.orders.name
}

output "large_payload_bucket_name" {
  description = "The large-payload bucket (S3 large-payload offload, objects under outbox/), created or attached; null when large_payloads is off."
  value       = try(coalesce(module.config.large_payloads.existing_name, one(aws_s3_bucket.large_payloads[*].bucket)), null)
}

output "function_names" {
  description = "Function names by role."
  value       = { for k, f in aws_lambda_function.this : k => f.function_name }
}

output "routes" {
  description = "OUTBOX_ROUTES as deployed."
  value       = jsondecode(module.config.routes_json)
}

output "dashboard_name" {
  description = "The CloudWatch dashboard of the deployment."
  value       = aws_cloudwatch_dashboard.outbox.dashboard_name
}
