# The module against the deployment's contract (infra/contract/settings.json), which the CDK
# construct is checked against too (infra/cdk/test/contract.test.ts): with the default settings,
# each setting's environment variable in exactly the functions it names, with its default value;
# each role's actions; each alarm's metric and evaluation. variables.tf is generated from the
# same file (infra/contract/contract.py), so defaults and limits are the contract's by construction.

mock_provider "aws" {
  source          = "./tests/mocks"
  override_during = plan
}

run "defaults_match_the_contract" {
  command = plan

  assert {
    condition = length(flatten([for s in jsondecode(file("../../../contract/settings.json")).settings : [
      for fn in ["publisher", "sweeper", "recovery"] : fn
      if contains(s.env.functions, fn) ? lookup(local.environment[fn], s.env.name, null) != try(s.env.default, tostring(s.default)) : contains(keys(local.environment[fn]), s.env.name)
    ] if can(s.env.name) && (can(s.env.default) || (try(s.default, null) != null && !can(s.env.value)))])) == 0
    error_message = "Each setting's variable, in exactly its functions, with its default: ${jsonencode({ for fn, e in local.environment : fn => e })}"
  }
  assert {
    condition = alltrue([for fn, f in jsondecode(file("../../../contract/settings.json")).functions :
      sort(distinct(flatten([for s in local.policies[fn].Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) == sort(f.iam_default)
    ])
    error_message = "Each role's actions are the contract's, no more, no fewer: ${jsonencode({ for fn, p in local.policies : fn => sort(distinct(flatten([for s in p.Statement : [for a in flatten([s.Action]) : "${s.Effect} ${a}"]]))) })}"
  }
  assert {
    condition = alltrue([for fn, f in jsondecode(file("../../../contract/settings.json")).functions :
      local.function_settings.timeouts[fn] == f.timeout_seconds && local.function_settings.memory_size == f.memory_mb && local.binaries[fn] == f.binary
    ])
    error_message = "Each function's binary, timeout and memory are the contract's."
  }
  assert {
    condition     = sort(keys(aws_cloudwatch_metric_alarm.this)) == sort(keys(jsondecode(file("../../../contract/settings.json")).alarms))
    error_message = "The alarms are the contract's, no more, no fewer: ${jsonencode(sort(keys(aws_cloudwatch_metric_alarm.this)))}"
  }
  assert {
    condition = alltrue([for k, a in jsondecode(file("../../../contract/settings.json")).alarms : (
      local.alarms[k].namespace == a.namespace && local.alarms[k].metric_name == a.metric && local.alarms[k].statistic == a.statistic
      && local.alarms[k].period == try(tonumber(a.period), 300) && local.alarms[k].evaluation_periods == a.evaluation_periods
      && local.alarms[k].datapoints_to_alarm == a.datapoints_to_alarm && local.alarms[k].treat_missing_data == a.missing_data
      && local.alarms[k].threshold == try(tonumber(a.threshold), lookup({ iterator_age_threshold_ms = var.iterator_age_threshold_ms, oldest_pending_threshold_seconds = var.oldest_pending_threshold_seconds }, a.threshold))
      && local.alarms[k].comparison_operator == "GreaterThanThreshold"
      && join(" ", flatten([for d, v in local.alarms[k].dimensions : [d, v]])) == replace(a.dimension, "<prefix>", var.prefix)
    )])
    error_message = "Each alarm's metric, dimension, statistic, period, evaluation, threshold (above it) and missing data are the contract's."
  }
}
