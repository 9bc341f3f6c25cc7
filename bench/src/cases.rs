//! The workloads: Push/Pull throughput and Req/Rep latency, for weida on each transport and for
//! the substrate that transport is built on. Each function sets up its own peers, measures, and
//! tears them down; it runs inside a fresh tokio runtime (see `main::run_on`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use weida::{Runtime, RuntimeConfig};

use crate::meter::{Latency, Meter, Rate, Recorder, Window};
use crate::rawquic;
use crate::BoxResult;

/// Where the messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Quic,
    Unix,
    Inproc,
}

impl Transport {
    pub(crate) const ALL: [Self; 3] = [Self::Quic, Self::Unix, Self::Inproc];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Quic => "QUIC",
            Self::Unix => "AF_UNIX",
            Self::Inproc => "in process",
        }
    }

    /// What the substrate row measures.
    pub(crate) fn substrate(self, reqrep: bool) -> &'static str {
        match (self, reqrep) {
            (Self::Quic, false) => "quinn, uni stream per msg",
            (Self::Quic, true) => "quinn, bidi stream per req",
            (Self::Unix, false) => "framed UnixStream",
            (Self::Unix, true) => "framed UnixStream ping-pong",
            (Self::Inproc, false) => "tokio mpsc<Bytes>",
            (Self::Inproc, true) => "mpsc + oneshot",
        }
    }
}

/// weida, or what it is built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum System {
    Weida,
    Substrate,
}

/// Pending messages a local substrate channel holds: weida's default uni stream budget.
const CHANNEL_DEPTH: usize = 256;
/// Body limit for the substrate's reads (weida's default `max_collected_body`).
pub(crate) const MAX_BODY: usize = 16 << 20;
/// Below this a framed message is copied with its prefix into one write, as weida's AF_UNIX
/// writer does.
pub(crate) const COALESCE: usize = 16 * 1024;

fn unique() -> u64 {
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

pub(crate) fn socket_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "weida-bench-{}-{}.sock",
        std::process::id(),
        unique()
    ))
}

pub(crate) fn bind_address(t: Transport) -> (String, Option<std::path::PathBuf>) {
    match t {
        Transport::Quic => ("weida://127.0.0.1:0".to_string(), None),
        Transport::Inproc => (
            format!("weida+inproc://bench-{}-{}", std::process::id(), unique()),
            None,
        ),
        Transport::Unix => {
            let p = socket_path();
            (format!("weida+unix://{}", p.display()), Some(p))
        }
    }
}

