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

use std::borrow::Cow;

/// Outbox item attribute: the W3C `traceparent` of the producer's trace.
pub const TRACE_PARENT: &str = "TraceParent";
/// Outbox item attribute: the W3C `tracestate` that goes with [`TRACE_PARENT`].
pub const TRACE_STATE: &str = "TraceState";
/// Outbox item attribute: the X-Ray trace header, as the producer had it (it may carry
/// fields W3C has no place for, such as Lambda's `Lineage`).
pub const AWS_TRACE_HEADER: &str = "AwsTraceHeader";
/// Message attribute carrying the W3C `traceparent` (SQS, SNS; in EventBridge's detail).
pub const ATTR_TRACEPARENT: &str = "traceparent";
/// Message attribute carrying the W3C `tracestate`, when there is one.
pub const ATTR_TRACESTATE: &str = "tracestate";

/// The longest `tracestate` kept: the W3C recommendation's 512 characters.
pub const MAX_TRACESTATE: usize = 512;
/// The longest X-Ray header kept (X-Ray's own limit is 7 KB per header; the outbox keeps
/// far less, so that a header never crowds out a payload).
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
    /// Longer than [`MAX_TRACESTATE`] or not printable ASCII.
    #[error(
        "tracestate is longer than {MAX_TRACESTATE} characters or not printable ASCII (W3C Trace Context)"
    )]
    TraceState,
    /// Without `Root=1-<8 hex>-<24 hex>` and `Parent=<16 hex>`, or too long.
    #[error(
        "X-Ray trace header `{0}` has no `Root=1-<8 hex>-<24 hex>` and `Parent=<16 hex>`, or is longer than {MAX_XRAY_HEADER} characters"
    )]
    XRay(String),
}

/// One trace context: the W3C form always, the X-Ray form as it was given when it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// `00-<trace id>-<parent id>-<flags>`, normalised to version 00.
    traceparent: String,
    tracestate: Option<String>,
    /// The X-Ray header as given, when the context came from one that agrees.
    xray: Option<String>,
}

impl TraceContext {
    /// From a W3C `traceparent` and its `tracestate`. A later version's extra fields are
    /// dropped (the context is handed on as version 00, as the specification allows).
    pub fn from_w3c(traceparent: &str, tracestate: Option<&str>) -> Result<Self, TraceError> {
        let (trace_id, parent_id, flags) = parse_traceparent(traceparent.trim())
            .ok_or_else(|| TraceError::TraceParent(shown(traceparent)))?;
        let tracestate = match tracestate.map(str::trim).filter(|s| !s.is_empty()) {
            Some(s)
                if s.len() <= MAX_TRACESTATE && s.bytes().all(|b| (0x20..0x7f).contains(&b)) =>
            {
                Some(s.to_owned())
            }
            Some(_) => return Err(TraceError::TraceState),
            None => None,
        };
        Ok(TraceContext {
            traceparent: format!("00-{trace_id}-{parent_id}-{flags}"),
            tracestate,
            xray: None,
        })
    }

    /// From an X-Ray trace header (`Root=1-…;Parent=…;Sampled=…`, as in Lambda's
    /// `_X_AMZN_TRACE_ID` or SQS's `AWSTraceHeader`), kept as given.
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
            xray: Some(header.to_owned()),
        })
    }

    /// From an outbox item's trace attributes, when it has any: the W3C form when it is
    /// there, with the X-Ray header kept beside it when both name one trace; else the
    /// X-Ray header alone. `None` when the item carries no trace.
    pub fn from_attributes(
        traceparent: Option<&str>,
        tracestate: Option<&str>,
        xray: Option<&str>,
    ) -> Option<Result<Self, TraceError>> {
        let xray = xray.map(str::trim).filter(|x| !x.is_empty());
        match (traceparent.map(str::trim).filter(|t| !t.is_empty()), xray) {
            (Some(tp), xray) => Some(Self::from_w3c(tp, tracestate).map(|mut ctx| {
                if let Some(x) = xray.and_then(|x| Self::from_xray(x).ok())
                    && x.trace_id() == ctx.trace_id()
                {
                    ctx.xray = x.xray;
                }
                ctx
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

    /// The X-Ray trace header: as given, or built from the W3C form.
    pub fn xray_header(&self) -> Cow<'_, str> {
        match &self.xray {
            Some(x) => Cow::Borrowed(x),
            None => Cow::Owned(format!(
                "Root={};Parent={};Sampled={}",
                self.xray_trace_id(),
                self.parent_id(),
                if self.sampled() { 1 } else { 0 }
            )),
        }
    }

    /// The X-Ray header when the context came from one (what the item stores as
    /// [`AWS_TRACE_HEADER`]); `None` when it is derived from the W3C form.
    pub fn given_xray_header(&self) -> Option<&str> {
        self.xray.as_deref()
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

#[cfg(test)]
mod tests;
