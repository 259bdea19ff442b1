//! `shards`: where the pending messages stand while the sweeper index's shard count
//! changes, and moving the ones still in a shard of the previous count.
//!
//! During a change every reader reads the shards of both counts, so nothing is
//! stranded; the previous count (`OUTBOX_SWEEP_SHARDS_PREVIOUS`) may be dropped only
//! once no pending message is left outside the shard the new count gives it — else
//! the order fence, reading one shard per aggregate again, could miss an earlier
//! message of a FIFO aggregate. A sweep's claim moves what it claims; this command
//! counts what is left, and with `--move` moves it now.

use crate::{OpsError, Reads, Table, index};
use aws_sdk_dynamodb::types::AttributeValue;
use dynamodb_outbox_core::SweepShards;
use dynamodb_outbox_core::schema::{ItemKey, STATUS, SWEEP_DUE_AT, SWEEP_SHARD, SeenIndex, Status};

/// Where the pending messages are, against the table's layout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardsReport {
    /// Shards read (those of both counts while the count changes).
    pub shards_read: usize,
    /// Pending messages in the shard the current count gives them.
    pub in_place: u64,
    /// Pending messages still elsewhere (written under the previous count), before
    /// any move.
    pub misplaced: u64,
    /// Of those, moved by this run (`--move`).
    pub moved: u64,
    /// Of those, changed by someone else between the read and the move (claimed,
    /// sent): a claim moves what it claims, so these need nothing more.
    pub changed_meanwhile: u64,
    /// What the command read.
    pub reads: Reads,
}

impl ShardsReport {
    /// Whether the previous count can be dropped: nothing is left outside its shard.
    pub fn done(&self) -> bool {
        self.misplaced == self.moved + self.changed_meanwhile
    }
}

/// The pending entries of `entries` that are not in the shard `layout` gives their
/// aggregate, with the shard each was read in.
pub fn misplaced<'a>(
    layout: &SweepShards,
    shard: &str,
    entries: &'a [(ItemKey, SeenIndex)],
) -> Vec<&'a (ItemKey, SeenIndex)> {
    entries
        .iter()
        .filter(|(key, _)| !layout.is_current(&key.pk, shard))
        .collect()
}

/// Counts the pending messages in and out of place, reading every shard of
/// `table`'s layout; with `move_them`, moves each one out of place into its shard,
/// conditionally on it being unchanged since the read.
pub async fn shards(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    move_them: bool,
) -> Result<ShardsReport, OpsError> {
    let layout = table.keys.sweep_shards;
    let mut report = ShardsReport::default();
    for shard in layout.all() {
        report.shards_read += 1;
        let entries = index::entries(client, table, &shard, &mut report.reads).await?;
        let out_of_place = misplaced(&layout, &shard, &entries);
        report.misplaced += out_of_place.len() as u64;
        report.in_place += (entries.len() - out_of_place.len()) as u64;
        if !move_them {
            continue;
        }
        for (key, seen) in out_of_place {
            if move_one(client, table, key, &shard, seen).await? {
                report.moved += 1;
            } else {
                report.changed_meanwhile += 1;
            }
        }
    }
    Ok(report)
}

/// Moves one pending item from `from` into its current shard, if it is still
/// pending there with the due time read (a claim changes the due time, and moves
/// the item itself). `false` when it changed meanwhile.
async fn move_one(
    client: &aws_sdk_dynamodb::Client,
    table: &Table,
    key: &ItemKey,
    from: &str,
    seen: &SeenIndex,
) -> Result<bool, OpsError> {
    let Some(due) = seen.due.clone() else {
        return Ok(false);
    };
    let to = table.keys.sweep_shards.shard_of(&key.pk);
    let result = client
        .update_item()
        .table_name(&table.name)
        .set_key(Some(index::key_of(table, key)))
        .condition_expression("#status = :pending AND #shard = :from AND #due = :due")
        .update_expression("SET #shard = :to")
        .expression_attribute_names("#status", STATUS)
        .expression_attribute_names("#shard", SWEEP_SHARD)
        .expression_attribute_names("#due", SWEEP_DUE_AT)
        .expression_attribute_values(
            ":pending",
            AttributeValue::S(Status::Pending.as_str().into()),
        )
        .expression_attribute_values(":from", AttributeValue::S(from.to_owned()))
        .expression_attribute_values(":due", AttributeValue::N(due))
        .expression_attribute_values(":to", AttributeValue::S(to))
        .send()
        .await;
    index::applied(result, table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pk: &str) -> (ItemKey, SeenIndex) {
        let key = ItemKey {
            pk: pk.into(),
            sk: "MESSAGE#E#1".into(),
        };
        (key, SeenIndex::ours("00", 1))
    }

    #[test]
    fn an_entry_is_misplaced_when_its_shard_is_not_the_one_the_new_count_gives_it() {
        let layout = SweepShards::new(64)
            .and_then(|l| l.changing_from(16))
            .unwrap_or_default();
        let pks: Vec<String> = (0..300).map(|i| format!("ORDER#{i}")).collect();
        // Read in its old shard (of 16): misplaced exactly when 64 puts it elsewhere.
        for pk in &pks {
            let old = SweepShards::default().shard_of(pk);
            let entries = [entry(pk)];
            let found = misplaced(&layout, &old, &entries);
            assert_eq!(found.is_empty(), layout.shard_of(pk) == old, "{pk}");
            let new = layout.shard_of(pk);
            assert!(misplaced(&layout, &new, &entries).is_empty(), "{pk}");
        }
        let report = ShardsReport {
            misplaced: 3,
            moved: 2,
            changed_meanwhile: 1,
            ..ShardsReport::default()
        };
        assert!(report.done());
        assert!(
            !ShardsReport {
                misplaced: 1,
                ..ShardsReport::default()
            }
            .done()
        );
    }
}
