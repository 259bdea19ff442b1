locals {
  alarm_actions = compact([var.alarm_topic_arn])
}

resource "aws_cloudwatch_metric_alarm" "queue_not_empty" {
  for_each = module.config.alarms.queue_not_empty

  alarm_name          = "${var.prefix}-${each.key}"
  alarm_description   = each.value.description
  namespace           = "AWS/SQS"
  metric_name         = "ApproximateNumberOfMessagesVisible"
  dimensions          = { QueueName = each.value.queue }
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  tags                = var.tags

  depends_on = [aws_sqs_queue.dead_letter]
}

resource "aws_cloudwatch_metric_alarm" "publisher_iterator_age" {
  alarm_name          = "${var.prefix}-PublisherIteratorAge"
  alarm_description   = "The publisher falls behind the table stream (records older than the threshold)."
  namespace           = "AWS/Lambda"
  metric_name         = "IteratorAge"
  dimensions          = { FunctionName = aws_lambda_function.this["publisher"].function_name }
  statistic           = "Maximum"
  period              = 60
  evaluation_periods  = 5
  datapoints_to_alarm = 3
  threshold           = module.config.alarms.iterator_age_threshold_ms
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "sweeper_recovering" {
  alarm_name          = "${var.prefix}-SweeperRecovering"
  alarm_description   = "The sweeper had to publish messages the stream path missed: the stream path is unhealthy."
  namespace           = module.config.metrics.namespace
  metric_name         = "RecoveredBySweeper"
  dimensions          = module.config.metrics.dimensions
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 0
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  tags                = var.tags
}

resource "aws_cloudwatch_metric_alarm" "oldest_pending" {
  alarm_name          = "${var.prefix}-OldestPendingTooOld"
  alarm_description   = "A PENDING outbox message is older than the threshold: delivery is stuck."
  namespace           = module.config.metrics.namespace
  metric_name         = "OldestPendingAgeSeconds"
  dimensions          = module.config.metrics.dimensions
  statistic           = "Maximum"
  period              = 300
  evaluation_periods  = 1
  threshold           = module.config.alarms.oldest_pending_threshold_seconds
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  tags                = var.tags
}
