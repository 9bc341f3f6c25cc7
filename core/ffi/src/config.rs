//! The options of `Limits` and `RuntimeConfig` as data: each one's canonical snake_case name,
//! its unit and its bounds, so every language parses and checks them here, and a bad one is
//! the same error everywhere: `InvalidConfig` naming the option as the caller spelled it
//! (python/tests/test_lifecycle.py and node/test/lifecycle.test.mjs
//! `a_bad_option_is_invalid_config_naming_it`). Python spells the names as they are, with
//! durations in seconds; Node in camelCase, with durations in milliseconds and the suffix `Ms`
//! (`idleTimeoutMs`). The core checks what only it knows (`Limits::validate`: a window of 0, a
//! UDP payload outside 1200..=65527), with the same error.

use std::time::Duration;

use weida::{Error, GiveUp, Limits, Ordering, OutboxFull, ReconnectPolicy, RuntimeConfig};

/// What an option's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A whole number of bytes.
    Bytes,
    /// A whole number of things (streams, messages, filters).
    Count,
    /// A duration: seconds in Python, milliseconds in Node.
    Duration,
    /// One name of a fixed set.
    Choice(&'static [&'static str]),
    /// True or false.
    Flag,
}

/// How a language spells option names and durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    /// `snake_case`, durations in seconds (Python).
    SnakeSeconds,
    /// `camelCase`, durations in milliseconds named `…Ms` (Node).
    CamelMillis,
}

/// A value a caller gave, as its language had it.
#[derive(Debug, Clone, PartialEq)]
pub enum Given {
    /// `None` / `null`: for an option that can be off (`keep_alive`, `send_timeout`), off;
    /// for any other, the default.
    Null,
    /// A whole number.
    Int(i128),
    /// A number with a fraction (every JS number).
    Float(f64),
    /// A text.
    Text(String),
    /// True or false.
    Bool(bool),
    /// Anything else: the name of its type, for the error.
    Other(String),
}

/// An option's value as it is set and read.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Bytes or a count.
    Whole(u64),
    /// A duration.
    Time(Duration),
    /// Off (`None`).
    Off,
    /// A name of its choice.
    Name(&'static str),
    /// A flag.
    Flag(bool),
}

/// One option of `T` (`Limits` or `RuntimeConfig`).
pub struct Opt<T> {
    /// The canonical name: the core's field name.
    pub name: &'static str,
    /// What its value is.
    pub unit: Unit,
    /// Whether it can be off (`Value::Off`).
    pub can_be_off: bool,
    /// The largest whole value (the field's type, and 2^53, which a JS number holds exactly).
    pub max: u64,
    get: fn(&T) -> Value,
    set: fn(&mut T, Value),
}

impl<T> Opt<T> {
    /// The name as `spelling` spells it.
    pub fn spelled(&self, spelling: Spelling) -> String {
        match spelling {
            Spelling::SnakeSeconds => self.name.to_string(),
            Spelling::CamelMillis => {
                let mut out = camel_case(self.name);
                if self.unit == Unit::Duration {
                    out.push_str("Ms");
                }
                out
            }
        }
    }

    /// The value of this option in `target`, as the language reads it.
    pub fn get(&self, target: &T) -> Value {
        (self.get)(target)
    }
}

/// `snake_case` as `camelCase`: every field name a binding hands to a language that
/// spells names so (Node's option names and error fields).
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A JS number holds every whole number up to this exactly; no bound comes near it.
const EXACT: u64 = 1 << 53;

macro_rules! whole {
    ($t:ty, $field:ident, $unit:expr, $ty:ty) => {
        Opt::<$t> {
            name: stringify!($field),
            unit: $unit,
            can_be_off: false,
            max: if (<$ty>::MAX as u64) < EXACT {
                <$ty>::MAX as u64
            } else {
                EXACT
            },
            get: |t| Value::Whole(t.$field as u64),
            set: |t, v| {
                if let Value::Whole(n) = v {
                    t.$field = n as $ty;
                }
            },
        }
    };
}

macro_rules! time {
    ($t:ty, $field:ident) => {
        Opt::<$t> {
            name: stringify!($field),
            unit: Unit::Duration,
            can_be_off: false,
            max: EXACT,
            get: |t| Value::Time(t.$field),
            set: |t, v| {
                if let Value::Time(d) = v {
                    t.$field = d;
                }
            },
        }
    };
}

