# Global tables (docs/global-tables.md): the region this deployment owns, the default home
# region of items without HomeRegion, the publisher's filter and the functions' environment.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}


run "a_single_region_deployment_owns_its_region_and_unhomed_items" {
  command = plan
  assert {
    condition = local.home_stream_filter.Filters == [
      { Pattern = "{\"dynamodb\":{\"NewImage\":{\"HomeRegion\":{\"S\":[\"eu-west-1\"]},\"ItemType\":{\"S\":[\"PENDING_MESSAGE\"]},\"Status\":{\"S\":[\"PENDING\"]}}},\"eventName\":[\"INSERT\"]}" },
      { Pattern = "{\"dynamodb\":{\"NewImage\":{\"HomeRegion\":{\"S\":[{\"exists\":false}]},\"ItemType\":{\"S\":[\"PENDING_MESSAGE\"]},\"Status\":{\"S\":[\"PENDING\"]}}},\"eventName\":[\"INSERT\"]}" },
    ]
    error_message = "The file's filter with HomeRegion.S = the region, and again with HomeRegion.S exists: false (the default home region is the deployment's own): keys sorted, as CDK writes them."
  }
  assert {
    condition     = local.home.environment == { OUTBOX_REGION = "eu-west-1", OUTBOX_DEFAULT_HOME_REGION = "eu-west-1" }
    error_message = "OUTBOX_REGION is the deployment's region and OUTBOX_DEFAULT_HOME_REGION defaults to it."
  }
  assert {
    condition = alltrue([for env in [local.publisher_environment, local.sweeper_environment, local.recovery_environment] :
    env.OUTBOX_REGION == "eu-west-1" && env.OUTBOX_DEFAULT_HOME_REGION == "eu-west-1"])
    error_message = "The publisher, the sweeper and the recovery function all get OUTBOX_REGION and OUTBOX_DEFAULT_HOME_REGION."
  }
  assert {
    condition     = local.names.dashboard == "outbox-dashboard" && local.names.producer_policy == "outbox-producer" && local.role_names.publisher == "outbox-publisher-role"
    error_message = "A single-region deployment keeps its names (no region in them)."
  }
}

run "every_filter_of_the_file_gets_the_region_clause" {
  command = plan
  variables {
    stream_filter_file = "tests/two-filters.json"
  }
  assert {
    condition = [for f in local.home_stream_filter.Filters : jsondecode(f.Pattern)] == [
      { eventName = ["INSERT"], dynamodb = { NewImage = { Status = { S = ["PENDING"] }, HomeRegion = { S = ["eu-west-1"] } } } },
      { eventName = ["MODIFY"], dynamodb = { NewImage = { HomeRegion = { S = ["eu-west-1"] } } } },
      { eventName = ["INSERT"], dynamodb = { NewImage = { Status = { S = ["PENDING"] }, HomeRegion = { S = [{ exists = false }] } } } },
      { eventName = ["MODIFY"], dynamodb = { NewImage = { HomeRegion = { S = [{ exists = false }] } } } },
    ]
    error_message = "Each filter of the file gets the region clause, then each again with the absence clause (a filter without NewImage gets one)."
  }
}

# Issue 36, finding 9: the filter does not name the default home. Every region's publisher
# receives the inserts without HomeRegion and decides at run time, from
# OUTBOX_DEFAULT_HOME_REGION, whether they are its own; so moving the default home is a change
# of that variable (docs/global-tables.md, the runbook), not of the mapping. Before the fix the
# clause for items without HomeRegion was rendered only in the default home region: this
# deployment had one filter, and its publisher never saw a minimal producer's insert after the
# default home moved to it.
run "another_default_home_region_keeps_the_unhomed_filter" {
  command = plan
  variables {
    default_home_region = "us-east-1"
  }
  assert {
    condition = local.home_stream_filter.Filters == [
      { Pattern = "{\"dynamodb\":{\"NewImage\":{\"HomeRegion\":{\"S\":[\"eu-west-1\"]},\"ItemType\":{\"S\":[\"PENDING_MESSAGE\"]},\"Status\":{\"S\":[\"PENDING\"]}}},\"eventName\":[\"INSERT\"]}" },
      { Pattern = "{\"dynamodb\":{\"NewImage\":{\"HomeRegion\":{\"S\":[{\"exists\":false}]},\"ItemType\":{\"S\":[\"PENDING_MESSAGE\"]},\"Status\":{\"S\":[\"PENDING\"]}}},\"eventName\":[\"INSERT\"]}" },
    ]
    error_message = "Outside the default home region the publisher reads its region's inserts and those without HomeRegion, as in the default home: the filter does not depend on default_home_region."
  }
  assert {
    condition     = alltrue([for f in local.home_stream_filter.Filters : !strcontains(f.Pattern, "us-east-1")])
    error_message = "The stream filter never names the default home region: ownership of items without HomeRegion is the functions' run-time decision (OUTBOX_DEFAULT_HOME_REGION)."
  }
  assert {
    condition = alltrue([for env in [local.publisher_environment, local.sweeper_environment, local.recovery_environment] :
    env.OUTBOX_REGION == "eu-west-1" && env.OUTBOX_DEFAULT_HOME_REGION == "us-east-1"])
    error_message = "Every function is told its region and the default home region."
  }
  assert {
    condition     = [for f in aws_lambda_event_source_mapping.publisher.filter_criteria[0].filter : jsondecode(f.pattern).dynamodb.NewImage.HomeRegion] == [{ S = ["eu-west-1"] }, { S = [{ exists = false }] }]
    error_message = "The mapping carries both filters outside the default home region."
  }
}

