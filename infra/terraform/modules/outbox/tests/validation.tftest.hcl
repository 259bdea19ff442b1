# Variable validations refuse bad input at plan time.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}


run "bad_prefix" {
  command = plan
  variables {
    prefix = "Bad_Prefix"
  }
  expect_failures = [var.prefix]
}

run "route_to_a_bare_name" {
  command = plan
  variables {
    routes = { billing = "billing-queue" }
  }
  expect_failures = [var.routes]
}

run "batch_size_zero" {
  command = plan
  variables {
    batch_size = 0
  }
  expect_failures = [var.batch_size]
}

run "batch_size_too_large" {
  command = plan
  variables {
    batch_size = 10001
  }
  expect_failures = [var.batch_size]
}

run "unbounded_record_age" {
  command = plan
  variables {
    stream_max_record_age_seconds = -1
  }
  expect_failures = [var.stream_max_record_age_seconds]
}

run "zero_attempts" {
  command = plan
  variables {
    max_attempts = 0
  }
  expect_failures = [var.max_attempts]
}

run "fractional_sweep_rate" {
  command = plan
  variables {
    sweep_rate_minutes = 1.5
  }
  expect_failures = [var.sweep_rate_minutes]
}

run "zero_ttl_days" {
  command = plan
  variables {
    ttl_days = 0
  }
  expect_failures = [var.ttl_days]
}

run "retention_cloudwatch_refuses" {
  command = plan
  variables {
    log_retention_days = 31
  }
  expect_failures = [var.log_retention_days]
}

run "unknown_architecture" {
  command = plan
  variables {
    architecture = "sparc"
  }
  expect_failures = [var.architecture]
}

run "kms_alias_instead_of_key_arn" {
  command = plan
  variables {
    kms_key_arn = "alias/mine"
  }
  expect_failures = [var.kms_key_arn]
}

run "existing_table_with_another_tables_stream" {
  command = plan
  variables {
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/other/stream/2024-01-01T00:00:00.000"
    }
  }
  expect_failures = [var.existing_table]
}

run "filter_file_that_is_not_a_filter" {
  command = plan
  variables {
    stream_filter_file = "./tests/bad-filter.json"
  }
  expect_failures = [aws_lambda_event_source_mapping.publisher]
}