macro_rules! time_or_off {
    ($t:ty, $field:ident) => {
        Opt::<$t> {
            name: stringify!($field),
            unit: Unit::Duration,
            can_be_off: true,
            max: EXACT,
            get: |t| t.$field.map_or(Value::Off, Value::Time),
            set: |t, v| match v {
                Value::Time(d) => t.$field = Some(d),
                Value::Off => t.$field = None,
                _ => {}
            },
        }
    };
}

/// Every field of `Limits`, in the core's order.
pub static LIMITS: [Opt<Limits>; 23] = [
    whole!(Limits, stream_receive_window, Unit::Bytes, u64),
    whole!(Limits, connection_receive_window, Unit::Bytes, u64),
    whole!(Limits, send_window, Unit::Bytes, u64),
    whole!(Limits, max_concurrent_uni_streams, Unit::Count, u64),
    whole!(Limits, max_concurrent_bidi_streams, Unit::Count, u64),
    whole!(Limits, max_local_streams, Unit::Count, u64),
    whole!(Limits, endpoint_queue, Unit::Count, usize),
    whole!(Limits, peer_share, Unit::Count, usize),
    whole!(Limits, max_header_size, Unit::Bytes, u64),
    whole!(Limits, max_collected_body, Unit::Bytes, u64),
    time!(Limits, idle_timeout),
    time_or_off!(Limits, keep_alive),
    time!(Limits, connect_timeout),
    time!(Limits, header_timeout),
    time!(Limits, body_idle_timeout),
    whole!(Limits, subscriber_buffer_bytes, Unit::Bytes, usize),
    whole!(Limits, max_reorder_hold, Unit::Count, usize),
    whole!(Limits, max_parked_reverse, Unit::Count, usize),
    whole!(Limits, max_filters, Unit::Count, usize),
    time!(Limits, fanout_wait),
    whole!(Limits, max_udp_payload, Unit::Bytes, u64),
    whole!(Limits, max_connections, Unit::Count, usize),
    whole!(Limits, max_local_peer_connections, Unit::Count, usize),
];

const ORDERINGS: &[&str] = &["none", "detect", "reassemble"];

/// The options of `RuntimeConfig` that are plain values (its identity, trust and limits are
/// objects the binding converts).
pub static RUNTIME: [Opt<RuntimeConfig>; 8] = [
    Opt {
        name: "present_identity",
        unit: Unit::Flag,
        can_be_off: false,
        max: 1,
        get: |c| Value::Flag(c.present_identity),
        set: |c, v| {
            if let Value::Flag(f) = v {
                c.present_identity = f;
            }
        },
    },
    time_or_off!(RuntimeConfig, send_timeout),
    whole!(RuntimeConfig, udp_buffer, Unit::Bytes, usize),
    Opt {
        name: "ordering",
        unit: Unit::Choice(ORDERINGS),
        can_be_off: false,
        max: 0,
        get: |c| {
            Value::Name(match c.guarantees.ordering {
                Ordering::Detect => "detect",
                Ordering::Reassemble => "reassemble",
                _ => "none",
            })
        },
        set: |c, v| {
            if let Value::Name(n) = v {
                c.guarantees.ordering = match n {
                    "detect" => Ordering::Detect,
                    "reassemble" => Ordering::Reassemble,
                    _ => Ordering::None,
                };
            }
        },
    },
    whole!(RuntimeConfig, lane_max_message, Unit::Bytes, usize),
    whole!(RuntimeConfig, outbox_messages, Unit::Count, usize),
    whole!(RuntimeConfig, outbox_bytes, Unit::Bytes, usize),
    Opt {
        name: "outbox_full",
        unit: Unit::Choice(OUTBOX_FULL),
        can_be_off: false,
        max: 0,
        get: |c| Value::Name(c.outbox_full.name()),
        set: |c, v| {
            if let Value::Name(n) = v {
                c.outbox_full = OutboxFull::from_name(n).unwrap_or_default();
            }
        },
    },
];

/// What a full outbox does (`weida::OutboxFull`), by name.
const OUTBOX_FULL: &[&str] = &["block", "drop", "reject"];

