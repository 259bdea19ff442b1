# The orders example used to be part of modules/outbox: a deployment made before it moved
# to ../orders keeps its resources (state moved, nothing replaced).

moved {
  from = module.outbox.aws_dynamodb_table.orders
  to   = module.orders.aws_dynamodb_table.orders
}

moved {
  from = module.outbox.aws_sqs_queue.dead_letter["orders_dlq"]
  to   = module.orders.aws_sqs_queue.dead_letter["orders_dlq"]
}

moved {
  from = module.outbox.aws_sqs_queue.dead_letter["fifo_dlq"]
  to   = module.orders.aws_sqs_queue.dead_letter["fifo_dlq"]
}

moved {
  from = module.outbox.aws_sqs_queue.destination["orders_queue"]
  to   = module.orders.aws_sqs_queue.destination["orders_queue"]
}

moved {
  from = module.outbox.aws_sqs_queue.destination["fifo_queue"]
  to   = module.orders.aws_sqs_queue.destination["fifo_queue"]
}

moved {
  from = module.outbox.aws_sqs_queue_policy.tls_only["orders_dlq"]
  to   = module.orders.aws_sqs_queue_policy.tls_only["orders_dlq"]
}

moved {
  from = module.outbox.aws_sqs_queue_policy.tls_only["fifo_dlq"]
  to   = module.orders.aws_sqs_queue_policy.tls_only["fifo_dlq"]
}

moved {
  from = module.outbox.aws_sqs_queue_policy.tls_only["orders_queue"]
  to   = module.orders.aws_sqs_queue_policy.tls_only["orders_queue"]
}

moved {
  from = module.outbox.aws_sqs_queue_policy.tls_only["fifo_queue"]
  to   = module.orders.aws_sqs_queue_policy.tls_only["fifo_queue"]
}

moved {
  from = module.outbox.aws_cloudwatch_log_group.function["consumer"]
  to   = module.orders.aws_cloudwatch_log_group.consumer
}

moved {
  from = module.outbox.aws_iam_role.function["consumer"]
  to   = module.orders.aws_iam_role.consumer
}

moved {
  from = module.outbox.aws_iam_role_policy.function["consumer"]
  to   = module.orders.aws_iam_role_policy.consumer
}

moved {
  from = module.outbox.aws_lambda_function.this["consumer"]
  to   = module.orders.aws_lambda_function.consumer
}

moved {
  from = module.outbox.aws_lambda_event_source_mapping.consumer
  to   = module.orders.aws_lambda_event_source_mapping.consumer
}

moved {
  from = module.outbox.aws_cloudwatch_metric_alarm.this["ConsumerDlqNotEmpty"]
  to   = module.orders.aws_cloudwatch_metric_alarm.this["ConsumerDlqNotEmpty"]
}

moved {
  from = module.outbox.aws_cloudwatch_metric_alarm.this["OrdersEventsDlqNotEmpty"]
  to   = module.orders.aws_cloudwatch_metric_alarm.this["OrdersEventsDlqNotEmpty"]
}

moved {
  from = module.outbox.aws_cloudwatch_metric_alarm.this["ConsumerErrors"]
  to   = module.orders.aws_cloudwatch_metric_alarm.this["ConsumerErrors"]
}

moved {
  from = module.outbox.aws_cloudwatch_metric_alarm.this["ConsumerThrottles"]
  to   = module.orders.aws_cloudwatch_metric_alarm.this["ConsumerThrottles"]
}
