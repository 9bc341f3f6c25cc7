//! `Runtime` and `Listener`. Every async export awaits weida-ffi's `awaiting::run_or_cancel`
//! (`crate::call::run`): the call's first poll here, the rest on weida-ffi's I/O thread; a
//! cancelled coroutine drops the future, and a fired `Cancellation` (Swift) ends it the same
//! way, which cancels the operation in the core.

use std::collections::HashMap;
use std::sync::Arc;

use weida_ffi::io::{on_io, OnIo};
use weida_ffi::{Call, Fail};

use crate::call::{run, Cancellation};
use crate::config::{endpoint_options, millis, runtime_config, EndpointOptions, RuntimeOptions};
use crate::error::Result;
use crate::events::PeerEvents;
use crate::identity::Trust;
use crate::patterns::{Publisher, Puller, Pusher, Replier, Requester, Subscriber};

/// What `drain` did.
#[derive(Debug, uniffi::Record)]
pub struct Drained {
    pub delivered: u64,
    pub outstanding: u64,
    pub unsent: u64,
}

/// The process-wide entry point: binds listeners, makes the dialling endpoints.
#[derive(uniffi::Object)]
pub struct Runtime {
    pub(crate) inner: OnIo<weida::Runtime>,
    identity: weida::Identity,
}

#[uniffi::export(async_runtime = "tokio")]
impl Runtime {
    /// A runtime with `options` (weida-ffi's option table checks them).
    #[uniffi::constructor]
    pub fn new(options: RuntimeOptions) -> Result<Arc<Self>> {
        let cfg = runtime_config(options)?;
        let identity = cfg.identity.clone();
        let inner = weida_ffi::runtime::runtime(cfg)?;
        Ok(Arc::new(Self {
            inner: OnIo::new(inner),
            identity,
        }))
    }

    /// The `sha256:…` fingerprint of the key this runtime presents.
    pub fn fingerprint(&self) -> String {
        self.inner.fingerprint().to_string()
    }

