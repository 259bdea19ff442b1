# Detailed routes: a route is a destination, or an object
# {destination, max_message_bytes, source} passed to OUTBOX_ROUTES unchanged; IAM
# comes from the destination.

variables {
  resources = {
    outbox_table_arn          = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table"
    outbox_stream_arn         = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-table/stream/2024-01-01T00:00:00.000"
    orders_table_arn          = "arn:aws:dynamodb:eu-west-1:123456789012:table/outbox-orders"
    outbox_dlq_arn            = "arn:aws:sqs:eu-west-1:123456789012:outbox-dlq"
    stream_failures_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:outbox-stream-failures"
    orders_queue_arn          = "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue"
    example_route_queue_arns = [
      "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-queue",
      "arn:aws:sqs:eu-west-1:123456789012:outbox-orders-events.fifo",
    ]
    example_route_queue_urls = {
      standard = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-queue"
      fifo     = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-events.fifo"
    }
    log_group_arns = {
      publisher = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-publisher"
      sweeper   = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-sweeper"
      consumer  = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-orders-consumer"
      recovery  = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/outbox-recovery"
    }
  }
}

run "route_objects_pass_through_unchanged" {
  command = apply
  variables {
    routes = {
      mail    = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 262144 }
      shop    = { destination = "arn:aws:events:eu-west-1:123456789012:event-bus/shop", source = "shop.orders" }
      audit   = { destination = "arn:aws:sns:eu-west-1:123456789012:audit" }
      billing = "https://sqs.eu-west-1.amazonaws.com/123456789012/billing"
    }
  }
  assert {
    condition = jsondecode(output.routes_json) == {
      orders          = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-queue"
      "orders-events" = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-events.fifo"
      mail            = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 262144 }
      shop            = { destination = "arn:aws:events:eu-west-1:123456789012:event-bus/shop", source = "shop.orders" }
      audit           = { destination = "arn:aws:sns:eu-west-1:123456789012:audit" }
      billing         = "https://sqs.eu-west-1.amazonaws.com/123456789012/billing"
    }
    error_message = "OUTBOX_ROUTES holds the example routes and the given routes, objects unchanged."
  }
  assert {
    condition = (
      contains([for s in output.policies.publisher.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws:sqs:eu-west-1:123456789012:mail")
      && contains([for s in output.policies.publisher.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws:sqs:eu-west-1:123456789012:billing")
      && [for s in output.policies.sweeper.Statement : s.Resource if s.Sid == "PutToRoutedBuses"][0] == tolist(["arn:aws:events:eu-west-1:123456789012:event-bus/shop"])
      && [for s in output.policies.sweeper.Statement : s.Resource if s.Sid == "PublishToRoutedTopics"][0] == tolist(["arn:aws:sns:eu-west-1:123456789012:audit"])
    )
    error_message = "IAM is derived from each route's destination."
  }
}

run "example_routes_carry_a_smaller_queue_size" {
  command = apply
  variables {
    max_message_bytes = 262144
  }
  assert {
    condition = jsondecode(output.routes_json) == {
      orders          = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-queue", max_message_bytes = 262144 }
      "orders-events" = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/outbox-orders-events.fifo", max_message_bytes = 262144 }
    }
    error_message = "Below 1 MiB the example routes tell the publisher the queues' MaximumMessageSize."
  }
}

run "route_object_without_destination" {
  command = plan
  variables {
    routes = { x = { max_message_bytes = 1024 } }
  }
  expect_failures = [var.routes]
}

run "route_object_with_a_bad_destination" {
  command = plan
  variables {
    routes = { x = { destination = "billing" } }
  }
  expect_failures = [var.routes]
}

run "route_object_with_a_size_on_a_topic" {
  command = plan
  variables {
    routes = { x = { destination = "arn:aws:sns:eu-west-1:123456789012:t", max_message_bytes = 1024 } }
  }
  expect_failures = [var.routes]
}

run "route_object_with_a_size_over_1_mib" {
  command = plan
  variables {
    routes = { x = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/q", max_message_bytes = 1048577 } }
  }
  expect_failures = [var.routes]
}

run "route_object_with_a_size_as_text" {
  command = plan
  variables {
    routes = { x = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/q", max_message_bytes = "1024" } }
  }
  expect_failures = [var.routes]
}

run "route_object_with_a_source_on_a_queue" {
  command = plan
  variables {
    routes = { x = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/q", source = "shop" } }
  }
  expect_failures = [var.routes]
}

run "route_object_with_an_unknown_key" {
  command = plan
  variables {
    routes = { x = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/q", max_bytes = 1 } }
  }
  expect_failures = [var.routes]
}
