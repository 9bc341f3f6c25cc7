//! The handler runtime (docs/SERVICES.md; seed 002's two tables): what ack, drop, retry and
//! retry_after do on a hop with no broker, where copies go, the attempt header, the attempt
//! limit and the dead letter, concurrency, and the stop.

mod common;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{config, pair, Transport};
use tokio::sync::{mpsc, watch, Semaphore};
use weida::service::{
    Builder, Outcome, Ready, Registration, Service, ServiceCounters, ATTEMPT_HEADER, TOPIC_HEADER,
};
use weida::{Error, ErrorCode, Limits, Listener, Metadata, Runtime};

/// The WARN (and ERROR) events logged on this thread while it is the default subscriber.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    fn with(&self, what: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|w| w.contains(what))
            .count()
    }
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl tracing::Subscriber for Warnings {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        *m.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        let mut f = Fields(String::new());
        e.record(&mut f);
        self.0.lock().unwrap().push(f.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The registration most tests use: a queue at `/jobs` on `listener`, with `settings`.
async fn jobs(
    server: &Runtime,
    listener: &Listener,
    settings: impl FnOnce(Builder<Ready>) -> Builder<Ready>,
) -> Arc<Registration> {
    let b = Service::new(server).queue(listener, "/jobs").unwrap();
    Arc::new(settings(b).start().await.unwrap())
}

/// Sends `bodies` to `address` from `client`, each with `meta`.
async fn push(client: &Runtime, address: &str, bodies: &[&str], meta: Metadata) {
    let p = client.pusher();
    p.connect(address).await.unwrap();
    for b in bodies {
        p.send_with(meta.clone(), Bytes::from(b.to_string()))
            .await
            .unwrap();
    }
}

/// Sends `bodies` from `client` to `reg`'s own address, with no metadata.
async fn push_jobs(client: &Runtime, reg: &Registration, bodies: &[&str]) {
    push(
        client,
        &reg.address().unwrap().to_string(),
        bodies,
        Metadata::new(),
    )
    .await;
}

/// What a handler saw: the body and the attempt.
type Seen = mpsc::UnboundedReceiver<(Bytes, u32)>;

/// Runs `outcome` for every message on `reg`, reporting each (body, attempt) on the channel.
fn serve(
    reg: Arc<Registration>,
    outcome: impl Fn(&Bytes, u32) -> Result<Outcome, String> + Send + Sync + 'static,
) -> Seen {
    let (tx, rx) = mpsc::unbounded_channel();
    let outcome = Arc::new(outcome);
    tokio::spawn(async move {
        reg.run(move |m, attempt| {
            let r = outcome(&m.body, attempt);
            tx.send((m.body, attempt)).unwrap();
            async move { r }
        })
        .await
        .unwrap()
    });
    rx
}

/// Waits until `reg`'s counters say `ready` (a hang is caught by `bounded`).
async fn until(reg: &Registration, ready: impl Fn(&ServiceCounters) -> bool) {
    while !ready(&reg.counters()) {
        tokio::task::yield_now().await;
    }
}

fn counts(
    handled: u64,
    retried: u64,
    dead_lettered: u64,
    dropped: u64,
    failed: u64,
) -> ServiceCounters {
    let mut c = ServiceCounters::default();
    c.handled = handled;
    c.retried = retried;
    c.dead_lettered = dead_lettered;
    c.dropped = dropped;
    c.failed = failed;
    c
}

#[tokio::test]
async fn ack_and_drop_answer_unsupported_are_logged_once_and_count_as_processed_and_dropped() {
    common::bounded(async {
        let warnings = Warnings::default();
        let _guard = tracing::subscriber::set_default(warnings.clone());
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b).await;
        push_jobs(&client, &reg, &["a", "b", "c", "d"]).await;
        for (i, finish) in [Outcome::Ack, Outcome::Drop, Outcome::Ack, Outcome::Done]
            .into_iter()
            .enumerate()
        {
            let job = reg.next().await.unwrap();
            assert_eq!(
                job.ack().unwrap_err().code(),
                ErrorCode::Unsupported,
                "job {i}"
            );
            assert_eq!(
                job.discard().unwrap_err().code(),
                ErrorCode::Unsupported,
                "job {i}"
            );
            job.finish(finish);
        }
        // Ack, Ack and Done processed; Drop gone; nothing copied.
        assert_eq!(reg.counters(), counts(3, 0, 0, 1, 0));
        // Once for ack and once for drop, whatever the order, each saying what it counts as.
        let seen = warnings.0.lock().unwrap().clone();
        assert_eq!(warnings.with("Unsupported"), 2, "{seen:?}");
        assert_eq!(warnings.with("ack: Unsupported"), 1, "{seen:?}");
        assert_eq!(warnings.with("counts as processed"), 1, "{seen:?}");
        assert_eq!(warnings.with("drop: Unsupported"), 1, "{seen:?}");
        assert_eq!(warnings.with("counts as dropped"), 1, "{seen:?}");
    })
    .await
}

#[tokio::test]
async fn next_warnings_waits_for_one_and_takes_every_one_logged() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b).await;
        let mut waiting = Box::pin(reg.next_warnings());
        assert!(futures_poll_once(&mut waiting).await.is_none());
        push_jobs(&client, &reg, &["a"]).await;
        let job = reg.next().await.unwrap();
        job.ack().unwrap_err();
        job.discard().unwrap_err();
        let got = waiting.await;
        assert!(
            got.len() == 2 && got[0].starts_with("ack: ") && got[1].starts_with("drop: "),
            "{got:?}"
        );
        assert!(reg.take_warnings().is_empty());
        job.finish(Outcome::Done);
    })
    .await
}

