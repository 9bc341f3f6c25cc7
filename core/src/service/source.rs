//! Where a registration's messages come from, and where its copies go.

use std::sync::Arc;

use crate::address::{Address, Host, Target};
use crate::error::{Error, Result};
use crate::patterns::{
    BoundSubscriber, DialingPublisher, DialingPuller, Puller, Pusher, Replier, Subscriber,
};
use crate::{Exchange, Message, Metadata};

/// The endpoint a registration reads.
pub(crate) enum Source {
    /// A bound Pull path: a queue.
    Queue(Puller),
    /// A puller dialling bound pushers.
    Pulling(DialingPuller),
    /// A bound Sub path (publishers dial it): a fan-out.
    FanOut(BoundSubscriber),
    /// A subscriber dialling a bound publisher, and the filters it installs there.
    Subscribing(Subscriber, Vec<String>),
    /// A bound Rep path, until the registration starts.
    Replying(Replier),
    /// A bound Rep path whose requests are read by a task of their own.
    Requests(Requests),
}

/// A Rep path's requests, each read whole by a task of its own, handed out as they complete: a
/// request slow to arrive (a peer that opens one and stops writing, any number of them) holds
/// up no other; what bounds them is the core's admission (each connection's `peer_share`,
/// `max_connections`) and `body_idle_timeout`. Bounded toward the handlers by a channel of
/// `READ_AHEAD` requests read whole and not yet taken, past which no more are accepted.
pub(crate) struct Requests {
    replier: Arc<Replier>,
    /// Requests handed back (`Job::give_back`), taken before the channel's, newest first.
    returned: std::sync::Mutex<Vec<Arrival>>,
    /// `returned` holds one: read without its lock on every request.
    any_returned: std::sync::atomic::AtomicBool,
    /// Raised once per request handed back: a `recv` waiting on the channel takes it.
    handed_back: tokio::sync::Notify,
    taken: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Result<Arrival>>>,
    reader: tokio::task::AbortHandle,
}

/// Requests read whole and not yet handed to a handler.
const READ_AHEAD: usize = 64;

impl Requests {
    /// Starts reading `replier`'s requests (inside a tokio runtime).
    pub(crate) fn start(replier: Replier) -> Self {
        let replier = Arc::new(replier);
        let (tx, rx) = tokio::sync::mpsc::channel(READ_AHEAD);
        let reader = tokio::spawn(read_requests(replier.clone(), tx)).abort_handle();
        Self {
            replier,
            returned: std::sync::Mutex::default(),
            any_returned: std::sync::atomic::AtomicBool::new(false),
            handed_back: tokio::sync::Notify::new(),
            taken: tokio::sync::Mutex::new(rx),
            reader,
        }
    }
}

impl Requests {
    /// A request handed back, newest first, if any.
    fn take_returned(&self) -> Option<Arrival> {
        use std::sync::atomic::Ordering;
        if !self.any_returned.load(Ordering::Acquire) {
            return None;
        }
        let mut r = self.returned.lock().unwrap();
        let a = r.pop();
        self.any_returned.store(!r.is_empty(), Ordering::Release);
        a
    }

    fn give_back(&self, a: Arrival) {
        let mut r = self.returned.lock().unwrap();
        r.push(a);
        self.any_returned
            .store(true, std::sync::atomic::Ordering::Release);
        drop(r);
        // One permit per request handed back: one waiting `recv` takes it (or the next to
        // wait, if none is waiting now).
        self.handed_back.notify_one();
    }

    /// The next request: one handed back, or the next read whole. Cancel-safe.
    async fn recv(&self) -> Result<Arrival> {
        loop {
            // Made before the check: a request handed back after it leaves a permit.
            let handed_back = self.handed_back.notified();
            if let Some(a) = self.take_returned() {
                return Ok(a);
            }
            tokio::select! {
                biased;
                () = handed_back => {}
                r = async { self.taken.lock().await.recv().await } => {
                    return r.unwrap_or(Err(Error::Closed));
                }
            }
        }
    }
}

