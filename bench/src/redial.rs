//! `weida-redial`: the two ends of the redial benchmarks (bench/README.md, "Redial and the
//! outbox"), each in its own process; `bench/redial/run.py` starts, kills and restarts them.
//!
//! ```text
//! weida-redial puller --addr weida+unix:///tmp/x.sock --mode first|count [--n N]
//!                     [--identity DIR]   (over QUIC: the key every puller process presents)
//! weida-redial pusher --addr weida+unix:///tmp/x.sock//jobs [--policy default|doubling|constant]
//!                     [--outbox-messages M]
//! ```
//!
//! The puller prints `{"event":"ready"}`, waits for a line on stdin, then binds `--addr` (no
//! path) with a puller at `/jobs`, prints
//! `{"event":"bound","wall":...}` (Unix time in seconds) once the bind has returned, then either
//! (`first`) prints the time from that moment to its first message and keeps receiving, or
//! (`count`) receives `--n` messages and prints the time from the first to the last of them.
//! Both keep running until killed.
//!
//! The pusher reads one command a line on stdin and answers with one JSON line on stdout:
//! `connect` (dial with redial, wait until live), `burst N` (send N 64-byte messages back to
//! back; with no live peer each goes to the outbox), `tick MS` (from now on, one message every
//! MS ms, waiting when the outbox is full), `stop` (no more ticks), `quit`. Its `PeerEvent`s are
//! printed as they come: `{"event":"peer","kind":"lost",...}`.

use std::io::BufRead;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::json;
use weida::{EndpointOptions, PeerEvent, ReconnectPolicy, Runtime, RuntimeConfig};

type BoxResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const SIZE: usize = 64;

