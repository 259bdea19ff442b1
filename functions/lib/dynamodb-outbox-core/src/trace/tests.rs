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
    assert_eq!(ctx.given_xray_header(), None);
}

#[test]
fn an_xray_header_is_kept_as_given_with_fields_w3c_has_no_place_for() {
    let lambda = "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=0;Lineage=a87bd80c:1";
    let ctx = TraceContext::from_xray(lambda).unwrap();
    assert_eq!(
        ctx.traceparent(),
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
    );
    assert!(!ctx.sampled());
    assert_eq!(ctx.xray_header(), lambda);
    assert_eq!(ctx.given_xray_header(), Some(lambda));
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
    ] {
        let err = TraceContext::from_xray(bad).unwrap_err();
        assert!(err.to_string().contains("X-Ray"), "{bad}: {err}");
    }
    let long = format!("{XRAY};{}", "x".repeat(MAX_XRAY_HEADER));
    assert!(TraceContext::from_xray(&long).is_err());
    let state = "k=".to_owned() + &"v".repeat(MAX_TRACESTATE);
    assert_eq!(
        TraceContext::from_w3c(TP, Some(&state)),
        Err(TraceError::TraceState)
    );
    assert_eq!(
        TraceContext::from_w3c(TP, Some("k=\u{7}")),
        Err(TraceError::TraceState)
    );
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
fn an_items_attributes_prefer_w3c_and_keep_an_xray_header_only_of_the_same_trace() {
    assert_eq!(TraceContext::from_attributes(None, None, None), None);
    assert_eq!(
        TraceContext::from_attributes(Some(" "), None, Some("")),
        None
    );
    let both = TraceContext::from_attributes(Some(TP), None, Some(XRAY))
        .unwrap()
        .unwrap();
    assert_eq!(both.given_xray_header(), Some(XRAY));
    let other = "Root=1-11111111-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1";
    let disagree = TraceContext::from_attributes(Some(TP), None, Some(other))
        .unwrap()
        .unwrap();
    assert_eq!(disagree.traceparent(), TP);
    assert_eq!(disagree.xray_header(), XRAY, "the W3C context wins");
    let xray_only = TraceContext::from_attributes(None, Some("ignored=1"), Some(XRAY)).unwrap();
    assert_eq!(xray_only.unwrap().traceparent(), TP);
    assert!(
        TraceContext::from_attributes(Some("nonsense"), None, Some(XRAY))
            .unwrap()
            .is_err()
    );
}
