//! Options objects (`new Runtime({...})`, `limits: {...}`) as weida-ffi's option table reads
//! them: the core's names in camelCase, durations in milliseconds (`idleTimeoutMs`); a bad one
//! throws ERR_WEIDA_INVALID_CONFIG naming it.

use napi::bindgen_prelude::{JsObjectValue, Object, Unknown};
use napi::ValueType;
use weida_ffi::config::{Given, Spelling};

/// How Node spells options: camelCase, durations in milliseconds.
pub(crate) const JS: Spelling = Spelling::CamelMillis;

/// A JS value for the option table; None for `undefined` (absent).
pub(crate) fn given(v: &Unknown<'_>) -> napi::Result<Option<Given>> {
    // SAFETY: each cast reads a value of the type `get_type` just reported.
    Ok(Some(match v.get_type()? {
        ValueType::Undefined => return Ok(None),
        ValueType::Null => Given::Null,
        ValueType::Number => Given::Float(unsafe { v.cast::<f64>()? }),
        ValueType::Boolean => Given::Bool(unsafe { v.cast::<bool>()? }),
        ValueType::String => Given::Text(unsafe { v.cast::<String>()? }),
        t => Given::Other(format!("{t}").to_lowercase()),
    }))
}

/// An options object as `(name, value)` pairs, but for the names in `skip` (the objects the
/// caller converts itself); `undefined` values are absent.
pub(crate) fn pairs(o: &Object<'_>, skip: &[&str]) -> napi::Result<Vec<(String, Given)>> {
    let mut out = Vec::new();
    for k in Object::keys(o)? {
        if skip.contains(&k.as_str()) {
            continue;
        }
        let v: Unknown<'_> = o.get_named_property_unchecked(&k)?;
        if let Some(g) = given(&v)? {
            out.push((k, g));
        }
    }
    Ok(out)
}

/// An endpoint's options object (`maxCollectedBody`, `endpointQueue`, `sendTimeoutMs`), checked
/// by weida-ffi's table: a bad one throws `InvalidConfig` naming it.
pub(crate) fn endpoint_options(
    env: &napi::Env,
    options: Option<Object<'_>>,
) -> napi::Result<weida::EndpointOptions> {
    let (given, reconnect) = match &options {
        Some(o) => {
            let reconnect = match o.get::<Object<'_>>("reconnect")? {
                Some(r) => Some(
                    weida_ffi::config::reconnect(JS, pairs(&r, &[])?)
                        .map_err(|e| crate::error::throw(env, e))?,
                ),
                None => None,
            };
            (pairs(o, &["reconnect"])?, reconnect)
        }
        None => (Vec::new(), None),
    };
    weida_ffi::config::endpoint(JS, given, reconnect).map_err(|e| crate::error::throw(env, e))
}
