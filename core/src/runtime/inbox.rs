//! A bound endpoint's receiving side: its queue (what dispatch admitted), a message a
//! cancelled receive was collecting, messages handed back and an error deferred by a batch
//! receive, in the order a receive must take them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::queue::{Receiver, Taker, TryRecvError};
use super::routes::RouteGuard;
use crate::address::Address;
use crate::config::Bounds;
use crate::connection::context::Context;
use crate::connection::dispatch::Queued;
use crate::connection::handles::{Incoming, IncomingTransfer, Message, Partial};
use crate::error::{Error, Result};

/// The receiving side of a bound endpoint: its queue, and its route that goes when it drops.
pub(crate) struct Inbox {
    pub(crate) rx: tokio::sync::Mutex<InboxRx>,
    /// The bound path it receives at; None for a dialling endpoint's inbox (a pair's), fed by
    /// the streams its listener opens toward it.
    route: Option<RouteGuard>,
    pub(crate) ctx: Arc<Context>,
    address: Option<Address>,
    /// The endpoint's own bounds (its `EndpointOptions`, else the runtime's).
    pub(crate) bounds: Bounds,
    /// Messages handed back undelivered (a binding whose caller cancelled as the message
    /// arrived), served before anything else.
    returned: Mutex<VecDeque<Message>>,
    /// Wakes a receive waiting while a message is handed back or an error deferred.
    pub(crate) handed_back: tokio::sync::Notify,
    /// The errors of messages `recv_many` met after its first, in order, each returned by a
    /// next receive (after any message handed back). Under a lock of its own, never `rx`'s:
    /// keeping one must not wait, or a batch receive dropped while a concurrent receive held
    /// `rx` lost the messages it had already taken.
    deferred: Mutex<VecDeque<Error>>,
    /// Takes a whole message off the queue without the `rx` lock: a tokio lock's release
    /// takes its waiter list's lock too, and on a Push/Pull of small messages the `rx` lock
    /// per receive was about 7 % of the whole pipeline's time.
    ready: Taker<Queued>,
    /// `deferred` holds an error, which comes before the queue: set under its lock.
    deferred_first: AtomicBool,
    /// `returned` is not empty: set under its lock.
    returned_first: AtomicBool,
}

/// An endpoint's queue and the messages being collected whole (each read as its bytes come,
/// so one that stalls holds back no other; resumed by the next receive when one is cancelled).
pub(crate) struct InboxRx {
    rx: Receiver<Queued>,
    pub(crate) collecting: Vec<Partial>,
    /// The queue said it is closed and empty: only `collecting` is left.
    pub(crate) drained: bool,
}

impl InboxRx {
    /// The next stream; `Closed` once the listener or runtime is gone (they drop the routes,
    /// which closes the queue). Cancel-safe.
    pub(crate) async fn next(&mut self) -> Result<Queued> {
        self.rx.recv().await.ok_or(Error::Closed)
    }

    /// What is being collected, and the next item of the queue (None once it is closed and
    /// empty: then `drained`), apart, to wait on both. The wait is cancel-safe.
    pub(crate) fn split(
        &mut self,
    ) -> (
        &mut Vec<Partial>,
        impl std::future::Future<Output = Option<Queued>> + '_,
    ) {
        let (rx, drained) = (&mut self.rx, &mut self.drained);
        let next = async move {
            let q = rx.recv().await;
            *drained = q.is_none();
            q
        };
        (&mut self.collecting, next)
    }

    /// The next item if one is queued now.
    pub(crate) fn try_next(&mut self) -> Option<Result<Queued>> {
        match self.rx.try_recv() {
            Ok(q) => Some(Ok(q)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(Error::Closed)),
        }
    }
}

impl Inbox {
    /// The receiving side of the endpoint bound by `route`, at `address`, whose queue `rx` is.
    pub(crate) fn new(
        rx: Receiver<Queued>,
        route: RouteGuard,
        ctx: Arc<Context>,
        address: Address,
        bounds: Bounds,
    ) -> Self {
        Self::with(rx, Some(route), ctx, Some(address), bounds)
    }

    /// The receiving side of a dialling endpoint (a pair): no path of its own; its queue closes
    /// when the senders its connections' dispatch holds are dropped.
    pub(crate) fn unrouted(rx: Receiver<Queued>, ctx: Arc<Context>, bounds: Bounds) -> Self {
        Self::with(rx, None, ctx, None, bounds)
    }

