//! `Runtime` (dials, binds) and `Listener` (endpoints by path), with `Counters` and `Drained`.

use pyo3::exceptions::PyAttributeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use weida_ffi::config::{self, Given};
use weida_ffi::io::{on_io, OnIo};
use weida_ffi::{Call, Fail};

use crate::aio::{self, call};
use crate::config::{endpoint_options, given, Limits, PY};
use crate::error;
use crate::identity::Identity;
use crate::patterns::bound_push::{BoundPusher, DialingPuller};
use crate::patterns::bus::Bus;
use crate::patterns::collector::{BoundSubscriber, DialingPublisher};
use crate::patterns::pair::Pair;
use crate::patterns::pubsub::{Publisher, Subscriber};
use crate::patterns::survey::Surveyor;
use crate::patterns::{Acceptor, Peer, Puller, Pusher, Replier, Requester};
use crate::trust::Trust;

/// The process-wide entry point: dials addresses, binds listeners, owns every connection.
/// `async with Runtime() as rt:` shuts it down on exit (`await rt.drain(seconds)` first to let
/// finished transfers arrive). Keyword arguments: `identity`, `trust`, `limits`, and the
/// options of weida-ffi's table (`present_identity`, `send_timeout`, `udp_buffer`, `ordering`,
/// `lane_max_message`), and `reconnect` (a `ReconnectPolicy`); a bad one raises
/// `InvalidConfig`.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Runtime {
    rt: OnIo<weida::Runtime>,
    identity: weida::Identity,
}

impl Runtime {
    /// The core runtime (the service module makes registrations on it).
    pub(crate) fn core(&self) -> &weida::Runtime {
        &self.rt
    }
}

