//! `weida bench`: both ends of a pattern in this process, on loopback, for a fixed time. A
//! quick look at what a machine does, not the project's benchmark (bench/ measures weida
//! against its substrates, with warmups and repeats).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use tokio::task::JoinSet;
use weida::{Runtime, RuntimeConfig};

use crate::args::{BenchArgs, BenchPattern, BenchTransport};
use crate::exit::Failure;
use crate::progress;

/// The path both ends use.
const PATH: &str = "/bench";
/// How often the live rate line is redrawn.
const TICK: Duration = Duration::from_millis(100);

/// What one run measured.
struct Measured {
    /// Messages received whole (push-pull) or replies received (req-rep).
    messages: u64,
    elapsed: Duration,
    /// Each request's round trip, for req-rep; empty for push-pull.
    latencies: Vec<Duration>,
}

/// Runs the benchmark and prints its table, or one JSON object with `--json`.
pub(crate) async fn run(args: BenchArgs) -> Result<(), Failure> {
    let server = Runtime::new(RuntimeConfig::default())?;
    let client = Runtime::new(RuntimeConfig::default())?;
    // Kept until the end: the unix socket lives in it.
    let (bind, _dir) = loopback(args.transport)?;
    let progress = progress_bar(&args);
    let measured = match args.pattern {
        BenchPattern::PushPull => push_pull(&server, &client, &bind, &args, &progress).await,
        BenchPattern::ReqRep => req_rep(&server, &client, &bind, &args, &progress).await,
    };
    progress.finish_and_clear();
    // As every command does: both ends' closes are sent before the process exits.
    tokio::join!(client.close(), server.close());
    let report = report(&args, &measured.map_err(|f| f.context("benchmarking"))?);
    if args.json {
        println!("{report}");
    } else {
        print!("{}", table(&report));
    }
    Ok(())
}

/// The address to bind for `transport`, and the temporary directory a socket lives in.
fn loopback(transport: BenchTransport) -> Result<(String, Option<tempfile::TempDir>), Failure> {
    Ok(match transport {
        BenchTransport::Quic => ("weida://127.0.0.1:0".into(), None),
        BenchTransport::Unix => {
            let dir = tempfile::Builder::new().prefix("weida-bench").tempdir()?;
            let bind = format!("weida+unix://{}", dir.path().join("bench.sock").display());
            (bind, Some(dir))
        }
        BenchTransport::Inproc => (
            format!("weida+inproc://weida-bench-{}", std::process::id()),
            None,
        ),
    })
}

/// Pushers send the same body as fast as the pullers' budget lets them; the rate is what the
/// puller received whole within the duration.
async fn push_pull(
    server: &Runtime,
    client: &Runtime,
    bind: &str,
    args: &BenchArgs,
    progress: &ProgressBar,
) -> Result<Measured, Failure> {
    let listener = server.bind(bind).await?;
    let puller = listener.puller(PATH)?;
    let pusher = Arc::new(client.pusher());
    pusher.connect(&puller.address().to_string()).await?;
    let body = Bytes::from(vec![0x5a; args.size]);
    let stop = Arc::new(AtomicBool::new(false));
    let mut senders = JoinSet::new();
    for _ in 0..args.concurrency {
        let (pusher, body, stop) = (pusher.clone(), body.clone(), stop.clone());
        senders.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                pusher.send(body.clone()).await?;
            }
            Ok::<(), weida::Error>(())
        });
    }
    let start = Instant::now();
    let deadline = tokio::time::Instant::from_std(start + args.duration);
    let mut meter = Meter::new(start);
    let mut received = 0u64;
    let mut tick = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            batch = puller.recv_many(256) => received += batch?.len() as u64,
            _ = tick.tick() => {
                meter.show(progress, received, args.size);
                if let Some(Ok(Err(e))) = senders.try_join_next() {
                    return Err(e.into());
                }
            }
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    senders.abort_all();
    Ok(Measured {
        messages: received,
        elapsed,
        latencies: Vec::new(),
    })
}

