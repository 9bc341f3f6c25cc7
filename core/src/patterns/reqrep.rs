//! Req/Rep: one bidirectional stream per exchange; the stream is the correlation.

use bytes::Bytes;

use super::Dialer;
use crate::address::Address;
use crate::config::EndpointOptions;
use crate::connection::admission::RouteKind;
use crate::connection::handles::{Exchange, Incoming, Message, OutgoingTransfer, PendingReply};
use crate::connection::handshake::Flow;
use crate::error::{Error, Result};
use crate::runtime::inbox::Inbox;
use crate::runtime::listener::Listener;
use crate::runtime::Runtime;
use crate::wire::{check_streams, Header, Metadata};

/// A request body at most this long is written with its header in one write.
pub(super) const INLINE_REQUEST: usize = 64 * 1024;

/// The outcome of an exchange from its write and its reply: the reply (or the replier's ERROR)
/// wins; a write failure explains a reply that was only cancelled.
fn settle(written: Result<()>, reply: Result<Message>) -> Result<Message> {
    match (written, reply) {
        (_, Ok(m)) => Ok(m),
        (Err(write_err), Err(Error::Canceled)) => Err(write_err),
        (_, Err(e)) => Err(e),
    }
}

/// Sends requests and awaits replies, round-robin over connected repliers.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, addr: &str) -> weida::Result<()> {
/// let req = rt.requester();
/// req.connect(addr).await?;
/// match req.request("charge card 42").await {
///     Ok(reply) => println!("{reply:?}"),
///     // The request reached the replier whole; its answer was lost: do not blindly retry.
///     Err(e) if !e.is_definite_failure() => println!("unknown outcome: {e}"),
///     Err(e) => println!("failed: {e}"),
/// }
/// # Ok(()) }
/// ```
pub struct Requester {
    dialer: Dialer,
}

impl Runtime {
    /// A [`Requester`].
    pub fn requester(&self) -> Requester {
        self.requester_with(&EndpointOptions::new())
            .expect("the runtime's own bounds are valid")
    }

    /// A [`Requester`] with bounds of its own: `send_timeout` (the wait to open an exchange)
    /// and `max_collected_body` (the largest reply `request` and `body` collect).
    pub fn requester_with(&self, options: &EndpointOptions) -> Result<Requester> {
        Ok(Requester {
            dialer: Dialer::new(
                self.pool.clone(),
                options,
                check_streams::EXCHANGE,
                Flow::Unordered,
            )?,
        })
    }
}

impl Listener {
    /// Binds a [`Replier`] at `path`.
    pub fn replier(&self, path: &str) -> Result<Replier> {
        self.replier_with(path, &EndpointOptions::new())
    }

    /// Binds a [`Replier`] at `path` with bounds of its own: `max_collected_body` (what
    /// `take_body` collects) and `endpoint_queue`.
    pub fn replier_with(&self, path: &str, options: &EndpointOptions) -> Result<Replier> {
        let inbox = self.register(path, RouteKind::Replier, options)?;
        Ok(Replier { inbox })
    }
}

super::dialling!(
    Requester,
    "Until it is live, `request` waits for it (bounded by `send_timeout`)."
);

impl Requester {
    /// Sends `body` and returns the reply body. The replier's ERROR is this side's error;
    /// a reply lost after the request's FIN is `Indeterminate`. Not cancel-safe: dropping the
    /// future abandons the exchange. A request not yet written whole is reset (the replier
    /// reads `Canceled`); one written whole may already be acted on, and its reply is refused
    /// (the replier's `reply` fails `Canceled`).
    pub async fn request(&self, body: impl Into<Bytes>) -> Result<Bytes> {
        Ok(self.request_with(Metadata::new(), body).await?.body)
    }

    /// [`Requester::request`] with metadata both ways. Not cancel-safe, as `request` is not.
    pub async fn request_with(&self, meta: Metadata, body: impl Into<Bytes>) -> Result<Message> {
        let header = Header {
            meta,
            ..Header::default()
        };
        let body: Bytes = body.into();
        if body.len() <= INLINE_REQUEST {
            // Small enough to sit in any stream window: one write with the header, and no
            // wait on the replier before the reply.
            let (t, reply) = self.dialer.exchange(header, Some(body)).await?;
            // Req/Rep needs no receipt: the reply proves more (GUARANTEES §6). A refusal of
            // the request half loses to the reply's ERROR frame, which names the reason.
            let finished = t.finish().await.map(drop);
            return settle(finished, reply.body().await);
        }
        // A large request is written while the reply is read: a replier may refuse or answer
        // before reading it all, and its answer (with its reason) is what the caller gets.
        let (mut t, reply) = self.dialer.exchange(header, None).await?;
        let write = async move {
            t.write(body).await?;
            t.finish().await.map(drop)
        };
        let reply = reply.body();
        tokio::pin!(write, reply);
        let mut written: Option<Result<()>> = None;
        loop {
            tokio::select! {
                r = &mut reply => return settle(written.unwrap_or(Ok(())), r),
                w = &mut write, if written.is_none() => written = Some(w),
            }
        }
    }

    /// Opens a streamed request; read the reply from the [`PendingReply`] concurrently when
    /// the request is large (a replier may answer before the request ends). Cancel-safe: an
    /// `open` dropped before it returns opens nothing the replier receives (a stream dropped
    /// during the write of its header is reset).
    pub async fn open(&self, meta: Metadata) -> Result<(OutgoingTransfer, PendingReply)> {
        let header = Header {
            meta,
            ..Header::default()
        };
        self.dialer.exchange(header, None).await
    }
}

/// Answers requests at a bound path.
pub struct Replier {
    inbox: Inbox,
}

impl Replier {
    /// The address to dial this replier at.
    pub fn address(&self) -> &Address {
        self.inbox.address()
    }

    /// Unbinds the path: a stream sent here from now on is refused with UNKNOWN_ENDPOINT, and
    /// once the streams already queued are taken, receiving ends with `Closed` (a receiver
    /// waiting on an empty queue gets it at once). The path may be bound again.
    pub fn close(&self) {
        self.inbox.close();
    }

    /// The next exchange. Cancel-safe.
    pub async fn accept(&self) -> Result<Exchange> {
        match self.inbox.next().await? {
            Incoming::Exchange(x) => Ok(x),
            Incoming::Stream(_) => Err(Error::Protocol(
                "a one-way transfer reached a replier".into(),
            )),
        }
    }
}
