//! The Pub/Sub roles. `weida pub` binds a path, waits for subscribers if asked, publishes what
//! it reads to those whose filters select the topic, and reports the copies queued and dropped;
//! `weida sub` dials a publisher, installs its filters, and prints what arrives.
//!
//! The other way round (docs/PATTERNS.md §4.4): `weida sub --bind` binds a collector, which
//! keeps what its filters select of what arrives and counts the rest, and `weida pub
//! --connect` dials one and publishes to it.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use weida::filter::{validate_topic, Filter};
use weida::{
    BoundSubscriber, DialingPublisher, Error, Fingerprint, GuaranteeSet, IncomingMeta, Limits,
    LossCause, Message, Publisher, Runtime, RuntimeConfig, Subscriber, Trust,
};

use crate::args::{usage_error, OrderingArg, PubArgs, SubArgs};
use crate::client::{self, Split};
use crate::exit::Failure;
use crate::identity;
use crate::input::{Bodies, Input, Source};
use crate::output;
use crate::progress;
use crate::serve;
use crate::signal::Stop;

/// How often `pub` looks at its subscriber count: the core has no event for a subscriber's
/// arrival or departure, so `--wait-subscribers` and the end of `--linger` poll it (and
/// `pub --connect` its count of bytes written, for want of an event when a queue empties;
/// `push --bind --wait-workers` its count of workers).
const POLL: Duration = Duration::from_millis(10);

/// `weida pub`: every message of the input on its topic, then the linger, then the drops.
pub(crate) async fn publish(args: PubArgs, stop: &mut Stop) -> Result<(), Failure> {
    // A malformed topic is refused before anything is bound or dialled.
    if let Some(topic) = &args.topic {
        validate_topic(topic).map_err(|e| Failure::from(Error::from(e)))?;
    }
    let source = client::source(args.data.clone(), args.input.clone(), Split::Lines);
    if args.connect {
        return feed(args, source, stop).await;
    }
    let (rt, listener, path) = serve::bind_url(&args.url, args.identity.as_deref(), None).await?;
    let publisher = listener.publisher(&path)?;
    serve::announce(publisher.address(), args.ready)?;

    let mut tally = Tally::default();
    let published = stop
        .interrupt(async {
            wait_for_subscribers(&publisher, args.wait_subscribers, args.timeout).await?;
            publish_source(&publisher, &args, source, &mut tally).await
        })
        .await;
    if published.is_ok() {
        linger(&publisher, args.linger, stop).await;
    }
    // Copies still queued now are dropped by the close, and counted: report after it.
    publisher.close();
    let dropped = publisher.dropped();
    eprintln!("{}", tally.summary(&dropped));
    // Subscribers learn at once, not at their idle timeout.
    rt.close().await;
    drop(listener);
    published
}

/// `weida pub --connect`: the collector dialled, every message of the input published to
/// it, then the linger, then the drops, as `pub` reports them.
async fn feed(args: PubArgs, source: Source, stop: &mut Stop) -> Result<(), Failure> {
    let rt = Runtime::new(dialling(args.identity.as_deref(), &args.trust_pins)?)?;
    let publisher = rt.publisher();
    let connecting = async {
        client::within(args.timeout, publisher.connect(&args.url))
            .await
            .map_err(|e| Failure::from(e).context(format!("connecting to {}", args.url)))
    };
    // Nothing was published, so there is nothing to sum up; the close still tells the peer.
    if let Err(f) = stop.interrupt(connecting).await {
        rt.close().await;
        return Err(f);
    }
    let mut tally = Tally::default();
    let published = stop
        .interrupt(async {
            let bodies = match source {
                Source::Whole(_) => unreachable!("clap: --whole conflicts with --connect"),
                Source::Args(a) => Bodies::Args(a.into_iter()),
                Source::Lines(file) => Bodies::Lines(Input::open(file.as_deref()).await?),
            };
            publish_each(
                bodies,
                &args,
                &mut tally,
                TOO_LARGE_DIALLING,
                |topic, body| publisher.publish(topic, body),
            )
            .await
        })
        .await;
    if published.is_ok() {
        linger_dialled(&rt, &publisher, tally.bytes, args.linger, stop).await;
    }
    // Copies still queued now are dropped by the close, and counted: report after it.
    publisher.close();
    eprintln!("{}", tally.summary(&publisher.dropped()));
    rt.close().await;
    published
}

