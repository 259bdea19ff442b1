# Attaching to an existing table: start at LATEST, and take the table's ARN from its
# stream ARN (region, account and partition of the table, not of the deployment).

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}


run "new_table_starts_at_trim_horizon" {
  command = plan
  assert {
    condition     = local.stream_mapping.starting_position == "TRIM_HORIZON" && local.existing_table == null
    error_message = "A table the stack creates is read from its first record."
  }
}

run "existing_table_starts_at_latest" {
  command = plan
  variables {
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition     = local.stream_mapping.starting_position == "LATEST"
    error_message = "An existing table's stream starts at LATEST: TRIM_HORIZON would replay up to a day of records on first deploy."
  }
}

run "existing_table_arn_comes_from_its_stream" {
  command = plan
  variables {
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition = local.existing_table == {
      name       = "app"
      arn        = "arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app"
      stream_arn = "arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app/stream/2024-01-01T00:00:00.000"
    }
    error_message = "The table ARN is the stream ARN without /stream/...: its own partition, region and account."
  }
}

# What can be checked of an existing table at plan: a stream ARN is there and is the
# table's, and the name is a table name (not its ARN).
run "existing_table_without_a_stream_arn" {
  command = plan
  variables {
    existing_table = { table_name = "app", stream_arn = "" }
  }
  expect_failures = [var.existing_table]
}

run "existing_table_given_by_its_arn" {
  command = plan
  variables {
    existing_table = {
      table_name = "arn:aws:dynamodb:eu-west-1:123456789012:table/app"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  expect_failures = [var.existing_table]
}

run "existing_table_with_its_own_key_names" {
  command = plan
  variables {
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000"
    }
    partition_key_name = "pk"
    sort_key_name      = "sk"
    ttl_attribute_name = "expires_at"
  }
  assert {
    condition     = local.key_names.environment == { OUTBOX_PARTITION_KEY = "pk", OUTBOX_SORT_KEY = "sk", OUTBOX_TTL_ATTRIBUTE = "expires_at", OUTBOX_SWEEP_SHARDS = "16" }
    error_message = "The functions are told the existing table's key names."
  }
  assert {
    condition     = alltrue([for m in values(local.table_mismatch) : m == null]) && !local.table_ttl_off
    error_message = "The names alone ({ table_name, stream_arn }) leave the table's definition to the functions' check."
  }
}
