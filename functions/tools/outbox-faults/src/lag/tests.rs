use super::*;
use serde_json::json;

const SELECT: &str =
    r#"SELECT \"PK\", \"SK\" FROM \"orders\".\"OutboxSweepIndex\" WHERE \"SweepShard\" IN [?, ?]"#;

fn select(shards: &[&str]) -> String {
    let params: Vec<Value> = shards.iter().map(|s| json!({ "S": s })).collect();
    format!(
        r#"{{"Statement":"{SELECT}","Parameters":{}}}"#,
        Value::from(params)
    )
}

#[test]
fn index_queries_and_selects_lag_table_reads_consistent_reads_and_next_pages_do_not() {
    let query = r#"{"TableName":"t","IndexName":"i","KeyConditionExpression":"SweepShard = :s","ExpressionAttributeValues":{":s":{"S":"03"},":now":{"N":"5"}}}"#;
    let read = index_read("Query", query.as_bytes());
    assert_eq!(
        read.map(|r| r.scope),
        Some(BTreeSet::from(["03".to_owned()]))
    );
    let read = index_read("ExecuteStatement", select(&["01", "06"]).as_bytes());
    assert_eq!(
        read.as_ref().map(|r| r.scope.len()),
        Some(2),
        "the shards it names"
    );
    assert!(read.is_some_and(|r| r.index.ends_with(r#""orders"."OutboxSweepIndex""#)));
    for (operation, body) in [
        (
            "Query",
            r#"{"TableName":"t","ExpressionAttributeValues":{":pk":{"S":"A"}}}"#,
        ),
        (
            "Query",
            r#"{"TableName":"t","IndexName":"i","ConsistentRead":true,"ExpressionAttributeValues":{":s":{"S":"1"}}}"#,
        ),
        (
            "Query",
            r#"{"TableName":"t","IndexName":"i","ExclusiveStartKey":{"PK":{"S":"x"}},"ExpressionAttributeValues":{":s":{"S":"1"}}}"#,
        ),
        ("Scan", r#"{"TableName":"t","IndexName":"i"}"#),
        ("GetItem", r#"{"TableName":"t","IndexName":"i"}"#),
        (
            "ExecuteStatement",
            r#"{"Statement":"SELECT * FROM \"t\" WHERE PK = ?","Parameters":[{"S":"A"}]}"#,
        ),
        (
            "ExecuteStatement",
            r#"{"Statement":"UPDATE \"t\" SET a = 1 WHERE PK = ?","Parameters":[{"S":"A"}]}"#,
        ),
        ("Query", "not json"),
    ] {
        assert_eq!(
            index_read(operation, body.as_bytes()),
            None,
            "{operation} {body}"
        );
    }
    let next = format!(r#"{{"Statement":"{SELECT}","Parameters":[{{"S":"01"}}],"NextToken":"n"}}"#);
    assert_eq!(
        index_read("ExecuteStatement", next.as_bytes()),
        None,
        "{next}"
    );
}

fn read_of(shards: &[&str]) -> IndexRead {
    IndexRead {
        index: "i".into(),
        scope: shards.iter().map(|s| (*s).to_owned()).collect(),
    }
}

#[test]
fn a_lagging_read_still_lists_what_left_the_index_lately_within_its_own_scope() {
    let (m0, m1, other) = (
        json!({"PK": "A", "SK": "0"}),
        json!({"PK": "A", "SK": "1"}),
        json!({"PK": "B"}),
    );
    let mut listed = Listed::default();
    assert!(
        listed
            .read(&read_of(&["01"]), &[m0.clone(), m1.clone()], 0, 2_000)
            .is_empty()
    );
    assert!(
        listed
            .read(&read_of(&["02"]), std::slice::from_ref(&other), 0, 2_000)
            .is_empty()
    );
    // m0 was marked SENT: the index no longer lists it, a lagging one still does
    let stale = listed.read(
        &read_of(&["01", "04"]),
        std::slice::from_ref(&m1),
        1_500,
        2_000,
    );
    assert_eq!(stale, [m0], "not m1 twice, not B (shard 02 was not read)");
    let later = listed.read(&read_of(&["01"]), std::slice::from_ref(&m1), 3_000, 2_000);
    assert!(
        later.is_empty(),
        "m0 last listed 3 s ago: the index has caught up"
    );
    let gone = listed.read(&read_of(&["01", "02"]), &[], 4_500, 2_000);
    assert_eq!(gone, [m1], "B, listed 4.5 s ago, forgotten");
}

#[test]
fn what_was_listed_reads_back_and_a_cut_file_reads_as_nothing() {
    let mut listed = Listed::default();
    listed.read(&read_of(&["01"]), &[json!({"PK": {"S": "A"}})], 7, 2_000);
    assert_eq!(Listed::decode(&listed.encode()), listed);
    let text = listed.encode();
    assert_eq!(Listed::decode(&text[..text.len() / 2]), Listed::default());
}

#[test]
fn extra_items_join_the_answer_and_its_count() {
    let body = br#"{"Count":1,"Items":[{"PK":{"S":"A"}}],"ScannedCount":1}"#;
    let out = with_items(body, vec![json!({"PK": {"S": "B"}})]).unwrap_or_default();
    let out: Value = serde_json::from_slice(&out).unwrap_or_default();
    assert_eq!(out["Count"], 2);
    assert_eq!(out["Items"].as_array().map(Vec::len), Some(2));
    assert_eq!(items_of(body).map(|i| i.len()), Some(1));
    assert_eq!(with_items(b"{}", vec![]), None, "not an answer with items");
}

#[test]
fn an_item_listed_by_two_reads_belongs_to_what_both_covered() {
    let m0 = json!({"PK": "A", "SK": "0"});
    let mut listed = Listed::default();
    listed.read(&read_of(&["01", "06"]), std::slice::from_ref(&m0), 0, 2_000);
    listed.read(
        &read_of(&["06", "07"]),
        std::slice::from_ref(&m0),
        100,
        2_000,
    );
    // m0 left the index: a read of 06 alone would still list it
    assert_eq!(listed.read(&read_of(&["06", "09"]), &[], 200, 2_000), [m0]);
}
