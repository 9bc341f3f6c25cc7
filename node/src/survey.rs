//! `Surveyor` and `SurveyRun` (the core's `patterns/survey.rs`); a respondent is a `Replier`
//! (`Listener.respondent`).

use std::sync::Arc;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use weida_ffi::config::{duration_arg, Given};
use weida_ffi::io::on_io;
use weida_ffi::patterns::Endpoint;
use weida_ffi::{Call, Fail};

use crate::config::JS;
use crate::error;
use crate::events::PeerEvents;
use crate::runtime::{promise, Cancel};
use crate::stream::{message_out, metadata_in, BodyIn};

/// Asks every connected respondent the same question.
#[napi]
pub struct Surveyor {
    inner: Endpoint<weida::Surveyor>,
}

impl Surveyor {
    pub(crate) fn new(s: weida::Surveyor) -> Self {
        Self {
            inner: Endpoint::new(s),
        }
    }
}

#[napi]
impl Surveyor {
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(
        &self,
        env: &'env Env,
        address: String,
        wait: bool,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let s = self.inner.get();
        promise(
            env,
            cancel,
            Call::new(async move { weida_ffi::patterns::connect(s?, address, wait).await }),
            |_, ()| Ok(()),
        )
    }

    #[napi]
    pub fn disconnect(&self, env: Env, address: String) -> napi::Result<bool> {
        let s = self.inner.get().map_err(|f| error::to_js(&env, f))?;
        on_io(|| s.disconnect(&address)).map_err(|e| error::throw(&env, e))
    }

    #[napi(getter)]
    pub fn peer_count(&self) -> u32 {
        self.inner
            .get()
            .map_or(0, |s| s.peer_count().try_into().unwrap_or(u32::MAX))
    }

    #[napi]
    pub fn events(&self, env: Env) -> napi::Result<PeerEvents> {
        let s = self.inner.get().map_err(|f| error::to_js(&env, f))?;
        Ok(PeerEvents::new(s.events()))
    }

    /// Asks every live respondent `body`; resolves with the run once each was asked or
    /// `deadlineMs` passed.
    #[napi(ts_return_type = "Promise<SurveyRun>")]
    pub fn survey<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string | Uint8Array")] body: BodyIn,
        deadline_ms: f64,
        #[napi(ts_arg_type = "Record<string, string | Uint8Array> | undefined | null")]
        meta: Option<Object<'_>>,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let s = self.inner.get();
        let meta = metadata_in(meta)?;
        let deadline = duration_arg("deadline", Given::Float(deadline_ms), JS);
        promise(
            env,
            cancel,
            Call::new(async move {
                let run = s?.survey_with(meta, body.0, deadline?).await?;
                Ok::<_, Fail>(run)
            }),
            |_, run| Ok(SurveyRun { run: Arc::new(run) }),
        )
    }

    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }
}

/// A survey's answers until its deadline.
#[napi]
pub struct SurveyRun {
    run: Arc<weida::SurveyRun>,
}

#[napi]
impl SurveyRun {
    /// The next answer: a `Message`, the error of a respondent that refused or failed (resolved
    /// with, not rejected), or null once every respondent answered or the deadline passed.
    #[napi(ts_return_type = "Promise<Message | Error | null>")]
    pub fn next<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let run = Arc::clone(&self.run);
        promise(
            env,
            cancel,
            Call::new(async move { Ok::<_, Fail>(run.next().await) }),
            |env, a| match a {
                None => Ok(None),
                Some(Ok(m)) => message_out(env, m).map(Some),
                Some(Err(e)) => error::value(env, Fail::Core(e)).map(Some),
            },
        )
    }

    #[napi(getter)]
    pub fn respondents(&self) -> u32 {
        self.run.respondents().try_into().unwrap_or(u32::MAX)
    }

    #[napi(getter)]
    pub fn late(&self) -> f64 {
        self.run.late() as f64
    }

    /// Resolves once every asked respondent's exchange has ended (answered, failed, or late and
    /// counted).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn settled<'env>(
        &self,
        env: &'env Env,
        cancel: Option<&Cancel>,
    ) -> napi::Result<Object<'env>> {
        let run = Arc::clone(&self.run);
        promise(
            env,
            cancel,
            Call::new(async move {
                run.settled().await;
                Ok::<_, Fail>(())
            }),
            |_, ()| Ok(()),
        )
    }

    #[napi(getter)]
    pub fn expired(&self) -> bool {
        self.run.expired()
    }
}
