output "routes" {
  description = "The example routes for the outbox module's `routes`: orders (standard queue), orders-events (FIFO queue)."
  value       = module.config.routes
}

output "dashboard_queue_names" {
  description = "The example's DLQs, for the outbox module's dashboard_queue_names."
  value       = module.config.dashboard.queue_names
}

output "dashboard_function_names" {
  description = "The consumer, for the outbox module's dashboard_function_names."
  value       = module.config.dashboard.function_names
}

output "orders_table_name" {
  description = "Orders table of the reference consumer."
  value       = aws_dynamodb_table.orders.name
}

output "orders_queue_url" {
  description = "Standard destination queue (topic \"orders\"), consumed by the reference consumer."
  value       = local.all_queues["orders_queue"].url
}

output "orders_events_queue_url" {
  description = "FIFO destination queue (topic \"orders-events\")."
  value       = local.all_queues["fifo_queue"].url
}

output "consumer_function_name" {
  description = "The reference consumer."
  value       = aws_lambda_function.consumer.function_name
}

output "consumer_role_arn" {
  description = "The reference consumer's execution role."
  value       = aws_iam_role.consumer.arn
}
