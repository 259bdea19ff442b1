# An existing table given whole (its aws_dynamodb_table resource, or the data source) is
# compared with the settings at plan: each mismatch fails the plan naming the setting, the
# table's value and what to do (existing_table.tf). The tables are declared in
# tests/existing-table, as a user's root declares its own, and passed as run.<name>.table.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

# The table as the outbox needs it, keyed tenant_id / entity_id, TTL on expires_at.
run "tenant_table" {
  command = plan
  module {
    source = "./tests/existing-table"
  }
  # The stream ARN a table named app gets (the mock's default names another table).
  override_resource {
    target          = aws_dynamodb_table.app
    override_during = plan
    values          = { stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000" }
  }
  variables {
    hash_key      = "tenant_id"
    range_key     = "entity_id"
    ttl_attribute = "expires_at"
  }
}

run "a_matching_table_plans" {
  command = plan
  variables {
    existing_table     = run.tenant_table.table
    partition_key_name = "tenant_id"
    sort_key_name      = "entity_id"
    ttl_attribute_name = "expires_at"
  }
  assert {
    condition     = alltrue([for m in values(local.table_mismatch) : m == null]) && local.existing_table.name == "app"
    error_message = "A table keyed, streamed, indexed and expiring as configured passes every check."
  }
}

run "wrong_key_names_and_ttl_attribute" {
  command = plan
  variables {
    existing_table = run.tenant_table.table
  }
  expect_failures = [aws_lambda_event_source_mapping.publisher]
  assert {
    condition = (
      strcontains(local.table_mismatch.partition_key, "\"app\" does not match partition_key_name: configured \"PK\", the table's partition key (hash_key) is \"tenant_id\". Set partition_key_name = \"tenant_id\"")
      && strcontains(local.table_mismatch.sort_key, "sort_key_name: configured \"SK\", the table's sort key (range_key) is \"entity_id\"")
      && strcontains(local.table_mismatch.ttl, "has TTL on \"expires_at\", but ttl_attribute_name is \"ExpiresAt\": set ttl_attribute_name = \"expires_at\"")
      && local.table_mismatch.key_types == null && local.table_mismatch.stream == null && local.table_mismatch.sweep_index == null
    )
    error_message = "Each key name and the TTL attribute are refused with the setting, the table's value and the fix."
  }
}

# The data source's attributes (ttl and the index as sets, no sort key as "") check alike.
run "read_table" {
  command = plan
  module {
    source = "./tests/existing-table"
  }
  override_data {
    target          = data.aws_dynamodb_table.app
    override_during = plan
    values = {
      name                   = "app"
      stream_arn             = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000"
      hash_key               = "tenant_id"
      range_key              = ""
      stream_enabled         = true
      stream_view_type       = "KEYS_ONLY"
      attribute              = [{ name = "tenant_id", type = "N" }]
      ttl                    = [{ attribute_name = "expires_at", enabled = true }]
      global_secondary_index = []
    }
  }
}

run "read_back_table" {
  command = plan
  variables {
    existing_table     = run.read_table.read
    partition_key_name = "tenant_id"
    ttl_attribute_name = "expires_at"
  }
  expect_failures = [aws_lambda_event_source_mapping.publisher]
  assert {
    condition = (
      strcontains(local.table_mismatch.sort_key, "has no sort key (range_key), and the outbox needs one (sort_key_name = \"SK\")")
      && strcontains(local.table_mismatch.key_types, "its partition key \"tenant_id\" is of type N, and the outbox writes its keys as strings")
      && strcontains(local.table_mismatch.stream, "has a stream of view type KEYS_ONLY")
      && strcontains(local.table_mismatch.sweep_index, "has no index OutboxSweepIndex (its global secondary indexes: none)")
      && local.table_mismatch.ttl == null && local.table_mismatch.partition_key == null
    )
    error_message = "Sort key, key type, stream view and index are each refused with what the table has."
  }
}

run "table_without_stream_or_index" {
  command = plan
  module {
    source = "./tests/existing-table"
  }
  # The stream ARN a table named app gets (the mock's default names another table).
  override_resource {
    target          = aws_dynamodb_table.app
    override_during = plan
    values          = { stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000" }
  }
  variables {
    stream_view_type = null
    sweep_index      = false
    ttl_attribute    = null
  }
}

run "no_stream_no_index_ttl_off" {
  command = plan
  variables {
    existing_table = run.table_without_stream_or_index.table
  }
  # TTL off is a warning (check block): SENT items stay, nothing is wrong with the messages.
  expect_failures = [aws_lambda_event_source_mapping.publisher, check.existing_table_ttl]
  assert {
    condition = (
      strcontains(local.table_mismatch.stream, "\"app\" has no stream (stream_enabled = false)")
      && strcontains(local.table_mismatch.sweep_index, "has no index OutboxSweepIndex")
      && local.table_mismatch.ttl == null && local.table_ttl_off
    )
    error_message = "A table without a stream or the index is refused; TTL off only warns."
  }
}

run "two_names" {
  command = plan
  variables {
    existing_table = {
      table_name = "app"
      name       = "other"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  expect_failures = [var.existing_table]
}
