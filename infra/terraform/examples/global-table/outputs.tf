output "table_name" {
  description = "The global table (the same name in both regions)."
  value       = module.table.name
}

output "stream_arns" {
  description = "Each region's stream of the table, which that region's publisher reads."
  value = {
    (var.regions[0]) = module.table.stream_arns[var.regions[0]]
    (var.regions[1]) = module.outbox_secondary.stream_arn
  }
}

output "producer_policy_arns" {
  description = "Each region's producer policy (<prefix>-producer-<region>): attach the one of the region your application writes in."
  value = {
    (var.regions[0]) = module.outbox_primary.producer_policy_arn
    (var.regions[1]) = module.outbox_secondary.producer_policy_arn
  }
}

output "default_home_region" {
  description = "The home region of items without HomeRegion, in both deployments."
  value       = local.default_home_region
}

output "dashboard_names" {
  description = "Each region's dashboard (<prefix>-dashboard-<region>: dashboards are global to the account)."
  value = {
    (var.regions[0]) = module.outbox_primary.dashboard_name
    (var.regions[1]) = module.outbox_secondary.dashboard_name
  }
}
