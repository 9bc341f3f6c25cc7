//! Raw streams (core `patterns::raw`): a `RawPeer` dials acceptors and opens one-way transfers
//! or exchanges on them; an `Acceptor`, bound at a path, takes both kinds (`Incoming`). Over
//! weida-ffi's `patterns` and `stream` (the Python and Node bindings' own). The dialling side is
//! `RawPeer` here, not `Peer` as in Python and Node: `Peer` already names who sent a message.

use std::collections::HashMap;
use std::sync::Arc;

use weida_ffi::io::{on_io, OnIo};
use weida_ffi::patterns::{connect, Endpoint};
use weida_ffi::stream as ffi;
use weida_ffi::{Call, Fail};

use crate::call::{run, Cancellation};
use crate::config::{endpoint_options, EndpointOptions};
use crate::error::Result;
use crate::events::PeerEvents;
use crate::patterns::{meta_in, Exchange};
use crate::runtime::{Listener, Runtime};
use crate::stream::{opened_request, IncomingTransfer, OpenedRequest, OutgoingTransfer};

/// Opens raw streams to the acceptors it is connected to (round-robin): one-way transfers and
/// exchanges.
#[derive(uniffi::Object)]
pub struct RawPeer {
    inner: Endpoint<weida::Peer>,
}

#[uniffi::export(async_runtime = "tokio")]
impl RawPeer {
    /// Connects to `address` (with its path): waits for the first dial (`wait`), or records it
    /// and dials in the background (connect-before-bind).
    #[uniffi::method(default(cancel = None))]
    pub async fn connect(
        &self,
        address: String,
        wait: bool,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<()> {
        let p = self.inner.get()?;
        Ok(run(Call::new(connect(p, address, wait)), cancel).await?)
    }

    pub fn disconnect(&self, address: String) -> Result<bool> {
        Ok(on_io(|| {
            self.inner.get()?.disconnect(&address).map_err(Fail::from)
        })?)
    }

    pub fn peer_count(&self) -> Result<u32> {
        Ok(self.inner.get()?.peer_count() as u32)
    }

    pub fn events(&self) -> Result<Arc<PeerEvents>> {
        Ok(PeerEvents::new(on_io(|| self.inner.get())?.events()))
    }

    /// Opens a one-way stream: `write` it in parts, then `finish`.
    #[uniffi::method(default(meta = None, cancel = None))]
    pub async fn open(
        &self,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<OutgoingTransfer>> {
        let p = self.inner.get()?;
        let meta = meta_in(meta);
        let t = run(
            Call::new(async move { Ok::<_, Fail>(p.open(meta).await?) }),
            cancel,
        )
        .await?;
        Ok(OutgoingTransfer::of(ffi::OutgoingTransfer::new(t)))
    }

    /// Opens an exchange: its request's transfer, and its reply.
    #[uniffi::method(default(meta = None, cancel = None))]
    pub async fn exchange(
        &self,
        meta: Option<HashMap<String, Vec<u8>>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<OpenedRequest> {
        let p = self.inner.get()?;
        let meta = meta_in(meta);
        let o = run(
            Call::new(async move { Ok::<_, Fail>(p.exchange(meta).await?) }),
            cancel,
        )
        .await?;
        Ok(opened_request(o))
    }

    /// Lets go of the endpoint: later calls are `Closed` (Python's and Node's `close`).
    pub fn close_endpoint(&self) {
        self.inner.close();
    }
}

/// A stream an acceptor took.
#[derive(uniffi::Enum)]
pub enum Incoming {
    /// A one-way transfer.
    Stream { transfer: Arc<IncomingTransfer> },
    /// An exchange: a request, and the reply this side owes.
    Exchange { exchange: Arc<Exchange> },
}

/// Takes both stream kinds at a bound path.
#[derive(uniffi::Object)]
pub struct Acceptor {
    inner: OnIo<Arc<weida::Acceptor>>,
}

#[uniffi::export(async_runtime = "tokio")]
impl Acceptor {
    /// The address to dial this acceptor at.
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    /// The next stream: a one-way transfer or an exchange. Cancel-safe.
    #[uniffi::method(default(cancel = None))]
    pub async fn accept(&self, cancel: Option<Arc<Cancellation>>) -> Result<Incoming> {
        let a = Arc::clone(&self.inner);
        let i = run(
            Call::new(async move { ffi::Incoming::new(a.accept().await?) }),
            cancel,
        )
        .await?;
        Ok(match i {
            ffi::Incoming::Stream(t) => Incoming::Stream {
                transfer: IncomingTransfer::of(t),
            },
            ffi::Incoming::Exchange(x) => Incoming::Exchange {
                exchange: Arc::new(Exchange { inner: x }),
            },
        })
    }

    /// Unbinds the path: streams already received are still handed out, then `Closed`.
    pub fn close_endpoint(&self) {
        on_io(|| self.inner.close());
    }
}

#[uniffi::export]
impl Runtime {
    /// A raw dialling endpoint: `connect` it to acceptors, then `open` or `exchange`.
    pub fn peer(&self, options: Option<EndpointOptions>) -> Result<Arc<RawPeer>> {
        let o = endpoint_options(options)?;
        let p = on_io(|| self.inner.peer_with(&o))?;
        Ok(Arc::new(RawPeer {
            inner: Endpoint::new(p),
        }))
    }
}

#[uniffi::export]
impl Listener {
    /// An acceptor bound at `path`: one-way transfers and exchanges.
    pub fn acceptor(
        &self,
        path: String,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<Acceptor>> {
        let o = endpoint_options(options)?;
        let a = on_io(|| self.inner.acceptor_with(&path, &o))?;
        Ok(Arc::new(Acceptor {
            inner: OnIo::new(Arc::new(a)),
        }))
    }
}
