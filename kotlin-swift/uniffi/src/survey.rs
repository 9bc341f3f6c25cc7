//! `Surveyor` and `SurveyRun` (the core's `patterns/survey.rs`); a respondent is a `Replier`
//! (`Listener.respondent`).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use weida_ffi::io::on_io;
use weida_ffi::patterns::{connect, Endpoint};
use weida_ffi::{Call, Fail};

use crate::blob::Blob;
use crate::call::{run, Cancellation};
use crate::config::millis;
use crate::error::Result;
use crate::events::PeerEvents;
use crate::patterns::{message, meta_in, Message};

/// Asks every connected respondent the same question.
#[derive(uniffi::Object)]
pub struct Surveyor {
    inner: Endpoint<weida::Surveyor>,
}

impl Surveyor {
    pub(crate) fn new(s: weida::Surveyor) -> Arc<Self> {
        Arc::new(Self {
            inner: Endpoint::new(s),
        })
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Surveyor {
    #[uniffi::method(default(cancel = None))]
    pub async fn connect(
        &self,
        address: String,
        wait: bool,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let s = self.inner.get()?;
        Ok(run(Call::new(connect(s, address, wait)), cancel).await?)
    }

    pub fn disconnect(&self, address: String) -> Result<bool> {
        Ok(on_io(|| {
            self.inner.get()?.disconnect(&address).map_err(Fail::from)
        })?)
    }

    /// Live connections: the respondents the next survey asks.
    pub fn peer_count(&self) -> Result<u32> {
        Ok(self.inner.get()?.peer_count() as u32)
    }

    pub fn events(&self) -> Result<Arc<PeerEvents>> {
        Ok(PeerEvents::new(on_io(|| self.inner.get())?.events()))
    }

    /// Asks every live respondent `body`; returns the run of their answers once each was asked
    /// or `deadline_ms` passed. No respondent is an empty run.
    #[uniffi::method(default(cancel = None))]
    pub async fn survey(
        &self,
        body: Blob,
        deadline_ms: f64,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<SurveyRun>> {
        let s = self.inner.get()?;
        let deadline = millis("deadline", deadline_ms)?;
        let meta = meta_in(meta);
        let c = Call::new(async move {
            Ok::<_, Fail>(s.survey_with(meta, Bytes::from(body), deadline).await?)
        });
        let r = run(c, cancel).await?;
        Ok(Arc::new(SurveyRun { run: Arc::new(r) }))
    }

    pub fn close_endpoint(&self) {
        self.inner.close();
    }
}

/// A survey's answers until its deadline; dropped, it ends the exchanges still open.
#[derive(uniffi::Object)]
pub struct SurveyRun {
    run: Arc<weida::SurveyRun>,
}

#[uniffi::export(async_runtime = "tokio")]
impl SurveyRun {
    /// The next answer; null once every respondent answered or the deadline passed. A
    /// respondent that refused or failed is thrown here as its error, and the next call goes on
    /// with the others.
    #[uniffi::method(default(cancel = None))]
    pub async fn next(&self, cancel: Option<Arc<Cancellation>>) -> Result<Option<Message>> {
        let r = Arc::clone(&self.run);
        let a = run(
            Call::new(async move { Ok::<_, Fail>(r.next().await) }),
            cancel,
        )
        .await?;
        match a {
            None => Ok(None),
            Some(Ok(m)) => Ok(Some(message(m))),
            Some(Err(e)) => Err(e.into()),
        }
    }

    /// How many respondents were asked.
    pub fn respondents(&self) -> u32 {
        self.run.respondents() as u32
    }

    /// Answers that arrived after the deadline: counted, not delivered.
    pub fn late(&self) -> u64 {
        self.run.late()
    }

    /// Returns once every asked respondent's exchange has ended (answered, failed, or late and
    /// counted).
    #[uniffi::method(default(cancel = None))]
    pub async fn settled(&self, cancel: Option<Arc<Cancellation>>) -> Result<()> {
        let r = Arc::clone(&self.run);
        run(
            Call::new(async move {
                r.settled().await;
                Ok::<_, Fail>(())
            }),
            cancel,
        )
        .await?;
        Ok(())
    }

    /// The deadline has passed.
    pub fn expired(&self) -> bool {
        self.run.expired()
    }
}