    /// Binds `address` (no path); `require_client` makes a client key mandatory.
    #[uniffi::method(default(cancel = None))]
    pub async fn bind(
        &self,
        address: String,
        require_client: Option<Arc<Trust>>,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Arc<Listener>> {
        let rt = weida::Runtime::clone(&self.inner);
        let tls = weida::ServerTls::new(self.identity.clone());
        let tls = match require_client {
            Some(t) => tls.require_client(t.inner.clone()),
            None => tls,
        };
        let l = run(
            Call::new(async move { Ok(rt.bind_with(&address, tls).await?) }),
            cancel,
        )
        .await?;
        Ok(Arc::new(Listener {
            inner: OnIo::new(l),
        }))
    }

    pub fn pusher(&self, options: Option<EndpointOptions>) -> Result<Arc<Pusher>> {
        let o = endpoint_options(options)?;
        Ok(Pusher::new(on_io(|| self.inner.pusher_with(&o))?))
    }

    pub fn requester(&self, options: Option<EndpointOptions>) -> Result<Arc<Requester>> {
        let o = endpoint_options(options)?;
        Ok(Requester::new(on_io(|| self.inner.requester_with(&o))?))
    }

    /// A bus member bound at `path` on `listener` (this runtime's).
    pub fn bus(
        &self,
        listener: Arc<Listener>,
        path: String,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<crate::bus::Bus>> {
        let o = endpoint_options(options)?;
        Ok(crate::bus::Bus::new(on_io(|| {
            self.inner.bus_with(&listener.inner, &path, &o)
        })?))
    }

    /// A dialling pair: `connect` it to a bound pair (`Listener.pair`).
    pub fn pair(&self, options: Option<EndpointOptions>) -> Result<Arc<crate::pair::Pair>> {
        let o = endpoint_options(options)?;
        Ok(crate::pair::Pair::new(on_io(|| self.inner.pair_with(&o))?))
    }

    /// A puller that dials bound pushers (`Listener.pusher`).
    pub fn puller(
        &self,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<crate::bound_push::DialingPuller>> {
        let o = endpoint_options(options)?;
        Ok(crate::bound_push::DialingPuller::new(on_io(|| {
            self.inner.puller_with(&o)
        })?))
    }

    /// A publisher that dials collectors (`Listener.subscriber`).
    pub fn publisher(
        &self,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<crate::collector::DialingPublisher>> {
        let o = endpoint_options(options)?;
        Ok(crate::collector::DialingPublisher::new(on_io(|| {
            self.inner.publisher_with(&o)
        })?))
    }

    pub fn surveyor(
        &self,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<crate::survey::Surveyor>> {
        let o = endpoint_options(options)?;
        Ok(crate::survey::Surveyor::new(on_io(|| {
            self.inner.surveyor_with(&o)
        })?))
    }

    pub fn subscriber(&self, options: Option<EndpointOptions>) -> Result<Arc<Subscriber>> {
        let o = endpoint_options(options)?;
        Ok(Subscriber::new(on_io(|| self.inner.subscriber_with(&o))?))
    }

    /// Stops admitting work, writes out the pushers' outboxes, gives finished transfers until
    /// `deadline_ms` to reach the peer's transport, then closes everything.
    #[uniffi::method(default(cancel = None))]
    pub async fn drain(
        &self,
        deadline_ms: f64,
        cancel: Option<Arc<Cancellation>>,
    ) -> Result<Drained> {
        let rt = weida::Runtime::clone(&self.inner);
        let deadline = millis("deadline", deadline_ms)?;
        let d = run(
            Call::new(async move { Ok::<_, Fail>(rt.drain(deadline).await) }),
            cancel,
        )
        .await?;
        Ok(Drained {
            delivered: d.delivered,
            outstanding: d.outstanding,
            unsent: d.unsent,
        })
    }

    /// Closes every connection and listener now; pending calls end with their error.
    pub fn shutdown(&self) {
        on_io(|| self.inner.shutdown());
    }

    /// As `shutdown`, and returns once the closes have been sent (at most a second). Python's
    /// and Node's `close`: Kotlin's `close()` is `AutoCloseable`'s, so the name differs.
    pub async fn close_and_wait(&self) {
        let rt = weida::Runtime::clone(&self.inner);
        let _ = run(
            Call::new(async move {
                rt.close().await;
                Ok::<_, Fail>(())
            }),
            None,
        )
        .await;
    }

    /// Every counter by its camelCase name (weida-ffi lists them).
    pub fn counters(&self) -> HashMap<String, u64> {
        weida_ffi::runtime::counters(&self.inner.counters())
            .into_iter()
            .map(|(n, v)| (weida_ffi::config::camel_case(n), v))
            .collect()
    }
}

/// A bound address; endpoints are registered on it by path.
#[derive(uniffi::Object)]
pub struct Listener {
    pub(crate) inner: OnIo<weida::Listener>,
}

#[uniffi::export]
impl Listener {
    /// The bound address: over QUIC with its real port and the `sha256:` pin of its key.
    pub fn address(&self) -> String {
        self.inner.address().to_string()
    }

    pub fn puller(&self, path: String, options: Option<EndpointOptions>) -> Result<Arc<Puller>> {
        let o = endpoint_options(options)?;
        Ok(Puller::new(on_io(|| self.inner.puller_with(&path, &o))?))
    }

    pub fn replier(&self, path: String, options: Option<EndpointOptions>) -> Result<Arc<Replier>> {
        let o = endpoint_options(options)?;
        Ok(Replier::new(on_io(|| self.inner.replier_with(&path, &o))?))
    }

    /// A respondent: a `Replier` by another name.
    pub fn respondent(
        &self,
        path: String,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<Replier>> {
        self.replier(path, options)
    }

    pub fn publisher(
        &self,
        path: String,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<Publisher>> {
        let o = endpoint_options(options)?;
        Ok(Publisher::new(on_io(|| {
            self.inner.publisher_with(&path, &o)
        })?))
    }

    /// Binds a pair at `path`: one dialling pair at a time claims it.
    pub fn pair(
        &self,
        path: String,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<crate::pair::Pair>> {
        let o = endpoint_options(options)?;
        Ok(crate::pair::Pair::new(on_io(|| {
            self.inner.pair_with(&path, &o)
        })?))
    }

    /// Binds a pusher at `path`: the pullers that connect share its messages, round-robin.
    pub fn pusher(
        &self,
        path: String,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<crate::bound_push::BoundPusher>> {
        let o = endpoint_options(options)?;
        Ok(crate::bound_push::BoundPusher::new(on_io(|| {
            self.inner.pusher_with(&path, &o)
        })?))
    }

    /// Binds a collector at `path`: dialling publishers feed it.
    pub fn subscriber(
        &self,
        path: String,
        options: Option<EndpointOptions>,
    ) -> Result<Arc<crate::collector::BoundSubscriber>> {
        let o = endpoint_options(options)?;
        Ok(crate::collector::BoundSubscriber::new(on_io(|| {
            self.inner.subscriber_with(&path, &o)
        })?))
    }

    /// The connections this listener accepts from now on: `connected` (with `url`, where the
    /// connection comes from, and the key it presented) and `lost` (with its cause).
    pub fn events(&self) -> Arc<PeerEvents> {
        PeerEvents::new(self.inner.events())
    }

    /// Stops accepting connections, closes the ones it accepted, and ends its endpoints
    /// (Python's and Node's `close`; the Kotlin layer's `close()` calls it).
    pub fn close_listener(&self) {
        on_io(|| self.inner.close());
    }
}
