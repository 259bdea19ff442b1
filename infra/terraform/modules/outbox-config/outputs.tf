output "names" {
  description = "Physical names of every resource."
  value       = local.names
}

output "binaries" {
  description = "cargo lambda binary names (infra/CONTRACT.md)."
  value       = local.binaries
}

output "outbox_table" {
  description = "Shape of the outbox table (infra/CONTRACT.md)."
  value       = local.outbox_table
}

output "stream_filter" {
  description = "FilterCriteria of the publisher's stream mapping: each filter of infra/stream-filter.json with the region clause (NewImage HomeRegion.S = region) and, in the default home region, each again for items without HomeRegion (HomeRegion.S exists: false). Patterns are JSON text with sorted keys."
  value       = local.home_stream_filter
  precondition {
    condition     = local.stream_filter_ok
    error_message = "The stream filter file must hold {\"Filters\": [{\"Pattern\": \"<JSON object text>\"}, ...]} with 1 to 5 filters."
  }
  precondition {
    condition     = length(local.home_stream_filter.Filters) <= 5 && alltrue([for f in local.home_stream_filter.Filters : length(f.Pattern) <= 4096])
    error_message = "With the region clauses the stream filter has more than 5 filters (the default home region doubles the file's) or a pattern over 4096 characters: shorten infra/stream-filter.json."
  }
}

output "stream_filter_file" {
  description = "infra/stream-filter.json (or stream_filter_file) as read, before the region clauses: the shared base of both stacks' filters."
  value       = local.stream_filter
}

output "home_regions" {
  description = "Which messages this deployment owns (docs/global-tables.md): its region, the default home region of items without HomeRegion, whether it is that default home, the global table's regions (empty: single-region) and the environment the functions get (OUTBOX_REGION, OUTBOX_DEFAULT_HOME_REGION)."
  value       = local.home
}

output "role_names" {
  description = "Names of the functions' execution roles (IAM names are global: on a global table they carry the region)."
  value       = local.role_names
}

output "stream_mapping" {
  description = "Settings of the publisher's stream event source mapping."
  value       = local.stream_mapping
}

output "recovery_mapping" {
  description = "Settings of the recovery function's SQS event source mapping on the stream-failure queue."
  value       = local.recovery_mapping
}

output "functions" {
  description = "Runtime, handler, architecture, memory and timeouts of the functions."
  value       = local.functions
}

output "sweeper_async_invoke" {
  description = "Asynchronous invocation settings of the sweeper (EventBridge invokes it asynchronously): no retry, a short event age."
  value       = local.sweeper_async_invoke
}

output "sweep_target_retry" {
  description = "Retry policy of the schedule's target: none, the next tick is the retry."
  value       = local.sweep_target_retry
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

output "recovery_environment" {
  description = "Recovery function environment that does not depend on deployed resources."
  value       = local.recovery_environment
}

output "existing_table" {
  description = "The existing outbox table attached to (name, ARN derived from the stream ARN, stream ARN), or null."
  value       = local.existing_table
}

output "tables" {
  description = "Settings of the outbox table the module creates."
  value = {
    deletion_protection = var.deletion_protection
  }
}

output "queue_settings" {
  description = "Retention, size and redrive settings of the queues."
  value = {
    max_message_size          = var.max_message_bytes
    message_retention_seconds = local.queue_retention_days * 86400
    max_receive_count         = var.max_receive_count
    # The failure queue is the recovery function's trigger: 6 x its timeout.
    stream_failures_visibility = local.functions.timeouts.recovery * 6
  }
}

output "large_payloads" {
  description = "The large-payload bucket (S3 large-payload offload): whether it is created, its bucket_prefix, key prefix, lifecycle (retention, incomplete multipart uploads), encryption and the environment variable names."
  value       = local.large_payloads
  precondition {
    condition     = var.large_payload_retention_days * 86400 > local.queue_retention_days * 86400
    error_message = "Large payloads must outlive every queue's messages: large_payload_retention_days > the queues' retention."
  }
}

output "metrics" {
  description = "EMF namespace and dimensions the functions publish (infra/CONTRACT.md)."
  value       = local.metrics
}

output "alarms" {
  description = "Every alarm, by name suffix (<prefix>-<key>): metric, dimensions, statistic, evaluation."
  value       = local.alarms
}

output "dashboard" {
  description = "The CloudWatch dashboard: name and widgets (each stack adds the region to every widget)."
  value       = local.dashboard
}

output "routes_json" {
  description = "OUTBOX_ROUTES: var.routes (objects unchanged), as JSON."
  value       = local.routes_json
}

output "artifacts" {
  description = "The function code per function: the zip to deploy and the architecture read from its bootstrap; null without lambda_asset_dir. Planning fails when an artifact is missing, not ELF, of the wrong architecture or stale."
  value       = module.artifacts.artifacts
  precondition {
    condition     = length(module.artifacts.problems) == 0
    error_message = join("\n", module.artifacts.problems)
  }
}

output "artifact_problems" {
  description = "Why each refused artifact is refused (empty when all are fine)."
  value       = module.artifacts.problems
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

output "key_names" {
  description = "The outbox table's attribute names (partition key, sort key, TTL attribute), the sweeper index's shard count (and the previous one while it changes), and the environment the functions get them in: give your producers the same (KeyNames::from_env reads it)."
  value = {
    partition_key         = var.partition_key_name
    sort_key              = var.sort_key_name
    ttl_attribute         = var.ttl_attribute_name
    sweep_shards          = var.sweep_shards
    sweep_shards_previous = var.sweep_shards_previous
    environment           = local.key_environment
  }
}

output "producer_policy" {
  description = "The IAM policy document (object) an application role needs to write outbox messages; null until var.resources is set."
  value       = local.producer_policy
}

output "producer_policy_json" {
  description = "The producer policy as JSON text; null until var.resources is set."
  value       = local.producer_policy == null ? null : jsonencode(local.producer_policy)
}

output "large_payload_objects" {
  description = "The objects large payloads are stored as (<bucket ARN>/outbox/*), for consumers' GetObject grants; null when the offload is off or until var.resources is set."
  value       = local.large_payload_objects
}