pub(crate) fn payload(size: usize) -> Bytes {
    Bytes::from((0..size).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

pub(crate) fn check(len: usize, size: usize) -> BoxResult<()> {
    if len == size {
        Ok(())
    } else {
        Err(format!("received {len} bytes, sent {size}").into())
    }
}

/// Runs `body` under the window's stall limit.
async fn bounded<T>(
    w: Window,
    body: impl std::future::Future<Output = BoxResult<T>>,
) -> BoxResult<T> {
    tokio::time::timeout(w.limit(), body)
        .await
        .map_err(|_| "stalled: no progress within the time limit")?
}

/// Push/Pull throughput: a task sends back to back while this one receives and counts.
pub(crate) async fn push_pull(t: Transport, s: System, size: usize, w: Window) -> BoxResult<Rate> {
    match (t, s) {
        (_, System::Weida) => weida_push(t, size, w).await,
        (Transport::Quic, System::Substrate) => quinn_push(size, w).await,
        (Transport::Unix, System::Substrate) => unix_push(size, w).await,
        (Transport::Inproc, System::Substrate) => mpsc_push(size, w).await,
    }
}

/// Req/Rep latency, one request outstanding: each request's round trip.
pub(crate) async fn req_rep(t: Transport, s: System, size: usize, w: Window) -> BoxResult<Latency> {
    match (t, s) {
        (_, System::Weida) => weida_reqrep(t, size, w).await,
        (Transport::Quic, System::Substrate) => quinn_reqrep(size, w).await,
        (Transport::Unix, System::Substrate) => unix_reqrep(size, w).await,
        (Transport::Inproc, System::Substrate) => mpsc_reqrep(size, w).await,
    }
}

/// A bound runtime and a dialling one, as two peers would have.
async fn weida_pair(
    t: Transport,
) -> BoxResult<(
    Runtime,
    weida::Listener,
    Runtime,
    Option<std::path::PathBuf>,
)> {
    let server = Runtime::new(RuntimeConfig::default())?;
    let (address, file) = bind_address(t);
    let listener = server.bind(&address).await?;
    let client = Runtime::new(RuntimeConfig::default())?;
    Ok((server, listener, client, file))
}

fn weida_teardown(server: &Runtime, client: &Runtime, file: Option<std::path::PathBuf>) {
    client.shutdown();
    server.shutdown();
    if let Some(f) = file {
        let _ = std::fs::remove_file(f);
    }
}

async fn weida_push(t: Transport, size: usize, w: Window) -> BoxResult<Rate> {
    let (server, listener, client, file) = weida_pair(t).await?;
    let puller = listener.puller("/p")?;
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await?;
    let body = payload(size);
    let sender = tokio::spawn(async move { while pusher.send(body.clone()).await.is_ok() {} });
    let mut meter = Meter::new(w, size);
    let r = bounded(w, async {
        loop {
            let m = puller.recv().await?;
            check(m.body.len(), size)?;
            if meter.tick() {
                return Ok(());
            }
        }
    })
    .await;
    sender.abort();
    weida_teardown(&server, &client, file);
    r?;
    meter.rate().ok_or_else(|| "no complete window".into())
}

async fn weida_reqrep(t: Transport, size: usize, w: Window) -> BoxResult<Latency> {
    let (server, listener, client, file) = weida_pair(t).await?;
    let replier = listener.replier("/r")?;
    let echo = tokio::spawn(async move {
        while let Ok(mut ex) = replier.accept().await {
            let Ok(body) = ex.take_body().await else {
                break;
            };
            if ex.reply(body).await.is_err() {
                break;
            }
        }
    });
    let requester = client.requester();
    requester
        .connect(&listener.address().with_path("/r")?.to_string())
        .await?;
    let body = payload(size);
    let mut rec = Recorder::new(w);
    let r = bounded(w, async {
        loop {
            let began = Instant::now();
            let reply = requester.request(body.clone()).await?;
            check(reply.len(), size)?;
            if rec.record(began) {
                return Ok(());
            }
        }
    })
    .await;
    echo.abort();
    weida_teardown(&server, &client, file);
    r?;
    rec.latency().ok_or_else(|| "no samples".into())
}

async fn quinn_push(size: usize, w: Window) -> BoxResult<Rate> {
    let pair = rawquic::pair().await?;
    let conn = pair.client.clone();
    let body = payload(size);
    let sender = tokio::spawn(async move {
        loop {
            let Ok(mut s) = conn.open_uni().await else {
                break;
            };
            // One whole Bytes, no copy: what weida hands quinn too.
            if s.write_chunk(body.clone()).await.is_err() || s.finish().is_err() {
                break;
            }
        }
    });
    let mut meter = Meter::new(w, size);
    let r = bounded(w, async {
        loop {
            let mut s = pair.server.accept_uni().await?;
            let v = s.read_to_end(MAX_BODY).await?;
            check(v.len(), size)?;
            if meter.tick() {
                return Ok(());
            }
        }
    })
    .await;
    sender.abort();
    pair.close();
    r?;
    meter.rate().ok_or_else(|| "no complete window".into())
}

async fn quinn_reqrep(size: usize, w: Window) -> BoxResult<Latency> {
    let pair = rawquic::pair().await?;
    let server = pair.server.clone();
    let echo = tokio::spawn(async move {
        while let Ok((mut send, mut recv)) = server.accept_bi().await {
            let Ok(req) = recv.read_to_end(MAX_BODY).await else {
                break;
            };
            if send.write_chunk(Bytes::from(req)).await.is_err() || send.finish().is_err() {
                break;
            }
        }
    });
    let body = payload(size);
    let mut rec = Recorder::new(w);
    let r = bounded(w, async {
        loop {
            let began = Instant::now();
            let (mut send, mut recv) = pair.client.open_bi().await?;
            send.write_chunk(body.clone()).await?;
            send.finish()?;
            let reply = recv.read_to_end(MAX_BODY).await?;
            check(reply.len(), size)?;
            if rec.record(began) {
                return Ok(());
            }
        }
    })
    .await;
    echo.abort();
    pair.close();
    r?;
    rec.latency().ok_or_else(|| "no samples".into())
}

/// One long-lived connection, both ends.
async fn unix_pair() -> BoxResult<(UnixStream, UnixStream, std::path::PathBuf)> {
    let path = socket_path();
    let listener = UnixListener::bind(&path)?;
    let (client, accepted) = tokio::join!(UnixStream::connect(&path), listener.accept());
    Ok((client?, accepted?.0, path))
}

/// Writes one u32-length-prefixed frame; small ones in one write.
pub(crate) async fn write_frame<W: AsyncWriteExt + Unpin>(
    w: &mut W,
    scratch: &mut Vec<u8>,
    body: &[u8],
) -> std::io::Result<()> {
    let prefix = (body.len() as u32).to_be_bytes();
    if body.len() <= COALESCE {
        scratch.clear();
        scratch.extend_from_slice(&prefix);
        scratch.extend_from_slice(body);
        w.write_all(scratch).await
    } else {
        w.write_all(&prefix).await?;
        w.write_all(body).await
    }
}

/// Reads one frame into a fresh buffer (a message is handed on as `Bytes`).
pub(crate) async fn read_frame<R: AsyncReadExt + Unpin>(r: &mut R) -> std::io::Result<Bytes> {
    let len = r.read_u32().await? as usize;
    if len > MAX_BODY {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "frame too large",
        ));
    }
    let mut b = BytesMut::zeroed(len);
    r.read_exact(&mut b).await?;
    Ok(b.freeze())
}

