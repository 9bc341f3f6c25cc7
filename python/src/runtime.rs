//! `Runtime` (dials, binds) and `Listener` (endpoints by path), with `Counters` and `Drained`.

use pyo3::prelude::*;

use crate::aio::{self, spawn, Rooted};
use crate::config::{seconds, Limits};
use crate::error;
use crate::identity::Identity;
use crate::patterns::pubsub::{Publisher, Subscriber};
use crate::patterns::{Acceptor, Peer, Puller, Pusher, Replier, Requester};
use crate::trust::Trust;

/// The process-wide entry point: dials addresses, binds listeners, owns every connection.
/// `async with Runtime() as rt:` shuts it down on exit (`await rt.drain(seconds)` first to let
/// finished transfers arrive). `ordering` is the ordering level this runtime requires of its
/// connections (`RuntimeConfig::guarantees`): its subscribers receive under it.
/// `lane_max_message` is the largest body `send`/`publish` write as a frame on a message lane
/// (0: lanes off; default 16 KiB).
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Runtime {
    rt: Rooted<weida::Runtime>,
    identity: weida::Identity,
}

#[pymethods]
impl Runtime {
    #[new]
    #[pyo3(signature = (*, identity=None, trust=None, limits=None, present_identity=true,
        send_timeout=None, udp_buffer=None, ordering="none", lane_max_message=None))]
    #[allow(clippy::too_many_arguments)] // one keyword argument per configuration field
    fn new(
        py: Python<'_>,
        identity: Option<Identity>,
        trust: Option<Trust>,
        limits: Option<Limits>,
        present_identity: bool,
        send_timeout: Option<f64>,
        udp_buffer: Option<usize>,
        ordering: &str,
        lane_max_message: Option<usize>,
    ) -> PyResult<Runtime> {
        let send_timeout = send_timeout
            .map(|s| seconds("send_timeout", s))
            .transpose()?;
        let ordering = crate::config::ordering(ordering)?;
        let r = py.detach(|| {
            let mut config = weida::RuntimeConfig::default();
            if let Some(i) = identity {
                config.identity = i.inner;
            }
            if let Some(t) = trust {
                config.trust = t.inner;
            }
            if let Some(l) = limits {
                config.limits = l.inner;
            }
            if let Some(u) = udp_buffer {
                config.udp_buffer = u;
            }
            config.present_identity = present_identity;
            config.send_timeout = send_timeout;
            config.guarantees.ordering = ordering;
            if let Some(n) = lane_max_message {
                config.lane_max_message = n;
            }
            let identity = config.identity.clone();
            weida::Runtime::new(config).map(|rt| (rt, identity))
        });
        let (rt, identity) = r.map_err(|e| error::to_py(py, e))?;
        Ok(Runtime {
            rt: Rooted::new(rt),
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
        let rt = (*self.rt).clone();
        let tls = weida::ServerTls::new(self.identity.clone());
        let tls = match require_client {
            Some(t) => tls.require_client(t.inner),
            None => tls,
        };
        spawn(py, async move {
            let l = rt.bind_with(&address, tls).await?;
            Ok(Listener {
                inner: Rooted::new(l),
            })
        })
    }

    /// A Push endpoint: `connect` it to pullers, then `send`.
    fn pusher(&self) -> Pusher {
        Pusher::new(self.rt.pusher())
    }

    /// A Req endpoint: `connect` it to repliers, then `request`.
    fn requester(&self) -> Requester {
        Requester::new(self.rt.requester())
    }

    /// A Sub endpoint: `connect` it to publishers and `subscribe` to topics (in either
    /// order), then `recv`.
    fn subscriber(&self) -> Subscriber {
        Subscriber::new(self.rt.subscriber())
    }

    /// A raw endpoint: `connect` it to acceptors, then `open` transfers or `exchange`s.
    fn peer(&self) -> Peer {
        Peer::new(self.rt.peer())
    }

    /// The counters, monotonic since the runtime started.
    fn counters(&self) -> Counters {
        let c = self.rt.counters();
        Counters {
            streams_opened: c.streams_opened,
            streams_accepted: c.streams_accepted,
            streams_refused: c.streams_refused,
            bytes_sent: c.bytes_sent,
            bytes_received: c.bytes_received,
            connections_dialled: c.connections_dialled,
            connections_accepted: c.connections_accepted,
            receipts_delivered: c.receipts_delivered,
            receipts_failed: c.receipts_failed,
            copies_published: c.copies_published,
            lane_messages_sent: c.lane_messages_sent,
            lane_messages_received: c.lane_messages_received,
            lane_messages_lost: c.lane_messages_lost,
        }
    }

    /// Stops admitting work, gives finished transfers until `seconds` to reach the peer's
    /// transport, then closes everything. An expired drain is not an error.
    fn drain<'py>(&self, py: Python<'py>, seconds: f64) -> PyResult<Bound<'py, PyAny>> {
        let deadline = crate::config::seconds("seconds", seconds)?;
        let rt = (*self.rt).clone();
        spawn(py, async move {
            let d = rt.drain(deadline).await;
            Ok(Drained {
                delivered: d.delivered,
                outstanding: d.outstanding,
            })
        })
    }

    /// Closes every connection now: finished transfers still in flight are cut short.
    fn shutdown(&self, py: Python<'_>) {
        py.detach(|| {
            let _g = aio::enter();
            self.rt.shutdown()
        });
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        aio::ready(py, slf.into_any())
    }

    /// Shuts the runtime down.
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        _exc_type: Option<Bound<'py, PyAny>>,
        _exc: Option<Bound<'py, PyAny>>,
        _tb: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.shutdown(py);
        aio::ready(py, py.None().into_bound(py))
    }

    fn __repr__(&self) -> String {
        format!("Runtime({})", self.rt.fingerprint())
    }
}

