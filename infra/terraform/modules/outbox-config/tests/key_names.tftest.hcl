# The outbox table's attribute names are settings (issue 21): a created table uses them for
# its keys (both strings) and TTL, the three functions are always told them, and names that
# cannot work are refused at plan.

run "defaults_are_pk_sk_expires_at" {
  command = apply
  assert {
    condition = (
      output.outbox_table.hash_key == "PK" && output.outbox_table.range_key == "SK" && output.outbox_table.ttl_attribute == "ExpiresAt"
      && output.key_names.environment == { OUTBOX_PARTITION_KEY = "PK", OUTBOX_SORT_KEY = "SK", OUTBOX_TTL_ATTRIBUTE = "ExpiresAt" }
    )
    error_message = "The defaults are today's names, and the functions are told them explicitly."
  }
}

run "key_names_reach_the_table_and_every_function" {
  command = apply
  variables {
    partition_key_name = "pk"
    sort_key_name      = "sk"
    ttl_attribute_name = "expires_at"
  }
  assert {
    condition = (
      output.outbox_table.hash_key == "pk" && output.outbox_table.range_key == "sk" && output.outbox_table.ttl_attribute == "expires_at"
      && toset(output.outbox_table.attributes) == toset([
        { name = "pk", type = "S" }, { name = "sk", type = "S" }, { name = "SweepShard", type = "S" }, { name = "SweepDueAt", type = "N" },
      ])
    )
    error_message = "A created table: hash key pk, range key sk (strings), TTL on expires_at; the sweeper's index is unchanged."
  }
  assert {
    condition = alltrue([for env in [output.publisher_environment, output.sweeper_environment, output.recovery_environment] : (
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
