//! A function's log read whole past the local AWS's page of events.

use outbox_tests::Outbox;

#[tokio::test(flavor = "multi_thread")]
async fn a_functions_log_is_read_whole_past_the_local_aws_page_of_ten_thousand_events() {
    outbox_tests::pipeline::require_ministack();
    // Given a function's log group with 12,500 lines (the local AWS answers a
    // FilterLogEvents with at most 10,000 events and no token)
    let ob = Outbox::new().await;
    let function = outbox_tests::unique("chatty");
    let group = format!("/aws/lambda/{function}");
    let logs = &ob.clients.logs;
    logs.create_log_group()
        .log_group_name(&group)
        .send()
        .await
        .expect("group");
    logs.create_log_stream()
        .log_group_name(&group)
        .log_stream_name("s")
        .send()
        .await
        .expect("stream");
    let start = dynamodb_outbox_core::clock::now_ms() - 60_000;
    for batch in 0..5 {
        let events: Vec<_> = (0..2_500)
            .map(|i| {
                aws_sdk_cloudwatchlogs::types::InputLogEvent::builder()
                    // Many lines share a millisecond, as a busy function's do.
                    .timestamp(start + (batch * 2_500 + i) / 4)
                    .message(format!("line {}", batch * 2_500 + i))
                    .build()
                    .expect("event")
            })
            .collect();
        logs.put_log_events()
            .log_group_name(&group)
            .log_stream_name("s")
            .set_log_events(Some(events))
            .send()
            .await
            .expect("put");
    }
    // When the dev kit reads it
    let lines = outbox_devkit::deployment::function_logs(&ob.clients, &function, start)
        .await
        .expect("read");
    // Then every line is there, once
    let distinct: std::collections::BTreeSet<&str> =
        lines.iter().map(|l| l.message.as_str()).collect();
    assert_eq!((lines.len(), distinct.len()), (12_500, 12_500));
}
