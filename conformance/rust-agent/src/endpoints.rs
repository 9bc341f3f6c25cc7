//! The background behaviours of bound endpoints (README §Background behaviours): each accepted
//! stream is handled in a task of its own and reported as events, so the runner waits for an
//! event instead of a clock.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use weida::{Acceptor, Error, Exchange, Incoming, IncomingTransfer, Puller, Replier, Subscriber};

use crate::body::{summary, Tally};
use crate::protocol::{meta_fields, metadata_json, Failure, Out};

/// What a replier does with each exchange.
#[derive(Clone, Copy)]
pub(crate) enum ReplierMode {
    /// Takes the body, replies with it and its metadata.
    Echo,
    /// Reads the request in chunks and writes each to a streamed reply as it arrives.
    StreamEcho,
    /// Takes the body and never answers (the exchange is kept alive).
    Hold,
    /// Rejects at once, with the reason.
    Reject,
    /// Takes the body and drops the exchange unanswered.
    Drop,
}

impl ReplierMode {
    pub(crate) fn parse(s: &str) -> Result<Self, Failure> {
        Ok(match s {
            "echo" => Self::Echo,
            "stream_echo" => Self::StreamEcho,
            "hold" => Self::Hold,
            "reject" => Self::Reject,
            "drop" => Self::Drop,
            other => return Err(Failure::bad(format!("unknown replier mode {other:?}"))),
        })
    }
}

/// What a puller does with each message.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum PullerMode {
    /// `recv()` in a loop: whole messages.
    Recv,
    /// `accept()` in a loop, each message read chunk by chunk.
    Stream,
    /// Nothing in the background: the `recv` op takes messages.
    Manual,
}

impl PullerMode {
    pub(crate) fn parse(s: &str) -> Result<Self, Failure> {
        Ok(match s {
            "recv" => Self::Recv,
            "stream" => Self::Stream,
            "manual" => Self::Manual,
            other => return Err(Failure::bad(format!("unknown puller mode {other:?}"))),
        })
    }
}

/// A bound endpoint that answers exchanges: a replier, or an acceptor (which also takes
/// one-way streams).
pub(crate) enum Answering {
    Replier(Replier),
    Acceptor(Acceptor),
}

impl Answering {
    pub(crate) fn address(&self) -> String {
        match self {
            Self::Replier(r) => r.address().to_string(),
            Self::Acceptor(a) => a.address().to_string(),
        }
    }

    async fn accept(&self) -> Result<Incoming, Error> {
        match self {
            Self::Replier(r) => r.accept().await.map(Incoming::Exchange),
            Self::Acceptor(a) => a.accept().await,
        }
    }
}

/// Each exchange handled in `mode`, and each one-way stream (an acceptor's) read chunk by chunk
/// as a `stream` puller reads it, in a task of its own; `closed` when accepting ends.
pub(crate) fn serve_answering(
    endpoint: Answering,
    handle: String,
    mode: ReplierMode,
    reason: String,
    out: Out,
) {
    tokio::spawn(async move {
        loop {
            match endpoint.accept().await {
                Ok(Incoming::Stream(t)) => {
                    out.event("accepted", &handle, meta_fields(t.meta()));
                    let (handle, out) = (handle.clone(), out.clone());
                    tokio::spawn(async move { read_transfer(t, &handle, &out).await });
                }
                Ok(Incoming::Exchange(ex)) => {
                    out.event("accepted", &handle, meta_fields(ex.meta()));
                    let (handle, reason, out) = (handle.clone(), reason.clone(), out.clone());
                    tokio::spawn(async move { exchange(ex, &handle, mode, &reason, &out).await });
                }
                Err(e) => return out.event_error("closed", &handle, &e),
            }
        }
    });
}

async fn exchange(mut ex: Exchange, handle: &str, mode: ReplierMode, reason: &str, out: &Out) {
    let meta = ex.meta().metadata.clone();
    if let ReplierMode::Reject = mode {
        match ex.reject(reason).await {
            Ok(()) => out.event("rejected", handle, Map::new()),
            Err(e) => out.event_error("reply_failed", handle, &e),
        }
        return;
    }
    if let ReplierMode::StreamEcho = mode {
        return stream_echo(ex, handle, out).await;
    }
    let body = match ex.take_body().await {
        Ok(b) => b,
        Err(e) => return out.event_error("request_failed", handle, &e),
    };
    let mut f = Map::new();
    f.insert("body".into(), summary(&body));
    f.insert("metadata".into(), metadata_json(&meta));
    out.event("request", handle, f);
    match mode {
        ReplierMode::Echo => match ex.reply_with(meta, body).await {
            Ok(()) => out.event("replied", handle, Map::new()),
            Err(e) => out.event_error("reply_failed", handle, &e),
        },
        ReplierMode::Hold => {
            // Keep the exchange: the replier acted and never answers.
            std::future::pending::<()>().await;
            drop(ex);
        }
        ReplierMode::Drop => {
            drop(ex);
            out.event("dropped", handle, Map::new());
        }
        ReplierMode::Reject | ReplierMode::StreamEcho => unreachable!("handled above"),
    }
}

