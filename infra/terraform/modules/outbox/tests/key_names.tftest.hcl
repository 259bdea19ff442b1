# The outbox table's attribute names are settings (issue 21): a created table uses them for
# its keys (both strings) and TTL, the three functions are always told them, and names that
# cannot work are refused at plan.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}


# One plan for 2 former runs with these same inputs (each headed below by its old name):
# a run costs ~1 CPU-s of provider start and plan, whatever it asserts.
run "defaults_are_pk_sk_expires_at_and_one_batch_per_stream_shard" {
  command = plan

  # defaults_are_pk_sk_expires_at
  assert {
    condition = (
      local.outbox_table.hash_key == "PK" && local.outbox_table.range_key == "SK" && local.outbox_table.ttl_attribute == "ExpiresAt"
      && local.key_names.environment == { OUTBOX_PARTITION_KEY = "PK", OUTBOX_SORT_KEY = "SK", OUTBOX_TTL_ATTRIBUTE = "ExpiresAt", OUTBOX_SWEEP_SHARDS = "16" }
      && local.key_names.sweep_shards == 16 && local.key_names.sweep_shards_previous == null
    )
    error_message = "The defaults are today's names and 16 shards, no change under way, and the functions are told them explicitly."
  }

  # one_batch_per_stream_shard_by_default:
  # The stream mapping's parallelization factor: 1 unless set, Lambda's 1-10 otherwise.
  assert {
    condition     = local.stream_mapping.parallelization_factor == 1
    error_message = "The publisher's mapping reads one batch per shard at a time by default."
  }
}

run "key_names_reach_the_table_and_every_function" {
  command = plan
  variables {
    partition_key_name = "pk"
    sort_key_name      = "sk"
    ttl_attribute_name = "expires_at"
  }
  assert {
    condition = (
      local.outbox_table.hash_key == "pk" && local.outbox_table.range_key == "sk" && local.outbox_table.ttl_attribute == "expires_at"
      && toset(local.outbox_table.attributes) == toset([
        { name = "pk", type = "S" }, { name = "sk", type = "S" }, { name = "SweepShard", type = "S" }, { name = "SweepDueAt", type = "N" },
      ])
    )
    error_message = "A created table: hash key pk, range key sk (strings), TTL on expires_at; the sweeper's index is unchanged."
  }
  assert {
    condition = alltrue([for env in [local.publisher_environment, local.sweeper_environment, local.recovery_environment] : (
      env.OUTBOX_PARTITION_KEY == "pk" && env.OUTBOX_SORT_KEY == "sk" && env.OUTBOX_TTL_ATTRIBUTE == "expires_at"
    )])
    error_message = "The publisher, the sweeper and the recovery function get OUTBOX_PARTITION_KEY, OUTBOX_SORT_KEY, OUTBOX_TTL_ATTRIBUTE."
  }
}

run "the_same_name_for_both_keys" {
  command = plan
  variables {
    partition_key_name = "id"
    sort_key_name      = "id"
  }
  expect_failures = [var.sort_key_name]
}

run "a_ttl_on_a_key" {
  command = plan
  variables {
    ttl_attribute_name = "SK"
  }
  expect_failures = [var.ttl_attribute_name]
}

run "a_key_named_like_an_outbox_attribute" {
  command = plan
  variables {
    partition_key_name = "Status"
  }
  expect_failures = [var.ttl_attribute_name]
}

run "an_empty_key_name" {
  command = plan
  variables {
    partition_key_name = ""
  }
  expect_failures = [var.partition_key_name]
}

run "a_default_name_in_another_role" {
  command = plan
  variables {
    partition_key_name = "SK"
    sort_key_name      = "PK"
  }
  expect_failures = [var.ttl_attribute_name]
}

run "the_default_ttl_name_as_a_key_of_a_lowercase_table" {
  command = plan
  variables {
    partition_key_name = "pk"
    sort_key_name      = "ExpiresAt"
    ttl_attribute_name = "expires_at"
  }
  expect_failures = [var.ttl_attribute_name]
}

# The sweeper index's shard count (issue 23): always told to the three functions; the previous
# count only while a change of it is under way (docs/operations.md).

run "a_shard_count_change_reaches_every_function" {
  command = plan
  variables {
    sweep_shards          = 64
    sweep_shards_previous = 16
  }
  assert {
    condition = alltrue([for env in [local.publisher_environment, local.sweeper_environment, local.recovery_environment] : (
      env.OUTBOX_SWEEP_SHARDS == "64" && env.OUTBOX_SWEEP_SHARDS_PREVIOUS == "16"
    )])
    error_message = "The publisher, the sweeper and the recovery function get OUTBOX_SWEEP_SHARDS and OUTBOX_SWEEP_SHARDS_PREVIOUS."
  }
  assert {
    condition     = local.key_names.sweep_shards == 64 && local.key_names.sweep_shards_previous == 16 && local.key_names.environment.OUTBOX_SWEEP_SHARDS == "64"
    error_message = "The key_names output gives producers the same count."
  }
}

run "after_the_change_the_previous_count_is_gone" {
  command = plan
  variables {
    sweep_shards = 64
  }
  assert {
    condition = alltrue([for env in [local.publisher_environment, local.sweeper_environment, local.recovery_environment] : (
      env.OUTBOX_SWEEP_SHARDS == "64" && !contains(keys(env), "OUTBOX_SWEEP_SHARDS_PREVIOUS")
    )])
    error_message = "Without sweep_shards_previous no function gets OUTBOX_SWEEP_SHARDS_PREVIOUS."
  }
}

run "no_shards" {
  command = plan
  variables {
    sweep_shards = 0
  }
  expect_failures = [var.sweep_shards]
}

run "more_shards_than_the_functions_read" {
  command = plan
  variables {
    sweep_shards = 1001
  }
  expect_failures = [var.sweep_shards]
}

run "a_fraction_of_a_shard" {
  command = plan
  variables {
    sweep_shards = 2.5
  }
  expect_failures = [var.sweep_shards]
}

run "a_previous_count_equal_to_the_new_one" {
  command = plan
  variables {
    sweep_shards          = 32
    sweep_shards_previous = 32
  }
  expect_failures = [var.sweep_shards_previous]
}

run "a_previous_count_out_of_range" {
  command = plan
  variables {
    sweep_shards_previous = 5000
  }
  expect_failures = [var.sweep_shards_previous]
}

run "a_parallelization_factor_reaches_the_stream_mapping" {
  command = plan
  variables {
    parallelization_factor = 4
  }
  assert {
    condition     = local.stream_mapping.parallelization_factor == 4
    error_message = "parallelization_factor is the stream mapping's."
  }
}

run "a_parallelization_factor_out_of_range" {
  command = plan
  variables {
    parallelization_factor = 11
  }
  expect_failures = [var.parallelization_factor]
}

run "no_parallelization" {
  command = plan
  variables {
    parallelization_factor = 0
  }
  expect_failures = [var.parallelization_factor]
}
