//! Errors: every `weida::Error` becomes one JS error in [`to_js`], the one place the core's codes
//! are mapped (docs/BINDINGS.md, "Errors"). The object is an instance of the class the
//! TypeScript layer registered for its code (lib/errors.ts: `WeidaError` and one subclass per
//! code), with `code` (`ERR_WEIDA_<CODE>`), `definite`, and the fields the core error carries:
//! `cause` for a loss, `fingerprint` and `expected` for an untrusted peer, `path` for an unknown
//! endpoint.

use std::cell::RefCell;
use std::collections::HashMap;

use napi::bindgen_prelude::{Function, FunctionRef, JsObjectValue, Object, Unknown};
use napi::{Env, JsValue, Status};
use napi_derive::napi;
use weida::{Error as CoreError, ErrorCode, LossCause};

/// Why a binding call failed: the core said so, or the caller's AbortSignal fired.
#[derive(Debug)]
pub(crate) enum Fail {
    /// The core's error, mapped by [`to_js`].
    Core(CoreError),
    /// The call was aborted (an AbortSignal, or the object it worked on was cancelled).
    Aborted,
}

impl From<CoreError> for Fail {
    fn from(e: CoreError) -> Fail {
        Fail::Core(e)
    }
}

/// The `code` Node sees: `ERR_WEIDA_` and the core's stable name.
pub(crate) fn node_code(code: ErrorCode) -> String {
    format!("ERR_WEIDA_{}", code.as_str())
}

/// The `code` of the AbortError an aborted call rejects with (Node's own name for it).
const ABORT_CODE: &str = "ABORT_ERR";

fn loss_cause(c: &LossCause) -> &'static str {
    match c {
        LossCause::IdleTimeout => "idle_timeout",
        LossCause::PeerClosed => "peer_closed",
        LossCause::LocallyClosed => "locally_closed",
        LossCause::Reset => "reset",
        LossCause::TransportError(_) => "transport_error",
        _ => "transport_error",
    }
}

thread_local! {
    // Per JS thread (so per Node environment): the classes lib/errors.ts registered.
    static CLASSES: RefCell<HashMap<String, FunctionRef<String, ()>>> = RefCell::new(HashMap::new());
}

/// Registers the error classes of the TypeScript layer by `code` (`ERR_WEIDA_…`, and
/// `ABORT_ERR`). Each is constructed with the message; [`to_js`] sets the fields. The package
/// calls this once when it loads; without it errors are plain `Error`s with the same fields.
#[napi]
pub fn register_error_classes(
    #[napi(ts_arg_type = "Record<string, new (message: string) => Error>")] classes: Object,
) -> napi::Result<()> {
    let mut found = HashMap::new();
    for key in Object::keys(&classes)? {
        let f: Function<String, ()> = classes.get_named_property(&key)?;
        found.insert(key, f.create_ref()?);
    }
    CLASSES.with(|c| *c.borrow_mut() = found);
    Ok(())
}

/// The one mapping from a failure to the JS error it rejects or throws with.
pub(crate) fn to_js(env: &Env, failure: Fail) -> napi::Error {
    match build(env, failure) {
        Ok(obj) => napi::Error::from(obj.to_unknown()),
        Err(e) => e,
    }
}

/// Shorthand for a synchronous throw of a core error.
pub(crate) fn throw(env: &Env, e: CoreError) -> napi::Error {
    to_js(env, Fail::Core(e))
}

fn build<'env>(env: &'env Env, failure: Fail) -> napi::Result<Object<'env>> {
    let (code, message) = match &failure {
        Fail::Aborted => (
            ABORT_CODE.to_string(),
            "the operation was aborted".to_string(),
        ),
        Fail::Core(e) => (node_code(e.code()), e.to_string()),
    };
    let mut obj = instantiate(env, &code, message)?;
    obj.set_named_property("code", code.as_str())?;
    let Fail::Core(e) = failure else {
        obj.set_named_property("name", "AbortError")?;
        return Ok(obj);
    };
    obj.set_named_property("definite", e.is_definite_failure())?;
    match e {
        CoreError::ConnectionLost(c) | CoreError::Indeterminate(c) => {
            obj.set_named_property("cause", loss_cause(&c))?;
        }
        CoreError::Untrusted {
            fingerprint,
            expected,
        } => {
            obj.set_named_property("fingerprint", fingerprint.to_string())?;
            obj.set_named_property("expected", expected.map(|f| f.to_string()))?;
        }
        CoreError::UnknownEndpoint { path } => {
            obj.set_named_property("path", path)?;
        }
        _ => {}
    }
    Ok(obj)
}

fn instantiate<'env>(env: &'env Env, code: &str, message: String) -> napi::Result<Object<'env>> {
    let made = CLASSES.with(|c| -> napi::Result<Option<Unknown<'env>>> {
        match c.borrow().get(code) {
            Some(ctor) => Ok(Some(ctor.borrow_back(env)?.new_instance(message.clone())?)),
            None => Ok(None),
        }
    })?;
    match made {
        Some(u) => Ok(Object::from_raw(env.raw(), u.raw())),
        None => env.create_error(napi::Error::new(Status::GenericFailure, message)),
    }
}

/// The core error a replier's `fail(code, message)` answers with: the code named by its
/// `ERR_WEIDA_…` or bare name (`REJECTED`, ...), carried over the wire as the core maps it.
pub(crate) fn from_code(code: &str, message: &str) -> Option<CoreError> {
    let bare = code.strip_prefix("ERR_WEIDA_").unwrap_or(code);
    let code = ErrorCode::ALL.into_iter().find(|c| c.as_str() == bare)?;
    Some(CoreError::for_reply(code, message))
}