#[tokio::test]
async fn a_dead_letter_address_alone_makes_a_retry_a_copy_and_warns_that_none_reaches_it() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let dead = listener.puller("/dead").unwrap();
        let reg = jobs(&server, &listener, |b| {
            b.dead_letter(&dead.address().to_string())
        })
        .await;
        let warned = reg.take_warnings();
        assert!(
            warned.len() == 1 && warned[0].contains("no message reaches the dead letter"),
            "{warned:?}"
        );
        let mut seen = serve(reg.clone(), |_, attempt| {
            Ok(if attempt < 3 {
                Outcome::Retry
            } else {
                Outcome::Done
            })
        });
        push_jobs(&client, &reg, &["job"]).await;
        // A retry is a copy, attempt after attempt, and never a dead letter.
        for attempt in 1..=3 {
            assert_eq!(seen.recv().await.unwrap(), (Bytes::from("job"), attempt));
        }
        until(&reg, |c| c.handled == 1).await;
        assert_eq!(reg.counters(), counts(1, 2, 0, 0, 0));
        assert!(dead.try_recv().is_none());
    })
    .await
}

on_every_transport!(
    retry_without_a_declared_limit_redelivers_nothing,
    |t| async move {
        let (server, listener, client) = pair(t).await;
        let reg = jobs(&server, &listener, |b| b).await;
        let mut seen = serve(reg.clone(), |b, _| {
            Ok(if b == "again" {
                Outcome::Retry
            } else {
                Outcome::Done
            })
        });
        push_jobs(&client, &reg, &["again", "next"]).await;
        assert_eq!(seen.recv().await.unwrap(), (Bytes::from("again"), 1));
        assert_eq!(seen.recv().await.unwrap(), (Bytes::from("next"), 1));
        until(&reg, |c| c.handled == 1).await;
        // No copy was made (none sent, none waiting): the retry was the message's end.
        assert_eq!(reg.counters(), counts(1, 0, 0, 1, 0));
        assert_eq!(reg.counters().delayed, 0);
        let stopped = reg.stop(Duration::from_secs(5)).await;
        assert_eq!((stopped.unfinished, stopped.copies_dropped), (0, 0));
        assert!(seen.recv().await.is_none(), "the handler was called again");
    }
);

on_every_transport!(
    retry_with_max_attempts_copies_until_the_limit_then_dead_letters,
    |t| async move {
        let (server, listener, client) = pair(t).await;
        let dead = listener.puller("/dead").unwrap();
        let reg = Arc::new(
            Service::new(&server)
                .queue(&listener, "/jobs")
                .unwrap()
                .max_attempts(3)
                .dead_letter(&dead.address().to_string())
                .start()
                .await
                .unwrap(),
        );
        let mut seen = serve(reg.clone(), |_, _| Ok(Outcome::Retry));
        let meta = Metadata::new().with("trace", "t-1");
        push(&client, &reg.address().unwrap().to_string(), &["job"], meta).await;
        for attempt in 1..=3 {
            assert_eq!(seen.recv().await.unwrap(), (Bytes::from("job"), attempt));
        }
        let letter = dead.recv().await.unwrap();
        assert_eq!(letter.body, "job");
        // The copy's metadata is the message's, and the attempt header the last attempt's.
        assert_eq!(letter.meta.metadata.get("trace").unwrap(), "t-1");
        assert_eq!(letter.meta.metadata.get(ATTEMPT_HEADER).unwrap(), "3");
        until(&reg, |c| c.dead_lettered == 1).await;
        assert_eq!(reg.counters(), counts(0, 2, 1, 0, 0));
        assert_eq!(reg.stop(Duration::from_secs(5)).await.copies_dropped, 0);
        assert!(
            seen.recv().await.is_none(),
            "the handler was called after the dead letter"
        );
    }
);

#[tokio::test]
async fn at_the_limit_with_no_dead_letter_the_message_is_dropped_with_a_warning() {
    common::bounded(async {
        let warnings = Warnings::default();
        let _guard = tracing::subscriber::set_default(warnings.clone());
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b.max_attempts(2)).await;
        let mut seen = serve(reg.clone(), |_, _| Ok(Outcome::Retry));
        push_jobs(&client, &reg, &["job"]).await;
        assert_eq!(seen.recv().await.unwrap().1, 1);
        assert_eq!(seen.recv().await.unwrap().1, 2);
        until(&reg, |c| c.dropped == 1).await;
        assert_eq!(reg.counters(), counts(0, 1, 0, 1, 0));
        assert_eq!(warnings.with("no dead-letter address"), 1);
    })
    .await
}

