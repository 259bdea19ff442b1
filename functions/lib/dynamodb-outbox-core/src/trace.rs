//! Trace context carried through the outbox, from the producer's transaction to the
//! consumer: the W3C Trace Context (`traceparent`, `tracestate`) and AWS X-Ray's trace
//! header (`Root=1-…;Parent=…;Sampled=…`), two spellings of one context.
//!
//! An outbox item stores it in the attributes [`TRACE_PARENT`], [`TRACE_STATE`] and
//! [`AWS_TRACE_HEADER`]; the publisher hands it on as SQS's `AWSTraceHeader` system
//! attribute, EventBridge's `TraceHeader`, and the `traceparent`/`tracestate`
//! message attributes ([`ATTR_TRACEPARENT`], [`ATTR_TRACESTATE`]) that OpenTelemetry's
//! propagators read.
//!
//! ```
//! use dynamodb_outbox_core::trace::TraceContext;
//!
//! // What Lambda hands a function in `_X_AMZN_TRACE_ID` ...
//! let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
//! let context = TraceContext::from_xray(xray)?;
//! // ... is this W3C context, and back.
//! assert_eq!(context.traceparent(), "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01");
//! assert_eq!(context.xray_header(), xray);
//! assert_eq!(context.xray_trace_id(), "1-5759e988-bd862e3fe1be46a994272793");
//! # Ok::<(), dynamodb_outbox_core::trace::TraceError>(())
//! ```

/// Outbox item attribute: the W3C `traceparent` of the producer's trace.
pub const TRACE_PARENT: &str = "TraceParent";
/// Outbox item attribute: the W3C `tracestate` that goes with [`TRACE_PARENT`].
pub const TRACE_STATE: &str = "TraceState";
/// Outbox item attribute: the same context as an X-Ray trace header. The writer stores
/// both forms; a producer of its own may write either.
pub const AWS_TRACE_HEADER: &str = "AwsTraceHeader";
/// Message attribute carrying the W3C `traceparent` (SQS, SNS; in EventBridge's detail).
pub const ATTR_TRACEPARENT: &str = "traceparent";
/// Message attribute carrying the W3C `tracestate`, when there is one.
pub const ATTR_TRACESTATE: &str = "tracestate";

/// The longest `tracestate` kept: the W3C recommendation's 512 characters.
pub const MAX_TRACESTATE: usize = 512;
/// The longest X-Ray header read (X-Ray's own limit is 7 KB per header; only its
/// `Root`, `Parent` and `Sampled` are kept).
pub const MAX_XRAY_HEADER: usize = 1024;

/// Why a trace attribute was not read as a trace context. The message is still
/// published, without one: a trace is never a reason to hold a message back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// Not `<version>-<32 hex>-<16 hex>-<2 hex>`, lowercase, ids not all zero.
    #[error(
        "traceparent `{0}` is not `00-<32 lowercase hex>-<16 lowercase hex>-<2 hex>` with non-zero ids (W3C Trace Context)"
    )]
    TraceParent(String),
    /// Without `Root=1-<8 hex>-<24 hex>` and `Parent=<16 hex>`, or too long.
    #[error(
        "X-Ray trace header `{0}` has no `Root=1-<8 hex>-<24 hex>` and `Parent=<16 hex>`, or is longer than {MAX_XRAY_HEADER} characters"
    )]
    XRay(String),
}

/// One trace context: its W3C `traceparent` (normalised to version 00) and
/// `tracestate`. The X-Ray form is always built from them, never passed on as some
/// producer wrote it: SQS and EventBridge refuse a header that is not well formed, and
/// a message must never be refused for its trace. (So X-Ray fields W3C has no place
/// for are dropped — Lambda's `Lineage` among them, on purpose: the outbox is where a
/// chain of invocations ends, and carrying `Lineage` on would let Lambda's recursion
/// detection stop a saga that passes through two outboxes.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// `00-<trace id>-<parent id>-<flags>`.
    traceparent: String,
    tracestate: Option<String>,
}

impl TraceContext {
    /// From a W3C `traceparent` and its `tracestate`. A later version's extra fields are
    /// dropped (the context is handed on as version 00, as the specification allows);
    /// a `tracestate` that is too long or not printable ASCII is dropped alone, as the
    /// specification asks (it never invalidates the `traceparent`).
    pub fn from_w3c(traceparent: &str, tracestate: Option<&str>) -> Result<Self, TraceError> {
        let (trace_id, parent_id, flags) = parse_traceparent(traceparent.trim())
            .ok_or_else(|| TraceError::TraceParent(shown(traceparent)))?;
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .filter(|s| {
                let usable =
                    s.len() <= MAX_TRACESTATE && s.bytes().all(|b| (0x20..0x7f).contains(&b));
                if !usable {
                    tracing::warn!(
                        "a tracestate longer than {MAX_TRACESTATE} characters or not printable ASCII is dropped; the traceparent is kept"
                    );
                }
                usable
            })
            .map(str::to_owned);
        Ok(TraceContext {
            traceparent: format!("00-{trace_id}-{parent_id}-{flags}"),
            tracestate,
        })
    }