/// What `pub` sent, for its summary.
#[derive(Debug, Default)]
struct Tally {
    messages: u64,
    copies: u64,
    /// The body bytes of every copy queued: what `pub --connect` waits to see written.
    bytes: u64,
}

impl Tally {
    fn summary(&self, dropped: &weida::Dropped) -> String {
        let mut s = format!(
            "published {} {}, {} {} queued; ",
            self.messages,
            plural(self.messages, "message", "messages"),
            self.copies,
            plural(self.copies, "copy", "copies"),
        );
        if dropped.total() == 0 {
            s.push_str("none dropped");
            return s;
        }
        let causes: Vec<String> = [
            ("queue_full", dropped.queue_full),
            ("byte_budget", dropped.byte_budget),
            ("reverse_pool_empty", dropped.reverse_pool_empty),
            ("dead_subscriber", dropped.dead_subscriber),
            ("refused", dropped.refused),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(cause, n)| format!("{cause} {n}"))
        .collect();
        s.push_str(&format!(
            "{} dropped ({})",
            dropped.total(),
            causes.join(", ")
        ));
        s
    }
}

pub(crate) fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

fn bytes(n: usize) -> String {
    format!("{n} {}", plural(n as u64, "byte", "bytes"))
}

/// Polls until `n` subscribers hold a filter here, at most `timeout`.
///
/// A subscriber counts from its first filter: one that installs several may not have its
/// later ones yet. Its `READY` line (`weida sub --ready`) is the exact signal.
async fn wait_for_subscribers(
    publisher: &Publisher,
    n: usize,
    timeout: Option<Duration>,
) -> Result<(), Failure> {
    wait_for_peers(n, timeout, ("subscriber", "subscribers"), || {
        publisher.subscriber_count()
    })
    .await
}

/// Polls `count` until it reaches `n`, at most `timeout` (then TIMEOUT, naming how many
/// arrived; `one` and `many` name them): `pub --wait-subscribers` and `push --bind
/// --wait-workers`, for want of an event for an arrival.
pub(crate) async fn wait_for_peers(
    n: usize,
    timeout: Option<Duration>,
    (one, many): (&'static str, &'static str),
    count: impl Fn() -> usize,
) -> Result<(), Failure> {
    if n == 0 || count() >= n {
        return Ok(());
    }
    eprintln!("waiting for {n} {}", plural(n as u64, one, many));
    let arrived = async {
        let mut tick = tokio::time::interval(POLL);
        while count() < n {
            tick.tick().await;
        }
    };
    match timeout {
        Some(t) => tokio::time::timeout(t, arrived).await.map_err(|_| {
            Failure::from(Error::Timeout { last_loss: None }).context(format!(
                "waiting for {n} {} ({} arrived)",
                plural(n as u64, one, many),
                count()
            ))
        }),
        None => {
            arrived.await;
            Ok(())
        }
    }
}

/// The hint for a body above the byte budget, bound: it can be streamed.
const TOO_LARGE_BOUND: &str = "a body above the subscribers' byte budget \
    (subscriber_buffer_bytes) cannot be queued whole: --whole streams it";
/// ... and dialling: a publisher that dials has no streamed fan-out (PATTERNS §4.4).
const TOO_LARGE_DIALLING: &str = "a body above the byte budget (subscriber_buffer_bytes) \
    cannot be queued whole, and a publisher that dials cannot stream one: only a bound \
    `weida pub --whole` does";

/// Publishes the arguments, lines or the whole input.
async fn publish_source(
    publisher: &Publisher,
    args: &PubArgs,
    source: Source,
    tally: &mut Tally,
) -> Result<(), Failure> {
    let bodies = match source {
        Source::Whole(file) => {
            let topic = args.topic.as_deref().expect("clap: --whole needs a topic");
            let input = Input::open(file.as_deref()).await?;
            return publish_whole(publisher, topic, input, args.verbose, tally).await;
        }
        Source::Args(a) => Bodies::Args(a.into_iter()),
        Source::Lines(file) => Bodies::Lines(Input::open(file.as_deref()).await?),
    };
    publish_each(bodies, args, tally, TOO_LARGE_BOUND, |topic, body| {
        publisher.publish(topic, body)
    })
    .await
}