#[tokio::test]
async fn retry_after_waits_in_process_then_sends_the_next_attempt() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b).await;
        push_jobs(&client, &reg, &["later"]).await;
        let job = reg.next().await.unwrap();
        assert_eq!(job.attempt(), 1);
        let delay = Duration::from_millis(300);
        let finished = Instant::now();
        job.finish(Outcome::RetryAfter(delay));
        // Waiting here, not sent: no limit is declared, and retry_after copies anyway.
        assert_eq!((reg.counters().delayed, reg.counters().retried), (1, 0));
        let copy = reg.next().await.unwrap();
        assert!(
            finished.elapsed() >= delay,
            "the copy came after {:?}",
            finished.elapsed()
        );
        assert_eq!(
            (copy.message().body.clone(), copy.attempt()),
            (Bytes::from("later"), 2)
        );
        assert_eq!(
            copy.message().meta.metadata.get(ATTEMPT_HEADER).unwrap(),
            "2"
        );
        copy.finish(Outcome::Done);
        assert_eq!(reg.counters(), counts(1, 1, 0, 0, 0));
    })
    .await
}

#[tokio::test]
async fn a_handler_error_is_a_failure_logged_with_its_path_then_a_retry() {
    common::bounded(async {
        let warnings = Warnings::default();
        let _guard = tracing::subscriber::set_default(warnings.clone());
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b.max_attempts(2)).await;
        let mut seen = serve(reg.clone(), |b, attempt| match (b.as_ref(), attempt) {
            (b"error", 1) => Err("no disk".to_string()),
            _ => Ok(Outcome::Done),
        });
        push_jobs(&client, &reg, &["error"]).await;
        assert_eq!(seen.recv().await.unwrap(), (Bytes::from("error"), 1));
        assert_eq!(seen.recv().await.unwrap(), (Bytes::from("error"), 2));
        until(&reg, |c| c.handled == 1).await;
        assert_eq!(reg.counters(), counts(1, 1, 0, 0, 1));
        // The failure is logged with the message's path and the handler's reason.
        assert_eq!(warnings.with("reason=no disk"), 1);
        assert_eq!(warnings.with("path=/jobs"), 1);
        // The same words, kept for a binding to log in its language's way, taken once.
        let kept = reg.take_warnings();
        assert_eq!(kept.len(), 1, "{kept:?}");
        // The peer is the sender as the transport proved it: the client's key.
        assert!(
            kept[0].contains("path=/jobs")
                && kept[0].contains(&format!("peer={}", client.fingerprint()))
                && kept[0].contains("attempt=1")
                && kept[0].contains("reason=no disk"),
            "{kept:?}"
        );
        assert!(reg.take_warnings().is_empty());
    })
    .await
}

#[tokio::test]
async fn a_job_dropped_unfinished_is_a_failure_and_retried_as_declared() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b.max_attempts(2)).await;
        push_jobs(&client, &reg, &["lost"]).await;
        let job = reg.next().await.unwrap();
        let panicked = tokio::spawn(async move {
            let _job = job;
            panic!("the handler panicked on purpose");
        })
        .await;
        assert!(panicked.unwrap_err().is_panic());
        let copy = reg.next().await.unwrap();
        assert_eq!(copy.attempt(), 2);
        copy.finish(Outcome::Done);
        assert_eq!(reg.counters(), counts(1, 1, 0, 0, 1));
    })
    .await
}

/// A Rep registration at `/rpc` on `listener` with `concurrency`, its copies to `/retries`
/// (returned, so it stays bound), and a requester of `client`'s connected to it.
async fn rpc_n(
    server: &Runtime,
    listener: &Listener,
    client: &Runtime,
    concurrency: u32,
) -> (Registration, weida::Requester, weida::Puller) {
    let retries = listener.puller("/retries").unwrap();
    let rpc = Service::new(server)
        .replying(listener, "/rpc")
        .unwrap()
        .retry_to(&retries.address().to_string())
        .concurrency(concurrency)
        .start()
        .await
        .unwrap();
    let req = client.requester();
    req.connect(&listener.address().with_path("/rpc").unwrap().to_string())
        .await
        .unwrap();
    (rpc, req, retries)
}

#[tokio::test]
async fn a_job_given_back_is_the_next_job_again_and_counts_nothing() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        // A queue.
        let reg = jobs(&server, &listener, |b| b).await;
        let address = reg.address().unwrap().to_string();
        let mut meta = Metadata::new();
        meta.insert(ATTEMPT_HEADER, "2");
        push(&client, &address, &["first"], meta).await;
        push(&client, &address, &["second"], Metadata::new()).await;
        let job = reg.next().await.unwrap();
        assert_eq!(
            (job.message().body.as_ref(), job.attempt()),
            (&b"first"[..], 2)
        );
        assert_eq!(reg.counters().in_flight, 1);
        job.give_back();
        assert_eq!(reg.counters(), counts(0, 0, 0, 0, 0));
        let again = reg.next().await.unwrap();
        assert_eq!(
            (again.message().body.as_ref(), again.attempt()),
            (&b"first"[..], 2)
        );
        again.finish(Outcome::Done);
        reg.next().await.unwrap().finish(Outcome::Done);
        assert_eq!(reg.counters(), counts(2, 0, 0, 0, 0));
        // A Rep path: the request given back is answered by the job that takes it next.
        let (rpc, req, _retries) = rpc_n(&server, &listener, &client, 1).await;
        let asked = tokio::spawn(async move { req.request("ping").await });
        rpc.next().await.unwrap().give_back();
        rpc.next()
            .await
            .unwrap()
            .finish(Outcome::Reply("pong".into()));
        assert_eq!(asked.await.unwrap().unwrap(), "pong");
        assert_eq!(rpc.counters(), counts(1, 0, 0, 0, 0));
    })
    .await
}