async fn unix_push(size: usize, w: Window) -> BoxResult<Rate> {
    let (client, server, path) = unix_pair().await?;
    let r = framed_push(client, server, size, w).await;
    let _ = std::fs::remove_file(path);
    r
}

/// Push/Pull over one long-lived byte stream: a task writes u32-length-prefixed frames back to
/// back into `wr` while this one reads them from `rd` and counts.
async fn framed_push<W, R>(mut wr: W, rd: R, size: usize, w: Window) -> BoxResult<Rate>
where
    W: AsyncWrite + Unpin + Send + 'static,
    R: AsyncRead + Unpin,
{
    let body = payload(size);
    let sender = tokio::spawn(async move {
        let mut scratch = Vec::with_capacity(COALESCE + 4);
        while write_frame(&mut wr, &mut scratch, &body).await.is_ok() {}
    });
    let mut rd = BufReader::with_capacity(64 * 1024, rd);
    let mut meter = Meter::new(w, size);
    let r = bounded(w, async {
        loop {
            let m = read_frame(&mut rd).await?;
            check(m.len(), size)?;
            if meter.tick() {
                return Ok(());
            }
        }
    })
    .await;
    sender.abort();
    r?;
    meter.rate().ok_or_else(|| "no complete window".into())
}

async fn unix_reqrep(size: usize, w: Window) -> BoxResult<Latency> {
    let (client, server, path) = unix_pair().await?;
    let (srd, swr) = server.into_split();
    let (crd, cwr) = client.into_split();
    let r = framed_reqrep((crd, cwr), async move { Ok((srd, swr)) }, size, w).await;
    let _ = std::fs::remove_file(path);
    r
}

