# The provider-backed module, planned and applied against a mocked AWS provider (no
# account, no network: infra/check.sh runs this only when a filesystem mirror of
# hashicorp/aws is there). The values themselves are tested in ../outbox-config; this
# checks that the resources take them.
#
# max_message_bytes = 262144 throughout: the mirrored provider (5.x) refuses larger
# values at plan; hashicorp/aws >= 6.8.0 accepts the 1 MiB default.

mock_provider "aws" {
  mock_resource "aws_sqs_queue" {
    defaults = {
      arn = "arn:aws:sqs:eu-west-1:123456789012:queue"
      url = "https://sqs.eu-west-1.amazonaws.com/123456789012/queue"
    }
  }
  mock_resource "aws_dynamodb_table" {
    defaults = {
      arn        = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/stream/2024-01-01T00:00:00.000"
    }
  }
  mock_resource "aws_cloudwatch_log_group" {
    defaults = { arn = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/fn" }
  }
  mock_resource "aws_lambda_function" {
    defaults = { arn = "arn:aws:lambda:eu-west-1:123456789012:function:fn" }
  }
  mock_resource "aws_iam_role" {
    defaults = { arn = "arn:aws:iam::123456789012:role/fn" }
  }
  mock_resource "aws_cloudwatch_event_rule" {
    defaults = { arn = "arn:aws:events:eu-west-1:123456789012:rule/outbox-sweep-schedule" }
  }
  # A region the deployment is not in: nothing may take the table's ARN from it.
  mock_data "aws_region" {
    defaults = { name = "ap-south-1", id = "ap-south-1" }
  }
  mock_data "aws_caller_identity" {
    defaults = { account_id = "999999999999" }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
}

variables {
  lambda_asset_dir  = "../outbox-config/tests/artifacts/arm64"
  max_message_bytes = 262144
}

run "queues_set_their_size_explicitly" {
  command = plan
  assert {
    condition     = alltrue([for q in merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination) : q.max_message_size == 262144]) && length(merge(aws_sqs_queue.dead_letter, aws_sqs_queue.destination)) == 6
    error_message = "Every queue sets max_message_size from max_message_bytes (the provider would otherwise send 262144 whatever the setting)."
  }
}

run "sweeper_async_invocations_are_not_retried" {
  command = plan
  assert {
    condition     = aws_lambda_function_event_invoke_config.sweeper.maximum_retry_attempts == 0 && aws_lambda_function_event_invoke_config.sweeper.maximum_event_age_in_seconds == 120
    error_message = "The sweeper's async invoke config: no retry, 2-minute event age."
  }
  assert {
    condition     = aws_lambda_function.this["sweeper"].reserved_concurrent_executions == 1 && aws_lambda_function.this["publisher"].reserved_concurrent_executions == -1
    error_message = "The sweeper reserves 1 by default; the others are unreserved."
  }
}

run "sweeper_unreserved" {
  command = plan
  variables {
    sweeper_reserved_concurrency = 0
  }
  assert {
    condition     = aws_lambda_function.this["sweeper"].reserved_concurrent_executions == -1
    error_message = "0 leaves the sweeper unreserved (-1), never throttled to zero."
  }
}

run "functions_know_their_deployment_and_routes" {
  command = apply
  variables {
    prefix = "shop"
    routes = { mail = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 1024 } }
  }
  assert {
    condition     = alltrue([for f in aws_lambda_function.this : f.environment[0].variables.OUTBOX_DEPLOYMENT == "shop"])
    error_message = "Every function gets OUTBOX_DEPLOYMENT = prefix."
  }
  assert {
    condition     = jsondecode(aws_lambda_function.this["sweeper"].environment[0].variables.OUTBOX_ROUTES).mail == { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 1024 }
    error_message = "A route object reaches OUTBOX_ROUTES unchanged."
  }
  assert {
    condition     = alltrue([for a in aws_cloudwatch_metric_alarm.this : startswith(a.alarm_name, "shop-")]) && length(aws_cloudwatch_metric_alarm.this) == 13
    error_message = "13 alarms, named with the prefix."
  }
  assert {
    condition = alltrue([for w in jsondecode(aws_cloudwatch_dashboard.outbox.dashboard_body).widgets : w.properties.region == "eu-west-1"]) && (
      aws_cloudwatch_dashboard.outbox.dashboard_name == "shop-dashboard"
    )
    error_message = "The dashboard is <prefix>-dashboard, every widget in the deployment's region."
  }
}

run "existing_table_arn_from_its_stream" {
  command = apply
  variables {
    existing_table = {
      table_name = "app"
      stream_arn = "arn:aws:dynamodb:us-east-2:210987654321:table/app/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition     = [for s in jsondecode(aws_iam_role_policy.function["publisher"].policy).Statement : s.Resource if s.Sid == "MarkSentOrFailed"][0] == "arn:aws:dynamodb:us-east-2:210987654321:table/app"
    error_message = "The table ARN comes from the stream ARN (us-east-2, 210987654321), not from the deployment's region and account."
  }
  assert {
    condition     = aws_lambda_event_source_mapping.publisher.starting_position == "LATEST"
    error_message = "An existing table's stream starts at LATEST."
  }
}

# Applied, then destroyed by the test's teardown: prevent_destroy would stop that.
run "deletion_protection_off_lets_destroy_run" {
  command = apply
  variables {
    deletion_protection = false
  }
  assert {
    condition     = aws_dynamodb_table.outbox[0].deletion_protection_enabled == false && aws_dynamodb_table.orders.deletion_protection_enabled == false
    error_message = "deletion_protection = false reaches both tables."
  }
}

run "deletion_protection_on_by_default" {
  command = plan
  assert {
    condition     = aws_dynamodb_table.outbox[0].deletion_protection_enabled == true && aws_dynamodb_table.orders.deletion_protection_enabled == true
    error_message = "Both tables are protected by default."
  }
}