#[tokio::test]
async fn a_request_given_back_goes_to_a_next_already_waiting() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let (rpc, req, _retries) = rpc_n(&server, &listener, &client, 2).await;
        let asked = tokio::spawn(async move { req.request("ping").await });
        let first = rpc.next().await.unwrap();
        // A second `next`, in the other slot, waiting: nothing else is coming.
        let mut waiting = Box::pin(rpc.next());
        assert!(futures_poll_once(&mut waiting).await.is_none());
        first.give_back();
        let job = waiting.await.unwrap();
        assert_eq!(job.message().body, "ping");
        job.finish(Outcome::Reply("pong".into()));
        assert_eq!(asked.await.unwrap().unwrap(), "pong");
        assert_eq!(rpc.counters(), counts(1, 0, 0, 0, 0));
    })
    .await
}

#[tokio::test]
async fn a_dead_letter_loop_and_impossible_settings_are_refused_at_start() {
    common::bounded(async {
        let (server, listener, _client) = pair(Transport::Quic).await;
        let service = Service::new(&server);
        let port = match listener.address().target() {
            weida::address::Target::Quic { port, .. } => *port,
            other => panic!("{other:?}"),
        };
        // The queue's own path, by another name for this machine: a dead letter would loop.
        let own = format!("weida://localhost:{port}/jobs");
        type Settings = Box<dyn FnOnce(Builder<Ready>) -> Builder<Ready>>;
        let refused: [Settings; 3] = [
            Box::new(move |b| b.dead_letter(&own)),
            Box::new(|b| b.concurrency(0)),
            Box::new(|b| b.max_attempts(0)),
        ];
        for settings in refused {
            let b = settings(service.queue(&listener, "/jobs").unwrap());
            assert_eq!(
                b.start().await.err().unwrap().code(),
                ErrorCode::InvalidConfig
            );
        }
        // A fan-out's own path is a loop too: a dead letter would come back to it.
        let e = service
            .fan_out(&listener, "/feed", &["t"])
            .unwrap()
            .dead_letter(&format!("weida://localhost:{port}/feed"))
            .start()
            .await;
        assert_eq!(e.err().unwrap().code(), ErrorCode::InvalidConfig);
        // A Rep path takes no pushes: its copies cannot go to itself.
        let e = service
            .replying(&listener, "/rpc")
            .unwrap()
            .retry_to(&format!("weida://127.0.0.1:{port}/rpc"))
            .start()
            .await;
        assert_eq!(e.err().unwrap().code(), ErrorCode::InvalidConfig);
        // Each refusal unbound what it bound: the paths are free again.
        let ok = service
            .queue(&listener, "/jobs")
            .unwrap()
            .start()
            .await
            .unwrap();
        ok.stop(Duration::from_secs(1)).await;
        listener.replier("/rpc").unwrap();
    })
    .await
}

/// `n` messages queued at `reg`'s endpoint before any is taken (the server counted each
/// handed to an endpoint).
async fn queue_n(server: &Runtime, client: &Runtime, address: &str, n: usize) {
    let bodies: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    let bodies: Vec<&str> = bodies.iter().map(String::as_str).collect();
    push(client, address, &bodies, Metadata::new()).await;
    let n = n as u64;
    while !(if common::lanes_on() {
        server.counters().lane_messages_received >= n
    } else {
        server.counters().streams_accepted >= n
    }) {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn concurrency_n_runs_n_handlers_at_once_and_no_more() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b.concurrency(3)).await;
        queue_n(&server, &client, &reg.address().unwrap().to_string(), 8).await;
        let running = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let gate = Arc::new(Semaphore::new(0));
        let (started, mut starts) = watch::channel(0u32);
        let (r, m, g) = (running.clone(), most.clone(), gate.clone());
        let served = reg.clone();
        tokio::spawn(async move {
            served
                .run(move |_, _| {
                    let (r, m, g, started) = (r.clone(), m.clone(), g.clone(), started.clone());
                    async move {
                        let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                        m.fetch_max(now, Ordering::SeqCst);
                        started.send_modify(|n| *n += 1);
                        g.acquire().await.unwrap().forget();
                        r.fetch_sub(1, Ordering::SeqCst);
                        Ok::<_, String>(Outcome::Done)
                    }
                })
                .await
        });
        // Eight are queued; three start, and the others wait for a handler to finish.
        starts.wait_for(|n| *n == 3).await.unwrap();
        assert_eq!(reg.counters().in_flight, 3);
        for k in 1..=5u32 {
            gate.add_permits(1);
            starts.wait_for(|n| *n == 3 + k).await.unwrap();
            assert_eq!(most.load(Ordering::SeqCst), 3);
        }
        gate.add_permits(3);
        until(&reg, |c| c.handled == 8).await;
        assert_eq!(most.load(Ordering::SeqCst), 3);
    })
    .await
}