    /// From an X-Ray trace header (`Root=1-…;Parent=…;Sampled=…`, as in Lambda's
    /// `_X_AMZN_TRACE_ID` or SQS's `AWSTraceHeader`); its other fields are dropped.
    pub fn from_xray(header: &str) -> Result<Self, TraceError> {
        let header = header.trim();
        let refused = || TraceError::XRay(shown(header));
        if header.len() > MAX_XRAY_HEADER {
            return Err(refused());
        }
        let (mut root, mut parent, mut sampled) = (None, None, false);
        for field in header.split(';') {
            match field.trim().split_once('=') {
                Some(("Root", v)) => root = Some(v),
                Some(("Parent", v)) => parent = Some(v),
                Some(("Sampled", v)) => sampled = v == "1",
                _ => {}
            }
        }
        let trace_id = root.and_then(xray_root_to_w3c).ok_or_else(refused)?;
        let parent_id = parent.filter(|p| is_id(p, 16)).ok_or_else(refused)?;
        let flags = if sampled { "01" } else { "00" };
        Ok(TraceContext {
            traceparent: format!("00-{trace_id}-{parent_id}-{flags}"),
            tracestate: None,
        })
    }

    /// From an outbox item's (or a message's) trace attributes, when it has any: the
    /// W3C form when it reads, else the X-Ray header. `None` when there is no trace
    /// attribute; an error only when none of them reads.
    pub fn from_attributes(
        traceparent: Option<&str>,
        tracestate: Option<&str>,
        xray: Option<&str>,
    ) -> Option<Result<Self, TraceError>> {
        match (present(traceparent), present(xray)) {
            (Some(tp), xray) => Some(Self::from_w3c(tp, tracestate).or_else(|w3c| match xray {
                Some(x) => Self::from_xray(x).map_err(|_| w3c),
                None => Err(w3c),
            })),
            (None, Some(x)) => Some(Self::from_xray(x)),
            (None, None) => None,
        }
    }

    /// The W3C `traceparent` (version 00).
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The W3C `tracestate`, when there is one.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The X-Ray trace header, built from the W3C form: `Root=…;Parent=…;Sampled=…`.
    pub fn xray_header(&self) -> String {
        format!(
            "Root={};Parent={};Sampled={}",
            self.xray_trace_id(),
            self.parent_id(),
            if self.sampled() { 1 } else { 0 }
        )
    }

    /// The trace id, 32 lowercase hex digits (what OpenTelemetry backends show).
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The trace id as X-Ray writes it: `1-<8 hex>-<24 hex>`.
    pub fn xray_trace_id(&self) -> String {
        let id = self.trace_id();
        format!("1-{}-{}", &id[..8], &id[8..])
    }

    /// The id of the span the context names as parent, 16 lowercase hex digits.
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// Whether the producer's trace was sampled.
    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.traceparent[53..55], 16).is_ok_and(|flags| flags & 1 == 1)
    }
}

/// A trace attribute that is there and not blank.
fn present(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// The trace id, parent id and flags of a `traceparent`.
fn parse_traceparent(tp: &str) -> Option<(&str, &str, &str)> {
    let mut fields = tp.split('-');
    let version = fields.next()?;
    let (trace_id, parent_id, flags) = (fields.next()?, fields.next()?, fields.next()?);
    let later_version = version != "00";
    if !is_hex(version, 2) || version == "ff" || (!later_version && fields.next().is_some()) {
        return None;
    }
    (is_id(trace_id, 32) && is_id(parent_id, 16) && is_hex(flags, 2))
        .then_some((trace_id, parent_id, flags))
}

/// `1-<8 hex>-<24 hex>` as the W3C trace id's 32 hex digits.
fn xray_root_to_w3c(root: &str) -> Option<String> {
    let rest = root.strip_prefix("1-")?;
    let (time, unique) = rest.split_once('-')?;
    let id = format!("{time}{unique}");
    (time.len() == 8 && is_id(&id, 32)).then_some(id)
}

/// `len` lowercase hex digits.
fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// An id: `len` lowercase hex digits, not all zero.
fn is_id(s: &str, len: usize) -> bool {
    is_hex(s, len) && s.bytes().any(|b| b != b'0')
}

/// A value as an error shows it: at most 80 characters of it.
fn shown(value: &str) -> String {
    value.chars().take(80).collect()
}

#[cfg(feature = "opentelemetry")]
mod otel;

/// The `trace_id` field of the functions' log lines about a message: the W3C trace id
/// it was committed in, `-` without one — so that an operator finds the lines from the
/// id X-Ray or `outbox-ops show` shows.
pub fn log_trace_id(trace: Option<&TraceContext>) -> &str {
    trace.map_or("-", TraceContext::trace_id)
}

#[cfg(test)]
mod tests;
