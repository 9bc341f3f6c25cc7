//! Errors: every failure becomes one JS error in [`to_js`], the one place the core's codes are
//! mapped (docs/BINDINGS.md, "Errors"). The object is an instance of the class the TypeScript
//! layer registered for its code (lib/errors.ts: `WeidaError` and one subclass per code), with
//! `code` (`ERR_WEIDA_<CODE>`), `definite`, and every field the failure carries (weida-ffi's
//! `Fail::fields`) in camelCase: `lossCause`, `fingerprint`, `expected`, `path`, `limit`,
//! `detail`, `part`, `reason`, `what`, `text`, `errno`, `sent`. No match on the error's variant
//! here.

use std::cell::RefCell;
use std::collections::HashMap;

use napi::bindgen_prelude::{Function, FunctionRef, JsObjectValue, Null, Object, Unknown};
use napi::{Env, JsValue, Status};
use napi_derive::napi;
use weida::{Error as CoreError, FieldValue};
use weida_ffi::config::camel_case;
use weida_ffi::Fail;

/// The `code` of the AbortError an aborted call rejects with (Node's own name for it).
const ABORT_CODE: &str = "ABORT_ERR";

/// The `code` a failure carries: `ERR_WEIDA_` and the core's code, `ABORT_ERR` for an aborted
/// call, `ERR_WEIDA_BUSY` or `ERR_WEIDA_PANIC` for the binding's own.
fn code(f: &Fail) -> String {
    match f {
        Fail::Aborted => ABORT_CODE.to_string(),
        f => format!("ERR_WEIDA_{}", f.kind().to_ascii_uppercase()),
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
    #[napi(ts_arg_type = "Record<string, new (message: string) => Error>")] classes: Object<'_>,
) -> napi::Result<()> {
    let mut found = HashMap::new();
    for key in Object::keys(&classes)? {
        let f: Function<'_, String, ()> = classes.get_named_property(&key)?;
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

/// The JS error a failure is, as a value (a survey's answer that is an error).
pub(crate) fn value(env: &Env, failure: Fail) -> napi::Result<crate::stream::Raw> {
    Ok(crate::stream::Raw(build(env, failure)?.raw()))
}

/// Shorthand for a synchronous throw of a core error.
pub(crate) fn throw(env: &Env, e: CoreError) -> napi::Error {
    to_js(env, Fail::Core(e))
}

fn build<'env>(env: &'env Env, failure: Fail) -> napi::Result<Object<'env>> {
    let code = code(&failure);
    let mut obj = instantiate(env, &code, failure.message())?;
    obj.set_named_property("code", code.as_str())?;
    if matches!(failure, Fail::Aborted) {
        obj.set_named_property("name", "AbortError")?;
        return Ok(obj);
    }
    obj.set_named_property("definite", failure.definite())?;
    for (name, value) in failure.fields() {
        let name = camel_case(name);
        match value {
            FieldValue::Text(t) => obj.set_named_property(&name, t)?,
            FieldValue::Int(n) => obj.set_named_property(&name, n as f64)?,
            _ => obj.set_named_property(&name, Null)?,
        }
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
