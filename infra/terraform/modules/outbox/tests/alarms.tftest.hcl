# Alarms come with a topic to notify (issue 39): var.alarms = { topic_arn = ... } or none.
# Computed values stay unknown at plan here (no override_during = plan), as a real plan
# leaves a topic created in the same apply.

mock_provider "aws" {
  source = "./tests/mocks"
}

run "a_topic_created_in_the_same_apply_plans_the_15_alarms" {
  command = plan
  module {
    source = "./tests/alarm-topic"
  }
  assert {
    condition     = length(output.alarm_names) == 15 && contains(output.alarm_names, "outbox-OldestPendingTooOld")
    error_message = "A topic whose ARN is unknown at plan still gives the 15 alarms: the switch is the alarms object, known at plan."
  }
}

run "no_alarms_without_a_topic" {
  command = plan
  assert {
    condition     = length(output.alarm_names) == 0 && length(aws_cloudwatch_metric_alarm.this) == 0
    error_message = "Without alarms no alarm is created: an alarm that notifies nobody is noise."
  }
}

run "a_topic_arn_that_is_not_one_is_refused" {
  command = plan
  variables {
    alarms = { topic_arn = "ops" }
  }
  expect_failures = [var.alarms]
}