/// The options an endpoint takes when it is made, as they are given: each absent one its
/// runtime's (`weida::EndpointOptions`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointDraft {
    max_collected_body: Option<u64>,
    endpoint_queue: Option<u64>,
    send_timeout: Option<Option<Duration>>,
    outbox_messages: Option<u64>,
    outbox_bytes: Option<u64>,
    outbox_full: Option<OutboxFull>,
}

/// Every option of an endpoint (`weida::EndpointOptions`): the names of the runtime's options
/// it overrides. `send_timeout` given as None/null is unbounded (as the runtime's is).
pub static ENDPOINT: [Opt<EndpointDraft>; 6] = [
    Opt {
        name: "max_collected_body",
        unit: Unit::Bytes,
        can_be_off: false,
        max: EXACT,
        get: |d| d.max_collected_body.map_or(Value::Off, Value::Whole),
        set: |d, v| {
            if let Value::Whole(n) = v {
                d.max_collected_body = Some(n);
            }
        },
    },
    Opt {
        name: "endpoint_queue",
        unit: Unit::Count,
        can_be_off: false,
        max: EXACT,
        get: |d| d.endpoint_queue.map_or(Value::Off, Value::Whole),
        set: |d, v| {
            if let Value::Whole(n) = v {
                d.endpoint_queue = Some(n);
            }
        },
    },
    Opt {
        name: "send_timeout",
        unit: Unit::Duration,
        can_be_off: true,
        max: EXACT,
        get: |d| match d.send_timeout {
            Some(Some(t)) => Value::Time(t),
            _ => Value::Off,
        },
        set: |d, v| match v {
            Value::Time(t) => d.send_timeout = Some(Some(t)),
            Value::Off => d.send_timeout = Some(None),
            _ => {}
        },
    },
    Opt {
        name: "outbox_messages",
        unit: Unit::Count,
        can_be_off: false,
        max: EXACT,
        get: |d| d.outbox_messages.map_or(Value::Off, Value::Whole),
        set: |d, v| {
            if let Value::Whole(n) = v {
                d.outbox_messages = Some(n);
            }
        },
    },
    Opt {
        name: "outbox_bytes",
        unit: Unit::Bytes,
        can_be_off: false,
        max: EXACT,
        get: |d| d.outbox_bytes.map_or(Value::Off, Value::Whole),
        set: |d, v| {
            if let Value::Whole(n) = v {
                d.outbox_bytes = Some(n);
            }
        },
    },
    Opt {
        name: "outbox_full",
        unit: Unit::Choice(OUTBOX_FULL),
        can_be_off: false,
        max: 0,
        get: |d| d.outbox_full.map_or(Value::Off, |f| Value::Name(f.name())),
        set: |d, v| {
            if let Value::Name(n) = v {
                d.outbox_full = OutboxFull::from_name(n);
            }
        },
    },
];