#[tokio::test]
async fn a_run_dropped_leaves_what_it_took_and_had_not_handed_out_to_the_endpoint_in_order() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b).await;
        // Ten queued: run takes what is ready a batch at a time, so when m1 is in its handler
        // the rest are in run's hands, not the endpoint's.
        queue_n(&server, &client, &reg.address().unwrap().to_string(), 10).await;
        let (started, mut starts) = watch::channel(Bytes::new());
        let served = reg.clone();
        let running = tokio::spawn(async move {
            served
                .run(move |m, _| {
                    let started = started.clone();
                    async move {
                        started.send_replace(m.body.clone());
                        if m.body == "m1" {
                            std::future::pending::<()>().await; // until run is dropped
                        }
                        Ok::<_, String>(Outcome::Done)
                    }
                })
                .await
        });
        starts.wait_for(|b| b == "m1").await.unwrap();
        running.abort();
        assert!(running.await.unwrap_err().is_cancelled());
        // m0 handled; m1 dropped with its handler (a failure, and no limit: gone); m2 to m9
        // are where they were, in order.
        for i in 2..10 {
            let job = reg.next().await.unwrap();
            assert_eq!(job.message().body, format!("m{i}"));
            job.finish(Outcome::Done);
        }
        assert_eq!(reg.counters(), counts(9, 0, 0, 1, 1));
    })
    .await
}

#[tokio::test]
async fn a_run_with_many_at_once_dropped_counts_every_message_it_started_and_frees_every_slot() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b.concurrency(3)).await;
        let address = reg.address().unwrap().to_string();
        queue_n(&server, &client, &address, 12).await;
        let served = reg.clone();
        let running = tokio::spawn(async move {
            served
                .run(move |m, _| async move {
                    // m1 and m2 hold two slots until run is dropped; the other ten pass
                    // through the third.
                    if m.body == "m1" || m.body == "m2" {
                        std::future::pending::<()>().await;
                    }
                    Ok::<_, String>(Outcome::Done)
                })
                .await
        });
        until(&reg, |c| c.handled == 10 && c.in_flight == 2).await;
        running.abort();
        assert!(running.await.unwrap_err().is_cancelled());
        // The two dropped with their handlers are failures (no limit: gone), and nothing is
        // left in flight.
        assert_eq!(reg.counters(), counts(10, 0, 0, 2, 2));
        // Every slot is free again: three jobs at once, none finished.
        queue_n(&server, &client, &address, 3).await;
        let held = [
            reg.next().await.unwrap(),
            reg.next().await.unwrap(),
            reg.next().await.unwrap(),
        ];
        assert_eq!(reg.counters().in_flight, 3);
        for job in held {
            job.finish(Outcome::Done);
        }
        assert_eq!(reg.counters(), counts(13, 0, 0, 2, 2));
    })
    .await
}

#[tokio::test]
async fn a_run_takes_the_next_message_once_a_next_callers_job_frees_a_slot() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b.concurrency(2)).await;
        queue_n(&server, &client, &reg.address().unwrap().to_string(), 3).await;
        // m0 in a job of this test's: one slot. run's handler holds m1 (the other slot) until
        // the end, and m2 waits in run's batch for a slot.
        let held = reg.next().await.unwrap();
        assert_eq!(held.message().body, "m0");
        let (tx, mut seen) = mpsc::unbounded_channel();
        let served = reg.clone();
        let running = tokio::spawn(async move {
            served
                .run(move |m, _| {
                    let tx = tx.clone();
                    async move {
                        tx.send(m.body.clone()).unwrap();
                        if m.body == "m1" {
                            std::future::pending::<()>().await;
                        }
                        Ok::<_, String>(Outcome::Done)
                    }
                })
                .await
        });
        assert_eq!(seen.recv().await.unwrap(), "m1");
        // The slot this frees is run's for m2, though m1's handler is still waiting.
        held.finish(Outcome::Done);
        assert_eq!(seen.recv().await.unwrap(), "m2");
        running.abort();
    })
    .await
}

#[tokio::test]
async fn a_copy_asked_for_after_the_stops_deadline_is_dropped_at_once_and_counted() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b.max_attempts(3)).await;
        push_jobs(&client, &reg, &["late"]).await;
        let job = reg.next().await.unwrap();
        let stopped = reg.stop(Duration::from_millis(50)).await;
        assert_eq!(stopped.unfinished, 1);
        reg.take_warnings();
        // Its handler fails after the deadline: the retry's copy is dropped now, not when a
        // send on a closed pusher would fail later.
        job.fail("too late");
        assert_eq!(reg.counters(), counts(0, 0, 0, 1, 1));
        assert_eq!(reg.counters().delayed, 0);
        let warned = reg.take_warnings();
        assert!(
            warned
                .iter()
                .any(|w| w.contains("after the stop's deadline: dropped")),
            "{warned:?}"
        );
    })
    .await
}

#[tokio::test]
async fn concurrency_one_hands_out_in_arrival_order_one_at_a_time() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b).await;
        queue_n(&server, &client, &reg.address().unwrap().to_string(), 4).await;
        let first = reg.next().await.unwrap();
        // The second waits for the first to finish, though it is queued.
        let mut second = Box::pin(reg.next());
        assert!(futures_poll_once(&mut second).await.is_none());
        assert_eq!(first.message().body, "m0");
        first.finish(Outcome::Done);
        let second = second.await.unwrap();
        assert_eq!(second.message().body, "m1");
        second.finish(Outcome::Done);
        for i in 2..4 {
            let j = reg.next().await.unwrap();
            assert_eq!(j.message().body, format!("m{i}"));
            j.finish(Outcome::Done);
        }
    })
    .await
}

