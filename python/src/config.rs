//! `Limits` as keyword arguments with the core's names and defaults, and the `RuntimeConfig`
//! a `Runtime(...)` builds from its keyword arguments. Durations are seconds (floats).

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Seconds as a `Duration`, refusing what is negative or not finite.
pub(crate) fn seconds(name: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| {
        PyValueError::new_err(format!(
            "{name} must be a finite number of seconds >= 0, not {s}"
        ))
    })
}

/// The ordering level a `Runtime(ordering=...)` requires (`RuntimeConfig::guarantees`):
/// `"none"`, `"detect"` or `"reassemble"`.
pub(crate) fn ordering(level: &str) -> PyResult<weida::Ordering> {
    match level {
        "none" => Ok(weida::Ordering::None),
        "detect" => Ok(weida::Ordering::Detect),
        "reassemble" => Ok(weida::Ordering::Reassemble),
        other => Err(PyValueError::new_err(format!(
            "ordering is \"none\", \"detect\" or \"reassemble\", not {other:?}"
        ))),
    }
}

/// Per-connection bounds (the core's `Limits`); every argument defaults to the core's default.
#[pyclass(frozen, from_py_object, module = "weida._weida")]
#[derive(Clone)]
pub(crate) struct Limits {
    pub(crate) inner: weida::Limits,
}