/// An endpoint's options from those given (each absent one the runtime's), with its own
/// `reconnect` policy if given (an object the binding converts with [`reconnect`]); a bad one
/// is `InvalidConfig` naming it, as a runtime option's is.
pub fn endpoint(
    spelling: Spelling,
    given: impl IntoIterator<Item = (String, Given)>,
    reconnect: Option<ReconnectPolicy>,
) -> Result<weida::EndpointOptions, Error> {
    let mut d = EndpointDraft::default();
    apply(&ENDPOINT, &mut d, spelling, given)?;
    let mut o = weida::EndpointOptions::new();
    if let Some(p) = reconnect {
        o = o.reconnect(p);
    }
    if let Some(n) = d.max_collected_body {
        o = o.max_collected_body(n);
    }
    if let Some(n) = d.endpoint_queue {
        o = o.endpoint_queue(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(t) = d.send_timeout {
        o = o.send_timeout(t);
    }
    if let Some(n) = d.outbox_messages {
        o = o.outbox_messages(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(n) = d.outbox_bytes {
        o = o.outbox_bytes(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(f) = d.outbox_full {
        o = o.outbox_full(f);
    }
    Ok(o)
}

macro_rules! flag {
    ($t:ty, $name:literal, |$v:ident| $get:expr, |$w:ident, $f:ident| $set:expr) => {
        Opt::<$t> {
            name: $name,
            unit: Unit::Flag,
            can_be_off: false,
            max: 1,
            get: |$v| Value::Flag($get),
            set: |$w, v| {
                if let Value::Flag($f) = v {
                    $set;
                }
            },
        }
    };
}

/// Every option of a `ReconnectPolicy` (a binding's reconnect object): its fields, with the
/// stop causes as three flags and the give-up as two options that can be off (both off:
/// never give up; `give_up_after_attempts` 0 is `ReconnectPolicy::never()`).
pub static RECONNECT: [Opt<ReconnectPolicy>; 8] = [
    time!(ReconnectPolicy, initial),
    time!(ReconnectPolicy, max),
    flag!(ReconnectPolicy, "jitter", |p| p.jitter, |p, f| p.jitter = f),
    flag!(
        ReconnectPolicy,
        "stop_refused",
        |p| p.stop.refused,
        |p, f| p.stop.refused = f
    ),
    flag!(
        ReconnectPolicy,
        "stop_handshake_failed",
        |p| p.stop.handshake_failed,
        |p, f| p.stop.handshake_failed = f
    ),
    flag!(
        ReconnectPolicy,
        "stop_peer_closed",
        |p| p.stop.peer_closed,
        |p, f| p.stop.peer_closed = f
    ),
    Opt {
        name: "give_up_after_attempts",
        unit: Unit::Count,
        can_be_off: true,
        max: u32::MAX as u64,
        get: |p| match p.give_up {
            GiveUp::AfterAttempts(n) => Value::Whole(n.into()),
            _ => Value::Off,
        },
        set: |p, v| match v {
            Value::Whole(n) => p.give_up = GiveUp::AfterAttempts(n as u32),
            Value::Off if matches!(p.give_up, GiveUp::AfterAttempts(_)) => {
                p.give_up = GiveUp::Never
            }
            _ => {}
        },
    },
    Opt {
        name: "give_up_after",
        unit: Unit::Duration,
        can_be_off: true,
        max: EXACT,
        get: |p| match p.give_up {
            GiveUp::After(d) => Value::Time(d),
            _ => Value::Off,
        },
        set: |p, v| match v {
            Value::Time(d) => p.give_up = GiveUp::After(d),
            Value::Off if matches!(p.give_up, GiveUp::After(_)) => p.give_up = GiveUp::Never,
            _ => {}
        },
    },
];

/// A `ReconnectPolicy` from the options given, each absent one the default's; both give-ups
/// at once is `InvalidConfig`.
pub fn reconnect(
    spelling: Spelling,
    given: impl IntoIterator<Item = (String, Given)>,
) -> Result<ReconnectPolicy, Error> {
    let given: Vec<(String, Given)> = given.into_iter().collect();
    let set = |name: &str| {
        let spelled = RECONNECT
            .iter()
            .find(|o| o.name == name)
            .map(|o| o.spelled(spelling));
        given
            .iter()
            .any(|(n, g)| Some(n) == spelled.as_ref() && *g != Given::Null)
    };
    if set("give_up_after_attempts") && set("give_up_after") {
        return Err(Error::InvalidConfig(format!(
            "give one of {} and {}, not both",
            RECONNECT[6].spelled(spelling),
            RECONNECT[7].spelled(spelling)
        )));
    }
    let mut p = ReconnectPolicy::default();
    apply(&RECONNECT, &mut p, spelling, given)?;
    Ok(p)
}

fn unit_text(unit: Unit, spelling: Spelling) -> &'static str {
    match (unit, spelling) {
        (Unit::Bytes, _) => "a whole number of bytes",
        (Unit::Count, _) => "a whole number",
        (Unit::Duration, Spelling::SnakeSeconds) => "a number of seconds",
        (Unit::Duration, Spelling::CamelMillis) => "a number of milliseconds",
        (Unit::Choice(_), _) => "one of",
        (Unit::Flag, _) => "true or false",
    }
}

/// Checks `given` for `opt`: the value to set, or None to keep the default.
fn check<T>(opt: &Opt<T>, given: Given, spelling: Spelling) -> Result<Option<Value>, Error> {
    // The name is spelled only for an error: a call's argument is checked on every call.
    let bad = |shown: &str| {
        let name = opt.spelled(spelling);
        let what = match opt.unit {
            Unit::Choice(names) => format!("one of {names:?}"),
            Unit::Bytes | Unit::Count => {
                format!("{} from 0 to {}", unit_text(opt.unit, spelling), opt.max)
            }
            u => unit_text(u, spelling).to_string(),
        };
        Error::InvalidConfig(format!("{name} must be {what}, not {shown}"))
    };
    let number = |g: &Given| match g {
        Given::Int(i) => Some(*i as f64),
        Given::Float(f) => Some(*f),
        _ => None,
    };
    match (opt.unit, given) {
        (_, Given::Null) if opt.can_be_off => Ok(Some(Value::Off)),
        (_, Given::Null) => Ok(None),
        (Unit::Flag, Given::Bool(b)) => Ok(Some(Value::Flag(b))),
        (Unit::Choice(names), Given::Text(t)) => names
            .iter()
            .find(|n| **n == t)
            .map(|n| Some(Value::Name(n)))
            .ok_or_else(|| bad(&format!("{t:?}"))),
        (Unit::Bytes | Unit::Count, Given::Int(i)) => match u64::try_from(i) {
            Ok(n) if n <= opt.max => Ok(Some(Value::Whole(n))),
            _ => Err(bad(&i.to_string())),
        },
        (Unit::Bytes | Unit::Count, Given::Float(f)) => {
            if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= opt.max as f64 {
                Ok(Some(Value::Whole(f as u64)))
            } else {
                Err(bad(&f.to_string()))
            }
        }
        (Unit::Duration, g @ (Given::Int(_) | Given::Float(_))) => {
            let v = number(&g).unwrap_or(f64::NAN);
            let secs = match spelling {
                Spelling::SnakeSeconds => v,
                Spelling::CamelMillis => v / 1000.0,
            };
            if !(0.0..=EXACT as f64).contains(&v) {
                return Err(bad(&v.to_string()));
            }
            Duration::try_from_secs_f64(secs)
                .map(|d| Some(Value::Time(d)))
                .map_err(|_| bad(&v.to_string()))
        }
        (_, Given::Bool(b)) => Err(bad(&b.to_string())),
        (_, Given::Text(t)) => Err(bad(&format!("{t:?}"))),
        (_, Given::Int(i)) => Err(bad(&i.to_string())),
        (_, Given::Float(f)) => Err(bad(&f.to_string())),
        (_, Given::Other(ty)) => Err(bad(&format!("a {ty}"))),
    }
}

/// Sets the options `given` names (as `spelling` spells them) on `target`, in the table's
/// order, checking each; a name that is no option is `InvalidConfig` too.
pub fn apply<T>(
    table: &[Opt<T>],
    target: &mut T,
    spelling: Spelling,
    given: impl IntoIterator<Item = (String, Given)>,
) -> Result<(), Error> {
    let mut found: Vec<(usize, Given)> = Vec::new();
    for (name, g) in given {
        let i = table
            .iter()
            .position(|o| o.spelled(spelling) == name)
            .ok_or_else(|| Error::InvalidConfig(format!("there is no option {name:?}")))?;
        found.push((i, g));
    }
    found.sort_by_key(|(i, _)| *i);
    for (i, g) in found {
        let opt = &table[i];
        if let Some(v) = check(opt, g, spelling)? {
            (opt.set)(target, v);
        }
    }
    Ok(())
}

/// `Limits` from the options given (each absent one the core's default), checked by the core
/// too (`Limits::validate`).
pub fn limits(
    spelling: Spelling,
    given: impl IntoIterator<Item = (String, Given)>,
) -> Result<Limits, Error> {
    let mut l = Limits::default();
    apply(&LIMITS, &mut l, spelling, given)?;
    l.validate()?;
    Ok(l)
}

/// The value of the option `name` (as `spelling` spells it) in `target`.
pub fn get<T>(table: &[Opt<T>], target: &T, spelling: Spelling, name: &str) -> Option<Value> {
    table
        .iter()
        .find(|o| o.spelled(spelling) == name)
        .map(|o| o.get(target))
}

/// A duration as `spelling` gives it: seconds or milliseconds.
pub fn duration_out(d: Duration, spelling: Spelling) -> f64 {
    match spelling {
        Spelling::SnakeSeconds => d.as_secs_f64(),
        Spelling::CamelMillis => d.as_secs_f64() * 1000.0,
    }
}

/// A value a call takes as an argument, checked as an option's is (None stands for absent).
fn arg(name: &'static str, unit: Unit, given: Given, spelling: Spelling) -> Result<Value, Error> {
    let opt = Opt::<()> {
        name,
        unit,
        can_be_off: false,
        max: EXACT,
        get: |_| Value::Off,
        set: |_, _| {},
    };
    check(&opt, given, spelling)?.ok_or_else(|| {
        Error::InvalidConfig(format!(
            "{} must be {}",
            opt.spelled(spelling),
            unit_text(unit, spelling)
        ))
    })
}

/// A duration a call takes as an argument (`drain`'s deadline).
pub fn duration_arg(
    name: &'static str,
    given: Given,
    spelling: Spelling,
) -> Result<Duration, Error> {
    match arg(name, Unit::Duration, given, spelling)? {
        Value::Time(d) => Ok(d),
        v => Err(Error::InvalidConfig(format!(
            "{name}: {v:?} is no duration"
        ))),
    }
}

/// A count a call takes as an argument (`recv_many`'s `max`, `collect`'s).
pub fn count_arg(name: &'static str, given: Given, spelling: Spelling) -> Result<u64, Error> {
    match arg(name, Unit::Count, given, spelling)? {
        Value::Whole(n) => Ok(n),
        v => Err(Error::InvalidConfig(format!("{name}: {v:?} is no count"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(pairs: &[(&str, Given)]) -> Vec<(String, Given)> {
        pairs
            .iter()
            .map(|(n, g)| (n.to_string(), g.clone()))
            .collect()
    }

    #[test]
    fn the_table_names_every_limit_once_and_reads_back_the_defaults() {
        let d = Limits::default();
        let text = format!("{d:?}");
        for o in &LIMITS {
            assert!(text.contains(&format!("{}:", o.name)), "{}", o.name);
        }
        // Limits's Debug lists every field; the table has one option per field.
        assert_eq!(text.matches(": ").count(), LIMITS.len());
        assert_eq!(
            get(&LIMITS, &d, Spelling::SnakeSeconds, "idle_timeout"),
            Some(Value::Time(Duration::from_secs(30)))
        );
        assert_eq!(
            LIMITS[10].spelled(Spelling::CamelMillis),
            "idleTimeoutMs",
            "durations in ms"
        );
        assert_eq!(
            LIMITS[0].spelled(Spelling::CamelMillis),
            "streamReceiveWindow"
        );
    }

    #[test]
    fn endpoint_options_are_checked_and_spelled_as_the_runtimes() {
        let py = endpoint(
            Spelling::SnakeSeconds,
            given(&[
                ("max_collected_body", Given::Int(64)),
                ("send_timeout", Given::Float(1.5)),
            ]),
            None,
        )
        .unwrap();
        let js = endpoint(
            Spelling::CamelMillis,
            given(&[
                ("maxCollectedBody", Given::Float(64.0)),
                ("sendTimeoutMs", Given::Float(1500.0)),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(py, js);
        assert_eq!(
            py,
            weida::EndpointOptions::new()
                .max_collected_body(64)
                .send_timeout(Some(Duration::from_millis(1500)))
        );
        let off = endpoint(
            Spelling::SnakeSeconds,
            given(&[("send_timeout", Given::Null)]),
            None,
        );
        assert_eq!(
            off.unwrap(),
            weida::EndpointOptions::new().send_timeout(None)
        );
        let e = endpoint(
            Spelling::CamelMillis,
            given(&[("idleTimeoutMs", Given::Int(1))]),
            None,
        );
        assert!(e.unwrap_err().to_string().contains("idleTimeoutMs"));
        let e = endpoint(
            Spelling::SnakeSeconds,
            given(&[("endpoint_queue", Given::Int(-1))]),
            None,
        );
        assert!(e.unwrap_err().to_string().contains("endpoint_queue"));
    }

    #[test]
    fn a_reconnect_policy_is_read_as_the_runtimes_options_are() {
        let py = reconnect(
            Spelling::SnakeSeconds,
            given(&[
                ("initial", Given::Float(0.05)),
                ("jitter", Given::Bool(false)),
                ("stop_refused", Given::Bool(true)),
                ("give_up_after", Given::Int(60)),
            ]),
        )
        .unwrap();
        let js = reconnect(
            Spelling::CamelMillis,
            given(&[
                ("initialMs", Given::Int(50)),
                ("jitter", Given::Bool(false)),
                ("stopRefused", Given::Bool(true)),
                ("giveUpAfterMs", Given::Int(60_000)),
            ]),
        )
        .unwrap();
        assert_eq!(py, js);
        assert_eq!(py.give_up, GiveUp::After(Duration::from_secs(60)));
        assert!(py.stop.refused && !py.jitter);
        let never = reconnect(
            Spelling::SnakeSeconds,
            given(&[("give_up_after_attempts", Given::Int(0))]),
        );
        assert_eq!(never.unwrap(), ReconnectPolicy::never());
        let both = reconnect(
            Spelling::CamelMillis,
            given(&[
                ("giveUpAfterAttempts", Given::Int(3)),
                ("giveUpAfterMs", Given::Int(3)),
            ]),
        );
        assert!(both
            .unwrap_err()
            .to_string()
            .contains("giveUpAfterAttempts"));
    }

    #[test]
    fn both_spellings_set_the_same_limits() {
        let py = limits(
            Spelling::SnakeSeconds,
            given(&[
                ("endpoint_queue", Given::Int(8)),
                ("idle_timeout", Given::Float(1.5)),
                ("keep_alive", Given::Null),
            ]),
        )
        .unwrap();
        let js = limits(
            Spelling::CamelMillis,
            given(&[
                ("endpointQueue", Given::Float(8.0)),
                ("idleTimeoutMs", Given::Float(1500.0)),
                ("keepAliveMs", Given::Null),
            ]),
        )
        .unwrap();
        assert_eq!(py, js);
        assert_eq!(py.endpoint_queue, 8);
        assert_eq!(py.keep_alive, None, "null turns keep-alives off");
        assert_eq!(py.idle_timeout, Duration::from_millis(1500));
    }

    #[test]
    fn a_bad_option_is_invalid_config_naming_it() {
        let cases: [(Spelling, &str, Given, &str); 8] = [
            (
                Spelling::SnakeSeconds,
                "endpoint_queue",
                Given::Int(-1),
                "endpoint_queue",
            ),
            (
                Spelling::CamelMillis,
                "endpointQueue",
                Given::Float(1.5),
                "endpointQueue",
            ),
            (
                Spelling::SnakeSeconds,
                "idle_timeout",
                Given::Float(-1.0),
                "idle_timeout",
            ),
            (
                Spelling::CamelMillis,
                "idleTimeoutMs",
                Given::Float(f64::NAN),
                "idleTimeoutMs",
            ),
            (
                Spelling::SnakeSeconds,
                "max_filters",
                Given::Bool(true),
                "max_filters",
            ),
            (
                Spelling::SnakeSeconds,
                "send_window",
                Given::Text("1".into()),
                "send_window",
            ),
            (
                Spelling::SnakeSeconds,
                "nonsense",
                Given::Int(1),
                "nonsense",
            ),
            // The core's own check, the same error.
            (
                Spelling::SnakeSeconds,
                "endpoint_queue",
                Given::Int(0),
                "endpoint_queue",
            ),
        ];
        for (spelling, name, g, named) in cases {
            match limits(spelling, given(&[(name, g.clone())])) {
                Err(Error::InvalidConfig(m)) => assert!(m.contains(named), "{m}"),
                other => panic!("{name} {g:?}: {other:?}"),
            }
        }
        let mut c = RuntimeConfig::default();
        let e = apply(
            &RUNTIME,
            &mut c,
            Spelling::CamelMillis,
            given(&[("ordering", Given::Text("total".into()))]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("ordering"), "{e}");
        apply(
            &RUNTIME,
            &mut c,
            Spelling::CamelMillis,
            given(&[
                ("ordering", Given::Text("detect".into())),
                ("udpBuffer", Given::Float(65536.0)),
                ("sendTimeoutMs", Given::Float(250.0)),
            ]),
        )
        .unwrap();
        assert_eq!(c.guarantees.ordering, Ordering::Detect);
        assert_eq!(c.udp_buffer, 65536);
        assert_eq!(c.send_timeout, Some(Duration::from_millis(250)));
    }
}
