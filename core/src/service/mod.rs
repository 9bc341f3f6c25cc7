//! The handler runtime (docs/SERVICES.md): handlers registered on endpoints, and what their
//! outcomes can honestly mean on a hop with no broker. The layer above the patterns.
//!
//! - [`outcome`](Outcome): what a handler says, and the attempt header a copy carries.
//! - [`Registration`]: one endpoint read for a handler, its concurrency, the copies its
//!   retries make, its counters and its stop; [`Builder`] makes one, and only a registration
//!   whose copies have an address can be started.
//! - [`Service`]: makes registrations on one runtime's endpoints.

mod counters;
mod outcome;
mod registration;
mod source;

pub use counters::ServiceCounters;
pub use outcome::{Outcome, ATTEMPT_HEADER};
pub use registration::{Builder, Job, NeedsAddress, Ready, Registration, Stopped};
pub use source::TOPIC_HEADER;

use crate::error::Result;
use crate::runtime::{listener::Listener, Runtime};
use source::Source;

/// Makes registrations on one runtime's endpoints.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime) -> weida::Result<()> {
/// use std::time::Duration;
/// use weida::service::{Outcome, Service};
///
/// let listener = rt.bind("weida://127.0.0.1:5555").await?;
/// let service = Service::new(&rt);
/// let rpc = service
///     .replying(&listener, "/rpc")?
///     .retry_to("weida://127.0.0.1:5555/rpc-retries") // a Rep path has no address for copies
///     .start()
///     .await?;
/// let served = rpc.run(|m, _| async move { Ok::<_, String>(Outcome::Reply(m.body)) });
/// # let _ = served;
/// rpc.stop(Duration::from_secs(5)).await; // in flight: finished; then unbound
/// # Ok(()) }
/// ```
pub struct Service {
    runtime: Runtime,
}

impl Service {
    /// Registrations on `runtime`'s endpoints (its copies are sent by its pushers).
    pub fn new(runtime: &Runtime) -> Self {
        Self {
            runtime: runtime.clone(),
        }
    }

    /// A queue: binds a Pull path on `listener`. Its copies go to that path.
    pub fn queue(&self, listener: &Listener, path: &str) -> Result<Builder<Ready>> {
        let p = listener.puller(path)?;
        let own = p.address().clone();
        Ok(Builder::new(
            self.runtime.clone(),
            Source::Queue(p),
            Some(own),
            None,
        ))
    }

    /// A fan-out: binds a Sub path on `listener` holding `filters` (publishers dial it). Its
    /// copies are published to that path alone, under the topic they came with.
    pub fn fan_out(
        &self,
        listener: &Listener,
        path: &str,
        filters: &[&str],
    ) -> Result<Builder<Ready>> {
        let s = listener.subscriber(path)?;
        for f in filters {
            s.subscribe(f)?;
        }
        let own = s.address().clone();
        Ok(Builder::new(
            self.runtime.clone(),
            Source::FanOut(s),
            Some(own),
            None,
        ))
    }

    /// A puller dialling the bound pusher at `address` (at `start`). It has no address of its
    /// own: name where its copies go with `retry_to`.
    pub fn pulling(&self, address: &str) -> Builder<NeedsAddress> {
        Builder::new(
            self.runtime.clone(),
            Source::Pulling(self.runtime.puller()),
            None,
            Some(address.to_string()),
        )
    }

    /// A subscriber dialling the bound publisher at `address` (at `start`), holding
    /// `filters` (installed there before `start` returns; none: it receives nothing). Each
    /// message it receives is one handler call, as a fan-out's; it has no address of its own:
    /// name where its copies go with `retry_to`, and a copy keeps its topic in the
    /// `weida-topic` header.
    pub fn subscribing(&self, address: &str, filters: &[&str]) -> Builder<NeedsAddress> {
        Builder::new(
            self.runtime.clone(),
            Source::Subscribing(
                self.runtime.subscriber(),
                filters.iter().map(|f| f.to_string()).collect(),
            ),
            None,
            Some(address.to_string()),
        )
    }

    /// A Rep path on `listener`: a handler's `Outcome::Reply` is the reply (`Done` and `Ack`
    /// reply with an empty body; `Drop`, a retry and a failure answer `Rejected` with the
    /// reason). Its path is not an address for copies: name one with `retry_to`.
    pub fn replying(&self, listener: &Listener, path: &str) -> Result<Builder<NeedsAddress>> {
        Ok(Builder::new(
            self.runtime.clone(),
            Source::Replying(listener.replier(path)?),
            None,
            None,
        ))
    }
}