/// Requesters send the body and wait for it echoed back, each timing its round trips; as
/// many repliers answer as there are requesters.
async fn req_rep(
    server: &Runtime,
    client: &Runtime,
    bind: &str,
    args: &BenchArgs,
    progress: &ProgressBar,
) -> Result<Measured, Failure> {
    let listener = server.bind(bind).await?;
    let replier = Arc::new(listener.replier(PATH)?);
    let mut repliers = JoinSet::new();
    for _ in 0..args.concurrency {
        let replier = replier.clone();
        // A failed exchange reaches its requester, which reports it.
        repliers.spawn(async move {
            while let Ok(mut ex) = replier.accept().await {
                if let Ok(body) = ex.take_body().await {
                    let _ = ex.reply(body).await;
                }
            }
        });
    }
    let requester = Arc::new(client.requester());
    requester.connect(&replier.address().to_string()).await?;
    let body = Bytes::from(vec![0x5a; args.size]);
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + args.duration;
    let mut requesters = JoinSet::new();
    for _ in 0..args.concurrency {
        let (requester, body, done) = (requester.clone(), body.clone(), done.clone());
        requesters.spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let sent = Instant::now();
                requester.request(body.clone()).await?;
                latencies.push(sent.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, weida::Error>(latencies)
        });
    }
    let mut meter = Meter::new(start);
    let mut latencies = Vec::new();
    let mut tick = tokio::time::interval(TICK);
    // The requesters end by themselves at the deadline, each after its last round trip.
    while !requesters.is_empty() {
        tokio::select! {
            joined = requesters.join_next() => {
                let mine = joined
                    .expect("not empty")
                    .map_err(|e| Failure::msg(format!("a requester task failed: {e}")))??;
                latencies.extend(mine);
            }
            _ = tick.tick() => meter.show(progress, done.load(Ordering::Relaxed), args.size),
        }
    }
    let elapsed = start.elapsed();
    repliers.abort_all();
    Ok(Measured {
        messages: latencies.len() as u64,
        elapsed,
        latencies,
    })
}

/// The live rate: messages over the last tick.
struct Meter {
    start: Instant,
    last: (Instant, u64),
}

impl Meter {
    fn new(start: Instant) -> Self {
        Self {
            start,
            last: (start, 0),
        }
    }

    fn show(&mut self, progress: &ProgressBar, messages: u64, size: usize) {
        let now = Instant::now();
        let dt = now.duration_since(self.last.0).as_secs_f64().max(1e-9);
        let rate = (messages - self.last.1) as f64 / dt;
        self.last = (now, messages);
        progress.set_position(now.duration_since(self.start).as_millis() as u64);
        progress.set_message(format!(
            "{:>10.0} msgs/s {:>9.2} MB/s",
            rate,
            rate * size as f64 / 1e6
        ));
    }
}

/// A bar over the duration with the live rate, on stderr; hidden with --quiet, or as any
/// progress is (progress.rs: when stderr is not a terminal, unless --progress).
fn progress_bar(args: &BenchArgs) -> ProgressBar {
    if args.quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(args.duration.as_millis() as u64);
    let style = ProgressStyle::with_template("{prefix} [{bar:30}] {msg}")
        .expect("a valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(format!(
        "{} {} {} B",
        name(args.pattern),
        name(args.transport),
        args.size
    ));
    progress::add(bar)
}

/// The JSON object of a run (the schema is in cli/README.md); the table is printed from it.
fn report(args: &BenchArgs, m: &Measured) -> Value {
    let secs = m.elapsed.as_secs_f64();
    let rate = m.messages as f64 / secs;
    let latency = if m.latencies.is_empty() {
        Value::Null
    } else {
        let mut sorted = m.latencies.clone();
        sorted.sort_unstable();
        let us = |q: f64| percentile(&sorted, q).as_secs_f64() * 1e6;
        json!({ "p50": us(0.50), "p90": us(0.90), "p99": us(0.99) })
    };
    json!({
        "pattern": name(args.pattern),
        "transport": name(args.transport),
        "size": args.size,
        "concurrency": args.concurrency,
        "duration_secs": secs,
        "messages": m.messages,
        "bytes": m.messages * args.size as u64,
        "msgs_per_sec": rate,
        "mb_per_sec": rate * args.size as f64 / 1e6,
        "latency_us": latency,
    })
}

/// The nearest-rank percentile of sorted, non-empty `v`.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One header line and one row.
fn table(r: &Value) -> String {
    let lat = |p: &str| {
        r["latency_us"][p]
            .as_f64()
            .map_or_else(|| "-".to_string(), |v| format!("{v:.0}"))
    };
    let f = |k: &str| r[k].as_f64().unwrap_or_default();
    // As numbers: a JSON value's Display ignores the column width.
    let n = |k: &str| r[k].as_u64().unwrap_or_default();
    format!(
        "{:<10} {:<9} {:>8} {:>5} {:>7} {:>10} {:>12} {:>9} {:>8} {:>8} {:>8}\n\
         {:<10} {:<9} {:>8} {:>5} {:>7.2} {:>10} {:>12.0} {:>9.2} {:>8} {:>8} {:>8}\n",
        "pattern",
        "transport",
        "size B",
        "conc",
        "secs",
        "messages",
        "msgs/s",
        "MB/s",
        "p50 us",
        "p90 us",
        "p99 us",
        r["pattern"].as_str().unwrap_or_default(),
        r["transport"].as_str().unwrap_or_default(),
        n("size"),
        n("concurrency"),
        f("duration_secs"),
        n("messages"),
        f("msgs_per_sec"),
        f("mb_per_sec"),
        lat("p50"),
        lat("p90"),
        lat("p99"),
    )
}

/// A value's name as the command line spells it.
fn name(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&v, 0.50), Duration::from_micros(50));
        assert_eq!(percentile(&v, 0.99), Duration::from_micros(99));
        assert_eq!(percentile(&v[..1], 0.99), Duration::from_micros(1));
    }
}