#[pymethods]
impl Limits {
    #[new]
    #[pyo3(signature = (*, stream_receive_window=None, connection_receive_window=None,
        send_window=None, max_concurrent_uni_streams=None, max_concurrent_bidi_streams=None,
        max_local_streams=None, endpoint_queue=None, max_header_size=None,
        max_collected_body=None, idle_timeout=None,
        keep_alive=weida::Limits::default().keep_alive.map(|d| d.as_secs_f64()),
        subscriber_buffer_bytes=None, max_reorder_hold=None, max_parked_reverse=None,
        max_filters=None, fanout_wait=None, max_udp_payload=None))]
    #[allow(clippy::too_many_arguments)] // one keyword argument per core field
    fn new(
        stream_receive_window: Option<u64>,
        connection_receive_window: Option<u64>,
        send_window: Option<u64>,
        max_concurrent_uni_streams: Option<u64>,
        max_concurrent_bidi_streams: Option<u64>,
        max_local_streams: Option<u64>,
        endpoint_queue: Option<usize>,
        max_header_size: Option<u64>,
        max_collected_body: Option<u64>,
        idle_timeout: Option<f64>,
        keep_alive: Option<f64>,
        subscriber_buffer_bytes: Option<usize>,
        max_reorder_hold: Option<usize>,
        max_parked_reverse: Option<usize>,
        max_filters: Option<usize>,
        fanout_wait: Option<f64>,
        max_udp_payload: Option<u64>,
    ) -> PyResult<Limits> {
        let d = weida::Limits::default();
        Ok(Limits {
            inner: weida::Limits {
                stream_receive_window: stream_receive_window.unwrap_or(d.stream_receive_window),
                connection_receive_window: connection_receive_window
                    .unwrap_or(d.connection_receive_window),
                send_window: send_window.unwrap_or(d.send_window),
                max_concurrent_uni_streams: max_concurrent_uni_streams
                    .unwrap_or(d.max_concurrent_uni_streams),
                max_concurrent_bidi_streams: max_concurrent_bidi_streams
                    .unwrap_or(d.max_concurrent_bidi_streams),
                max_local_streams: max_local_streams.unwrap_or(d.max_local_streams),
                endpoint_queue: endpoint_queue.unwrap_or(d.endpoint_queue),
                max_header_size: max_header_size.unwrap_or(d.max_header_size),
                max_collected_body: max_collected_body.unwrap_or(d.max_collected_body),
                idle_timeout: match idle_timeout {
                    Some(s) => seconds("idle_timeout", s)?,
                    None => d.idle_timeout,
                },
                // Not given: the core's default; None: never.
                keep_alive: keep_alive.map(|s| seconds("keep_alive", s)).transpose()?,
                subscriber_buffer_bytes: subscriber_buffer_bytes
                    .unwrap_or(d.subscriber_buffer_bytes),
                max_reorder_hold: max_reorder_hold.unwrap_or(d.max_reorder_hold),
                max_parked_reverse: max_parked_reverse.unwrap_or(d.max_parked_reverse),
                max_filters: max_filters.unwrap_or(d.max_filters),
                fanout_wait: match fanout_wait {
                    Some(s) => seconds("fanout_wait", s)?,
                    None => d.fanout_wait,
                },
                max_udp_payload: max_udp_payload.unwrap_or(d.max_udp_payload),
            },
        })
    }

    /// Bytes a writer may run ahead of the reader on one stream. Default 1 MiB.
    #[getter]
    fn stream_receive_window(&self) -> u64 {
        self.inner.stream_receive_window
    }
    /// Bytes all streams of one connection may run ahead of their readers. Default 8 MiB.
    #[getter]
    fn connection_receive_window(&self) -> u64 {
        self.inner.connection_receive_window
    }
    /// Bytes this side may have in flight on one connection. Default 8 MiB.
    #[getter]
    fn send_window(&self) -> u64 {
        self.inner.send_window
    }
    /// One-way streams the peer may have open toward us at once (the message credit). Default 256.
    #[getter]
    fn max_concurrent_uni_streams(&self) -> u64 {
        self.inner.max_concurrent_uni_streams
    }
    /// Exchanges the peer may have open toward us at once. Default 256.
    #[getter]
    fn max_concurrent_bidi_streams(&self) -> u64 {
        self.inner.max_concurrent_bidi_streams
    }
    /// Streams a local socket connection may hold at once. Default 255.
    #[getter]
    fn max_local_streams(&self) -> u64 {
        self.inner.max_local_streams
    }
    /// Incoming streams an endpoint holds before its application takes them. Default 32.
    #[getter]
    fn endpoint_queue(&self) -> usize {
        self.inner.endpoint_queue
    }
    /// The largest header accepted. Default 16 KiB.
    #[getter]
    fn max_header_size(&self) -> u64 {
        self.inner.max_header_size
    }
    /// The largest body `recv`/`request`/`take_body` collect into memory. Default 16 MiB.
    #[getter]
    fn max_collected_body(&self) -> u64 {
        self.inner.max_collected_body
    }
    /// Seconds without traffic after which a connection is dead. Default 30.
    #[getter]
    fn idle_timeout(&self) -> f64 {
        self.inner.idle_timeout.as_secs_f64()
    }
    /// Seconds between keep-alives from the dialling side, or None for never. Default 10.
    #[getter]
    fn keep_alive(&self) -> Option<f64> {
        self.inner.keep_alive.map(|d| d.as_secs_f64())
    }
    /// Pub/Sub: payload bytes a publisher holds queued for one subscriber; a copy that would
    /// pass it is dropped for that subscriber (`byte_budget`), a body above it is refused to
    /// the publisher (`LimitExceeded`), and it bounds one `FanOut` chunk. Default 1 MiB.
    #[getter]
    fn subscriber_buffer_bytes(&self) -> usize {
        self.inner.subscriber_buffer_bytes
    }
    /// Pub/Sub under `ordering="reassemble"`: out-of-order copies a subscriber holds per
    /// producer; at the bound the oldest is released with its gap. Default 256.
    #[getter]
    fn max_reorder_hold(&self) -> usize {
        self.inner.max_reorder_hold
    }
    /// Pub/Sub over AF_UNIX: reverse connections a subscriber parks with each publisher; 0
    /// parks none, and such a subscriber is refused at subscribe (`Unsupported`). Default 8.
    #[getter]
    fn max_parked_reverse(&self) -> usize {
        self.inner.max_parked_reverse
    }
    /// Pub/Sub: filters one subscriber may hold on one publisher; one more is refused with
    /// `LimitExceeded`. Default 1024.
    #[getter]
    fn max_filters(&self) -> usize {
        self.inner.max_filters
    }
    /// Pub/Sub: seconds `FanOut.write` waits for a subscriber's backlog to make room before
    /// that subscriber's copy is dropped (`write_now` never waits). Default 1.
    #[getter]
    fn fanout_wait(&self) -> f64 {
        self.inner.fanout_wait.as_secs_f64()
    }
    /// QUIC: the largest UDP payload accepted and sent. A loopback connection starts there
    /// (within the loopback MTU); elsewhere path MTU discovery probes up to it. 1200 to
    /// 65527. Default 65527.
    #[getter]
    fn max_udp_payload(&self) -> u64 {
        self.inner.max_udp_payload
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Limits>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }
}
