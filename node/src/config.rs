//! `RuntimeConfig` and `Limits` from the options a JS caller gives, by the core's names in
//! camelCase; durations in milliseconds (`idleTimeoutMs`, `keepAliveMs`, `fanoutWaitMs`,
//! `sendTimeoutMs`). Byte and stream counts are JS numbers: exact up to 2^53, which no bound
//! comes near. The ordering level a runtime requires is `'none'`, `'detect'` or `'reassemble'`.

use std::time::Duration;

use napi::bindgen_prelude::{Either, Null};
use napi_derive::napi;
use weida::{Error, Limits, Ordering, RuntimeConfig};

/// Per-connection bounds (core `Limits`); an absent field keeps the core's default.
#[napi(object, object_to_js = false)]
pub struct LimitsOptions {
    pub stream_receive_window: Option<f64>,
    pub connection_receive_window: Option<f64>,
    pub send_window: Option<f64>,
    pub max_concurrent_uni_streams: Option<f64>,
    pub max_concurrent_bidi_streams: Option<f64>,
    pub max_local_streams: Option<f64>,
    pub endpoint_queue: Option<f64>,
    pub max_header_size: Option<f64>,
    pub max_collected_body: Option<f64>,
    pub idle_timeout_ms: Option<f64>,
    /// `null` sends no keep-alives.
    pub keep_alive_ms: Option<Either<f64, Null>>,
    pub subscriber_buffer_bytes: Option<f64>,
    pub max_reorder_hold: Option<f64>,
    pub max_parked_reverse: Option<f64>,
    pub max_filters: Option<f64>,
    pub fanout_wait_ms: Option<f64>,
    /// QUIC: the largest UDP payload accepted and sent (a loopback connection starts there;
    /// elsewhere path MTU discovery probes up to it). 1200 to 65527; default 65527.
    pub max_udp_payload: Option<f64>,
}

fn invalid(what: &str, v: f64) -> Error {
    Error::InvalidConfig(format!(
        "{what} must be a whole number from 0 to 2^53, not {v}"
    ))
}

/// A count from a JS number: a non-negative integer within 2^53.
pub(crate) fn count(what: &str, v: f64) -> Result<u64, Error> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_992.0 {
        Ok(v as u64)
    } else {
        Err(invalid(what, v))
    }
}

/// A duration from a JS number of milliseconds (fractions allowed).
pub(crate) fn duration_ms(what: &str, v: f64) -> Result<Duration, Error> {
    if (0.0..=9_007_199_254_740_992.0).contains(&v) {
        Ok(Duration::from_secs_f64(v / 1000.0))
    } else {
        Err(Error::InvalidConfig(format!(
            "{what} must be a number of milliseconds from 0, not {v}"
        )))
    }
}

fn limits(o: LimitsOptions) -> Result<Limits, Error> {
    let mut l = Limits::default();
    let set = |slot: &mut u64, name: &str, v: Option<f64>| -> Result<(), Error> {
        if let Some(v) = v {
            *slot = count(name, v)?;
        }
        Ok(())
    };
    set(
        &mut l.stream_receive_window,
        "streamReceiveWindow",
        o.stream_receive_window,
    )?;
    set(
        &mut l.connection_receive_window,
        "connectionReceiveWindow",
        o.connection_receive_window,
    )?;
    set(&mut l.send_window, "sendWindow", o.send_window)?;
    set(
        &mut l.max_concurrent_uni_streams,
        "maxConcurrentUniStreams",
        o.max_concurrent_uni_streams,
    )?;
    set(
        &mut l.max_concurrent_bidi_streams,
        "maxConcurrentBidiStreams",
        o.max_concurrent_bidi_streams,
    )?;
    set(
        &mut l.max_local_streams,
        "maxLocalStreams",
        o.max_local_streams,
    )?;
    set(&mut l.max_header_size, "maxHeaderSize", o.max_header_size)?;
    set(
        &mut l.max_collected_body,
        "maxCollectedBody",
        o.max_collected_body,
    )?;
    set(&mut l.max_udp_payload, "maxUdpPayload", o.max_udp_payload)?;
    let size = |slot: &mut usize, name: &str, v: Option<f64>| -> Result<(), Error> {
        if let Some(v) = v {
            *slot = usize::try_from(count(name, v)?).map_err(|_| invalid(name, v))?;
        }
        Ok(())
    };
    size(&mut l.endpoint_queue, "endpointQueue", o.endpoint_queue)?;
    size(
        &mut l.subscriber_buffer_bytes,
        "subscriberBufferBytes",
        o.subscriber_buffer_bytes,
    )?;
    size(
        &mut l.max_reorder_hold,
        "maxReorderHold",
        o.max_reorder_hold,
    )?;
    size(
        &mut l.max_parked_reverse,
        "maxParkedReverse",
        o.max_parked_reverse,
    )?;
    size(&mut l.max_filters, "maxFilters", o.max_filters)?;
    if let Some(v) = o.idle_timeout_ms {
        l.idle_timeout = duration_ms("idleTimeoutMs", v)?;
    }
    if let Some(v) = o.fanout_wait_ms {
        l.fanout_wait = duration_ms("fanoutWaitMs", v)?;
    }
    match o.keep_alive_ms {
        None => {}
        Some(Either::A(v)) => l.keep_alive = Some(duration_ms("keepAliveMs", v)?),
        Some(Either::B(Null)) => l.keep_alive = None,
    }
    Ok(l)
}

/// The core configuration a `new Runtime(options)` asks for.
pub(crate) fn runtime_config(
    identity: Option<weida::Identity>,
    trust: Option<weida::Trust>,
    limit_options: Option<LimitsOptions>,
    present_identity: Option<bool>,
    send_timeout_ms: Option<f64>,
    ordering: Option<String>,
    lane_max_message: Option<f64>,
) -> Result<RuntimeConfig, Error> {
    let mut cfg = RuntimeConfig::default();
    if let Some(i) = identity {
        cfg.identity = i;
    }
    if let Some(t) = trust {
        cfg.trust = t;
    }
    if let Some(l) = limit_options {
        cfg.limits = limits(l)?;
    }
    if let Some(p) = present_identity {
        cfg.present_identity = p;
    }
    if let Some(ms) = send_timeout_ms {
        cfg.send_timeout = Some(duration_ms("sendTimeoutMs", ms)?);
    }
    if let Some(o) = ordering {
        cfg.guarantees.ordering = self::ordering(&o)?;
    }
    if let Some(n) = lane_max_message {
        if !(n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64) {
            return Err(Error::InvalidConfig(format!(
                "laneMaxMessage must be a byte count >= 0, not {n}"
            )));
        }
        cfg.lane_max_message = n as usize;
    }
    Ok(cfg)
}

/// The ordering level of `RuntimeConfig::guarantees` by its name.
fn ordering(name: &str) -> Result<Ordering, Error> {
    match name {
        "none" => Ok(Ordering::None),
        "detect" => Ok(Ordering::Detect),
        "reassemble" => Ok(Ordering::Reassemble),
        other => Err(Error::InvalidConfig(format!(
            "ordering is 'none', 'detect' or 'reassemble', not {other:?}"
        ))),
    }
}
