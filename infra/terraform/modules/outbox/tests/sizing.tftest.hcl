# The sweeper's size from the expected peak (issue 38, item 3): unless given, sweep_shards keeps
# every index partition under AWS's 1,000 write units a second in a destination outage at the
# peak -- each message entering the index (1), each worker's failed attempts claiming (2) and
# rescheduling (2) at its full 2,222 a second -- and sweep_workers drains that outage's backlog
# at a twentieth of the peak. The CDK's twin: infra/cdk/test/sizing.test.ts.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

run "the_defaults_of_before_and_the_contracts_numbers" {
  command = plan

  assert {
    condition     = local.sweep_sizing == { for k, v in jsondecode(file("../../../contract/settings.json")).sweep_sizing : k => v if k != "$comment" }
    error_message = "The sizing numbers are the contract's (infra/contract/settings.json sweep_sizing), as the CDK's SWEEP_SIZING."
  }
  assert {
    condition     = var.expected_peak_messages_per_second == 3000 && local.sweep_shards == 16 && local.sweep_workers == 1 && length(aws_cloudwatch_event_target.sweep) == 1
    error_message = "By default 16 shards and one worker, as before the expected peak (an upgrade keeps the count producers use)."
  }
}

run "at_100000_a_second_an_outage_stays_under_the_partition_limit" {
  command = plan

  variables {
    expected_peak_messages_per_second = 100000
  }

  assert {
    condition     = local.sweep_shards == 159 && local.sweep_workers == 3
    error_message = "100,000 msg/s: 159 shards and 3 workers, got ${local.sweep_shards} and ${local.sweep_workers}."
  }
  assert {
    condition     = (100000 + local.sweep_workers * 2222 * 4) / local.sweep_shards <= 800 && local.sweep_shards <= 1000
    error_message = "In an outage at 100,000 msg/s every shard takes at most 800 of AWS's 1,000 write units a second."
  }
  assert {
    condition     = local.sweep_workers * 1778 >= 5000 && length(aws_cloudwatch_event_target.sweep) == local.sweep_workers
    error_message = "The workers drain at 5,000 msg/s or more, one schedule target each."
  }
  assert {
    condition = alltrue([for fn in ["publisher", "sweeper", "recovery"] :
    aws_lambda_function.this[fn].environment[0].variables.OUTBOX_SWEEP_SHARDS == "159"]) && output.key_names.sweep_shards == 159
    error_message = "Every function and the producers (output key_names) get the chosen count."
  }
}

run "a_given_count_or_worker_number_wins" {
  command = plan

  variables {
    expected_peak_messages_per_second = 100000
    sweep_shards                      = 64
    sweep_workers                     = 5
  }

  assert {
    condition     = local.sweep_shards == 64 && local.sweep_workers == 5 && aws_lambda_function.this["sweeper"].environment[0].variables.OUTBOX_SWEEP_SHARDS == "64"
    error_message = "A given sweep_shards and sweep_workers win over the expected peak."
  }
}

run "shards_are_chosen_for_the_workers_given" {
  command = plan

  variables {
    expected_peak_messages_per_second = 100000
    sweep_workers                     = 5
  }

  assert {
    condition     = local.sweep_shards == 181
    error_message = "Five workers' failed attempts need more room: 181 shards, got ${local.sweep_shards}."
  }
}

run "the_previous_count_must_differ_from_the_chosen_one" {
  command = plan

  variables {
    expected_peak_messages_per_second = 100000
    sweep_shards_previous             = 159
  }

  expect_failures = [var.sweep_shards_previous]
}

run "a_peak_beyond_what_1000_shards_carry_is_refused" {
  command = plan

  variables {
    expected_peak_messages_per_second = 700001
  }

  expect_failures = [var.expected_peak_messages_per_second]
}
