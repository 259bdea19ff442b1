# An existing table checked at plan. Given whole (`existing_table = aws_dynamodb_table.app`, or
# the data source), its keys, stream, TTL and sweeper index are compared with the settings, as
# each function compares them before its first piece of work (dynamodb-outbox-core's
# schema/table_check.rs): a mismatch fails the plan (the preconditions on
# aws_lambda_event_source_mapping.publisher) naming the setting, the table's value and what to
# do. A part not given (the plain { table_name, stream_arn }) is not checked here; a part not
# known at plan is checked at apply.

locals {
  et         = var.existing_table
  table_says = "existing_table \"${try(local.existing_table.name, "")}\""
  # The definition as given: null where it was not. A table without a sort key has none (null
  # in a resource, "" in the data source); hash_key given means the key schema is.
  seen_table = local.et == null ? null : {
    keys_given  = local.et.hash_key != null
    range_key   = try(length(local.et.range_key) > 0, false) ? local.et.range_key : null
    types       = local.et.attribute == null ? null : { for a in local.et.attribute : a.name => a.type }
    stream_view = try(upper(local.et.stream_view_type), "")
    # TTL on: the attribute; off or not given: none.
    ttl_on  = [for t in local.et.ttl == null ? [] : local.et.ttl : t.attribute_name if t.enabled == true && try(length(t.attribute_name) > 0, false)]
    indexes = local.et.global_secondary_index == null ? null : { for i in local.et.global_secondary_index : i.name => i }
  }
  sweep_index      = local.outbox_table.sweep_index
  sweep_index_keys = "${local.sweep_index.hash_key} (S) / ${local.sweep_index.range_key} (N)"
  sweep_index_fix  = "add the global secondary index ${local.sweep_index.name} keyed ${local.sweep_index_keys}, projection KEYS_ONLY, to the table (infra/README.md, attaching to an existing table)"
  new_image_views  = ["NEW_IMAGE", "NEW_AND_OLD_IMAGES"]

  # One message (or null) per thing compared; each is a precondition of its own, so one not
  # known at plan does not hide the others.
  table_mismatch = local.seen_table == null ? {
    partition_key = null, sort_key = null, key_types = null, stream = null, ttl = null, sweep_index = null
    } : {
    partition_key = (!local.seen_table.keys_given || local.et.hash_key == var.partition_key_name ? null : format(
      "%s does not match partition_key_name: configured \"%s\", the table's partition key (hash_key) is \"%s\". Set partition_key_name = \"%s\", or attach the outbox table.",
      local.table_says, var.partition_key_name, local.et.hash_key, local.et.hash_key,
    ))
    sort_key = (!local.seen_table.keys_given || local.seen_table.range_key == var.sort_key_name ? null
      : local.seen_table.range_key == null ? format(
        "%s has no sort key (range_key), and the outbox needs one (sort_key_name = \"%s\"): attach a table with a string partition key and a string sort key.",
        local.table_says, var.sort_key_name,
      )
      : format(
        "%s does not match sort_key_name: configured \"%s\", the table's sort key (range_key) is \"%s\". Set sort_key_name = \"%s\", or attach the outbox table.",
        local.table_says, var.sort_key_name, local.seen_table.range_key, local.seen_table.range_key,
    ))
    key_types = (!local.seen_table.keys_given || local.seen_table.types == null ? null : length(local.non_string_keys) == 0 ? null : format(
      "%s: its %s, and the outbox writes its keys as strings: attach a table whose partition and sort keys are of type S.",
      local.table_says, join(" and ", local.non_string_keys),
    ))
    stream = (local.et.stream_enabled == null && local.et.stream_view_type == null ? null
      : local.et.stream_enabled == false || local.seen_table.stream_view == "" ? format(
        "%s has no stream (stream_enabled = false), and the publisher reads each new item from it: set stream_enabled = true and stream_view_type = \"NEW_IMAGE\" on the table.",
        local.table_says,
      )
      : contains(local.new_image_views, local.seen_table.stream_view) ? null
      : format(
        "%s has a stream of view type %s, and the publisher reads each item from its record's new image: set stream_view_type = \"NEW_IMAGE\" (or NEW_AND_OLD_IMAGES) on the table; the stream is replaced, and the mapping follows its new ARN.",
        local.table_says, local.seen_table.stream_view,
    ))
    ttl = (length(local.seen_table.ttl_on) == 0 || contains(local.seen_table.ttl_on, var.ttl_attribute_name) ? null : format(
      "%s has TTL on \"%s\", but ttl_attribute_name is \"%s\": set ttl_attribute_name = \"%s\" (a table has one TTL attribute), or SENT items are never deleted.",
      local.table_says, local.seen_table.ttl_on[0], var.ttl_attribute_name, local.seen_table.ttl_on[0],
    ))
    sweep_index = (local.seen_table.indexes == null ? null
      : !contains(keys(local.seen_table.indexes), local.sweep_index.name) ? format(
        "%s has no index %s (its global secondary indexes: %s), which the sweeper and the order fence read: %s.",
        local.table_says, local.sweep_index.name, length(local.seen_table.indexes) == 0 ? "none" : join(", ", sort(keys(local.seen_table.indexes))), local.sweep_index_fix,
      )
      : length(local.sweep_index_problems) == 0 ? null
      : format("%s: its index %s %s, and the sweeper needs %s: recreate the index so.", local.table_says, local.sweep_index.name, join(" and ", local.sweep_index_problems), local.sweep_index_keys)
    )
  }
  # The keys named as configured whose type (when the attributes are given) is not a string.
  non_string_keys = local.seen_table == null ? [] : [
    for role, key in { partition = local.et.hash_key, sort = local.seen_table.range_key } :
    "${role} key \"${key}\" is of type ${local.seen_table.types[key]}" if key != null && try(local.seen_table.types[key] != "S", false)
  ]
  # The sweeper index's keys as given (a null key is not given: not compared), then their
  # attribute types.
  seen_sweep_index = try(local.seen_table.indexes[local.sweep_index.name], null)
  sweep_index_problems = local.seen_sweep_index == null ? [] : concat(
    [for k in ["hash_key", "range_key"] : "has ${replace(k, "_", " ")} \"${local.seen_sweep_index[k]}\"" if local.seen_sweep_index[k] != null && local.seen_sweep_index[k] != local.sweep_index[k]],
    [for a, want in { (local.sweep_index.hash_key) = "S", (local.sweep_index.range_key) = "N" } :
    "has ${a} of type ${local.seen_table.types[a]}" if try(local.seen_table.types[a] != want, false)],
  )
  # TTL given and off: worth a warning (SENT items stay), no reason to refuse the plan.
  table_ttl_off = try(local.et.ttl != null && length(local.seen_table.ttl_on) == 0, false)
}

check "existing_table_ttl" {
  assert {
    condition     = !local.table_ttl_off
    error_message = "${local.table_says} has TTL off: SENT items are never deleted. Turn TTL on for \"${var.ttl_attribute_name}\" (ttl { attribute_name = \"${var.ttl_attribute_name}\", enabled = true })."
  }
}
