output "table_name" {
  description = "The shop's table, with the outbox attached."
  value       = aws_dynamodb_table.shop.name
}

output "producer_policy_arn" {
  description = "Attach to the shop application's role: what it needs to write outbox messages."
  value       = module.outbox.producer_policy_arn
}

output "producer_policy_json" {
  description = "The same policy as JSON, for a role managed elsewhere."
  value       = module.outbox.producer_policy_json
}