#[pymethods]
impl Runtime {
    #[new]
    #[pyo3(signature = (**options))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut cfg = weida::RuntimeConfig::default();
        let mut rest: Vec<(String, Given)> = Vec::new();
        for (k, v) in options.into_iter().flat_map(|d| d.iter()) {
            let k: String = k.extract()?;
            match k.as_str() {
                "identity" if !v.is_none() => cfg.identity = v.extract::<Identity>()?.inner,
                "trust" if !v.is_none() => cfg.trust = v.extract::<Trust>()?.inner,
                "limits" if !v.is_none() => cfg.limits = v.extract::<Limits>()?.inner,
                "reconnect" if !v.is_none() => {
                    cfg.reconnect = v.extract::<crate::events::ReconnectPolicy>()?.inner
                }
                "identity" | "trust" | "limits" | "reconnect" => {}
                _ => rest.push((k, given(&v))),
            }
        }
        config::apply(&config::RUNTIME, &mut cfg, PY, rest).map_err(|e| error::core(py, e))?;
        let identity = cfg.identity.clone();
        let rt = py
            .detach(|| weida_ffi::runtime::runtime(cfg))
            .map_err(|f| error::to_py(py, f))?;
        Ok(Self {
            rt: OnIo::new(rt),
            identity,
        })
    }

    /// The fingerprint (`sha256:<hex>`) of the key this runtime presents.
    #[getter]
    fn fingerprint(&self) -> String {
        self.rt.fingerprint().to_string()
    }

    /// Binds `address` (no path); endpoints are then bound by path on the `Listener`.
    /// `require_client`: only clients whose key this trust accepts are let in.
    #[pyo3(signature = (address, *, require_client=None))]
    fn bind<'py>(
        &self,
        py: Python<'py>,
        address: String,
        require_client: Option<Trust>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let rt = weida::Runtime::clone(&self.rt);
        let tls = weida::ServerTls::new(self.identity.clone());
        let tls = match require_client {
            Some(t) => tls.require_client(t.inner),
            None => tls,
        };
        call(
            py,
            Call::new(async move {
                let l = rt.bind_with(&address, tls).await?;
                Ok(Listener {
                    inner: OnIo::new(l),
                })
            }),
        )
    }

    /// A Push endpoint: `connect` it to pullers, then `send`.
    #[pyo3(signature = (**options))]
    fn pusher(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Pusher> {
        let o = endpoint_options(py, options)?;
        let e = on_io(|| self.rt.pusher_with(&o)).map_err(|e| error::core(py, e))?;
        Ok(Pusher::new(e))
    }

    /// A Req endpoint: `connect` it to repliers, then `request`.
    #[pyo3(signature = (**options))]
    fn requester(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Requester> {
        let o = endpoint_options(py, options)?;
        let e = on_io(|| self.rt.requester_with(&o)).map_err(|e| error::core(py, e))?;
        Ok(Requester::new(e))
    }

    /// A `DialingPuller`: `connect` it to bound pushers (`Listener.pusher`), then `recv`.
    #[pyo3(signature = (**options))]
    fn puller(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<DialingPuller> {
        let o = endpoint_options(py, options)?;
        let e = on_io(|| self.rt.puller_with(&o)).map_err(|e| error::core(py, e))?;
        Ok(DialingPuller::new(e))
    }

    /// A dialling `Pair`: `connect` it to a bound pair (`Listener.pair`).
    #[pyo3(signature = (**options))]
    fn pair(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Pair> {
        let o = endpoint_options(py, options)?;
        let e = on_io(|| self.rt.pair_with(&o)).map_err(|e| error::core(py, e))?;
        Ok(Pair::new(e, None))
    }

    /// A `DialingPublisher`: `connect` it to collectors (`Listener.subscriber`), then
    /// `publish`.
    #[pyo3(signature = (**options))]
    fn publisher(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<DialingPublisher> {
        let o = endpoint_options(py, options)?;
        let e = on_io(|| self.rt.publisher_with(&o)).map_err(|e| error::core(py, e))?;
        Ok(DialingPublisher::new(e))
    }

    /// A `Surveyor`: `connect` it to respondents, then `await survey(body, deadline)`.
    #[pyo3(signature = (**options))]
    fn surveyor(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Surveyor> {
        let o = endpoint_options(py, options)?;
        let e = on_io(|| self.rt.surveyor_with(&o)).map_err(|e| error::core(py, e))?;
        Ok(Surveyor::new(e))
    }

    /// A bus member bound at `path` on `listener` (this runtime's): `connect` it to the other
    /// members, `send` to all of them, `recv` what they send.
    #[pyo3(signature = (listener, path, **options))]
    fn bus(
        &self,
        py: Python<'_>,
        listener: Bound<'_, Listener>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Bus> {
        let o = endpoint_options(py, options)?;
        let b = on_io(|| self.rt.bus_with(&listener.get().inner, path, &o))
            .map_err(|e| error::core(py, e))?;
        Ok(Bus::new(b, listener.unbind()))
    }

    /// A Sub endpoint: `connect` it to publishers and `subscribe` to topics (in either
    /// order), then `recv`.
    #[pyo3(signature = (**options))]
    fn subscriber(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Subscriber> {
        let o = endpoint_options(py, options)?;
        let e = on_io(|| self.rt.subscriber_with(&o)).map_err(|e| error::core(py, e))?;
        Ok(Subscriber::new(e))
    }

    /// A raw endpoint: `connect` it to acceptors, then `open` transfers or `exchange`s.
    #[pyo3(signature = (**options))]
    fn peer(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Peer> {
        let o = endpoint_options(py, options)?;
        let e = on_io(|| self.rt.peer_with(&o)).map_err(|e| error::core(py, e))?;
        Ok(Peer::new(e))
    }

    /// The counters, monotonic since the runtime started.
    fn counters(&self) -> Counters {
        Counters(weida_ffi::runtime::counters(&self.rt.counters()))
    }

    /// Stops admitting work, gives finished transfers until `seconds` to reach the peer's
    /// transport, then closes everything; the pushers' outboxes are written out first. An
    /// expired drain is not an error.
    fn drain<'py>(
        &self,
        py: Python<'py>,
        seconds: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let deadline =
            config::duration_arg("seconds", given(seconds), PY).map_err(|e| error::core(py, e))?;
        let rt = weida::Runtime::clone(&self.rt);
        call(
            py,
            Call::new(async move {
                let d = rt.drain(deadline).await;
                Ok::<_, Fail>(Drained {
                    delivered: d.delivered,
                    outstanding: d.outstanding,
                    unsent: d.unsent,
                })
            }),
        )
    }

    /// Closes every connection now: finished transfers still in flight are cut short.
    fn shutdown(&self, py: Python<'_>) {
        py.detach(|| on_io(|| self.rt.shutdown()));
    }

    /// Closes every connection now, as `shutdown` does, and resolves once the closes have been
    /// sent (at most a second), so a process that exits next leaves its peers knowing at once.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rt = weida::Runtime::clone(&self.rt);
        call(
            py,
            Call::new(async move {
                rt.close().await;
                Ok::<_, Fail>(())
            }),
        )
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        aio::ready(py, slf.into_any())
    }

    /// Closes the runtime, as `close` does.
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc_type: Option<Bound<'py, PyAny>>,
        _exc: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.close(py)
    }

    fn __repr__(&self) -> String {
        format!("Runtime({})", self.rt.fingerprint())
    }
}

/// A bound address: register endpoints on it by path. Its endpoints keep it open;
/// `close()` (or leaving `async with`) closes it and ends them.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Listener {
    inner: OnIo<weida::Listener>,
}

impl Listener {
    /// The core listener (the service module registers endpoints on it).
    pub(crate) fn core(&self) -> &weida::Listener {
        &self.inner
    }
}

#[pymethods]
impl Listener {
    /// The bound address: the real port and, over QUIC, the pin of the key it presents.
    #[getter]
    fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// Binds a `Puller` at `path`.
    #[pyo3(signature = (path, **options))]
    fn puller(
        slf: &Bound<'_, Self>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Puller> {
        let o = endpoint_options(slf.py(), options)?;
        let p = on_io(|| slf.get().inner.puller_with(path, &o))
            .map_err(|e| error::core(slf.py(), e))?;
        Ok(Puller::new(p, slf.clone().unbind()))
    }

    /// Binds a `Replier` at `path`.
    #[pyo3(signature = (path, **options))]
    fn replier(
        slf: &Bound<'_, Self>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Replier> {
        let o = endpoint_options(slf.py(), options)?;
        let r = on_io(|| slf.get().inner.replier_with(path, &o))
            .map_err(|e| error::core(slf.py(), e))?;
        Ok(Replier::new(r, slf.clone().unbind()))
    }

    /// Binds a respondent at `path`: a `Replier` by another name (a surveyor asks it as a
    /// requester would, and it answers each exchange once).
    #[pyo3(signature = (path, **options))]
    fn respondent(
        slf: &Bound<'_, Self>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Replier> {
        Self::replier(slf, path, options)
    }

    /// Binds a `Publisher` at `path`.
    #[pyo3(signature = (path, **options))]
    fn publisher(
        slf: &Bound<'_, Self>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Publisher> {
        let o = endpoint_options(slf.py(), options)?;
        let p = on_io(|| slf.get().inner.publisher_with(path, &o))
            .map_err(|e| error::core(slf.py(), e))?;
        Ok(Publisher::new(p, slf.clone().unbind()))
    }

    /// Binds a `BoundPusher` at `path`: pullers that connect share its messages.
    #[pyo3(signature = (path, **options))]
    fn pusher(
        slf: &Bound<'_, Self>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<BoundPusher> {
        let o = endpoint_options(slf.py(), options)?;
        let p = on_io(|| slf.get().inner.pusher_with(path, &o))
            .map_err(|e| error::core(slf.py(), e))?;
        Ok(BoundPusher::new(p, slf.clone().unbind()))
    }

    /// Binds a `Pair` at `path`: one dialling pair at a time claims it.
    #[pyo3(signature = (path, **options))]
    fn pair(
        slf: &Bound<'_, Self>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pair> {
        let o = endpoint_options(slf.py(), options)?;
        let p =
            on_io(|| slf.get().inner.pair_with(path, &o)).map_err(|e| error::core(slf.py(), e))?;
        Ok(Pair::new(p, Some(slf.clone().unbind())))
    }

    /// Binds a `BoundSubscriber` (a collector) at `path`: dialling publishers feed it, and it
    /// keeps what its filters select.
    #[pyo3(signature = (path, **options))]
    fn subscriber(
        slf: &Bound<'_, Self>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<BoundSubscriber> {
        let o = endpoint_options(slf.py(), options)?;
        let s = on_io(|| slf.get().inner.subscriber_with(path, &o))
            .map_err(|e| error::core(slf.py(), e))?;
        Ok(BoundSubscriber::new(s, slf.clone().unbind()))
    }

    /// Binds a raw `Acceptor` at `path`.
    #[pyo3(signature = (path, **options))]
    fn acceptor(
        slf: &Bound<'_, Self>,
        path: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Acceptor> {
        let o = endpoint_options(slf.py(), options)?;
        let a = on_io(|| slf.get().inner.acceptor_with(path, &o))
            .map_err(|e| error::core(slf.py(), e))?;
        Ok(Acceptor::new(a, slf.clone().unbind()))
    }

    /// The connections this listener accepts from now on: `async for event in
    /// listener.events()` (`PeerEvent`: connected, with `url` where it comes from and the
    /// key it presented; lost, with its cause; missed).
    fn events(&self) -> crate::events::PeerEvents {
        crate::events::PeerEvents::new(self.inner.events())
    }

    /// Stops accepting connections, closes the ones it accepted, and ends its endpoints.
    fn close(&self, py: Python<'_>) {
        py.detach(|| on_io(|| self.inner.close()));
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        aio::ready(py, slf.into_any())
    }

    /// Closes the listener.
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc_type: Option<Bound<'py, PyAny>>,
        _exc: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.close(py);
        aio::ready(py, py.None().into_bound(py))
    }

    fn __repr__(&self) -> String {
        format!("Listener({})", self.inner.address())
    }
}

/// Counters a user can read without a metrics stack; monotonic since the runtime started.
/// Every counter of the core's `Counters`, by the same name, as an attribute.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Counters([(&'static str, u64); weida_ffi::runtime::COUNTERS]);

#[pymethods]
impl Counters {
    fn __getattr__(&self, name: &str) -> PyResult<u64> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| PyAttributeError::new_err(name.to_string()))
    }

    /// The counter names (what `__getattr__` reads).
    fn __dir__(&self) -> Vec<&'static str> {
        self.0.iter().map(|(n, _)| *n).collect()
    }

    fn __repr__(&self) -> String {
        let fields: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        format!("Counters({})", fields.join(", "))
    }
}

/// What a drain achieved: counts, not a promise.
#[pyclass(frozen, get_all, eq, module = "weida._weida")]
#[derive(PartialEq, Eq)]
pub(crate) struct Drained {
    /// Finished transfers whose receipt nobody awaited and whose peer acknowledged them.
    delivered: u64,
    /// Finished transfers still unacknowledged at the deadline, cut short by the close.
    outstanding: u64,
    /// Messages the pushers' outboxes held at the deadline, never written.
    unsent: u64,
}

#[pymethods]
impl Drained {
    #[new]
    #[pyo3(signature = (delivered, outstanding, unsent = 0))]
    fn new(delivered: u64, outstanding: u64, unsent: u64) -> Self {
        Self {
            delivered,
            outstanding,
            unsent,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Drained(delivered={}, outstanding={}, unsent={})",
            self.delivered, self.outstanding, self.unsent
        )
    }
}
