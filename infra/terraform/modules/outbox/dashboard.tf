# The dashboard <prefix>-dashboard: messages, oldest pending age, IteratorAge, stream
# discards and their recovery, DLQ depths, function errors, duration and throttles, denied
# calls and unread fences and statuses. The widgets come from
# config.tf; each metric widget needs the region, taken from a queue's ARN
# (no data source: planning needs no AWS call).

resource "aws_cloudwatch_dashboard" "outbox" {
  dashboard_name = local.dashboard.name
  dashboard_body = jsonencode({
    widgets = [for w in local.dashboard.widgets : merge(w, {
      properties = merge(w.properties, { region = local.region })
    })]
  })
}
