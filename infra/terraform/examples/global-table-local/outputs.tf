output "prefix" {
  description = "The deployments' prefix (the same in both regions)."
  value       = var.prefix
}

output "table_name" {
  description = "The global table (the same name in both regions)."
  value       = module.table.name
}

output "default_home_region" {
  description = "The home region of items without HomeRegion, in both deployments."
  value       = local.default_home_region
}

output "function_names" {
  description = "Each region's functions."
  value = {
    (var.regions[0]) = module.outbox_primary.function_names
    (var.regions[1]) = module.outbox_secondary.function_names
  }
}

output "orders_queue_urls" {
  description = "Each region's orders queue, the route of the topic orders there."
  value = {
    (var.regions[0]) = aws_sqs_queue.orders_primary.url
    (var.regions[1]) = aws_sqs_queue.orders_secondary.url
  }
}
