# The mocked AWS of the module's tests: ARNs shaped like the real ones, a region the
# deployment is in for aws_region (existing tables elsewhere: their ARN comes from their stream).

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
mock_resource "aws_s3_bucket" {
  defaults = {
    arn    = "arn:aws:s3:::outbox-payloads-20240101"
    bucket = "outbox-payloads-20240101"
    id     = "outbox-payloads-20240101"
  }
}
mock_resource "aws_cloudwatch_event_rule" {
  defaults = { arn = "arn:aws:events:eu-west-1:123456789012:rule/outbox-sweep-schedule" }
}
# The provider's region: the deployment's (OUTBOX_REGION, the dashboard); the queues are there too.
mock_data "aws_region" {
  defaults = { name = "eu-west-1", id = "eu-west-1" }
}
mock_data "aws_caller_identity" {
  defaults = { account_id = "999999999999" }
}
mock_data "aws_partition" {
  defaults = { partition = "aws" }
}

mock_resource "aws_iam_policy" {
  defaults = { arn = "arn:aws:iam::123456789012:policy/outbox-producer" }
}

# The outbox's own queues and log groups, each with its own ARN (the policies name each).
override_resource {
  target = aws_sqs_queue.dead_letter["outbox_dlq"]
  values = { arn = "arn:aws:sqs:eu-west-1:123456789012:outbox-dlq", url = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-dlq" }
}
override_resource {
  target = aws_sqs_queue.destination["stream_failures"]
  values = { arn = "arn:aws:sqs:eu-west-1:123456789012:outbox-stream-failures", url = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-stream-failures" }
}
override_resource {
  target = aws_cloudwatch_log_group.function["publisher"]
  values = { arn = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-publisher" }
}
override_resource {
  target = aws_cloudwatch_log_group.function["sweeper"]
  values = { arn = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-sweeper" }
}
override_resource {
  target = aws_cloudwatch_log_group.function["recovery"]
  values = { arn = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-recovery" }
}
