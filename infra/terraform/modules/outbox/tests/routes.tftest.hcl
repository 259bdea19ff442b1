# Detailed routes: a route is a destination, or an object
# {destination, max_message_bytes, source, raw_delivery} passed to OUTBOX_ROUTES unchanged; IAM
# comes from the destination.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

variables {
  # No bucket ARN was given to these checks: the offload's grants are checked in large_payloads.
  large_payloads = false
}

run "route_objects_pass_through_unchanged" {
  command = plan
  variables {
    routes = {
      mail    = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 262144 }
      shop    = { destination = "arn:aws:events:eu-west-1:123456789012:event-bus/shop", source = "shop.orders" }
      audit   = { destination = "arn:aws:sns:eu-west-1:123456789012:audit" }
      billing = "https://sqs.eu-west-1.amazonaws.com/123456789012/billing"
    }
  }
  assert {
    condition = jsondecode(local.routes_json) == {
      mail    = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/mail", max_message_bytes = 262144 }
      shop    = { destination = "arn:aws:events:eu-west-1:123456789012:event-bus/shop", source = "shop.orders" }
      audit   = { destination = "arn:aws:sns:eu-west-1:123456789012:audit" }
      billing = "https://sqs.eu-west-1.amazonaws.com/123456789012/billing"
    }
    error_message = "OUTBOX_ROUTES holds the given routes only, objects unchanged: nothing is merged in."
  }
  assert {
    condition = (
      contains([for s in local.policies.publisher.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws:sqs:eu-west-1:123456789012:mail")
      && contains([for s in local.policies.publisher.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws:sqs:eu-west-1:123456789012:billing")
      && [for s in local.policies.sweeper.Statement : s.Resource if s.Sid == "PutToRoutedBuses"][0] == tolist(["arn:aws:events:eu-west-1:123456789012:event-bus/shop"])
      && [for s in local.policies.sweeper.Statement : s.Resource if s.Sid == "PublishToRoutedTopics"][0] == tolist(["arn:aws:sns:eu-west-1:123456789012:audit"])
    )
    error_message = "IAM is derived from each route's destination."
  }
}

# The example routes are gone from the module (examples/orders-config has them): a user's
# topic named "orders" goes where the user says.
run "a_users_orders_topic_is_the_users" {
  command = plan
  variables {
    routes = { orders = "https://sqs.eu-west-1.amazonaws.com/123456789012/mine" }
  }
  assert {
    condition     = jsondecode(local.routes_json) == { orders = "https://sqs.eu-west-1.amazonaws.com/123456789012/mine" }
    error_message = "The topic orders is routed to the user's queue, nothing else is routed."
  }
  assert {
    condition     = [for s in local.policies.publisher.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0] == tolist(["arn:aws:sqs:eu-west-1:123456789012:mine", local.r.outbox_dlq_arn])
    error_message = "The publisher sends to the user's queue and the outbox DLQ, nothing else."
  }
}

# A local AWS names its queues http://<host>:<port>/<account>/<name>: the queue is in the
# deployment's region (resources.region).
run "a_local_aws_queue_url_is_in_the_deployments_region" {
  command = plan
  variables {
    routes = { orders = "http://localhost:4566/000000000000/outbox-orders-queue" }
  }
  override_data {
    target = data.aws_region.current
    values = { name = "us-east-1" }
  }
  assert {
    condition     = contains([for s in local.policies.sweeper.Statement : s.Resource if s.Sid == "SendToRoutedQueues"][0], "arn:aws:sqs:us-east-1:000000000000:outbox-orders-queue")
    error_message = "The queue's ARN: the deployment's region, the URL's account and name."
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

# raw_delivery (SNS only): the topic's subscriptions use raw delivery, so the functions size
# a message as SNS counts it, not in the notification envelope. It reaches OUTBOX_ROUTES as
# the boolean the functions parse (route.rs: RouteSpec::Detailed's raw_delivery).
run "raw_delivery_on_a_topic_passes_through_as_a_boolean" {
  command = plan
  variables {
    routes = {
      audit  = { destination = "arn:aws:sns:eu-west-1:123456789012:audit", raw_delivery = true }
      ledger = { destination = "arn:aws:sns:eu-west-1:123456789012:ledger.fifo", raw_delivery = false }
    }
  }
  assert {
    condition     = local.routes_json == "{\"audit\":{\"destination\":\"arn:aws:sns:eu-west-1:123456789012:audit\",\"raw_delivery\":true},\"ledger\":{\"destination\":\"arn:aws:sns:eu-west-1:123456789012:ledger.fifo\",\"raw_delivery\":false}}"
    error_message = "OUTBOX_ROUTES carries raw_delivery as a JSON boolean, unchanged: ${local.routes_json}"
  }
  assert {
    condition     = [for s in local.policies.publisher.Statement : s.Resource if s.Sid == "PublishToRoutedTopics"][0] == tolist(["arn:aws:sns:eu-west-1:123456789012:audit", "arn:aws:sns:eu-west-1:123456789012:ledger.fifo"])
    error_message = "raw_delivery changes no grant: the topics are published to as before."
  }
}

run "raw_delivery_on_a_queue" {
  command = plan
  variables {
    routes = { x = { destination = "https://sqs.eu-west-1.amazonaws.com/123456789012/q", raw_delivery = true } }
  }
  expect_failures = [var.routes]
}

# The functions refuse raw_delivery on a non-topic whatever its value.
run "raw_delivery_false_on_a_bus" {
  command = plan
  variables {
    routes = { x = { destination = "arn:aws:events:eu-west-1:123456789012:event-bus/shop", raw_delivery = false } }
  }
  expect_failures = [var.routes]
}

run "raw_delivery_as_text" {
  command = plan
  variables {
    routes = { x = { destination = "arn:aws:sns:eu-west-1:123456789012:t", raw_delivery = "true" } }
  }
  expect_failures = [var.routes]
}
