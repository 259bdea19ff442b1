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
  value       = module.outbox.orders_queue_url
}

output "function_names" {
  description = "Deployed functions."
  value       = module.outbox.function_names
}

output "large_payload_bucket_name" {
  description = "Large payloads (S3 large-payload offload) are stored here under outbox/<MessageId>."
  value       = module.outbox.large_payload_bucket_name
}