run "the_default_home_region_named_explicitly" {
  command = plan
  variables {
    default_home_region = "eu-west-1"
  }
  assert {
    condition     = length(local.home_stream_filter.Filters) == 2 && jsondecode(local.home_stream_filter.Filters[1].Pattern).dynamodb.NewImage.HomeRegion == { S = [{ exists = false }] }
    error_message = "Named explicitly, the deployment's own region is the default home: both filters, as in any region."
  }
}

run "a_global_table_deployment" {
  command = plan
  variables {
    prefix               = "shop"
    global_table_regions = ["us-east-1", "eu-west-1"]
    default_home_region  = "us-east-1"
    existing_table = {
      table_name = "orders"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000"
    }
  }
  assert {
    condition     = local.names.dashboard == "shop-dashboard-eu-west-1" && local.names.producer_policy == "shop-producer-eu-west-1"
    error_message = "Dashboards and IAM policies are global to the account: on a global table their names carry the region."
  }
  assert {
    condition     = local.role_names == { publisher = "shop-publisher-eu-west-1-role", sweeper = "shop-sweeper-eu-west-1-role", recovery = "shop-recovery-eu-west-1-role" }
    error_message = "IAM role names are global to the account: on a global table they carry the region."
  }
  assert {
    condition     = local.names.publisher == "shop-publisher" && local.names.outbox_dlq == "shop-dlq" && local.dashboard.name == "shop-dashboard-eu-west-1"
    error_message = "Regional names (functions, queues) stay the same in every region."
  }
  assert {
    condition     = [for f in local.home_stream_filter.Filters : jsondecode(f.Pattern).dynamodb.NewImage.HomeRegion] == [{ S = ["eu-west-1"] }, { S = [{ exists = false }] }]
    error_message = "eu-west-1 is not the default home region, and its publisher still receives the inserts without HomeRegion (it skips them while us-east-1 is the default home)."
  }
}

run "a_global_table_needs_the_default_home_region" {
  command = plan
  variables {
    global_table_regions = ["us-east-1", "eu-west-1"]
    existing_table = {
      table_name = "orders"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000"
    }
  }
  expect_failures = [var.default_home_region]
}

run "a_default_home_region_outside_the_global_table" {
  command = plan
  variables {
    global_table_regions = ["us-east-1", "eu-west-1"]
    default_home_region  = "ap-south-1"
    existing_table = {
      table_name = "orders"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000"
    }
  }
  expect_failures = [var.default_home_region]
}

run "a_global_table_without_this_region" {
  command = plan
  variables {
    global_table_regions = ["us-east-1", "us-west-2"]
    default_home_region  = "us-east-1"
    existing_table = {
      table_name = "orders"
      stream_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2024-01-01T00:00:00.000"
    }
  }
  expect_failures = [var.global_table_regions]
}

run "a_global_table_needs_the_replica_attached" {
  command = plan
  variables {
    global_table_regions = ["us-east-1", "eu-west-1"]
    default_home_region  = "us-east-1"
  }
  expect_failures = [var.global_table_regions]
}

run "a_default_home_region_that_is_not_one" {
  command = plan
  variables {
    default_home_region = "arn:aws:dynamodb:us-east-1"
  }
  expect_failures = [var.default_home_region]
}
