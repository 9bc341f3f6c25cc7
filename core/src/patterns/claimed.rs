//! The two sides of a claim (PROTOCOL.md §3.1.6) that patterns share: how a bound endpoint
//! sends toward a dialler that claimed it (a pair, a bound pusher), and how a claiming dialler
//! (a dialling pair, a dialling puller) reads what it sends, through the listener's own
//! dispatch, over every transport.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::address::Address;
use crate::connection::admission::RouteKind;
use crate::connection::context::Context;
use crate::connection::dispatch::{Arrivals, Dispatch, Endpoints, Queued};
use crate::connection::handles::OutgoingTransfer;
use crate::connection::link::Link;
use crate::connection::reverse::{Claimable, Publication, Way};
use crate::error::{Error, Limit, LossCause, Result};
use crate::runtime::queue::Sender;
use crate::transport::{IncomingRaw, Life, PeerIdentity};
use crate::wire::{varint, Header, Metadata, StreamType};

/// Opens a transfer toward the dialler `way` reaches, for the endpoint at `path`, its head (and
/// `body`, when whole) written; waits at most `within` for the stream (over AF_UNIX, for a
/// parked connection: what a claimed endpoint sends is never dropped). Numbered when the
/// dialler requires ordering: the number is taken once the stream is open, so a stream that
/// never opened (the dialler went; a bound pusher deals it to the next) is no gap.
pub(super) async fn open_toward(
    ctx: &Arc<Context>,
    way: &Way,
    path: &Arc<str>,
    meta: Metadata,
    body: Option<Bytes>,
    within: Option<std::time::Duration>,
) -> Result<OutgoingTransfer> {
    let mut header = Header {
        path: Some(path.to_string()),
        meta,
        ..Header::default()
    };
    // The bound is checked before anything is opened: an unnumbered head is encoded once,
    // here; a numbered one is checked at the largest number and encoded once it has its own.
    let plain = match &way.numbering {
        None => Some(head(&header, way.peer_max_header)?),
        Some(n) => {
            head(&n.largest(&header), way.peer_max_header)?;
            None
        }
    };
    let send = Context::within(within, async {
        way.reverse.open_waiting().await.map_err(|_| lost())
    })
    .await?;
    let head = match plain {
        Some(h) => h,
        None => {
            if let Some(n) = &way.numbering {
                n.number(&mut header);
            }
            head(&header, way.peer_max_header)?
        }
    };
    ctx.stats
        .streams_opened
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut t = OutgoingTransfer::new(send, path.clone(), ctx.clone());
    match body {
        Some(b) => t.write_chunks(vec![head, b]).await?,
        None => t.write(head).await?,
    }
    Ok(t)
}

pub(super) fn lost() -> Error {
    Error::ConnectionLost(LossCause::PeerClosed)
}

/// A transfer's type byte and DATA `header`, bounded by the peer's MAX_HEADER_SIZE.
fn head(header: &Header, peer_max_header: u64) -> Result<Bytes> {
    let mut head = Vec::with_capacity(32 + header.path.as_ref().map_or(0, String::len));
    head.push(StreamType::Transfer.to_byte());
    header.encode(&mut head);
    // The bound counts what the length prefix counts (PROTOCOL.md §5.3), as the peer does.
    let counted = head.len() - 1 - varint::len_from_first_byte(head[1]);
    if counted as u64 > peer_max_header {
        return Err(Error::limit(
            Limit::HeaderSize,
            format!("header of {counted} bytes, the peer accepts {peer_max_header}"),
        ));
    }
    Ok(Bytes::from(head))
}

/// A claiming endpoint's receiving end (a dialling pair's, a dialling puller's), as the
/// dispatch of its connections' reverse streams sees it: one endpoint, at the paths it
/// claimed.
pub(super) struct Feed {
    ctx: Arc<Context>,
    /// The addresses it connects to, and their paths.
    aimed: Mutex<Vec<(Address, String)>>,
    /// It connects to one address at most (a pair).
    one: bool,
    /// The endpoint's queue; taken by `close`, which ends the receive once it is drained.
    tx: Mutex<Option<Sender<Queued>>>,
    max_body: u64,
    /// Ends the dispatch's waits when the endpoint closes.
    life: Arc<Life>,
    /// The task that closes the feed with the runtime has started.
    watched: std::sync::atomic::AtomicBool,
}

