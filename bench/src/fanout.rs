//! Pub/Sub fan-out (issue 3's rows): copies/s and publisher CPU per subscriber per message at
//! several widths, transport memory per subscriber, and idle latency, with raw quinn's
//! stream-per-message rate and one-way stream latency measured in the same run as the ratios'
//! denominators. All over QUIC on loopback, both ends in this process, 1 KiB bodies.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;
use weida::{Limits, Runtime, RuntimeConfig};

use crate::meter::Window;
use crate::{rawquic, BoxResult};

/// Body size of every row.
pub(crate) const SIZE: usize = 1024;
/// Messages a publisher keeps ahead of its slowest subscriber: below `endpoint_queue` (256), so
/// the rate is of copies delivered, not of copies dropped.
const AHEAD: u64 = 16;

/// One width's measurement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Width {
    pub(crate) copies_per_sec: f64,
    /// Wall time inside `publish` per subscriber per message: the publisher's own fan-out cost
    /// (matching, queueing one shared `Bytes` per subscriber).
    pub(crate) publish_ns_per_copy: f64,
}

struct Counts {
    got: Vec<AtomicU64>,
    notify: Notify,
}

impl Counts {
    fn min(&self) -> u64 {
        self.got
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    }
}

async fn setup(
    width: usize,
) -> BoxResult<(Runtime, Runtime, weida::Publisher, Vec<weida::Subscriber>)> {
    let limits = Limits::default();
    let cfg = || RuntimeConfig {
        limits: limits.clone(),
        ..RuntimeConfig::default()
    };
    let server = Runtime::new(cfg())?;
    let listener = server.bind("weida://127.0.0.1:0").await?;
    let publisher = listener.publisher("/feed")?;
    let client = Runtime::new(cfg())?;
    let addr = publisher.address().to_string();
    let mut subs = Vec::with_capacity(width);
    for _ in 0..width {
        let s = client.subscriber();
        s.connect(&addr).await?;
        s.subscribe("bench.#").await?;
        subs.push(s);
    }
    Ok((server, client, publisher, subs))
}

/// Copies/s delivered at `width` subscribers, publishing as fast as the slowest keeps up.
pub(crate) async fn width(width: usize, w: Window) -> BoxResult<Width> {
    let (server, client, publisher, subs) = setup(width).await?;
    let counts = Arc::new(Counts {
        got: (0..width).map(|_| AtomicU64::new(0)).collect(),
        notify: Notify::new(),
    });
    let mut readers = Vec::new();
    for (i, s) in subs.into_iter().enumerate() {
        let c = counts.clone();
        readers.push(tokio::spawn(async move {
            while let Ok(batch) = s.recv_many(64).await {
                c.got[i].fetch_add(batch.len() as u64, Ordering::AcqRel);
                c.notify.notify_one();
            }
        }));
    }
    let body = Bytes::from(vec![7u8; SIZE]);
    let mut published = 0u64;
    let mut in_publish = Duration::ZERO;
    let run = async {
        let began = Instant::now();
        let mut start: Option<(Instant, u64, Duration, u64)> = None;
        loop {
            while published - counts.min() >= AHEAD {
                let n = counts.notify.notified();
                tokio::pin!(n);
                n.as_mut().enable();
                if published - counts.min() < AHEAD {
                    break;
                }
                n.await;
            }
            let t = Instant::now();
            publisher.publish("bench.tick", body.clone())?;
            in_publish += t.elapsed();
            published += 1;
            let now = Instant::now();
            match start {
                None if now - began >= w.warmup => {
                    start = Some((now, counts.min(), in_publish, published))
                }
                Some((t0, c0, p0, n0)) if now - t0 >= w.measure => {
                    let delivered = (counts.min() - c0) as f64 * width as f64;
                    let secs = (now - t0).as_secs_f64();
                    let msgs = (published - n0) as f64;
                    return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Width {
                        copies_per_sec: delivered / secs,
                        publish_ns_per_copy: (in_publish - p0).as_nanos() as f64
                            / (msgs * width as f64),
                    });
                }
                _ => {}
            }
        }
    };
    let r = tokio::time::timeout(w.limit(), run).await;
    for r in readers {
        r.abort();
    }
    let dropped = publisher.dropped().total();
    client.shutdown();
    server.shutdown();
    let r = r.map_err(|_| "stalled")??;
    if dropped > 0 {
        return Err(format!("{dropped} copies dropped: the pacing is wrong").into());
    }
    Ok(r)
}