/// Publishes each body with `publish` (a bound publisher's or a dialling one's: both queue
/// copies and never wait), on TOPIC or on each `--keyed` line's own; `too_large` is the hint
/// for a body above the byte budget.
async fn publish_each(
    mut bodies: Bodies,
    args: &PubArgs,
    tally: &mut Tally,
    too_large: &'static str,
    publish: impl Fn(&str, Bytes) -> weida::Result<usize>,
) -> Result<(), Failure> {
    while let Some(line) = bodies.next().await? {
        let (topic, body) = match &args.topic {
            Some(t) => (t.clone(), line),
            None => keyed(line)?,
        };
        let copies = publish(&topic, body.clone()).map_err(|e| {
            let f = Failure::from(e).context(format!(
                "publishing message {} on {topic}",
                tally.messages + 1
            ));
            match f.weida() {
                Some(Error::LimitExceeded { .. }) => f.hint(too_large),
                _ => f,
            }
        })?;
        tally.messages += 1;
        tally.copies += copies as u64;
        tally.bytes += copies as u64 * body.len() as u64;
        if args.verbose {
            progress::note(format!(
                "published {topic} ({}): {copies} {} queued",
                bytes(body.len()),
                plural(copies as u64, "copy", "copies")
            ));
        }
        // `publish` never waits: give the subscribers' writers a turn to take their copies
        // off the queues (this runtime has one thread), so a burst from the arguments or a
        // file is not dropped at a full queue for want of it.
        tokio::task::yield_now().await;
    }
    Ok(())
}

/// A `--keyed` line: `TOPIC BODY`, split at the first space (no space: an empty body).
fn keyed(line: Bytes) -> Result<(String, Bytes), Failure> {
    let space = line.iter().position(|&b| b == b' ');
    let (topic, body) = match space {
        Some(i) => (line.slice(..i), line.slice(i + 1..)),
        None => (line.clone(), Bytes::new()),
    };
    let topic = String::from_utf8(topic.to_vec())
        .map_err(|_| Failure::msg("a --keyed line's topic is not UTF-8"))?;
    Ok((topic, body))
}

/// The whole input as one message, streamed chunk by chunk to the subscribers matched when
/// it opens: a failed read drops the `FanOut`, which cancels every copy (no subscriber sees
/// a short body).
async fn publish_whole(
    publisher: &Publisher,
    topic: &str,
    mut input: Input,
    verbose: bool,
    tally: &mut Tally,
) -> Result<(), Failure> {
    let ctx = |e: Error| Failure::from(e).context(format!("publishing on {topic}"));
    let mut fan = publisher.open(topic).map_err(ctx)?;
    let opened = fan.copies();
    let mut size = 0usize;
    while let Some(chunk) = input.chunk().await? {
        size += chunk.len();
        // Waits (bounded by the core's fanout_wait) for room at each subscriber; one still
        // full then loses its copy, counted as a drop.
        fan.write(chunk).await.map_err(ctx)?;
    }
    let kept = fan.finish();
    tally.messages += 1;
    tally.copies += opened as u64;
    if verbose {
        progress::note(format!(
            "published {topic} ({}, streamed): {kept} of {opened} {} kept to the end",
            bytes(size),
            plural(opened as u64, "copy", "copies")
        ));
    }
    Ok(())
}

/// Keeps the publisher up after the last message so the copies queued reach their
/// subscribers: at most `linger`, less once every subscriber has left, or at a signal.
///
/// The core has no event for "every queued copy is written" (copies are fire-and-forget,
/// GUARANTEES §6), so this is bounded by time; a subscriber that leaves (`weida sub
/// --count`) has taken what it wanted, so the linger ends when none is left.
async fn linger(publisher: &Publisher, linger: Duration, stop: &mut Stop) {
    if publisher.subscriber_count() == 0 || linger.is_zero() {
        return;
    }
    let gone = async {
        let mut tick = tokio::time::interval(POLL);
        while publisher.subscriber_count() > 0 {
            tick.tick().await;
        }
    };
    tokio::select! {
        _ = tokio::time::timeout(linger, gone) => {}
        _ = stop.next() => {}
    }
}

