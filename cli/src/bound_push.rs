//! Push/Pull the other way round (docs/PATTERNS.md §3.1): `weida push --bind` binds a pusher
//! (a ventilator) and deals its input round-robin to the workers that dial it, and `weida pull
//! --connect` is such a worker, printing its share as `weida pull` prints messages.

use std::cell::Cell;

use futures_util::stream::{FuturesUnordered, StreamExt};
use weida::{
    BoundPusher, DialingPuller, EndpointOptions, Error, ErrorCode, IncomingMeta, LossCause,
    Message, PeerEvent, PeerEvents,
};

use crate::args::{PullArgs, PushArgs};
use crate::client::{self, dialling_runtime, within, Split, RECEIPT_WINDOW};
use crate::exit::Failure;
use crate::input::{Bodies, Input, Source};
use crate::output;
use crate::pubsub::{plural, wait_for_peers};
use crate::serve::{self, announce, warn};
use crate::signal::Stop;

/// `weida push --bind`: the pusher bound at URL's path and announced, then (once
/// `--wait-workers` are connected) every message of the input dealt to the workers, every
/// receipt awaited, and the listener closed as the serving roles close it. A signal
/// interrupts it (status 130), as it does `pub`.
pub(crate) async fn push(args: PushArgs, stop: &mut Stop) -> Result<(), Failure> {
    let d = &args.dial;
    let source = client::source(args.data.clone(), args.input.clone(), Split::Lines);
    let (rt, listener, path) = serve::bind_url(&d.url, d.identity.as_deref(), None).await?;
    // Each message waits for a worker, and for its stream, at most --timeout.
    let options = EndpointOptions::new().send_timeout(d.timeout);
    let jobs = listener.pusher_with(&path, &options)?;
    announce(jobs.address(), args.ready)?;
    let dealt = stop
        .interrupt(async {
            wait_for_peers(args.wait_workers, d.timeout, ("worker", "workers"), || {
                jobs.peer_count()
            })
            .await?;
            deal(&jobs, &args, source).await
        })
        .await;
    jobs.close();
    // Every receipt resolved in `deal`; this closes as `pull` and `rep` do.
    serve::close(&rt, &dealt).await;
    drop(listener);
    dealt
}

/// Sends the input, each message to the next worker. A message lost on its way (its worker
/// left, or refused it) is a warning, and the rest go on to the workers there are; the first
/// such loss is the command's failure at the end. Waiting for a worker past `--timeout` ends
/// it at once.
async fn deal(jobs: &BoundPusher, args: &PushArgs, source: Source) -> Result<(), Failure> {
    let d = &args.dial;
    let meta = client::metadata(d);
    let no_worker = |e: Error| {
        let f = Failure::from(e).context(format!("pushing to the workers at {}", jobs.address()));
        match (f.weida().map(Error::code), jobs.peer_count()) {
            (Some(ErrorCode::Timeout), 0) => {
                f.hint("no worker (weida pull --connect) was connected before --timeout passed")
            }
            _ => f,
        }
    };
    let mut bodies = match source {
        Source::Whole(file) => {
            let mut input = Input::open(file.as_deref()).await?;
            let mut t = jobs.open(meta).await.map_err(no_worker)?;
            // A failed read drops `t` unfinished: the worker sees CANCELED, never a short body.
            while let Some(chunk) = input.chunk().await? {
                t.write(chunk).await?;
            }
            let delivery = t.finish().await?;
            return within(d.timeout, delivery.delivered())
                .await
                .map_err(|e| Failure::from(e).context("pushing to a worker"));
        }
        Source::Args(a) => Bodies::Args(a.into_iter()),
        Source::Lines(file) => Bodies::Lines(Input::open(file.as_deref()).await?),
    };
    let mut tally = Tally::default();
    let mut receipts = FuturesUnordered::new();
    while let Some(body) = bodies.next().await? {
        let mut t = jobs.open(meta.clone()).await.map_err(no_worker)?;
        tally.sent += 1;
        // Once its stream is open a message is its worker's: a worker that leaves loses it.
        let written = async {
            t.write(body).await?;
            Ok::<_, Error>(t.finish().await?.delivered())
        };
        match written.await {
            Ok(receipt) => receipts.push(receipt),
            Err(e) => tally.settle(Err(e)),
        }
        if receipts.len() >= RECEIPT_WINDOW {
            tally.settle(receipts.next().await.expect("not empty"));
        }
    }
    within(d.timeout, async {
        while let Some(r) = receipts.next().await {
            tally.settle(r);
        }
        Ok(())
    })
    .await
    .map_err(|e| Failure::from(e).context("waiting for the workers' receipts"))?;
    match tally.first {
        None => Ok(()),
        Some(e) => Err(Failure::from(e).context(format!(
            "pushing to the workers: {} of {} {} not delivered",
            tally.lost,
            tally.sent,
            plural(tally.sent, "message", "messages")
        ))),
    }
}

/// What `push --bind` sent, and what of it was lost.
#[derive(Default)]
struct Tally {
    sent: u64,
    lost: u64,
    /// The first loss: the command's failure.
    first: Option<Error>,
}

