use super::*;

const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const XRAY: &str = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";

#[test]
fn a_w3c_context_is_read_and_spelled_both_ways() {
    let ctx = TraceContext::from_w3c(TP, Some("rojo=00f067aa0ba902b7")).unwrap();
    assert_eq!(ctx.traceparent(), TP);
    assert_eq!(ctx.tracestate(), Some("rojo=00f067aa0ba902b7"));
    assert_eq!(ctx.trace_id(), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(ctx.parent_id(), "b7ad6b7169203331");
    assert!(ctx.sampled());
    assert_eq!(ctx.xray_header(), XRAY);
}

#[test]
fn an_xray_header_is_read_and_handed_on_rebuilt_without_the_fields_w3c_has_no_place_for() {
    let lambda = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=0;Lineage=a87bd80c:1";
    let ctx = TraceContext::from_xray(lambda).unwrap();
    assert_eq!(
        ctx.traceparent(),
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
    );
    assert!(!ctx.sampled());
    assert_eq!(
        ctx.xray_header(),
        "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=0",
        "no Lineage: the outbox ends Lambda's chain of invocations"
    );
    // A producer's header with control or non-ASCII characters in other fields is
    // never sent on as written: what SQS and EventBridge receive is rebuilt.
    let odd =
        "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1;Self=\u{7}é";
    assert_eq!(TraceContext::from_xray(odd).unwrap().xray_header(), XRAY);
    // Fields in any order, with spaces after the separators, and no Sampled field.
    let loose = "Parent=b7ad6b7169203331; Root=1-0af76519-16cd43dd8448eb211c80319c";
    let ctx = TraceContext::from_xray(loose).unwrap();
    assert_eq!(ctx.trace_id(), "0af7651916cd43dd8448eb211c80319c");
    assert!(!ctx.sampled());
}

#[test]
fn malformed_contexts_are_refused_with_what_the_form_is() {
    for bad in [
        "",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
        "0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033é1-01",
    ] {
        let err = TraceContext::from_w3c(bad, None).unwrap_err();
        assert!(
            err.to_string().contains("W3C Trace Context"),
            "{bad}: {err}"
        );
    }
    for bad in [
        "",
        "Root=1-0af76519-16cd43dd8448eb211c80319c",
        "Parent=b7ad6b7169203331",
        "Root=2-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331",
        "Root=1-0af7651-916cd43dd8448eb211c80319c;Parent=b7ad6b7169203331",
        "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b71692033",
        "Root=1-0af76519-16cd43dd8448eb211c8031é;Parent=b7ad6b7169203331",
    ] {
        let err = TraceContext::from_xray(bad).unwrap_err();
        assert!(err.to_string().contains("X-Ray"), "{bad}: {err}");
    }
    let long = format!("{XRAY};{}", "x".repeat(MAX_XRAY_HEADER));
    assert!(TraceContext::from_xray(&long).is_err());
}

#[test]
fn a_bad_tracestate_is_dropped_alone_and_the_traceparent_kept() {
    let long = "k=".to_owned() + &"v".repeat(MAX_TRACESTATE);
    for bad in [long.as_str(), "k=\u{7}", "k=é"] {
        let ctx = TraceContext::from_w3c(TP, Some(bad)).expect("the traceparent stands");
        assert_eq!((ctx.traceparent(), ctx.tracestate()), (TP, None), "{bad}");
    }
}

#[test]
fn a_later_version_is_read_as_version_00_and_its_extra_fields_dropped() {
    let later = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes-next";
    assert_eq!(
        TraceContext::from_w3c(later, None).unwrap().traceparent(),
        TP
    );
}

#[test]
fn attributes_prefer_w3c_and_fall_back_to_xray_when_it_does_not_read() {
    assert_eq!(TraceContext::from_attributes(None, None, None), None);
    assert_eq!(
        TraceContext::from_attributes(Some(" "), None, Some("")),
        None
    );
    let other = "Root=1-11111111-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";
    let both = TraceContext::from_attributes(Some(TP), None, Some(other))
        .unwrap()
        .unwrap();
    assert_eq!(both.xray_header(), XRAY, "the W3C context wins");
    let xray_only = TraceContext::from_attributes(None, Some("ignored=1"), Some(XRAY)).unwrap();
    assert_eq!(xray_only.unwrap().traceparent(), TP);
    let w3c_broken = TraceContext::from_attributes(Some("nonsense"), None, Some(XRAY)).unwrap();
    assert_eq!(
        w3c_broken.unwrap().traceparent(),
        TP,
        "the X-Ray form stands in"
    );
    let both_broken = TraceContext::from_attributes(Some("nonsense"), None, Some("Root=x"));
    assert!(matches!(both_broken, Some(Err(TraceError::TraceParent(_)))));
}
