use super::*;
use std::collections::BTreeMap;

#[test]
fn the_functions_call_the_local_aws_at_their_own_resources() {
    let aws = LocalAws {
        endpoint: "http://127.0.0.1:4566".to_owned(),
        variables: BTreeMap::from([(
            "outbox-publisher".to_owned(),
            BTreeMap::from([
                ("OUTBOX_TABLE_NAME".to_owned(), "bench-table".to_owned()),
                ("AWS_ENDPOINT_URL".to_owned(), "http://elsewhere".to_owned()),
                ("AWS_ACCESS_KEY_ID".to_owned(), "AKIAREAL".to_owned()),
            ]),
        )]),
        ..LocalAws::default()
    };
    let env: BTreeMap<String, String> =
        function_env("outbox-publisher", &aws).into_iter().collect();
    let var = |name: &str| env.get(name).map(String::as_str);
    assert_eq!(var("AWS_ENDPOINT_URL"), Some("http://127.0.0.1:4566"));
    assert_eq!(var("AWS_ACCESS_KEY_ID"), Some("test"));
    assert_eq!(var("AWS_SECRET_ACCESS_KEY"), Some("test"));
    assert_eq!(var("AWS_REGION"), Some("us-east-1"));
    assert_eq!(var("OUTBOX_TABLE_NAME"), Some("bench-table"));
    assert_eq!(var("AWS_LAMBDA_FUNCTION_NAME"), Some("outbox-publisher"));
    assert_eq!(
        deployed_name("bench", "outbox-publisher"),
        "bench-publisher"
    );
    assert_eq!(
        deployed_name("bench", "orders-consumer"),
        "bench-orders-consumer"
    );
}

#[test]
fn without_a_local_aws_no_time_is_printed() {
    let dir = std::env::temp_dir().join(format!("coldstart-{}", std::process::id()));
    let binary = dir.join("outbox-publisher").join("bootstrap");
    std::fs::create_dir_all(binary.parent().expect("parent")).expect("dir");
    std::fs::write(&binary, vec![0u8; 2 * 1_048_576]).expect("binary");
    let out = report(&dir, 5, None).expect("report");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.contains("NOT MEASURED"), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("outbox-publisher"))
        .expect("row");
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["outbox-publisher", "-", "-", "-", "2.0"]
    );
}

#[test]
fn the_peak_memory_of_this_process_is_read_from_proc() {
    let kib = peak_rss_kib(std::process::id()).expect("VmHWM");
    assert!(kib > 0);
}
