# Attaching to an existing table: start at LATEST, and take the table's ARN from its
# stream ARN (region, account and partition of the table, not of the deployment).

run "new_table_starts_at_trim_horizon" {
  command = apply
  assert {
    condition     = output.stream_mapping.starting_position == "TRIM_HORIZON" && output.existing_table == null
    error_message = "A table the stack creates is read from its first record."
  }
}

run "existing_table_starts_at_latest" {
  command = apply
  variables {
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition     = output.stream_mapping.starting_position == "LATEST"
    error_message = "An existing table's stream starts at LATEST: TRIM_HORIZON would replay up to a day of records on first deploy."
  }
}

run "existing_table_arn_comes_from_its_stream" {
  command = apply
  variables {
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition = output.existing_table == {
      name       = "app"
      arn        = "arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app"
      stream_arn = "arn:aws-cn:dynamodb:cn-north-1:210987654321:table/app/stream/2024-01-01T00:00:00.000"
    }
    error_message = "The table ARN is the stream ARN without /stream/...: its own partition, region and account."
  }
}
