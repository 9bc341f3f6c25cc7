//! Options as weida-ffi's table takes them: by their camelCase names, durations in
//! milliseconds named `…Ms` (Node's spelling, `idleTimeoutMs`), each a value of
//! [`OptionValue`]; weida-ffi checks them, and a bad one is `InvalidConfig` naming it as given.

use std::collections::HashMap;
use std::sync::Arc;

use weida_ffi::config::{self as options, Given, Spelling};

use crate::error::Result;
use crate::identity::{Identity, Trust};

/// How Kotlin and Swift spell option names and durations: camelCase, milliseconds.
pub(crate) const SPELLING: Spelling = Spelling::CamelMillis;

/// One option's value.
#[derive(Debug, Clone, uniffi::Enum)]
pub enum OptionValue {
    /// A whole number (bytes, a count, milliseconds).
    Whole { value: i64 },
    /// A number with a fraction (milliseconds).
    Number { value: f64 },
    /// One name of a fixed set (`ordering`, `outboxFull`).
    Name { value: String },
    /// True or false.
    Flag { value: bool },
    /// Off, for an option that can be off (`keepAliveMs`, `sendTimeoutMs`).
    Off,
}

fn given(v: OptionValue) -> Given {
    match v {
        OptionValue::Whole { value } => Given::Int(i128::from(value)),
        OptionValue::Number { value } => Given::Float(value),
        OptionValue::Name { value } => Given::Text(value),
        OptionValue::Flag { value } => Given::Bool(value),
        OptionValue::Off => Given::Null,
    }
}

fn pairs(o: HashMap<String, OptionValue>) -> Vec<(String, Given)> {
    o.into_iter().map(|(n, v)| (n, given(v))).collect()
}

/// A runtime's configuration: its key, whom it trusts, its limits, its redial policy, and the
/// runtime options (`presentIdentity`, `sendTimeoutMs`, `udpBuffer`, `ordering`,
/// `laneMaxMessage`, …), each absent one the core's default.
#[derive(uniffi::Record)]
pub struct RuntimeOptions {
    #[uniffi(default = None)]
    pub identity: Option<Arc<Identity>>,
    #[uniffi(default = None)]
    pub trust: Option<Arc<Trust>>,
    /// `Limits` by name (`idleTimeoutMs`, `maxConnections`, …).
    #[uniffi(default)]
    pub limits: HashMap<String, OptionValue>,
    /// The redial policy by name (`ReconnectPolicy`'s options; `{"never": true}`… as in Node).
    #[uniffi(default = None)]
    pub reconnect: Option<HashMap<String, OptionValue>>,
    #[uniffi(default)]
    pub options: HashMap<String, OptionValue>,
}

/// The core's `RuntimeConfig` for `o`.
pub(crate) fn runtime_config(o: RuntimeOptions) -> Result<weida::RuntimeConfig> {
    let mut cfg = weida::RuntimeConfig::default();
    if let Some(i) = o.identity {
        cfg.identity = i.inner.clone();
    }
    if let Some(t) = o.trust {
        cfg.trust = t.inner.clone();
    }
    cfg.limits = options::limits(SPELLING, pairs(o.limits))?;
    if let Some(r) = o.reconnect {
        cfg.reconnect = options::reconnect(SPELLING, pairs(r))?;
    }
    options::apply(&options::RUNTIME, &mut cfg, SPELLING, pairs(o.options))?;
    Ok(cfg)
}

/// An endpoint's options (`maxCollectedBody`, `endpointQueue`, `sendTimeoutMs`,
/// `outboxMessages`, `outboxBytes`, `outboxFull`), each absent one its runtime's, and its own
/// redial policy if given.
#[derive(uniffi::Record, Default)]
pub struct EndpointOptions {
    #[uniffi(default)]
    pub options: HashMap<String, OptionValue>,
    #[uniffi(default = None)]
    pub reconnect: Option<HashMap<String, OptionValue>>,
}

/// The core's `EndpointOptions` for `o`.
pub(crate) fn endpoint_options(o: Option<EndpointOptions>) -> Result<weida::EndpointOptions> {
    let o = o.unwrap_or_default();
    let reconnect = o
        .reconnect
        .map(|r| options::reconnect(SPELLING, pairs(r)))
        .transpose()?;
    Ok(options::endpoint(SPELLING, pairs(o.options), reconnect)?)
}

/// A duration argument in milliseconds (`drain`'s deadline), checked as an option's is.
pub(crate) fn millis(name: &'static str, ms: f64) -> Result<std::time::Duration> {
    Ok(options::duration_arg(name, Given::Float(ms), SPELLING)?)
}
