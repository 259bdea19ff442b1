output "names" {
  description = "Physical names of the example's resources."
  value       = local.names
}

output "binaries" {
  description = "cargo lambda binary of the consumer."
  value       = local.binaries
}

output "topics" {
  description = "The example's topics: standard (orders) and fifo (orders-events)."
  value       = local.topics
}

output "orders_table" {
  description = "Shape of the orders table."
  value       = local.orders_table
}

output "tables" {
  description = "Settings of the orders table."
  value       = { deletion_protection = var.deletion_protection }
}

output "consumer" {
  description = "The consumer function: runtime, handler, architectures, memory, timeout, reserved concurrency, description, static environment."
  value       = local.consumer
}

output "consumer_mapping" {
  description = "Settings of the consumer's SQS event source mapping on the orders queue."
  value       = local.consumer_mapping
}

output "queue_settings" {
  description = "Retention, size and redrive settings of the example queues."
  value       = local.queue_settings
}

output "queues" {
  description = "The example queues: name, FIFO, DLQ (key) and visibility."
  value       = local.queues
}

output "routes" {
  description = "The example routes (orders, orders-events), for the outbox module's `routes`; null until queue_urls is set."
  value       = local.routes
}

output "policy" {
  description = "The consumer's IAM policy document (object); null until var.resources is set."
  value       = local.policy
}

output "policy_json" {
  description = "The consumer's IAM policy document as JSON text; null until var.resources is set."
  value       = local.policy == null ? null : jsonencode(local.policy)
}

output "alarms" {
  description = "The example's alarms, by name suffix (<prefix>-<key>), in the outbox module's shape."
  value       = local.alarms
}

output "dashboard" {
  description = "What the outbox's dashboard shows of the example: queue_names, function_names."
  value       = local.dashboard
}

output "artifacts" {
  description = "The consumer's code: the zip and the architecture read from its bootstrap; null without lambda_asset_dir. Planning fails when it is missing, not ELF, of the wrong architecture or stale."
  value       = module.artifacts.artifacts
  precondition {
    condition     = length(module.artifacts.problems) == 0
    error_message = join("\n", module.artifacts.problems)
  }
}

output "artifact_problems" {
  description = "Why the consumer's artifact is refused (empty when it is fine)."
  value       = module.artifacts.problems
}
