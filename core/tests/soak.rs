//! A bounded soak (issue 16 part 6): Push/Pull, Req/Rep and Pub/Sub run at once, flat out,
//! between two runtimes of this process, on each transport in turn, while the process's
//! resident set and open file descriptors are sampled. After a warm-up neither may grow beyond
//! a stated bound, the descriptors come back once the work stops, and every count balances:
//! each message sent was received, each request answered, each copy queued heard or counted
//! as dropped by the publisher.
//!
//! `WEIDA_SOAK_SECS` (default 2 per transport) lengthens it; the long run is a documented
//! command in docs/RELIABILITY.md. One test, transports one after another: the samples are
//! the whole process's, so nothing else may run in it at the time (this file is its own test
//! binary).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::Transport;

/// Resident set growth allowed after the warm-up, whatever the duration: a leak of a few
/// bytes per message passes it within seconds at these rates.
const RSS_BOUND: u64 = 48 << 20;
/// Descriptors allowed above the warm-up's once the work has stopped (none should stay).
const FD_BOUND: usize = 4;

fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[derive(Default)]
struct Counts {
    pushed: AtomicU64,
    pulled: AtomicU64,
    requested: AtomicU64,
    answered: AtomicU64,
    queued: AtomicU64,
    heard: AtomicU64,
    /// Wakes whoever waits for the receivers: a message pulled or a copy heard.
    progress: tokio::sync::Notify,
}

impl Counts {
    /// Returns once `done` holds, woken by the receivers' progress.
    async fn until(&self, done: impl Fn(&Self) -> bool) {
        loop {
            let woken = self.progress.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if done(self) {
                return;
            }
            woken.await;
        }
    }
}