fn wall() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn emit(v: serde_json::Value) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn usage() -> ! {
    eprintln!(
        "usage: weida-redial puller --addr ADDR --mode first|count [--n N] [--identity DIR]\n       \
         weida-redial pusher --addr ADDR/PATH [--policy default|doubling|constant] \
         [--outbox-messages M]"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(addr) = arg(&args, "--addr") else {
        usage()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let done = match args.first().map(String::as_str) {
        Some("puller") => {
            let mode = arg(&args, "--mode").unwrap_or_else(|| "first".into());
            let n = arg(&args, "--n").map_or(Ok(1000), |s| s.parse());
            let Ok(n) = n else { usage() };
            let identity = arg(&args, "--identity");
            rt.block_on(puller(&addr, &mode, n, identity.as_deref()))
        }
        Some("pusher") => {
            let policy = arg(&args, "--policy").unwrap_or_else(|| "default".into());
            let outbox = arg(&args, "--outbox-messages").map(|s| s.parse::<usize>());
            let outbox = match outbox {
                Some(Ok(n)) => Some(n),
                Some(Err(_)) => usage(),
                None => None,
            };
            rt.block_on(pusher(&addr, &policy, outbox))
        }
        _ => usage(),
    };
    if let Err(e) = done {
        emit(json!({ "event": "error", "error": e.to_string() }));
        std::process::exit(1);
    }
}

async fn puller(addr: &str, mode: &str, n: usize, identity: Option<&str>) -> BoxResult<()> {
    let mut config = RuntimeConfig::default();
    if let Some(dir) = identity {
        // The same key in every puller process, so a redial's pin is answered.
        config.identity = weida::Identity::load_or_create(dir)?;
    }
    let rt = Runtime::new(config)?;
    // Started ahead of time: bind when told, so the outage does not include starting up.
    emit(json!({ "event": "ready" }));
    let mut go = String::new();
    std::io::stdin().read_line(&mut go)?;
    let listener = rt.bind(addr).await?;
    let puller = listener.puller("/jobs")?;
    let bound = Instant::now();
    emit(json!({
        "event": "bound",
        "wall": wall(),
        "address": puller.address().to_string(),
    }));
    let first = puller.recv().await?;
    let at_first = Instant::now();
    check(first.body.len())?;
    let bind_to_first = at_first.duration_since(bound).as_secs_f64() * 1e3;
    if mode == "count" {
        for _ in 1..n {
            check(puller.recv().await?.body.len())?;
        }
        let secs = at_first.elapsed().as_secs_f64();
        emit(json!({
            "event": "received",
            "n": n,
            "first_to_last_s": secs,
            "msgs_per_s": (n.saturating_sub(1)) as f64 / secs,
            "bind_to_first_ms": bind_to_first,
        }));
    } else {
        emit(json!({ "event": "first", "bind_to_first_ms": bind_to_first }));
    }
    // Keep the connection up (and receiving) until killed.
    loop {
        puller.recv().await?;
    }
}

fn check(len: usize) -> BoxResult<()> {
    if len != SIZE {
        return Err(format!("received {len} bytes, sent {SIZE}").into());
    }
    Ok(())
}

fn policy(name: &str) -> BoxResult<ReconnectPolicy> {
    let hundred = Duration::from_millis(100);
    Ok(match name {
        // 100 ms doubling to 30 s, each delay drawn between half of it and the whole.
        "default" => ReconnectPolicy::default(),
        // 100 ms doubling to 30 s, no jitter.
        "doubling" => ReconnectPolicy {
            jitter: false,
            ..ReconnectPolicy::default()
        },
        // Every 100 ms, no jitter: libzmq's ZMQ_RECONNECT_IVL with ZMQ_RECONNECT_IVL_MAX 0.
        "constant" => ReconnectPolicy {
            initial: hundred,
            max: hundred,
            jitter: false,
            ..ReconnectPolicy::default()
        },
        other => return Err(format!("no policy {other}").into()),
    })
}

async fn pusher(addr: &str, policy_name: &str, outbox: Option<usize>) -> BoxResult<()> {
    let rt = Runtime::new(RuntimeConfig::default())?;
    let mut options = EndpointOptions::new().reconnect(policy(policy_name)?);
    if let Some(m) = outbox {
        options = options
            .outbox_messages(m)
            .outbox_bytes((m * SIZE * 2).max(8 << 20));
    }
    let pusher = std::sync::Arc::new(rt.pusher_with(&options)?);
    let mut events = pusher.events();
    tokio::spawn(async move {
        while let Some(e) = events.next().await {
            let Ok(e) = e else { continue };
            let mut line = json!({ "event": "peer", "kind": e.name(), "wall": wall() });
            if let PeerEvent::Retrying { attempt, delay, .. } = &e {
                line["attempt"] = json!(attempt);
                line["delay_ms"] = json!(delay.as_secs_f64() * 1e3);
            }
            emit(line);
        }
    });
    // Commands from a thread reading stdin (tokio's stdin needs a feature the workspace does
    // not turn on).
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let body = Bytes::from(vec![7u8; SIZE]);
    let mut ticking: Option<tokio::task::JoinHandle<()>> = None;
    while let Some(line) = rx.recv().await {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["connect"] => {
                pusher.connect(addr).await?;
                emit(json!({ "event": "connected" }));
            }
            ["burst", n] => {
                let n: usize = n.parse()?;
                let began = Instant::now();
                for _ in 0..n {
                    pusher.send(body.clone()).await?;
                }
                let c = rt.counters();
                emit(json!({
                    "event": "sent",
                    "n": n,
                    "secs": began.elapsed().as_secs_f64(),
                    "outbox_queued": c.outbox_queued,
                }));
            }
            ["tick", ms] => {
                let every = Duration::from_secs_f64(ms.parse::<f64>()? / 1e3);
                let p = pusher.clone();
                let b = body.clone();
                ticking = Some(tokio::spawn(async move {
                    let mut clock = tokio::time::interval(every);
                    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    loop {
                        clock.tick().await;
                        // A send caught by a connection's loss fails; the next one goes on.
                        if let Err(e) = p.send(b.clone()).await {
                            emit(
                                json!({ "event": "send_error", "error": e.to_string(), "wall": wall() }),
                            );
                        }
                    }
                }));
                emit(json!({ "event": "ticking" }));
            }
            ["stop"] => {
                if let Some(t) = ticking.take() {
                    t.abort();
                }
                emit(json!({ "event": "stopped" }));
            }
            ["quit"] => break,
            _ => emit(json!({ "event": "error", "error": format!("unknown command {line}") })),
        }
    }
    Ok(())
}