impl Feed {
    /// A feed whose queue is `tx`, taking bodies up to `max_body`; `one`: it connects to one
    /// address at most.
    pub(super) fn new(
        ctx: Arc<Context>,
        tx: Sender<Queued>,
        max_body: u64,
        one: bool,
    ) -> Arc<Self> {
        Arc::new(Self {
            ctx,
            aimed: Mutex::new(Vec::new()),
            one,
            tx: Mutex::new(Some(tx)),
            max_body,
            life: Life::new(),
            watched: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Records `address` as one this endpoint connects to; the first time, also starts the
    /// task that ends the receive (with `Closed`, once what arrived is taken) when the runtime
    /// shuts down, as a bound endpoint's ends with its routes. Called from an async `connect`,
    /// so the task has a runtime to run on.
    pub(super) fn aim(self: &Arc<Self>, address: &str) -> Result<()> {
        if !self.watched.swap(true, std::sync::atomic::Ordering::AcqRel) {
            let feed = Arc::downgrade(self);
            let ctx = self.ctx.clone();
            let life = self.life.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = ctx.life.dead() => {}
                    _ = life.dead() => {}
                }
                if let Some(f) = feed.upgrade() {
                    f.close();
                }
            });
        }
        let a = Address::parse(address)?;
        let path = a.endpoint_path()?.to_string();
        let mut aimed = self.aimed.lock().unwrap();
        if aimed.iter().any(|(x, _)| x == &a) {
            return Ok(());
        }
        if let (true, Some((x, _))) = (self.one, aimed.first()) {
            return Err(Error::InvalidConfig(format!(
                "a pair connects to one address; it is connected to {x}"
            )));
        }
        aimed.push((a, path));
        Ok(())
    }

    pub(super) fn unaim(&self, address: &str) {
        let Ok(a) = Address::parse(address) else {
            return;
        };
        self.aimed.lock().unwrap().retain(|(x, _)| x != &a);
    }

    /// Reads the streams the bound endpoint opens on `link`, until the connection ends: on QUIC
    /// and in process the streams it opens on the connection, over AF_UNIX what it writes on
    /// the connections this side parks with it (PROTOCOL.md §3.7), each parked again once
    /// read.
    pub(super) fn read(self: &Arc<Self>, link: &Arc<Link>) {
        let dispatch = Dispatch::new(
            self.ctx.clone(),
            self.clone(),
            Arc::new(Unheard),
            self.life.clone(),
        );
        let link = link.clone();
        let Some(session) = link.session.clone() else {
            tokio::spawn(async move {
                dispatch.reverse(&link).await;
            });
            return;
        };
        for _ in 0..session.parked {
            let (dispatch, link, head) = (dispatch.clone(), link.clone(), session.parked_head());
            tokio::spawn(async move {
                // Parks one connection at a time; one the listener refused is not replaced.
                while link.conn.loss().is_none() {
                    let Ok((mut send, recv)) = link.conn.open_bi().await else {
                        return;
                    };
                    if send.write(head.clone()).await.is_err() {
                        continue;
                    }
                    let raw = IncomingRaw {
                        recv,
                        send: Some(send),
                        peer: link.peer.clone(),
                        live: None,
                    };
                    let parked = dispatch.clone().parked(&link, raw);
                    let read = tokio::select! {
                        r = parked => r,
                        _ = link.conn.closed() => return,
                    };
                    if !read {
                        return;
                    }
                }
            });
        }
    }

    pub(super) fn close(&self) {
        self.tx.lock().unwrap().take();
        self.life.kill(LossCause::LocallyClosed);
    }
}

impl Endpoints for Feed {
    type Queue = Sender<Queued>;

    fn find(&self, path: &str) -> Option<(RouteKind, Option<Sender<Queued>>, u64)> {
        if !self.aimed.lock().unwrap().iter().any(|(_, p)| p == path) {
            return None;
        }
        let tx = self.tx.lock().unwrap().clone()?;
        Some((RouteKind::Puller, Some(tx), self.max_body))
    }

    fn publication(&self, _: &str) -> Option<std::result::Result<Arc<dyn Publication>, RouteKind>> {
        None
    }

    fn claimable(&self, _: &str) -> Option<Arc<dyn Claimable>> {
        None
    }
}

/// A dialler's reverse dispatch has no listener to tell of connections.
struct Unheard;

impl Arrivals for Unheard {
    fn connected(&self, _: &str, _: Option<&PeerIdentity>) {}
    fn ended(&self, _: &str, _: LossCause) {}
}