/// A bound address: register endpoints on it by path. Its endpoints keep it open;
/// `close()` (or leaving `async with`) closes it and ends them.
#[pyclass(frozen, module = "weida._weida")]
pub(crate) struct Listener {
    inner: Rooted<weida::Listener>,
}

#[pymethods]
impl Listener {
    /// The bound address: the real port and, over QUIC, the pin of the key it presents.
    #[getter]
    fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// Binds a `Puller` at `path`.
    fn puller(slf: &Bound<'_, Self>, path: &str) -> PyResult<Puller> {
        let p = slf
            .get()
            .inner
            .puller(path)
            .map_err(|e| error::to_py(slf.py(), e))?;
        Ok(Puller::new(p, slf.clone().unbind()))
    }

    /// Binds a `Replier` at `path`.
    fn replier(slf: &Bound<'_, Self>, path: &str) -> PyResult<Replier> {
        let r = slf
            .get()
            .inner
            .replier(path)
            .map_err(|e| error::to_py(slf.py(), e))?;
        Ok(Replier::new(r, slf.clone().unbind()))
    }

    /// Binds a `Publisher` at `path`.
    fn publisher(slf: &Bound<'_, Self>, path: &str) -> PyResult<Publisher> {
        let p = slf
            .get()
            .inner
            .publisher(path)
            .map_err(|e| error::to_py(slf.py(), e))?;
        Ok(Publisher::new(p, slf.clone().unbind()))
    }

    /// Binds a raw `Acceptor` at `path`.
    fn acceptor(slf: &Bound<'_, Self>, path: &str) -> PyResult<Acceptor> {
        let a = slf
            .get()
            .inner
            .acceptor(path)
            .map_err(|e| error::to_py(slf.py(), e))?;
        Ok(Acceptor::new(a, slf.clone().unbind()))
    }

    /// Stops accepting connections, closes the ones it accepted, and ends its endpoints.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            let _g = aio::enter();
            self.inner.close()
        });
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
#[pyclass(frozen, get_all, module = "weida._weida")]
pub(crate) struct Counters {
    /// Streams this runtime opened (transfers and exchanges).
    streams_opened: u64,
    /// Streams it accepted and dispatched to an endpoint.
    streams_accepted: u64,
    /// Streams it refused (unknown path, unsupported, bad header, ...).
    streams_refused: u64,
    /// Body bytes written.
    bytes_sent: u64,
    /// Body bytes read.
    bytes_received: u64,
    /// Connections dialled.
    connections_dialled: u64,
    /// Connections accepted.
    connections_accepted: u64,
    /// Receipts nobody awaited that resolved delivered.
    receipts_delivered: u64,
    /// ... that resolved with a refusal or a loss.
    receipts_failed: u64,
    /// Pub/Sub copies queued for subscribers by this runtime's publishers.
    copies_published: u64,
    /// Messages written as frames on message lanes (each also counts in `bytes_sent`).
    lane_messages_sent: u64,
    /// Messages read from message lanes and handed to an endpoint.
    lane_messages_received: u64,
    /// Messages queued on a lane that ended before writing them (a refusal or a loss).
    lane_messages_lost: u64,
}

#[pymethods]
impl Counters {
    fn __repr__(&self) -> String {
        format!(
            "Counters(streams_opened={}, streams_accepted={}, streams_refused={}, bytes_sent={}, \
             bytes_received={}, connections_dialled={}, connections_accepted={}, \
             receipts_delivered={}, receipts_failed={}, copies_published={}, \
             lane_messages_sent={}, lane_messages_received={}, lane_messages_lost={})",
            self.streams_opened,
            self.streams_accepted,
            self.streams_refused,
            self.bytes_sent,
            self.bytes_received,
            self.connections_dialled,
            self.connections_accepted,
            self.receipts_delivered,
            self.receipts_failed,
            self.copies_published,
            self.lane_messages_sent,
            self.lane_messages_received,
            self.lane_messages_lost
        )
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
}

#[pymethods]
impl Drained {
    #[new]
    fn new(delivered: u64, outstanding: u64) -> Drained {
        Drained {
            delivered,
            outstanding,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Drained(delivered={}, outstanding={})",
            self.delivered, self.outstanding
        )
    }
}
