# Every alarm is the contract's (alarms_contract.tf, generated from infra/contract/settings.json), named <prefix>-<key>:
# dead-letter queues not empty, stream discards (messages sent to the failure queue),
# publisher IteratorAge, sweeper recovering, recovery range lost, denied calls
# (AccessDenied), unread FIFO fences (FenceUnread), oldest pending message (missing data
# breaching: a dead sweeper), Errors and Throttles of the three functions. Created only with
# var.alarms: an alarm that notifies nobody is noise (issue 39); the dashboard stays. The
# switch is the object, not its topic_arn: an object literal is known at plan when the
# topic's ARN is not (a topic created in the same apply), so for_each's keys are known.

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each = var.alarms == null ? {} : local.alarms

  alarm_name          = "${var.prefix}-${each.key}"
  alarm_description   = each.value.description
  namespace           = each.value.namespace
  metric_name         = each.value.metric_name
  dimensions          = each.value.dimensions
  statistic           = each.value.statistic
  period              = each.value.period
  evaluation_periods  = each.value.evaluation_periods
  datapoints_to_alarm = each.value.datapoints_to_alarm
  threshold           = each.value.threshold
  comparison_operator = each.value.comparison_operator
  treat_missing_data  = each.value.treat_missing_data
  alarm_actions       = [var.alarms.topic_arn]
  tags                = var.tags
}