impl Tally {
    /// A message's outcome: a loss is reported on stderr at once, and counted.
    fn settle(&mut self, r: weida::Result<()>) {
        if let Err(e) = r {
            warn(
                "a message was not delivered to its worker",
                &IncomingMeta::default(),
                &e,
            );
            self.lost += 1;
            self.first.get_or_insert(e);
        }
    }
}

/// `weida pull --connect`: the bound pusher at URL dialled and a share claimed, then each
/// message printed as `pull` prints it until `--count`, a signal, or (with `--reconnect
/// never`) the pusher's close.
pub(crate) async fn pull(args: PullArgs, stop: &mut Stop) -> Result<(), Failure> {
    let s = &args.serve;
    let rt = dialling_runtime(
        s.identity.as_deref(),
        &args.trust_pins,
        None,
        s.max_body,
        args.reconnect.policy(),
    )?;
    let puller = rt.puller();
    args.reconnect.follow(puller.events());
    // Taken before the connect, so no loss is missed.
    let events = puller.events();
    let pulled = match stop.interrupt(claim(&puller, &args)).await {
        Ok(()) => work(&rt, &puller, events, &args, stop).await,
        Err(f) => Err(f),
    };
    // Leave at once, however it ended: the pusher deals to the workers left from now on,
    // rather than once this one's idle timeout passes.
    puller.close();
    rt.close().await;
    pulled
}

/// Dials the pusher and claims a share, bounded by `--timeout`; `READY <URL>` once claimed.
async fn claim(puller: &DialingPuller, args: &PullArgs) -> Result<(), Failure> {
    let url = &args.serve.url;
    let connecting = async {
        match args.reconnect.later {
            true => puller.connect_later(url).await,
            false => puller.connect(url).await,
        }
    };
    within(args.timeout, connecting)
        .await
        .map_err(|e| Failure::from(e).context(format!("connecting to {url}")))?;
    if args.serve.ready {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "READY {url}")
            .and_then(|()| out.flush())
            .map_err(Failure::output)?;
    }
    eprintln!("pulling from {url}");
    Ok(())
}

/// The worker's share printed, as `pull` prints messages (its progress line too).
async fn work(
    rt: &weida::Runtime,
    puller: &DialingPuller,
    mut events: PeerEvents,
    args: &PullArgs,
    stop: &mut Stop,
) -> Result<(), Failure> {
    let s = &args.serve;
    let mut received = 0u64;
    // Why the pusher is gone for good, once it is: the receive then ends.
    let mut gone: Option<LossCause> = None;
    let settled = Cell::new(rt.counters().bytes_received);
    let served = async {
        while s.count.is_none_or(|n| received < n) {
            let next = next(puller, &mut events, &mut gone);
            let next = stop.finish(next, || puller.close()).await?;
            settled.set(rt.counters().bytes_received);
            match next {
                Ok(m) => {
                    received += 1;
                    print(args, &m)?;
                }
                // Closed: by a signal (what was queued has been printed), or below.
                Err(Error::Closed) => break,
                // A message cancelled by the pusher, above --max-body, or cut by a lost
                // connection: that message is gone, the worker goes on.
                Err(e) => warn(
                    "a message could not be received",
                    &IncomingMeta::default(),
                    &e,
                ),
            }
        }
        Ok::<_, Failure>(())
    };
    tokio::select! {
        served = served => served?,
        never = serve::arriving(rt, &settled) => match never {},
    }
    let Some(cause) = gone else {
        return Ok(());
    };
    match (cause, s.count) {
        // The pusher ended the feed: done, unless --count asked for more.
        (LossCause::PeerClosed, None) => {
            eprintln!("the pusher closed");
            Ok(())
        }
        (cause, Some(n)) if received < n => Err(Failure::from(Error::ConnectionLost(cause))
            .context(format!("receiving from {} ({received} of {n})", s.url))),
        (cause, None) => Err(Failure::from(Error::ConnectionLost(cause))
            .context(format!("receiving from {}", s.url))),
        // --count was reached as the pusher went.
        (_, Some(_)) => Ok(()),
    }
}

/// The next message; once the pusher is given up (its connection lost and not redialled:
/// `--reconnect never`, or another key answers there), the puller is closed, and what it
/// received is still handed out before `Closed`. Cancel-safe.
async fn next(
    puller: &DialingPuller,
    events: &mut PeerEvents,
    gone: &mut Option<LossCause>,
) -> weida::Result<Message> {
    loop {
        tokio::select! {
            biased;
            m = puller.recv() => return m,
            cause = given_up(events), if gone.is_none() => {
                *gone = Some(cause);
                puller.close();
            }
        }
    }
}

/// Resolves once the pusher is given up, with the last loss; never if the endpoint's events
/// end first. Cancel-safe.
async fn given_up(events: &mut PeerEvents) -> LossCause {
    loop {
        match events.next().await {
            // Our own close (after a signal) is no loss of the pusher.
            Some(Ok(PeerEvent::GaveUp { cause, .. })) if cause != LossCause::LocallyClosed => {
                return cause;
            }
            Some(_) => {}
            None => return std::future::pending().await,
        }
    }
}

/// Prints a message as `pull` does, unless `--quiet`.
fn print(args: &PullArgs, m: &Message) -> Result<(), Failure> {
    let s = &args.serve;
    if !s.quiet {
        output::print_message(s.format, &m.meta, &m.body).map_err(Failure::output)?;
    }
    Ok(())
}
