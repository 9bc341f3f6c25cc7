//! The core's `runtime` module as the bindings see it: a runtime made inside the I/O
//! runtime's context, and the counters as data.

use weida::{Counters, RuntimeConfig};

use crate::error::Fail;
use crate::io::on_io;

/// A runtime for `config`, made inside the I/O runtime's context (binding UDP sockets and
/// spawning its tasks need one).
pub fn runtime(config: RuntimeConfig) -> Result<weida::Runtime, Fail> {
    Ok(on_io(|| weida::Runtime::new(config))?)
}

/// How many counters the core has.
pub const COUNTERS: usize = 17;

/// Every counter as `(name, value)`, snake_case names in the core's order, so no binding
/// lists the fields (python/tests/test_lifecycle.py and node/test/lifecycle.test.mjs
/// `counters_name_every_core_counter`).
pub fn counters(c: &Counters) -> [(&'static str, u64); COUNTERS] {
    [
        ("streams_opened", c.streams_opened),
        ("streams_accepted", c.streams_accepted),
        ("streams_refused", c.streams_refused),
        ("bytes_sent", c.bytes_sent),
        ("bytes_received", c.bytes_received),
        ("connections_dialled", c.connections_dialled),
        ("connections_accepted", c.connections_accepted),
        ("receipts_delivered", c.receipts_delivered),
        ("receipts_failed", c.receipts_failed),
        ("copies_published", c.copies_published),
        ("lane_messages_sent", c.lane_messages_sent),
        ("lane_messages_received", c.lane_messages_received),
        ("lane_messages_lost", c.lane_messages_lost),
        ("outbox_queued", c.outbox_queued),
        ("outbox_written", c.outbox_written),
        ("outbox_dropped", c.outbox_dropped),
        ("outbox_abandoned", c.outbox_abandoned),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_are_every_field_of_the_cores() {
        let c = Counters::default();
        let text = format!("{c:?}");
        let names: Vec<_> = counters(&c).iter().map(|(n, _)| *n).collect();
        for n in &names {
            assert!(text.contains(&format!("{n}:")), "{n}");
        }
        assert_eq!(
            text.matches(": ").count(),
            names.len(),
            "a field is missing: {text}"
        );
    }
}
