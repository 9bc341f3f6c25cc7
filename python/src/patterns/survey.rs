//! `Surveyor` and `SurveyRun` (the core's `patterns/survey.rs`): a respondent is a `Replier`
//! (`Listener.respondent`).

use std::sync::Arc;

use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;
use weida_ffi::config;
use weida_ffi::patterns::Endpoint;
use weida_ffi::{Call, Fail};

use super::{get, none, this};
use crate::aio::call;
use crate::config::{given, PY};
use crate::error;
use crate::events::PeerEvents;
use crate::stream::{Body, MessageOut, MetaIn};

/// Asks every connected respondent the same question; `await surveyor.survey(body, seconds)`
/// returns a `SurveyRun` of their answers until that deadline.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Surveyor {
    s: Endpoint<weida::Surveyor>,
}

impl Surveyor {
    pub(crate) fn new(s: weida::Surveyor) -> Self {
        Self {
            s: Endpoint::new(s),
        }
    }
}

#[pymethods]
impl Surveyor {
    /// Dials `address` (with its path) and adds it to the respondents asked; with
    /// `wait=False` records it at once and dials in the background.
    #[pyo3(signature = (address, *, wait = true))]
    fn connect<'py>(
        &self,
        py: Python<'py>,
        address: String,
        wait: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = get(py, &self.s)?;
        call(
            py,
            Call::new(weida_ffi::patterns::connect(s, address, wait)),
        )
    }

    /// What happens to this endpoint's addresses from now on.
    fn events(&self, py: Python<'_>) -> PyResult<PeerEvents> {
        Ok(PeerEvents::new(get(py, &self.s)?.events()))
    }

    /// Removes `address`; True if it was connected.
    fn disconnect(&self, py: Python<'_>, address: &str) -> PyResult<bool> {
        weida_ffi::io::on_io(|| {
            get(py, &self.s)?
                .disconnect(address)
                .map_err(|e| error::core(py, e))
        })
    }

    /// Live connections: the respondents the next survey asks.
    #[getter]
    fn peer_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(get(py, &self.s)?.peer_count())
    }

    /// Asks every live respondent `body` and returns the `SurveyRun` of their answers once
    /// each was asked, or `deadline` (seconds) passed. No respondent is an empty run.
    #[pyo3(signature = (body, deadline, meta=None))]
    fn survey<'py>(
        &self,
        py: Python<'py>,
        body: Body,
        deadline: &Bound<'py, PyAny>,
        meta: Option<MetaIn>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let d = config::duration_arg("deadline", given(deadline), PY)
            .map_err(|e| error::core(py, e))?;
        let s = get(py, &self.s)?;
        let meta = meta.map(|m| m.0).unwrap_or_default();
        call(
            py,
            Call::new(async move {
                let run = s.survey_with(meta, body.0, d).await?;
                Ok::<_, Fail>(SurveyRun { run: Arc::new(run) })
            }),
        )
    }

    /// Forgets this endpoint's connections; later calls raise `Closed`.
    fn close(&self) {
        self.s.close()
    }

    fn __aenter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        this(slf)
    }

    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _t: Option<Bound<'py, PyAny>>,
        _e: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.close();
        none(py)
    }
}

/// The answers of one survey until its deadline: `async for answer in run`, each a `Message`
/// or the `WeidaError` of a respondent that refused or failed (returned, not raised: one
/// respondent's failure ends nothing). Dropping the run ends the exchanges still open.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct SurveyRun {
    run: Arc<weida::SurveyRun>,
}

/// One answer, or the end of the run.
struct Answer(Option<weida::Result<weida::Message>>, bool);

impl<'py> IntoPyObject<'py> for Answer {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.0 {
            Some(Ok(m)) => Ok(MessageOut(m).into_pyobject(py)?.into_any()),
            Some(Err(e)) => Ok(error::core(py, e).into_value(py).into_bound(py).into_any()),
            None if self.1 => Err(PyStopAsyncIteration::new_err(())),
            None => Ok(py.None().into_bound(py)),
        }
    }
}

impl SurveyRun {
    fn answer_or_end<'py>(&self, py: Python<'py>, iterating: bool) -> PyResult<Bound<'py, PyAny>> {
        let run = Arc::clone(&self.run);
        call(
            py,
            Call::new(async move { Ok::<_, Fail>(Answer(run.next().await, iterating)) }),
        )
    }
}

#[pymethods]
impl SurveyRun {
    /// The next answer (a `Message`, or a respondent's `WeidaError`), or None once every
    /// respondent answered or the deadline passed. Cancel-safe.
    fn answer<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.answer_or_end(py, false)
    }

    /// How many respondents were asked.
    #[getter]
    fn respondents(&self) -> usize {
        self.run.respondents()
    }

    /// Answers that arrived after the deadline while this run lived: counted, not delivered.
    #[getter]
    fn late(&self) -> u64 {
        self.run.late()
    }

    /// Resolves once every asked respondent's exchange has ended (answered, failed, or late and
    /// counted). Cancel-safe.
    fn settled<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let run = Arc::clone(&self.run);
        call(
            py,
            Call::new(async move {
                run.settled().await;
                Ok::<_, Fail>(())
            }),
        )
    }

    /// The deadline has passed.
    #[getter]
    fn expired(&self) -> bool {
        self.run.expired()
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.answer_or_end(py, true)
    }
}