/// Req/Rep ping-pong over one long-lived byte stream each way: `client` sends a frame and
/// reads the echo that a task serving `server` writes back. `server` is a future because a QUIC
/// stream reaches its acceptor only once the opener has written to it.
async fn framed_reqrep<R1, W1, R2, W2>(
    client: (R1, W1),
    server: impl std::future::Future<Output = BoxResult<(R2, W2)>> + Send + 'static,
    size: usize,
    w: Window,
) -> BoxResult<Latency>
where
    R1: AsyncRead + Unpin,
    W1: AsyncWrite + Unpin,
    R2: AsyncRead + Unpin + Send + 'static,
    W2: AsyncWrite + Unpin + Send + 'static,
{
    let echo = tokio::spawn(async move {
        let Ok((rd, mut wr)) = server.await else {
            return;
        };
        let mut rd = BufReader::with_capacity(64 * 1024, rd);
        let mut scratch = Vec::with_capacity(COALESCE + 4);
        while let Ok(req) = read_frame(&mut rd).await {
            if write_frame(&mut wr, &mut scratch, &req).await.is_err() {
                break;
            }
        }
    });
    let (rd, mut wr) = client;
    let mut rd = BufReader::with_capacity(64 * 1024, rd);
    let mut scratch = Vec::with_capacity(COALESCE + 4);
    let body = payload(size);
    let mut rec = Recorder::new(w);
    let r = bounded(w, async {
        loop {
            let began = Instant::now();
            write_frame(&mut wr, &mut scratch, &body).await?;
            let reply = read_frame(&mut rd).await?;
            check(reply.len(), size)?;
            if rec.record(began) {
                return Ok(());
            }
        }
    })
    .await;
    echo.abort();
    r?;
    rec.latency().ok_or_else(|| "no samples".into())
}

/// One long-lived loopback TCP connection, both ends, Nagle off (as every messaging library
/// sets it).
async fn tcp_pair() -> BoxResult<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (client, server) = (client?, accepted?.0);
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    Ok((client, server))
}

/// Push/Pull over one framed loopback TCP connection (the suite's ceiling for tcp rows).
pub(crate) async fn tcp_push(size: usize, w: Window) -> BoxResult<Rate> {
    let (client, server) = tcp_pair().await?;
    framed_push(client, server, size, w).await
}

/// Req/Rep ping-pong over one framed loopback TCP connection.
pub(crate) async fn tcp_reqrep(size: usize, w: Window) -> BoxResult<Latency> {
    let (client, server) = tcp_pair().await?;
    let (srd, swr) = server.into_split();
    framed_reqrep(client.into_split(), async move { Ok((srd, swr)) }, size, w).await
}

/// Push/Pull over raw quinn with one long-lived uni stream carrying u32-length-prefixed
/// frames: no stream setup per message, so the ceiling of what QUIC itself moves. Frames up to
/// `COALESCE` are gathered into chunks of `GATHER` bytes before they are handed to quinn, as a
/// framed codec's write buffer does: quinn keeps one send-buffer segment per write and finds an
/// offset by scanning them (quinn-proto `SendBuffer::get`), so a write per 68-byte frame costs
/// it about 9 µs on this bench's machine. Larger bodies go as a prefix and the whole `Bytes`,
/// no copy, as in the stream-per-message case.
pub(crate) async fn quinn_long_push(size: usize, w: Window) -> BoxResult<Rate> {
    const GATHER: usize = 64 * 1024;
    let pair = rawquic::pair().await?;
    let conn = pair.client.clone();
    let body = payload(size);
    let sender = tokio::spawn(async move {
        let Ok(mut s) = conn.open_uni().await else {
            return;
        };
        let prefix = Bytes::copy_from_slice(&(body.len() as u32).to_be_bytes());
        let mut buf = BytesMut::with_capacity(GATHER + COALESCE + 4);
        loop {
            let ok = if body.len() <= COALESCE {
                buf.extend_from_slice(&prefix);
                buf.extend_from_slice(&body);
                buf.len() < GATHER || s.write_chunk(buf.split().freeze()).await.is_ok()
            } else {
                s.write_chunk(prefix.clone()).await.is_ok()
                    && s.write_chunk(body.clone()).await.is_ok()
            };
            if !ok {
                break;
            }
        }
    });
    let r = bounded(w, async {
        let s = pair.server.accept_uni().await?;
        let mut rd = BufReader::with_capacity(64 * 1024, s);
        let mut meter = Meter::new(w, size);
        loop {
            let m = read_frame(&mut rd).await?;
            check(m.len(), size)?;
            if meter.tick() {
                return meter.rate().ok_or_else(|| "no complete window".into());
            }
        }
    })
    .await;
    sender.abort();
    pair.close();
    r
}

