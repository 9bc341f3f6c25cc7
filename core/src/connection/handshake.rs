//! The HELLO handshake's decisions (PROTOCOL.md §3.2, §3.3): this side's HELLO, and what two
//! HELLOs agree.

use crate::config::RuntimeConfig;
use crate::wire::{lane_frame, GuaranteeSet, Hello, Ordering, Session};

/// This runtime's HELLO: it offers every level it implements and requires its configuration's
/// (PROTOCOL.md §3.3); `session` is a local-socket subscriber's (§3.7).
pub(crate) fn our_hello(config: &RuntimeConfig, session: Option<&Session>) -> Hello {
    Hello {
        max_header_size: config.limits.max_header_size,
        features: if config.lane_max_message > 0 {
            lane_frame::FEATURE_LANES
        } else {
            0
        },
        offered: GuaranteeSet {
            ordering: Ordering::Reassemble,
            other: Vec::new(),
        },
        required: config.guarantees.clone(),
        session: session.map(Session::encode),
    }
}
