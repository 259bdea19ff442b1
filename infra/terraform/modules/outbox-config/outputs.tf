output "names" {
  description = "Physical names of every resource."
  value       = local.names
}

output "binaries" {
  description = "cargo lambda binary names (infra/CONTRACT.md)."
  value       = local.binaries
}

output "example_topics" {
  description = "Topics routed to the example queues."
  value       = local.example_topics
}

output "outbox_table" {
  description = "Shape of the outbox table (infra/CONTRACT.md)."
  value       = local.outbox_table
}

output "orders_table" {
  description = "Shape of the reference consumer's orders table."
  value       = local.orders_table
}

output "stream_filter" {
  description = "FilterCriteria of the publisher's stream mapping, decoded from infra/stream-filter.json; Pattern strings are passed on verbatim."
  value       = local.stream_filter
  precondition {
    condition     = local.stream_filter_ok
    error_message = "The stream filter file must hold {\"Filters\": [{\"Pattern\": \"<JSON object text>\"}, ...]} with 1 to 5 filters."
  }
}

output "stream_mapping" {
  description = "Settings of the publisher's stream event source mapping."
  value       = local.stream_mapping
}

output "consumer_mapping" {
  description = "Settings of the reference consumer's SQS event source mapping."
  value       = local.consumer_mapping
}

output "functions" {
  description = "Runtime, handler, architecture, memory and timeouts of the functions."
  value       = local.functions
}

output "sweep_schedule" {
  description = "EventBridge schedule expression of the sweeper."
  value       = local.sweep_schedule
}

output "publisher_environment" {
  description = "Publisher environment that does not depend on deployed resources."
  value       = local.publisher_environment
}

output "sweeper_environment" {
  description = "Sweeper environment that does not depend on deployed resources."
  value       = local.sweeper_environment
}

output "queue_settings" {
  description = "Retention and redrive settings of the queues."
  value = {
    message_retention_seconds = 1209600
    max_receive_count         = var.max_receive_count
    consumer_visibility       = local.functions.timeouts.consumer * 6
  }
}

output "metrics" {
  description = "EMF namespace and dimensions the functions publish (infra/CONTRACT.md)."
  value       = local.metrics
}

output "alarms" {
  description = "Alarm definitions shared by the module."
  value       = local.alarms
}

output "log_retention_days" {
  description = "Retention of the function log groups."
  value       = var.log_retention_days
}

output "policies" {
  description = "IAM policy documents (objects) per function; null until var.resources is set."
  value       = local.policies
}

output "policy_json" {
  description = "IAM policy documents per function as JSON text; null until var.resources is set."
  value       = local.policies == null ? null : { for k, v in local.policies : k => jsonencode(v) }
}

output "assume_role_policy_json" {
  description = "Trust policy of the function roles."
  value       = jsonencode(local.assume_role_policy)
}