/// Req/Rep ping-pong over raw quinn on one long-lived bidi stream, framed.
pub(crate) async fn quinn_long_reqrep(size: usize, w: Window) -> BoxResult<Latency> {
    let pair = rawquic::pair().await?;
    let (send, recv) = pair.client.open_bi().await?;
    let server = pair.server.clone();
    let accepted = async move {
        let (s, r) = server.accept_bi().await?;
        Ok((r, s))
    };
    let r = framed_reqrep((recv, send), accepted, size, w).await;
    pair.close();
    r
}

async fn mpsc_push(size: usize, w: Window) -> BoxResult<Rate> {
    let (tx, mut rx) = mpsc::channel::<Bytes>(CHANNEL_DEPTH);
    let body = payload(size);
    let sender = tokio::spawn(async move { while tx.send(body.clone()).await.is_ok() {} });
    let mut meter = Meter::new(w, size);
    let r = bounded(w, async {
        loop {
            let m = rx.recv().await.ok_or("sender gone")?;
            check(m.len(), size)?;
            if meter.tick() {
                return Ok(());
            }
        }
    })
    .await;
    sender.abort();
    r?;
    meter.rate().ok_or_else(|| "no complete window".into())
}

async fn mpsc_reqrep(size: usize, w: Window) -> BoxResult<Latency> {
    let (tx, mut rx) = mpsc::channel::<(Bytes, oneshot::Sender<Bytes>)>(CHANNEL_DEPTH);
    let echo = tokio::spawn(async move {
        while let Some((req, reply)) = rx.recv().await {
            let _ = reply.send(req);
        }
    });
    let body = payload(size);
    let mut rec = Recorder::new(w);
    let r = bounded(w, async {
        loop {
            let began = Instant::now();
            let (otx, orx) = oneshot::channel();
            tx.send((body.clone(), otx))
                .await
                .map_err(|_| "echo gone")?;
            let reply = orx.await?;
            check(reply.len(), size)?;
            if rec.record(began) {
                return Ok(());
            }
        }
    })
    .await;
    echo.abort();
    r?;
    rec.latency().ok_or_else(|| "no samples".into())
}

/// Pub/Sub copies/s (the suite's rows, `--one --bench pub_sub`): a publisher on one runtime,
/// `width` subscribers on another, each subscribed to everything the publisher sends. The
/// publisher publishes flat out, as the other systems' rows do, and yields to the runtime
/// every 32 messages so the subscribers' tasks run; `publish` never waits, so a subscriber
/// that falls behind loses copies, and the rate counts the copies received (each
/// subscriber's `recv_many` of up to 256), read before and after the window.
pub(crate) async fn pub_sub(t: Transport, width: usize, size: usize, w: Window) -> BoxResult<Rate> {
    let (server, listener, client, file) = weida_pair(t).await?;
    let publisher = Arc::new(listener.publisher("/feed")?);
    let addr = publisher.address().to_string();
    let got = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::with_capacity(width);
    for _ in 0..width {
        let s = client.subscriber();
        s.connect(&addr).await?;
        s.subscribe("bench.#").await?;
        let got = got.clone();
        readers.push(tokio::spawn(async move {
            while let Ok(batch) = s.recv_many(256).await {
                for m in &batch {
                    if m.body.len() != size {
                        return;
                    }
                }
                got.fetch_add(batch.len() as u64, Ordering::Relaxed);
            }
        }));
    }
    let body = payload(size);
    let publishing = {
        let publisher = publisher.clone();
        tokio::spawn(async move {
            let mut n = 0u64;
            while publisher.publish("bench.tick", body.clone()).is_ok() {
                n += 1;
                if n % 32 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let r = bounded(w, async {
        tokio::time::sleep(w.warmup).await;
        let (t0, n0) = (Instant::now(), got.load(Ordering::Relaxed));
        tokio::time::sleep(w.measure).await;
        let (t1, n1) = (Instant::now(), got.load(Ordering::Relaxed));
        if n1 == n0 {
            return Err("no copy received in the window".into());
        }
        Ok(Rate {
            messages: n1 - n0,
            elapsed: t1 - t0,
        })
    })
    .await;
    publishing.abort();
    for r in readers {
        r.abort();
    }
    weida_teardown(&server, &client, file);
    r
}