/// Keeps a dialling publisher up after its last message until the collector has taken the
/// copies queued for it: at most `linger`, less once its connection is gone, or at a signal.
///
/// Two steps. The copies wait in the publisher's queue until its writer hands them to the
/// connection, and the core has no event for that queue emptying (copies are fire-and-forget,
/// GUARANTEES §6); but the runtime counts the body bytes it writes, and writes nothing but
/// these copies, so `queued` bytes written means every copy left the queue (an empty body
/// counts for nothing). Then the drain, on events: the connection's lane is written out, its
/// receipts settle, and the collector, told GOAWAY, closes once it has taken every stream.
async fn linger_dialled(
    rt: &Runtime,
    publisher: &DialingPublisher,
    queued: u64,
    linger: Duration,
    stop: &mut Stop,
) {
    let until = tokio::time::Instant::now() + linger;
    let written = async {
        let mut tick = tokio::time::interval(POLL);
        while publisher.peer_count() > 0 && rt.counters().bytes_sent < queued {
            tick.tick().await;
        }
    };
    tokio::select! {
        _ = tokio::time::timeout_at(until, written) => {}
        _ = stop.next() => return,
    }
    let left = until.saturating_duration_since(tokio::time::Instant::now());
    tokio::select! {
        _ = rt.drain(left) => {}
        _ = stop.next() => {}
    }
}

/// `weida sub`: the filters checked, the publisher dialled and every filter installed there,
/// then each message printed until `--count`, a signal, or the publisher's close.
pub(crate) async fn subscribe(args: SubArgs, stop: &mut Stop) -> Result<(), Failure> {
    // Checked here, before any dial or bind: a malformed filter is refused, never widened.
    for f in &args.filters {
        f.parse::<Filter>()
            .map_err(|e| Failure::from(Error::from(e)))?;
    }
    if args.bind {
        return collect(args, stop).await;
    }
    let rt = runtime(&args)?;
    let subscriber = rt.subscriber();
    args.reconnect.follow(subscriber.events());
    let outcome = receive(&subscriber, &args, stop).await;
    // Leave at once, however it ended: the publisher learns now (its linger can end) rather
    // than at its idle timeout.
    subscriber.close();
    rt.close().await;
    outcome
}

/// `weida sub`'s work: every filter installed, then each message printed.
async fn receive(subscriber: &Subscriber, args: &SubArgs, stop: &mut Stop) -> Result<(), Failure> {
    stop.interrupt(install(subscriber, args)).await?;
    announce_subscribed(args, args.ready)?;
    let mut received = 0u64;
    while args.count.is_none_or(|n| received < n) {
        match stop
            .finish(subscriber.recv(), || subscriber.close())
            .await?
        {
            Ok(m) => {
                received += 1;
                print(args, &m)?;
            }
            // Our own close, after a signal: what was queued has been printed.
            Err(Error::Closed) => break,
            // The publisher ended the feed: done, unless --count asked for more.
            Err(Error::ConnectionLost(LossCause::PeerClosed)) if args.count.is_none() => {
                eprintln!("the publisher closed");
                break;
            }
            Err(e) => {
                let what = match args.count {
                    Some(n) => format!("receiving from {} ({received} of {n})", args.url),
                    None => format!("receiving from {}", args.url),
                };
                return Err(Failure::from(e).context(what));
            }
        }
    }
    Ok(())
}

/// Prints a message as `sub` does, unless `--quiet`; a gap before it (copies its publisher
/// dropped) is a warning on stderr.
fn print(args: &SubArgs, m: &Message) -> Result<(), Failure> {
    if let (Some(gap @ 1..), Some(seq)) = (m.meta.gap, m.meta.sequence) {
        eprintln!(
            "warning: {gap} {} missed before sequence {seq} (dropped by the publisher)",
            plural(gap, "message", "messages")
        );
    }
    if !args.quiet {
        output::print_message(args.format, &m.meta, &m.body).map_err(Failure::output)?;
    }
    Ok(())
}

/// `READY <address>` first on stdout when asked, once every filter is installed, and what
/// was subscribed to on stderr.
fn announce_subscribed(args: &SubArgs, ready: bool) -> Result<(), Failure> {
    if ready {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "READY {}", args.url)
            .and_then(|()| out.flush())
            .map_err(Failure::output)?;
    }
    eprintln!("subscribed to {} at {}", args.filters.join(" "), args.url);
    Ok(())
}

