# The sweeper's scan mode (OUTBOX_SWEEP_SCAN_MODE): "off" | "backstop" | "on", "off" by
# default (a scan reads the user's business items too; after a lost stream range an operator
# runs outbox-ops reconcile) -- "backstop" is the bounded scan (one page of <= 100 items per
# sweep, from a cursor saved in the table) that finds pending items no index knows about. The old booleans still work:
# true is "on", false is "off" (no backstop). Under "backstop" and "on" the sweeper may Scan the
# table and PutItem its scan cursors (PK = OUTBOX#SWEEPER only); under "off", neither.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

variables {
  # No bucket ARN was given to these checks: the offload's grants are checked in large_payloads.
  large_payloads = false
}

run "scan_mode_backstop" {
  command = plan

  variables {
    sweep_scan_mode = "backstop"
  }

  assert {
    condition     = local.sweeper_environment.OUTBOX_SWEEP_SCAN_MODE == "backstop"
    error_message = "The sweeper gets OUTBOX_SWEEP_SCAN_MODE = backstop."
  }
  assert {
    condition = [for s in local.policies.sweeper.Statement : { Resource = s.Resource, Condition = try(s.Condition, null) } if contains(flatten([s.Action]), "dynamodb:Scan")] == [
      { Resource = local.r.outbox_table_arn, Condition = null }
    ]
    error_message = "Scan mode backstop: the sweeper may Scan the outbox table."
  }
  assert {
    condition = jsonencode([for s in local.policies.sweeper.Statement : { Resource = s.Resource, Condition = try(s.Condition, null) } if contains(flatten([s.Action]), "dynamodb:PutItem")]) == jsonencode([{
      Resource = local.r.outbox_table_arn
      Condition = {
        "ForAllValues:StringEquals" = { "dynamodb:LeadingKeys" = ["OUTBOX#SWEEPER"] }
        Null                        = { "dynamodb:LeadingKeys" = "false" }
      }
    }])
    error_message = "Scan mode backstop: the sweeper may PutItem its scan cursors, PK = OUTBOX#SWEEPER only."
  }
  assert {
    condition     = alltrue([for fn in ["publisher", "recovery"] : !anytrue([for a in flatten([for s in local.policies[fn].Statement : flatten([s.Action])]) : contains(["dynamodb:Scan", "dynamodb:PutItem"], a)])])
    error_message = "No other function may Scan or PutItem on the outbox table."
  }
}

run "scan_mode_default_is_off" {
  command = plan

  assert {
    condition     = local.sweeper_environment.OUTBOX_SWEEP_SCAN_MODE == "off"
    error_message = "The sweeper gets OUTBOX_SWEEP_SCAN_MODE = off."
  }
  assert {
    condition     = !contains(flatten([for s in local.policies.sweeper.Statement : flatten([s.Action])]), "dynamodb:Scan")
    error_message = "Scan mode off: the sweeper may not Scan."
  }
  assert {
    condition     = !contains(flatten([for s in local.policies.sweeper.Statement : flatten([s.Action])]), "dynamodb:PutItem")
    error_message = "Scan mode off: the sweeper may not PutItem (no scan cursors)."
  }
  assert {
    condition     = alltrue([for fn in ["publisher", "recovery"] : !anytrue([for a in flatten([for s in local.policies[fn].Statement : flatten([s.Action])]) : contains(["dynamodb:Scan", "dynamodb:PutItem"], a)])])
    error_message = "No other function may Scan or PutItem on the outbox table."
  }
}

# The grants follow the mode alone (local.sweep_scans): the runs above check them for
# "backstop" and "off"; the other spellings only need to name the mode.
run "scan_mode_on" {
  command = plan
  variables {
    sweep_scan_mode = "on"
  }
  assert {
    condition     = local.sweeper_environment.OUTBOX_SWEEP_SCAN_MODE == "on" && local.sweep_scans
    error_message = "Scan mode on: OUTBOX_SWEEP_SCAN_MODE = on, and the grants of backstop."
  }
}

run "scan_mode_off_named" {
  command = plan
  variables {
    sweep_scan_mode = "off"
  }
  assert {
    condition     = local.sweeper_environment.OUTBOX_SWEEP_SCAN_MODE == "off" && !local.sweep_scans
    error_message = "Scan mode off, named: as the default."
  }
}

run "scan_mode_old_true_is_on" {
  command = plan
  variables {
    sweep_scan_mode = true
  }
  assert {
    condition     = local.sweeper_environment.OUTBOX_SWEEP_SCAN_MODE == "on" && local.sweep_scans
    error_message = "The old true is on."
  }
}

run "scan_mode_old_false_is_off" {
  command = plan
  variables {
    sweep_scan_mode = false
  }
  assert {
    condition     = local.sweeper_environment.OUTBOX_SWEEP_SCAN_MODE == "off" && !local.sweep_scans
    error_message = "The old false is off (no backstop)."
  }
}

# Anything else is refused at plan time.

run "scan_mode_refuses_yes" {
  command = plan
  variables {
    sweep_scan_mode = "yes"
  }
  expect_failures = [var.sweep_scan_mode]
}

run "scan_mode_refuses_uppercase" {
  command = plan
  variables {
    sweep_scan_mode = "ON"
  }
  expect_failures = [var.sweep_scan_mode]
}

run "scan_mode_refuses_capitalised" {
  command = plan
  variables {
    sweep_scan_mode = "Backstop"
  }
  expect_failures = [var.sweep_scan_mode]
}

run "scan_mode_refuses_empty" {
  command = plan
  variables {
    sweep_scan_mode = ""
  }
  expect_failures = [var.sweep_scan_mode]
}
