//! The core's endpoints as a binding holds them: [`Endpoint`] (a dialling endpoint's handle,
//! `Closed` after `close()`), and [`send_many`], a batch send that says how many went.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use weida::Error;

use crate::error::Fail;
use crate::io::OnIo;

/// A binding's handle on a dialling endpoint (a pusher, requester or peer) until `close()`,
/// which lets go of it: later calls are `Closed`, calls already pending run on.
pub struct Endpoint<T>(OnIo<Mutex<Option<Arc<T>>>>);

impl<T> Endpoint<T> {
    /// Holds `t`.
    pub fn new(t: T) -> Self {
        Self(OnIo::new(Mutex::new(Some(Arc::new(t)))))
    }

    /// The endpoint, or `Closed` after `close()`.
    pub fn get(&self) -> Result<Arc<T>, Fail> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or(Fail::Core(Error::Closed))
    }

    /// Lets go of the endpoint (inside the I/O runtime's context: its connections may go).
    pub fn close(&self) {
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        crate::io::on_io(|| drop(t));
    }
}

/// Sends each body as its own message, in order, as `Pusher::send` does; stops at the first
/// error, which carries how many were sent before it ([`Fail::Sent`], the error's `sent`
/// field in every language: python/tests/test_patterns.py and node/test/patterns.test.mjs
/// `send_many_says_how_many_were_sent`).
pub async fn send_many(p: Arc<weida::Pusher>, bodies: Vec<Bytes>) -> Result<(), Fail> {
    match p.send_many(bodies).await {
        (_, Ok(())) => Ok(()),
        (sent, Err(error)) => Err(Fail::Sent { sent, error }),
    }
}

/// A dialling endpoint's two connects (Pusher, Requester, Peer, Subscriber, Surveyor): [`connect`] picks one by the binding's `wait` flag
/// (Python `connect(url, wait=False)`, Node `connect(url, { wait: false })`).
pub trait Dials: Send + Sync + 'static {
    /// `connect`: dials, and fails if the first dial does.
    fn dial_now(
        &self,
        address: &str,
    ) -> impl std::future::Future<Output = weida::Result<()>> + Send;
    /// `connect_later`: records the slot and dials in the background.
    fn dial_later(
        &self,
        address: &str,
    ) -> impl std::future::Future<Output = weida::Result<()>> + Send;
}

macro_rules! dials {
    ($($t:ty),*) => {$(
        impl Dials for $t {
            fn dial_now(&self, address: &str) -> impl std::future::Future<Output = weida::Result<()>> + Send {
                self.connect(address)
            }
            fn dial_later(&self, address: &str) -> impl std::future::Future<Output = weida::Result<()>> + Send {
                self.connect_later(address)
            }
        }
    )*};
}
dials!(
    weida::Pusher,
    weida::Requester,
    weida::Peer,
    weida::Subscriber,
    weida::Surveyor,
    weida::Bus,
    weida::DialingPublisher,
    weida::Pair,
    weida::DialingPuller
);

/// Connects `endpoint` to `address`: waiting for the first dial (`wait`, the default in every
/// language), or recording the address at once and dialling in the background
/// (connect-before-bind).
pub async fn connect<D: Dials>(endpoint: Arc<D>, address: String, wait: bool) -> Result<(), Fail> {
    match wait {
        true => endpoint.dial_now(&address).await?,
        false => endpoint.dial_later(&address).await?,
    }
    Ok(())
}
