# The shop's queue and the consumer that ships each placed order once.

resource "aws_sqs_queue" "orders_dlq" {
  name                      = "${var.name}-order-placed-dlq"
  message_retention_seconds = 1209600
  sqs_managed_sse_enabled   = true
}

resource "aws_sqs_queue" "orders" {
  name                       = "${var.name}-order-placed"
  visibility_timeout_seconds = 180
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.orders_dlq.arn
    maxReceiveCount     = 5
  })
}

resource "aws_sqs_queue_policy" "tls_only" {
  for_each = { orders = aws_sqs_queue.orders, dlq = aws_sqs_queue.orders_dlq }

  queue_url = each.value.url
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DenyWithoutTls"
      Effect    = "Deny"
      Principal = { AWS = "*" }
      Action    = "sqs:*"
      Resource  = each.value.arn
      Condition = { Bool = { "aws:SecureTransport" = "false" } }
    }]
  })
}

resource "aws_cloudwatch_log_group" "consumer" {
  name              = "/aws/lambda/${var.name}-consumer"
  retention_in_days = 30
}

resource "aws_iam_role" "consumer" {
  name = "${var.name}-consumer-role"
  assume_role_policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Principal = { Service = "lambda.amazonaws.com" }, Action = "sts:AssumeRole" }]
  })
}

resource "aws_iam_role_policy" "consumer" {
  name = "ship-orders"
  role = aws_iam_role.consumer.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      { Effect = "Allow", Action = ["dynamodb:PutItem"], Resource = aws_dynamodb_table.shop.arn },
      { Effect = "Allow", Action = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"], Resource = aws_sqs_queue.orders.arn },
      { Effect = "Allow", Action = ["logs:CreateLogStream", "logs:PutLogEvents"], Resource = "${aws_cloudwatch_log_group.consumer.arn}:*" },
    ]
  })
}

resource "aws_lambda_function" "consumer" {
  function_name    = "${var.name}-consumer"
  role             = aws_iam_role.consumer.arn
  runtime          = "provided.al2023"
  handler          = "bootstrap"
  architectures    = [var.architecture]
  filename         = "${var.lambda_dir}/shop-consumer/bootstrap.zip"
  source_code_hash = filebase64sha256("${var.lambda_dir}/shop-consumer/bootstrap.zip")
  timeout          = 30
  environment {
    variables = { SHOP_TABLE_NAME = aws_dynamodb_table.shop.name }
  }
  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.consumer.name
  }
}

resource "aws_lambda_event_source_mapping" "consumer" {
  event_source_arn        = aws_sqs_queue.orders.arn
  function_name           = aws_lambda_function.consumer.arn
  batch_size              = 10
  function_response_types = ["ReportBatchItemFailures"]
}
