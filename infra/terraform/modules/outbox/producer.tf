# What an application role needs to write outbox messages (local.producer_policy:
# the items, large payloads under outbox/, the KMS key), as a managed policy the caller
# attaches to its role; create_producer_policy = false leaves only the JSON output.

resource "aws_iam_policy" "producer" {
  count = var.create_producer_policy ? 1 : 0

  name        = local.names.producer_policy
  description = "${var.prefix}: write outbox messages (attach to the application's role)"
  policy      = local.producer_policy_json
  tags        = var.tags
}
