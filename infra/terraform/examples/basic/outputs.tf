output "outbox_table_name" {
  description = "Write outbox items here, in the same transaction as your business items."
  value       = module.outbox.outbox_table_name
}

output "outbox_dlq_url" {
  description = "FAILED messages land here."
  value       = module.outbox.outbox_dlq_url
}

output "orders_queue_url" {
  description = "Destination of topic \"orders\"."
  value       = module.orders.orders_queue_url
}

output "function_names" {
  description = "Deployed functions: the outbox's and the orders consumer."
  value       = merge(module.outbox.function_names, { consumer = module.orders.consumer_function_name })
}

output "producer_policy_arn" {
  description = "Attach this managed policy to your application's role: it may then write outbox messages."
  value       = module.outbox.producer_policy_arn
}

output "large_payload_bucket_name" {
  description = "Large payloads (S3 large-payload offload) are stored here under outbox/<MessageId>."
  value       = module.outbox.large_payload_bucket_name
}