/// Dials the publisher and installs every filter there, each bounded by `--timeout`.
async fn install(subscriber: &Subscriber, args: &SubArgs) -> Result<(), Failure> {
    let connecting = async {
        match args.reconnect.later {
            true => subscriber.connect_later(&args.url).await,
            false => subscriber.connect(&args.url).await,
        }
    };
    client::within(args.timeout, connecting)
        .await
        .map_err(|e| Failure::from(e).context(format!("connecting to {}", args.url)))?;
    for f in &args.filters {
        // Returns once the publisher installed it: what is published after is selected.
        client::within(args.timeout, subscriber.subscribe(f))
            .await
            .map_err(|e| {
                Failure::from(e).context(format!("subscribing to {f:?} at {}", args.url))
            })?;
    }
    Ok(())
}

/// `weida sub --bind`: a collector bound at URL's path with every filter (local: in force at
/// once), then each message a filter selects printed until `--count` or a signal, and on
/// stderr at the end how many arrived that none selected.
async fn collect(args: SubArgs, stop: &mut Stop) -> Result<(), Failure> {
    // The collector's route is a puller's: it numbers each publisher's copies (detect), but
    // a runtime requiring reassembly refuses every publisher (PATTERNS §4.4).
    if args.ordering == OrderingArg::Reassemble {
        usage_error(
            "a collector (--bind) cannot reassemble: --ordering detect numbers each \
             publisher's copies",
        );
    }
    let (rt, listener, path) = serve::bind_requiring(
        &args.url,
        args.identity.as_deref(),
        args.max_body,
        ordering(args.ordering),
    )
    .await?;
    let collector = listener.subscriber(&path)?;
    for f in &args.filters {
        collector.subscribe(f)?;
    }
    serve::announce(collector.address(), args.ready)?;
    eprintln!("subscribed to {}", args.filters.join(" "));
    let gathered = gather(&collector, &args, stop).await;
    collector.close();
    let discarded = collector.discarded();
    eprintln!(
        "discarded {discarded} {} that no filter selected",
        plural(discarded, "message", "messages")
    );
    serve::close(&rt, &gathered).await;
    drop(listener);
    gathered
}

/// The collector's work: each message a filter selects printed, as a puller's are. One that
/// could not be received (cancelled by its publisher, above `--max-body`, cut by a lost
/// connection) is a warning, and the collector goes on.
async fn gather(
    collector: &BoundSubscriber,
    args: &SubArgs,
    stop: &mut Stop,
) -> Result<(), Failure> {
    let mut received = 0u64;
    while args.count.is_none_or(|n| received < n) {
        match stop.finish(collector.recv(), || collector.close()).await? {
            Ok(m) => {
                received += 1;
                print(args, &m)?;
            }
            // Our own close, after a signal: what was queued has been printed.
            Err(Error::Closed) => break,
            Err(e) => serve::warn(
                "a message could not be received",
                &IncomingMeta::default(),
                &e,
            ),
        }
    }
    Ok(())
}

/// The guarantees a subscriber's runtime requires of its publishers: `--ordering`.
fn ordering(o: OrderingArg) -> GuaranteeSet {
    GuaranteeSet {
        ordering: o.into(),
        ..GuaranteeSet::default()
    }
}

/// A runtime presenting `--identity`, trusting the address's pin and `--trust-pin`, and
/// requiring `--ordering` of its publishers.
fn runtime(args: &SubArgs) -> Result<Runtime, Failure> {
    let defaults = Limits::default();
    Ok(Runtime::new(RuntimeConfig {
        guarantees: ordering(args.ordering),
        limits: Limits {
            max_collected_body: args.max_body.unwrap_or(defaults.max_collected_body),
            ..defaults
        },
        reconnect: args.reconnect.policy(),
        ..dialling(args.identity.as_deref(), &args.trust_pins)?
    })?)
}

/// What the runtime of every dialling Pub/Sub role has (`sub`, `pub --connect`): `--identity`
/// presented (or an ephemeral key), the address's pin and `--trust-pin` trusted.
fn dialling(identity: Option<&Path>, trust_pins: &[Fingerprint]) -> Result<RuntimeConfig, Failure> {
    Ok(RuntimeConfig {
        identity: identity::load_or_ephemeral(identity)?,
        trust: Trust::pinned(trust_pins.iter().copied()),
        ..RuntimeConfig::default()
    })
}
