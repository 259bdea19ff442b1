//! Idempotent consumers (work in progress).
