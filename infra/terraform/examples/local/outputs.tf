output "prefix" {
  description = "The deployment's prefix: functions are <prefix>-publisher, <prefix>-sweeper, <prefix>-orders-consumer, <prefix>-recovery."
  value       = var.prefix
}

output "function_names" {
  description = "Deployed functions: the outbox's and the orders consumer."
  value       = merge(module.outbox.function_names, { consumer = module.orders.consumer_function_name })
}

output "outbox_table_name" {
  description = "The outbox table."
  value       = module.outbox.outbox_table_name
}

output "large_payload_bucket_name" {
  description = "The large-payload bucket (null when large_payloads is false)."
  value       = module.outbox.large_payload_bucket_name
}
