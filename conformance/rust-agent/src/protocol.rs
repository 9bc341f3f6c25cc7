//! The control protocol's vocabulary (conformance/README.md): responses, events, errors,
//! metadata and peers as JSON, and the argument accessors every op uses.

use serde_json::{json, Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use weida::{Error, IncomingMeta, Metadata, PeerIdentity};

/// Why an op failed: weida's error, or a request this agent cannot carry out (never expected by
/// a scenario, so always a failed cell).
#[derive(Debug)]
pub(crate) enum Failure {
    Weida(Error),
    BadRequest(String),
}

impl Failure {
    pub(crate) fn bad(why: impl Into<String>) -> Self {
        Self::BadRequest(why.into())
    }

    pub(crate) fn to_json(&self) -> Value {
        match self {
            Self::Weida(e) => error_json(e),
            Self::BadRequest(why) => json!({"code": "AGENT_BAD_REQUEST", "message": why}),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Weida(e)
    }
}

/// `{"code", "message", "definite", ...}` with the fields BINDINGS.md lists for the code.
pub(crate) fn error_json(e: &Error) -> Value {
    let mut m = Map::new();
    m.insert("code".into(), json!(e.code().as_str()));
    m.insert("message".into(), json!(e.to_string()));
    m.insert("definite".into(), json!(e.is_definite_failure()));
    if let Some(c) = e.loss_cause() {
        m.insert("loss_cause".into(), json!(c.name()));
    }
    match e {
        Error::UnknownEndpoint { path } => {
            m.insert("path".into(), json!(path));
        }
        Error::Untrusted {
            fingerprint,
            expected,
        } => {
            m.insert("fingerprint".into(), json!(fingerprint.to_string()));
            m.insert(
                "expected".into(),
                expected.map_or(Value::Null, |f| json!(f.to_string())),
            );
        }
        _ => {}
    }
    Value::Object(m)
}

pub(crate) fn peer_json(p: &Option<PeerIdentity>) -> Value {
    match p {
        None => Value::Null,
        Some(PeerIdentity::Key(fp)) => json!({"kind": "key", "fingerprint": fp.to_string()}),
        Some(PeerIdentity::Local { uid, gid, pid }) => {
            json!({"kind": "local", "uid": uid, "gid": gid, "pid": pid})
        }
        Some(other) => json!({"kind": "other", "text": other.to_string()}),
    }
}

/// Metadata out: text values as strings, others as `{"hex": ...}`; the last of repeated keys.
pub(crate) fn metadata_json(m: &Metadata) -> Value {
    let mut out = Map::new();
    for (k, v) in m.iter() {
        let v = match std::str::from_utf8(v) {
            Ok(t) => json!(t),
            Err(_) => json!({"hex": crate::body::hex(v)}),
        };
        out.insert(k.to_string(), v);
    }
    Value::Object(out)
}

/// Metadata in: `{"key": "text value", ...}`.
pub(crate) fn metadata_arg(args: &Value) -> Result<Metadata, Failure> {
    let mut m = Metadata::new();
    match args.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            for (k, v) in o {
                let v = v
                    .as_str()
                    .ok_or_else(|| Failure::bad("metadata values are strings"))?;
                m.insert(k.clone(), v.as_bytes().to_vec());
            }
        }
        Some(_) => return Err(Failure::bad("metadata is an object")),
    }
    Ok(m)
}

/// The fields of an event about an incoming stream.
pub(crate) fn meta_fields(meta: &IncomingMeta) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("path".into(), json!(&*meta.path));
    m.insert("metadata".into(), metadata_json(&meta.metadata));
    m.insert("peer".into(), peer_json(&meta.peer));
    m
}

pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, Failure> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::bad(format!("missing string argument {key:?}")))
}

pub(crate) fn u64_arg(args: &Value, key: &str) -> Result<Option<u64>, Failure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| Failure::bad(format!("argument {key:?} is a non-negative integer"))),
    }
}

pub(crate) fn bool_arg(args: &Value, key: &str, default: bool) -> Result<bool, Failure> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(Failure::bad(format!("argument {key:?} is a boolean"))),
    }
}

/// Where responses and events go: one line each, written by one task so lines never interleave.
#[derive(Clone)]
pub(crate) struct Out(pub(crate) UnboundedSender<String>);

impl Out {
    pub(crate) fn line(&self, v: Value) {
        let _ = self.0.send(v.to_string());
    }

    /// An event about the endpoint `handle`: `{"event": name, "handle": handle, ...fields}`.
    pub(crate) fn event(&self, name: &str, handle: &str, fields: Map<String, Value>) {
        let mut m = Map::new();
        m.insert("event".into(), json!(name));
        m.insert("handle".into(), json!(handle));
        m.extend(fields);
        self.line(Value::Object(m));
    }

    pub(crate) fn event_error(&self, name: &str, handle: &str, e: &Error) {
        let mut m = Map::new();
        m.insert("error".into(), error_json(e));
        self.event(name, handle, m);
    }
}