impl Drop for Requests {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_requests(replier: Arc<Replier>, tx: tokio::sync::mpsc::Sender<Result<Arrival>>) {
    let mut reading = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = replier.accept() => match accepted {
                Ok(mut exchange) => {
                    reading.spawn(async move {
                        let body = exchange.take_body().await?;
                        let meta = Arc::new(exchange.meta().clone());
                        Ok(Arrival {
                            message: Message { meta, body },
                            exchange: Some(Box::new(exchange)),
                        })
                    });
                }
                Err(e) => {
                    let closed = matches!(e, Error::Closed);
                    if tx.send(Err(e)).await.is_err() || closed {
                        return;
                    }
                }
            },
            Some(read) = reading.join_next() => {
                let arrival = read.unwrap_or_else(|_| Err(Error::Canceled));
                if tx.send(arrival).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// One arrival: a message, and for a Rep path the exchange to answer.
pub(crate) struct Arrival {
    pub(crate) message: Message,
    /// Boxed: an exchange is large, and an arrival (and the job it becomes) is moved about
    /// once per message on every path, not only a Rep path's.
    pub(crate) exchange: Option<Box<Exchange>>,
}

impl Source {
    /// The next arrival. Cancel-safe: every receive it makes is.
    pub(crate) async fn recv(&self) -> Result<Arrival> {
        let message = match self {
            Self::Queue(p) => p.recv().await?,
            Self::Pulling(p) => p.recv().await?,
            Self::FanOut(s) => s.recv().await?,
            Self::Subscribing(s, _) => s.recv().await?,
            // Not started: a started registration reads its requests through `Requests`.
            Self::Replying(_) => return Err(Error::Closed),
            Self::Requests(q) => return q.recv().await,
        };
        Ok(Arrival {
            message,
            exchange: None,
        })
    }

    /// The next arrival if one is ready now, without waiting. The common case under load: no
    /// waiting machinery.
    pub(crate) fn try_recv(&self) -> Option<Result<Arrival>> {
        let r = match self {
            Self::Queue(p) => p.try_recv(),
            Self::Pulling(p) => p.try_recv(),
            Self::FanOut(s) => s.try_recv(),
            Self::Subscribing(s, _) => s.try_recv(),
            Self::Replying(_) => None,
            Self::Requests(q) => {
                if let Some(a) = q.take_returned() {
                    return Some(Ok(a));
                }
                return q.taken.try_lock().ok()?.try_recv().ok();
            }
        }?;
        Some(r.map(|message| Arrival {
            message,
            exchange: None,
        }))
    }

    /// Whole messages ready now, up to `max` in all in `out`, under one lock where the
    /// endpoint can (a queue); elsewhere none, and `try_recv` takes them one at a time.
    pub(crate) fn take_ready(&self, out: &mut Vec<Message>, max: usize) {
        if let Self::Queue(p) = self {
            p.take_ready(out, max);
        }
    }

    /// Puts an arrival taken and not handled back in front of the endpoint's queue: the next
    /// receive returns it first.
    pub(crate) fn give_back(&self, a: Arrival) {
        match self {
            Self::Queue(p) => p.give_back(a.message),
            Self::Pulling(p) => p.give_back(a.message),
            Self::FanOut(s) => s.give_back(a.message),
            Self::Subscribing(s, _) => s.give_back(a.message),
            Self::Replying(_) => {}
            Self::Requests(q) => q.give_back(a),
        }
    }

    /// Stops taking messages: the endpoint is closed (a bound path is unbound).
    pub(crate) fn close(&self) {
        match self {
            Self::Queue(p) => p.close(),
            Self::Pulling(p) => p.close(),
            Self::FanOut(s) => s.close(),
            Self::Subscribing(s, _) => s.close(),
            Self::Replying(r) => r.close(),
            Self::Requests(q) => {
                q.reader.abort();
                q.replier.close();
            }
        }
    }

    /// What a log line names it by.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Queue(_) => "queue",
            Self::Pulling(_) => "pulling",
            Self::FanOut(_) => "fan-out",
            Self::Subscribing(..) => "subscribing",
            Self::Replying(_) | Self::Requests(_) => "rep",
        }
    }
}

/// Where copies go: a queue (a pusher dialling a bound Pull path) or, for a bound fan-out, the
/// registration's own Sub path (a publisher dialling it, so the copy reaches it alone).
pub(crate) enum Sink {
    Push(Pusher),
    Publish(DialingPublisher),
}

/// The META name a copy sent to a queue carries its Pub/Sub topic under: a queue's messages
/// have no topic field of their own.
pub const TOPIC_HEADER: &str = "weida-topic";

impl Sink {
    /// Sends `message`'s body with `meta`. Cancel-safe as `Pusher::send_with` is.
    pub(crate) async fn send(&self, message: &Message, mut meta: Metadata) -> Result<()> {
        match self {
            Self::Push(p) => {
                if let Some(topic) = &message.meta.topic {
                    if meta.get(TOPIC_HEADER).is_none() {
                        meta.insert(TOPIC_HEADER, topic.clone());
                    }
                }
                p.send_with(meta, message.body.clone()).await
            }
            Self::Publish(p) => {
                let topic = message.meta.topic.as_deref().unwrap_or_default();
                match p.publish_with(topic, meta, message.body.clone())? {
                    0 => Err(Error::NotConnected),
                    _ => Ok(()),
                }
            }
        }
    }

    pub(crate) fn close(&self) {
        match self {
            Self::Push(p) => p.leave(),
            Self::Publish(p) => p.close(),
        }
    }
}

/// Whether `a` and `b` lead to the same endpoint: the same path at the same target, where a
/// QUIC host that is a loopback or unspecified address (what a listener bound to `0.0.0.0`
/// reports) is taken as this machine's.
pub(crate) fn same_endpoint(a: &Address, b: &Address) -> bool {
    if a.path() != b.path() {
        return false;
    }
    match (a.target(), b.target()) {
        (Target::Quic { host: ha, port: pa }, Target::Quic { host: hb, port: pb }) => {
            pa == pb && (ha == hb || (local(ha) && local(hb)))
        }
        (ta, tb) => ta == tb,
    }
}

fn local(h: &Host) -> bool {
    match h {
        Host::Ip(ip) => ip.is_loopback() || ip.is_unspecified(),
        Host::Name(n) => n == "localhost",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Address {
        Address::parse(s).unwrap()
    }

    #[test]
    fn one_endpoint_by_another_name_is_the_same() {
        assert!(same_endpoint(
            &a("weida://127.0.0.1:5000/jobs"),
            &a("weida://localhost:5000/jobs")
        ));
        assert!(same_endpoint(
            &a("weida://0.0.0.0:5000/jobs"),
            &a("weida://[::1]:5000/jobs")
        ));
        assert!(!same_endpoint(
            &a("weida://127.0.0.1:5000/jobs"),
            &a("weida://127.0.0.1:5000/dead")
        ));
        assert!(!same_endpoint(
            &a("weida://127.0.0.1:5000/jobs"),
            &a("weida://127.0.0.1:5001/jobs")
        ));
        assert!(same_endpoint(
            &a("weida+unix:///tmp/s//jobs"),
            &a("weida+unix:///tmp/s//jobs")
        ));
        assert!(!same_endpoint(
            &a("weida+inproc://x/jobs"),
            &a("weida+inproc://y/jobs")
        ));
    }
}