/// Resident memory growth per subscriber connected (both ends are in this process, so this is
/// the publisher's and the subscriber's transport state together).
pub(crate) async fn memory_per_subscriber(width: usize) -> BoxResult<f64> {
    let before = rss()?;
    let (server, client, publisher, subs) = setup(width).await?;
    // Every connection has carried a copy, so its buffers exist.
    publisher.publish("bench.warm", Bytes::from(vec![1u8; SIZE]))?;
    for s in &subs {
        s.recv().await?;
    }
    let after = rss()?;
    drop(subs);
    client.shutdown();
    server.shutdown();
    Ok((after.saturating_sub(before)) as f64 / width as f64)
}

/// Runs [`memory_per_subscriber`] in a new process of this binary: in this one, memory freed by
/// earlier measurements would be reused and the growth read as nothing.
fn memory_in_a_fresh_process(width: usize) -> Result<f64, String> {
    eprintln!("[pubsub] memory per subscriber ({width}, a fresh process)");
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new(exe)
        .args(["--pubsub-memory", &width.to_string()])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "memory probe failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("memory probe printed no number: {e}"))
}

/// The `--pubsub-width N SECS` mode: one paced measurement at `N` subscribers, printed.
pub(crate) fn width_probe(n: usize, secs: f64) -> ! {
    let w = Window {
        warmup: Duration::from_millis(300),
        measure: Duration::from_secs_f64(secs),
    };
    match crate::run_on(crate::Flavour::Current, width(n, w)) {
        Ok(r) => {
            println!(
                "width {n}: {:.0} copies/s, {:.0} ns/copy in publish",
                r.copies_per_sec, r.publish_ns_per_copy
            );
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

/// The `--pubsub-memory N` mode: prints bytes per subscriber and exits.
pub(crate) fn memory_probe(width: usize) -> ! {
    match crate::run_on(crate::Flavour::Current, memory_per_subscriber(width)) {
        Ok(b) => {
            println!("{b:.0}");
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}

fn rss() -> BoxResult<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm.split_whitespace().nth(1).ok_or("statm")?.parse()?;
    // SAFETY: sysconf with a valid name has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    Ok(pages * page)
}

/// Median time from `publish` to the last of `width` subscribers holding the copy, one message
/// at a time on an otherwise idle connection.
pub(crate) async fn idle_latency(width: usize, samples: usize) -> BoxResult<Duration> {
    let (server, client, publisher, subs) = setup(width).await?;
    let body = Bytes::from(vec![3u8; SIZE]);
    let mut v = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        publisher.publish("bench.idle", body.clone())?;
        for s in &subs {
            s.recv().await?;
        }
        v.push(t.elapsed());
    }
    client.shutdown();
    server.shutdown();
    v.sort();
    Ok(v[v.len() / 2])
}

/// Raw quinn: the median time from `open_uni` to the receiver holding the whole 1 KiB stream.
pub(crate) async fn quinn_one_way(samples: usize) -> BoxResult<Duration> {
    let pair = rawquic::pair().await?;
    let body = Bytes::from(vec![3u8; SIZE]);
    let mut v = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        let mut s = pair.client.open_uni().await?;
        s.write_chunk(body.clone()).await?;
        s.finish()?;
        let mut r = pair.server.accept_uni().await?;
        let got = r.read_to_end(SIZE * 2).await?;
        if got.len() != SIZE {
            return Err("short read".into());
        }
        v.push(t.elapsed());
    }
    pair.close();
    v.sort();
    Ok(v[v.len() / 2])
}

fn median<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

/// The Pub/Sub table: every row measured `reps` times, interleaved, medians reported, each on
/// a fresh current-thread runtime. An error in any measurement is returned (the caller fails).
pub(crate) fn table(reps: usize, w: Window, quick: bool) -> Result<String, String> {
    let widths: &[usize] = if quick { &[1, 16] } else { &[1, 16, 256, 1024] };
    let mem_width = if quick { 16 } else { 256 };
    let lat_width = if quick { 16 } else { 256 };
    let samples = if quick { 50 } else { 300 };
    let run =
        |what: &str, f: std::pin::Pin<Box<dyn std::future::Future<Output = BoxResult<f64>>>>| {
            eprintln!("[pubsub] {what}");
            crate::run_on(crate::Flavour::Current, f).map_err(|e| format!("{what}: {e}"))
        };
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); widths.len()];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); widths.len()];
    let (mut quinn, mut mem, mut lat1, mut latw, mut qlat) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        for (i, &n) in widths.iter().enumerate() {
            let r = crate::run_on(crate::Flavour::Current, width(n, w))
                .map_err(|e| format!("width {n}: {e}"))?;
            eprintln!(
                "[pubsub] rep {} width {n}: {:.0} copies/s, {:.0} ns/copy in publish",
                rep + 1,
                r.copies_per_sec,
                r.publish_ns_per_copy
            );
            rates[i].push(r.copies_per_sec);
            cpu[i].push(r.publish_ns_per_copy);
        }
        quinn.push(run(
            "raw quinn stream per message, 1 KiB",
            Box::pin(async move {
                let r = crate::cases::push_pull(
                    crate::cases::Transport::Quic,
                    crate::cases::System::Substrate,
                    SIZE,
                    w,
                )
                .await?;
                Ok(r.per_second())
            }),
        )?);
        mem.push(memory_in_a_fresh_process(mem_width)?);
        lat1.push(run(
            "idle latency, width 1",
            Box::pin(async move { Ok(idle_latency(1, samples).await?.as_secs_f64() * 1e6) }),
        )?);
        latw.push(run(
            "idle latency, wide",
            Box::pin(
                async move { Ok(idle_latency(lat_width, samples / 5).await?.as_secs_f64() * 1e6) },
            ),
        )?);
        qlat.push(run(
            "raw quinn one-way latency",
            Box::pin(async move { Ok(quinn_one_way(samples).await?.as_secs_f64() * 1e6) }),
        )?);
    }
    let quinn = median(quinn);
    let mut out = format!(
        "\n## Pub/Sub fan-out over QUIC, {SIZE} B, one process (median of {reps})\n\n\
         | subscribers | copies/s | ÷ raw quinn stream/msg | ns in `publish` per subscriber per message |\n\
         |---:|---:|---:|---:|\n"
    );
    for (i, &n) in widths.iter().enumerate() {
        let r = median(rates[i].clone());
        out += &format!(
            "| {n} | {r:.0} | {:.2} | {:.0} |\n",
            r / quinn,
            median(cpu[i].clone())
        );
    }
    let (mem, lat1, latw, qlat) = (median(mem), median(lat1), median(latw), median(qlat));
    out += &format!(
        "\nRaw quinn, a uni stream per message on one connection, {SIZE} B: {quinn:.0} msg/s \
         (the denominator above; target at width 256: ≥ 0.8).\n\n\
         | row | value | target |\n|---|---:|---|\n\
         | resident memory per subscriber ({mem_width} subscribers, both ends in this process) | {:.0} KiB | ≤ 400 KiB |\n\
         | idle latency, publish → the copy received, width 1 (median of {samples}) | {lat1:.1} µs | ≤ 1.3 × raw quinn |\n\
         | idle latency, publish → the last of {lat_width} copies received (median of {}) | {latw:.1} µs | |\n\
         | raw quinn one-way stream latency, open → read to end (median of {samples}) | {qlat:.1} µs | |\n\
         | width-1 latency ÷ raw quinn | {:.2} | ≤ 1.3 |\n",
        mem / 1024.0,
        samples / 5,
        lat1 / qlat
    );
    Ok(out)
}