/// Polls `f` once: its output if it is ready now.
async fn futures_poll_once<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| match std::pin::Pin::new(&mut *f).poll(cx) {
        std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

#[tokio::test]
async fn a_stop_takes_nothing_more_and_waits_for_the_handlers_in_flight() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b).await;
        queue_n(&server, &client, &reg.address().unwrap().to_string(), 2).await;
        let job = reg.next().await.unwrap();
        let stopping = reg.clone();
        let mut stop = tokio::spawn(async move { stopping.stop(Duration::from_secs(30)).await });
        // Stopping: the queued second message is not handed out.
        assert_eq!(reg.next().await.err().unwrap().code(), ErrorCode::Closed);
        // The stop waits for the job in flight.
        assert!(futures_poll_once(&mut stop).await.is_none());
        tokio::task::yield_now().await;
        assert!(!stop.is_finished());
        job.finish(Outcome::Done);
        let stopped = stop.await.unwrap();
        assert_eq!((stopped.unfinished, stopped.copies_dropped), (0, 0));
        assert_eq!(reg.counters(), counts(1, 0, 0, 0, 0));
        // Then the endpoint is closed: its path is free.
        listener.puller("/jobs").unwrap();
    })
    .await
}

#[tokio::test]
async fn a_stop_past_its_deadline_reports_the_unfinished_and_drops_the_waiting_copies() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b.concurrency(2)).await;
        queue_n(&server, &client, &reg.address().unwrap().to_string(), 2).await;
        let stuck = reg.next().await.unwrap();
        let later = reg.next().await.unwrap();
        later.finish(Outcome::RetryAfter(Duration::from_secs(3600)));
        let stopped = reg.stop(Duration::from_millis(50)).await;
        assert_eq!((stopped.unfinished, stopped.copies_dropped), (1, 1));
        let c = reg.counters();
        assert_eq!((c.in_flight, c.delayed, c.dropped, c.retried), (1, 0, 1, 0));
        drop(stuck);
    })
    .await
}

#[tokio::test]
async fn a_rep_handler_replies_and_a_retry_is_refused_to_its_requester_and_copied_to_its_address() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let retries = listener.puller("/rpc-retries").unwrap();
        let reg = Arc::new(
            Service::new(&server)
                .replying(&listener, "/rpc")
                .unwrap()
                .max_attempts(3)
                .retry_to(&retries.address().to_string())
                .start()
                .await
                .unwrap(),
        );
        let mut seen = serve(reg.clone(), |b, _| {
            Ok(match b.as_ref() {
                b"fail" => Outcome::Retry,
                b"drop" => Outcome::Drop,
                b"nothing" => Outcome::Done,
                _ => Outcome::Reply(b.clone()),
            })
        });
        let req = client.requester();
        req.connect(&listener.address().with_path("/rpc").unwrap().to_string())
            .await
            .unwrap();
        assert_eq!(req.request("ping").await.unwrap(), "ping");
        assert_eq!(req.request("nothing").await.unwrap(), "");
        let e = req.request("fail").await.unwrap_err();
        assert!(
            matches!(&e, Error::Rejected(r) if r.contains("retried")),
            "{e}"
        );
        let copy = retries.recv().await.unwrap();
        assert_eq!(copy.body, "fail");
        assert_eq!(copy.meta.metadata.get(ATTEMPT_HEADER).unwrap(), "2");
        let e = req.request("drop").await.unwrap_err();
        assert!(
            matches!(&e, Error::Rejected(r) if r.contains("dropped")),
            "{e}"
        );
        until(&reg, |c| c.retried == 1).await;
        assert_eq!(reg.counters(), counts(2, 1, 0, 1, 0));
        for _ in 0..4 {
            seen.recv().await.unwrap();
        }
    })
    .await
}

#[tokio::test]
async fn a_fan_out_copy_comes_back_to_its_own_path_under_its_topic_and_a_dead_letter_keeps_the_topic(
) {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let dead = listener.puller("/dead").unwrap();
        let reg = Service::new(&server)
            .fan_out(&listener, "/events", &["orders.#"])
            .unwrap()
            .max_attempts(2)
            .dead_letter(&dead.address().to_string())
            .start()
            .await
            .unwrap();
        let publisher = client.publisher();
        publisher
            .connect(&reg.address().unwrap().to_string())
            .await
            .unwrap();
        assert_eq!(publisher.publish("orders.new", "o1").unwrap(), 1);
        let first = reg.next().await.unwrap();
        assert_eq!(first.attempt(), 1);
        first.finish(Outcome::Retry);
        let second = reg.next().await.unwrap();
        assert_eq!(
            (second.attempt(), second.message().meta.topic.as_deref()),
            (2, Some("orders.new"))
        );
        second.finish(Outcome::Retry);
        let letter = dead.recv().await.unwrap();
        assert_eq!(letter.body, "o1");
        assert_eq!(
            letter.meta.metadata.get(TOPIC_HEADER).unwrap(),
            "orders.new"
        );
        assert_eq!(letter.meta.metadata.get(ATTEMPT_HEADER).unwrap(), "2");
        until(&reg, |c| c.dead_lettered == 1).await;
        assert_eq!(reg.counters(), counts(0, 1, 1, 0, 0));
    })
    .await
}