/// Runs the three patterns until `stop`, counting into `counts`.
async fn work(t: Transport, stop: Arc<AtomicBool>, counts: Arc<Counts>) {
    let (server, listener, client) = common::pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let replier = listener.replier("/rpc").unwrap();
    let publisher = listener.publisher("/feed").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let requester = client.requester();
    requester
        .connect(&replier.address().to_string())
        .await
        .unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();

    let c = counts.clone();
    let pulling = tokio::spawn(async move {
        while puller.recv().await.is_ok() {
            c.pulled.fetch_add(1, Ordering::Relaxed);
            c.progress.notify_waiters();
        }
    });
    let answering = tokio::spawn(async move {
        while let Ok(mut ex) = replier.accept().await {
            let body = ex.take_body().await.unwrap();
            ex.reply(body).await.unwrap();
        }
    });
    let c = counts.clone();
    let hearing = tokio::spawn(async move {
        while sub.recv().await.is_ok() {
            c.heard.fetch_add(1, Ordering::Relaxed);
            c.progress.notify_waiters();
        }
    });
    let (c, s) = (counts.clone(), stop.clone());
    let pushing = async move {
        let body = bytes::Bytes::from(vec![7u8; 64]);
        while !s.load(Ordering::Relaxed) {
            pusher.send(body.clone()).await.unwrap();
            c.pushed.fetch_add(1, Ordering::Relaxed);
        }
    };
    let (c, s) = (counts.clone(), stop.clone());
    let requesting = async move {
        while !s.load(Ordering::Relaxed) {
            c.requested.fetch_add(1, Ordering::Relaxed);
            let r = requester.request(&b"ping"[..]).await.unwrap();
            assert_eq!(&r[..], b"ping");
            c.answered.fetch_add(1, Ordering::Relaxed);
        }
    };
    let (c, s) = (counts.clone(), stop.clone());
    let publishing = async move {
        while !s.load(Ordering::Relaxed) {
            let n = publisher.publish("t", &b"copy"[..]).unwrap();
            c.queued.fetch_add(n as u64, Ordering::Relaxed);
            // Paced by the subscriber: a copy is queued only when all but 64 before it were
            // heard, so none is dropped at a full queue. Over AF_UNIX a copy may be dropped after it was queued (no reverse connection
            // parked for it: PATTERNS §4.2), counted by the publisher and never heard, so the
            // pacing counts both; a drop wakes nobody, so the wait looks again every 20 ms.
            let settled = || c.heard.load(Ordering::Relaxed) + publisher.dropped().total();
            let started = tokio::time::Instant::now();
            while settled() + 64 < c.queued.load(Ordering::Relaxed) {
                let _ = tokio::time::timeout(
                    Duration::from_millis(20),
                    c.until(|c| {
                        c.heard.load(Ordering::Relaxed) + publisher.dropped().total() + 64
                            >= c.queued.load(Ordering::Relaxed)
                    }),
                )
                .await;
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "{t:?}: copies queued but neither heard nor dropped: {} queued, {} heard, {:?}",
                    c.queued.load(Ordering::Relaxed),
                    c.heard.load(Ordering::Relaxed),
                    publisher.dropped()
                );
            }
        }
        publisher
    };
    let ((), (), publisher) = tokio::join!(pushing, requesting, publishing);
    // Everything sent arrives: wait for the receivers to catch up, bounded.
    let caught_up = tokio::time::timeout(
        Duration::from_secs(20),
        counts.until(|c| c.pulled.load(Ordering::Relaxed) == c.pushed.load(Ordering::Relaxed)),
    )
    .await;
    assert!(caught_up.is_ok(), "{t:?}: the puller did not catch up");
    // Every copy queued is heard or counted as dropped (a copy in flight settles within the
    // bound; a drop wakes nobody, so this looks every 20 ms).
    let settled = tokio::time::timeout(Duration::from_secs(20), async {
        while counts.heard.load(Ordering::Relaxed) + publisher.dropped().total()
            < counts.queued.load(Ordering::Relaxed)
        {
            let _ = tokio::time::timeout(Duration::from_millis(20), counts.until(|_| false)).await;
        }
    })
    .await;
    assert!(
        settled.is_ok(),
        "{t:?}: {} copies queued, {} heard, {:?}",
        counts.queued.load(Ordering::Relaxed),
        counts.heard.load(Ordering::Relaxed),
        publisher.dropped()
    );
    pulling.abort();
    answering.abort();
    hearing.abort();
    drop(publisher);
    client.close().await;
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_pattern_runs_flat_out_with_bounded_memory_and_descriptors_and_balanced_counts() {
    let secs: u64 = std::env::var("WEIDA_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    for t in [Transport::Quic, Transport::Unix, Transport::Inproc] {
        // A warm-up: connections, lanes, allocator arenas and the runtime's pools in place.
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let warm = tokio::spawn(work(t, stop.clone(), counts.clone()));
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (rss0, fds0) = (rss(), fds());
        let mut rss_max = rss0;
        let mut fds_max = fds0;
        let samples = secs * 4;
        for _ in 0..samples {
            tokio::time::sleep(Duration::from_millis(250)).await;
            rss_max = rss_max.max(rss());
            fds_max = fds_max.max(fds());
        }
        stop.store(true, Ordering::Relaxed);
        warm.await.unwrap();
        let c = &counts;
        let line = format!(
            "{t:?}: {} pushed, {} requests, {} copies in {secs} s; resident {} → max {} MiB, \
             descriptors {fds0} → max {fds_max} → {} after",
            c.pushed.load(Ordering::Relaxed),
            c.answered.load(Ordering::Relaxed),
            c.heard.load(Ordering::Relaxed),
            rss0 >> 20,
            rss_max >> 20,
            fds()
        );
        eprintln!("soak: {line}");
        assert_eq!(
            c.requested.load(Ordering::Relaxed),
            c.answered.load(Ordering::Relaxed),
            "{line}"
        );
        assert!(c.pushed.load(Ordering::Relaxed) > 0 && c.heard.load(Ordering::Relaxed) > 0);
        assert!(rss_max - rss0 <= RSS_BOUND, "{line}");
        assert!(fds() <= fds0 + FD_BOUND, "{line}");
    }
}