    fn with(
        rx: Receiver<Queued>,
        route: Option<RouteGuard>,
        ctx: Arc<Context>,
        address: Option<Address>,
        bounds: Bounds,
    ) -> Self {
        Self {
            ready: rx.taker(),
            deferred_first: AtomicBool::new(false),
            returned_first: AtomicBool::new(false),
            rx: tokio::sync::Mutex::new(InboxRx {
                rx,
                collecting: Vec::new(),
                drained: false,
            }),
            route,
            ctx,
            address,
            bounds,
            returned: Mutex::new(VecDeque::new()),
            handed_back: tokio::sync::Notify::new(),
            deferred: Mutex::new(VecDeque::new()),
        }
    }

    /// The next stream. Cancel-safe.
    pub(crate) async fn next(&self) -> Result<Incoming> {
        Ok(match self.rx.lock().await.next().await? {
            Queued::Incoming(i) => *i,
            // A lane's message, to an endpoint that takes streams: a finished stream of it.
            Queued::Message(m) => Incoming::Stream(IncomingTransfer::ready(m, self.ctx.clone())),
            Queued::Refused(e) => return Err(*e),
        })
    }

    /// A whole message (or a lane frame's refusal) at the front of the queue, taken without
    /// the `rx` lock when that keeps the order: nothing was handed back and no error is
    /// deferred. None: nothing such is ready, and the caller looks the slow way (which
    /// is also how a stream at the front is taken).
    pub(crate) fn take_ready(&self) -> Option<Result<Queued>> {
        if self.something_first() {
            return None;
        }
        match self
            .ready
            .try_recv_if(|q| !matches!(q, Queued::Incoming(_)))
        {
            Ok(q) => Some(Ok(q)),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(Error::Closed)),
        }
    }

    /// Whole messages from the front of the queue, up to `max` in all in `out`, under one lock,
    /// when [`Inbox::take_ready`] could take them; stops before anything else.
    pub(crate) fn take_ready_messages(&self, out: &mut Vec<Message>, max: usize) {
        if out.len() >= max || self.something_first() {
            return;
        }
        self.ready.recv_while(
            max - out.len(),
            |q| matches!(q, Queued::Message(_)),
            |q| {
                if let Queued::Message(m) = q {
                    out.push(m);
                }
            },
        );
    }

    /// A deferred error or a message handed back comes before what the queue holds: taking
    /// from the queue directly would overtake it. (A message still being collected does not:
    /// whole messages are delivered as they complete.)
    fn something_first(&self) -> bool {
        self.deferred_first.load(Ordering::Acquire) || self.returned_first.load(Ordering::Acquire)
    }

    /// Keeps `e` for a next receive, after any message handed back, and wakes a receive
    /// already waiting (it holds `rx` and waits on the queue, so it would not look). Never
    /// waits.
    pub(crate) fn defer(&self, e: Error) {
        let mut d = self.deferred.lock().unwrap();
        d.push_back(e);
        self.deferred_first.store(true, Ordering::Release);
        drop(d);
        self.handed_back.notify_waiters();
    }

    /// The first deferred error, if any.
    pub(crate) fn take_deferred(&self) -> Option<Error> {
        if !self.deferred_first.load(Ordering::Acquire) {
            return None;
        }
        let mut d = self.deferred.lock().unwrap();
        let e = d.pop_front();
        self.deferred_first.store(!d.is_empty(), Ordering::Release);
        e
    }

    /// Hands a message back, to be served before anything else.
    pub(crate) fn give_back(&self, message: Message) {
        let mut r = self.returned.lock().unwrap();
        r.push_back(message);
        self.returned_first.store(true, Ordering::Release);
        drop(r);
        self.handed_back.notify_waiters();
    }

    /// The first message handed back, if any.
    pub(crate) fn take_returned(&self) -> Option<Message> {
        if !self.returned_first.load(Ordering::Acquire) {
            return None;
        }
        let mut r = self.returned.lock().unwrap();
        let m = r.pop_front();
        self.returned_first.store(!r.is_empty(), Ordering::Release);
        m
    }

    /// Unbinds the path: nothing more is dispatched here (a new stream is refused with
    /// UNKNOWN_ENDPOINT), streams already queued are still handed out, then `Closed`.
    pub(crate) fn close(&self) {
        if let Some(r) = &self.route {
            r.close();
        }
    }

    /// The address of the bound path it receives at.
    pub(crate) fn address(&self) -> &Address {
        self.address
            .as_ref()
            .expect("only a bound endpoint asks for its address")
    }
}