#[tokio::test]
async fn a_pulling_registration_sends_its_copies_to_the_address_it_names() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let work = listener.pusher("/work").unwrap();
        let retries = listener.puller("/retries").unwrap();
        let dead = listener.puller("/dead").unwrap();
        let reg = Service::new(&client)
            .pulling(&work.address().to_string())
            .retry_to(&retries.address().to_string())
            .max_attempts(2)
            .dead_letter(&dead.address().to_string())
            .start()
            .await
            .unwrap();
        assert_eq!(work.peer_count(), 1);
        work.send("w1").await.unwrap();
        let job = reg.next().await.unwrap();
        job.finish(Outcome::RetryAfter(Duration::ZERO));
        let copy = retries.recv().await.unwrap();
        assert_eq!(
            (
                copy.body.as_ref(),
                copy.meta.metadata.get(ATTEMPT_HEADER).unwrap().as_ref()
            ),
            (&b"w1"[..], &b"2"[..])
        );
        assert_eq!(reg.retry_address(), retries.address());
        // Attempt 2, at the limit, goes to the dead letter through the same kind of pusher.
        work.send_with(copy.meta.metadata.clone(), "w1")
            .await
            .unwrap();
        let job = reg.next().await.unwrap();
        assert_eq!(job.attempt(), 2);
        job.finish(Outcome::Retry);
        let letter = dead.recv().await.unwrap();
        assert_eq!(
            (
                letter.body.as_ref(),
                letter.meta.metadata.get(ATTEMPT_HEADER).unwrap().as_ref()
            ),
            (&b"w1"[..], &b"2"[..])
        );
        until(&reg, |c| c.dead_lettered == 1).await;
        assert_eq!(reg.counters(), counts(0, 1, 1, 0, 0));
        let _ = server;
    })
    .await
}

#[tokio::test]
async fn a_subscribing_registration_takes_what_its_filters_hold_and_copies_under_its_topic_to_the_address_it_names(
) {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let events = listener.publisher("/events").unwrap();
        let retries = listener.puller("/retries").unwrap();
        let reg = Service::new(&client)
            .subscribing(&events.address().to_string(), &["orders.#"])
            .retry_to(&retries.address().to_string())
            .max_attempts(3)
            .start()
            .await
            .unwrap();
        // Its filter is installed at the publisher before start returns.
        assert_eq!(events.subscriber_count(), 1);
        assert_eq!(events.publish("billing.paid", "b1").unwrap(), 0);
        assert_eq!(events.publish("orders.new", "o1").unwrap(), 1);
        let job = reg.next().await.unwrap();
        assert_eq!(
            (
                job.message().body.as_ref(),
                job.attempt(),
                job.message().meta.topic.as_deref()
            ),
            (&b"o1"[..], 1, Some("orders.new"))
        );
        job.finish(Outcome::Retry);
        let copy = retries.recv().await.unwrap();
        assert_eq!(copy.body, "o1");
        assert_eq!(copy.meta.metadata.get(ATTEMPT_HEADER).unwrap(), "2");
        assert_eq!(copy.meta.metadata.get(TOPIC_HEADER).unwrap(), "orders.new");
        until(&reg, |c| c.retried == 1).await;
        assert_eq!(reg.counters(), counts(0, 1, 0, 0, 0));
        assert!(reg.address().is_none());
        let _ = server;
    })
    .await
}

/// The child of `a_crash_before_the_timer_loses_the_copy`: a service pulling from the bound
/// pusher at `$WEIDA_SERVICE_CHILD_WORK` that retries every message after 3 s, to
/// `$WEIDA_SERVICE_CHILD_RETRIES`, and says so on stdout.
#[tokio::test]
#[ignore = "the child process of a_crash_before_the_timer_loses_the_copy, run by it"]
async fn service_child() {
    use std::io::Write;
    let (Ok(work), Ok(retries)) = (
        std::env::var("WEIDA_SERVICE_CHILD_WORK"),
        std::env::var("WEIDA_SERVICE_CHILD_RETRIES"),
    ) else {
        panic!("run by a_crash_before_the_timer_loses_the_copy, with its environment");
    };
    let rt = Runtime::new(config(Limits::default())).unwrap();
    let reg = Service::new(&rt)
        .pulling(&work)
        .retry_to(&retries)
        .start()
        .await
        .unwrap();
    loop {
        let job = reg.next().await.unwrap();
        let body = String::from_utf8_lossy(&job.message().body).to_string();
        // Long enough that the parent kills the first child well before its timer fires.
        let delay = 3;
        job.finish(Outcome::RetryAfter(Duration::from_secs(delay)));
        let c = reg.counters();
        // Whether the parent still reads is its business: it stops after the line it waits for.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "CHILD {body} delayed={} retried={}",
            c.delayed, c.retried
        );
        let _ = out.flush();
    }
}