/// Reads the request chunk by chunk, then streams the same bytes back through `open_reply`.
/// (`open_reply` consumes the exchange, request half included, so the request is read to its
/// end first.)
async fn stream_echo(mut ex: Exchange, handle: &str, out: &Out) {
    let meta = ex.meta().metadata.clone();
    let mut tally = Tally::default();
    let mut chunks = Vec::new();
    loop {
        match ex.read_chunk().await {
            Ok(Some(c)) => {
                if chunks.is_empty() {
                    out.event("receiving", handle, size_field(c.len()));
                }
                tally.add(&c);
                chunks.push(c);
            }
            Ok(None) => break,
            Err(e) => return out.event_error("request_failed", handle, &e),
        }
    }
    let mut f = Map::new();
    f.insert("body".into(), tally.summary());
    f.insert("metadata".into(), metadata_json(&meta));
    out.event("request", handle, f);
    let outcome: Result<(), Error> = async {
        let mut reply = ex.open_reply(meta).await?;
        for c in chunks {
            reply.write(c).await?;
        }
        reply.finish().await?;
        Ok(())
    }
    .await;
    match outcome {
        Ok(()) => out.event("replied", handle, Map::new()),
        Err(e) => out.event_error("reply_failed", handle, &e),
    }
}

/// A bus member's receiving, as a `recv` puller's.
pub(crate) fn serve_bus(bus: Arc<weida::Bus>, handle: String, out: Out) {
    tokio::spawn(async move { receive_each(&*bus, &handle, &out).await });
}

/// A dialling puller's receiving, as a `recv` puller's.
pub(crate) fn serve_dialing_puller(p: Arc<weida::DialingPuller>, handle: String, out: Out) {
    tokio::spawn(async move { receive_each(&*p, &handle, &out).await });
}

/// A pair's receiving, as a `recv` puller's.
pub(crate) fn serve_pair(pair: Arc<weida::Pair>, handle: String, out: Out) {
    tokio::spawn(async move { receive_each(&*pair, &handle, &out).await });
}

/// `recv` in a loop: a `received` event per message (with its sequence and gap under
/// PerProducer ordering, PATTERNS §1.7, else null), `receive_failed` for one that failed, and
/// `closed` at the end.
async fn receive_each<R: weida::Receiving>(r: &R, handle: &str, out: &Out) {
    loop {
        match r.recv().await {
            Ok(m) => {
                let mut f = meta_fields(&m.meta);
                f.insert("body".into(), summary(&m.body));
                f.insert("sequence".into(), m.meta.sequence.into());
                f.insert("gap".into(), m.meta.gap.into());
                out.event("received", handle, f);
            }
            Err(Error::Closed) => return out.event_error("closed", handle, &Error::Closed),
            Err(e) => out.event_error("receive_failed", handle, &e),
        }
    }
}

pub(crate) fn serve_puller(puller: Arc<Puller>, handle: String, mode: PullerMode, out: Out) {
    tokio::spawn(async move {
        loop {
            match mode {
                PullerMode::Manual => return,
                PullerMode::Recv => return receive_each(&*puller, &handle, &out).await,
                PullerMode::Stream => match puller.accept().await {
                    Ok(t) => {
                        out.event("accepted", &handle, meta_fields(t.meta()));
                        let (handle, out) = (handle.clone(), out.clone());
                        tokio::spawn(async move { read_transfer(t, &handle, &out).await });
                    }
                    Err(e) => return out.event_error("closed", &handle, &e),
                },
            }
        }
    });
}

async fn read_transfer(mut t: IncomingTransfer, handle: &str, out: &Out) {
    let mut tally = Tally::default();
    let mut first = true;
    loop {
        match t.read_chunk().await {
            Ok(Some(c)) => {
                if std::mem::take(&mut first) {
                    out.event("receiving", handle, size_field(c.len()));
                }
                tally.add(&c)
            }
            Ok(None) => break,
            Err(e) => return out.event_error("receive_failed", handle, &e),
        }
    }
    let mut f = meta_fields(t.meta());
    f.insert("body".into(), tally.summary());
    out.event("received", handle, f);
}

/// `{"size": n}`: the first chunk's size, in a `receiving` event.
fn size_field(n: usize) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("size".into(), json!(n));
    m
}

/// A whole message as an op result.
pub(crate) fn message_json(m: &weida::Message) -> Value {
    let mut f = meta_fields(&m.meta);
    f.insert("body".into(), summary(&m.body));
    json!(f)
}

/// A subscriber in `recv` mode, from its first connect: `recv()` in a loop, each copy a
/// `received` event; the loop ends with `closed` or, once no publisher is left, with
/// `receive_failed`.
pub(crate) fn serve_subscriber(sub: Arc<Subscriber>, handle: String, out: Out) {
    tokio::spawn(async move {
        loop {
            match sub.recv().await {
                Ok(m) => {
                    let Value::Object(f) = copy_json(&m) else {
                        unreachable!("an object")
                    };
                    out.event("received", &handle, f);
                }
                Err(Error::Closed) => return out.event_error("closed", &handle, &Error::Closed),
                Err(e) => return out.event_error("receive_failed", &handle, &e),
            }
        }
    });
}

/// A collector's receiving: a `received` event per message kept, as a subscriber's copies
/// (with their topic), `receive_failed` for one that failed, and `closed` at the end.
pub(crate) fn serve_collector(c: Arc<weida::BoundSubscriber>, handle: String, out: Out) {
    tokio::spawn(async move {
        loop {
            match c.recv().await {
                Ok(m) => {
                    let Value::Object(f) = copy_json(&m) else {
                        unreachable!("an object")
                    };
                    out.event("received", &handle, f);
                }
                Err(Error::Closed) => return out.event_error("closed", &handle, &Error::Closed),
                Err(e) => out.event_error("receive_failed", &handle, &e),
            }
        }
    });
}

/// A Pub/Sub copy as an op result or event: a message's fields with its topic, sequence and
/// gap (null when absent).
pub(crate) fn copy_json(m: &weida::Message) -> Value {
    let mut f = meta_fields(&m.meta);
    f.insert("body".into(), summary(&m.body));
    f.insert("topic".into(), json!(m.meta.topic));
    f.insert("sequence".into(), json!(m.meta.sequence));
    f.insert("gap".into(), json!(m.meta.gap));
    json!(f)
}