/// A child process killed (and reaped) when dropped, so a failing test leaves none behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_crash_before_the_timer_loses_the_copy() {
    use std::io::BufRead;
    common::bounded(async {
        let rt = Runtime::new(config(Limits::default())).unwrap();
        // AF_UNIX: the kernel ends a killed process's connections at once (a QUIC peer would
        // learn it only at its idle timeout).
        let listener = rt
            .bind(&common::bind_address(Transport::Unix))
            .await
            .unwrap();
        let work = listener.pusher("/work").unwrap();
        let retries = listener.puller("/retries").unwrap();
        let start = || {
            Killed(
                std::process::Command::new(std::env::current_exe().unwrap())
                    .args([
                        "--exact",
                        "service_child",
                        "--ignored",
                        "--nocapture",
                        "--test-threads",
                        "1",
                    ])
                    .env("WEIDA_SERVICE_CHILD_WORK", work.address().to_string())
                    .env("WEIDA_SERVICE_CHILD_RETRIES", retries.address().to_string())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap(),
            )
        };
        // Blocking reads of the child's stdout, off the runtime's thread.
        let line_of = |child: &mut Killed| {
            let mut out = std::io::BufReader::new(child.0.stdout.take().unwrap());
            tokio::task::spawn_blocking(move || loop {
                let mut line = String::new();
                assert_ne!(out.read_line(&mut line).unwrap(), 0, "the child ended");
                // libtest may have written "test service_child ... " on the line first.
                if let Some(at) = line.find("CHILD ") {
                    return line[at..].trim().to_string();
                }
            })
        };
        let mut child = start();
        while work.peer_count() == 0 {
            tokio::task::yield_now().await;
        }
        work.send("job").await.unwrap();
        let said = line_of(&mut child).await.unwrap();
        assert_eq!(said, "CHILD job delayed=1 retried=0");
        drop(child);
        // The service is gone with its timer: its connection ends, and no copy came.
        while work.peer_count() != 0 {
            tokio::task::yield_now().await;
        }
        assert!(retries.try_recv().is_none());
        // A service started again holds no memory of it: it takes the next message only.
        let mut again = start();
        while work.peer_count() == 0 {
            tokio::task::yield_now().await;
        }
        work.send("next").await.unwrap();
        assert_eq!(
            line_of(&mut again).await.unwrap(),
            "CHILD next delayed=1 retried=0"
        );
        // Its first copy out is the next one's, after the same delay: had the dead one's
        // timer been kept anywhere, its copy was due earlier and would come first (the retry
        // pusher keeps order).
        let first = retries.recv().await.unwrap();
        assert_eq!(first.body, "next");
        assert!(retries.try_recv().is_none());
    })
    .await
}

#[tokio::test]
async fn a_handler_that_panics_is_a_failure_and_the_registration_goes_on() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let reg = jobs(&server, &listener, |b| b).await;
        let (tx, mut seen) = mpsc::unbounded_channel();
        let served = reg.clone();
        let running = tokio::spawn(async move {
            served
                .run(move |m, _| {
                    let tx = tx.clone();
                    async move {
                        if m.body == "boom" {
                            panic!("the handler panicked on purpose");
                        }
                        tx.send(m.body).unwrap();
                        Ok::<_, String>(Outcome::Done)
                    }
                })
                .await
        });
        push_jobs(&client, &reg, &["boom", "next"]).await;
        assert_eq!(seen.recv().await.unwrap(), "next");
        // No limit declared: the failure's retry is the message's end.
        assert_eq!(reg.counters(), counts(1, 0, 0, 1, 1));
        reg.stop(Duration::from_secs(5)).await;
        running.await.unwrap().unwrap();
    })
    .await
}

#[tokio::test]
async fn a_handler_that_panics_in_its_call_is_counted_a_failure_as_run_ends_with_the_panic() {
    common::bounded(async {
        for concurrency in [1, 4] {
            let (server, listener, client) = pair(Transport::Quic).await;
            let reg = jobs(&server, &listener, |b| b.concurrency(concurrency)).await;
            push_jobs(&client, &reg, &["ok", "boom"]).await;
            let served = reg.clone();
            let running = tokio::spawn(async move {
                served
                    .run(move |m, _| {
                        // In the call itself, before there is a future to catch it in.
                        assert_ne!(m.body, "boom", "the handler panicked on purpose");
                        std::future::ready(Ok::<_, String>(Outcome::Done))
                    })
                    .await
            });
            assert!(running.await.unwrap_err().is_panic());
            // Counted, not lost: nothing is left in flight.
            let c = reg.counters();
            assert_eq!(c, counts(1, 0, 0, 1, 1), "concurrency {concurrency}");
            assert_eq!(c.in_flight, 0);
        }
    })
    .await
}

#[tokio::test]
async fn a_rep_request_slow_to_arrive_holds_up_no_other() {
    common::bounded(async {
        let (server, listener, client) = pair(Transport::Quic).await;
        let retries = listener.puller("/retries").unwrap();
        let reg = Arc::new(
            Service::new(&server)
                .replying(&listener, "/rpc")
                .unwrap()
                .retry_to(&retries.address().to_string())
                .start()
                .await
                .unwrap(),
        );
        let mut seen = serve(reg.clone(), |b, _| Ok(Outcome::Reply(b.clone())));
        let address = listener.address().with_path("/rpc").unwrap().to_string();
        // Three requests begun and never finished, from a peer that stops writing...
        let stalled = client.requester();
        stalled.connect(&address).await.unwrap();
        let mut held = Vec::new();
        for _ in 0..3 {
            let (mut t, reply) = stalled.open(Metadata::new()).await.unwrap();
            t.write("the first half").await.unwrap();
            held.push((t, reply));
        }
        // ...and another requester's request is answered meanwhile, with concurrency 1.
        let other = Runtime::new(config(Limits::default())).unwrap();
        let req = other.requester();
        req.connect(&address).await.unwrap();
        assert_eq!(req.request("ping").await.unwrap(), "ping");
        assert_eq!(seen.recv().await.unwrap(), (Bytes::from("ping"), 1));
        assert_eq!(reg.counters().handled, 1);
        drop(held);
    })
    .await
}
