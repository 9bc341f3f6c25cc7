//! `--one --role bind|dial`: one end of a case per process, for the suite's two-process table
//! (bench/README.md, "Two processes"). The bind side binds and prints `ADDRESS <dialable>`
//! first; the dial side dials `--address`. The measuring side (the receiver of Push/Pull, the
//! requester of Req/Rep, each subscriber of Pub/Sub) prints `WINDOW start` and `WINDOW end` as
//! its window opens and closes, then its JSON line; the other side runs until it is terminated
//! or its lifetime (`lifetime`) is over. A subscriber prints `READY` once it receives and waits
//! for a line on stdin before its warmup, so every subscriber process of a row measures the
//! same span. Both sides run on one current-thread tokio runtime each, as in one process.

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use weida::{Runtime, RuntimeConfig};

use crate::cases::{
    bind_address, check, payload, read_frame, socket_path, write_frame, Transport, COALESCE,
    MAX_BODY,
};
use crate::meter::{Meter, Recorder, Window};
use crate::one::Subject;
use crate::{rawquic, Bench, BoxResult, Outcome};

/// Which end of the case this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Both ends in this process (`--one` without `--role`).
    Both,
    /// The puller, replier or publisher: binds and prints its address.
    Bind,
    /// The pusher, requester or one subscriber: dials `--address`.
    Dial,
}

/// How long a process of a two-process row may live: its peer's stall limit and setup.
pub(crate) fn lifetime(w: Window) -> Duration {
    w.limit() + Duration::from_secs(20)
}

/// One line on stdout, flushed: run.py acts on it as it comes.
fn line(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

fn announce(address: &str) {
    line(&format!("ADDRESS {address}"));
}

fn mark(what: &str) {
    line(&format!("WINDOW {what}"));
}

/// `Meter::tick` with the WINDOW lines.
fn tick(m: &mut Meter) -> bool {
    let was = m.started();
    let done = m.tick();
    if !was && m.started() {
        mark("start");
    }
    if done {
        mark("end");
    }
    done
}

/// `Recorder::record` with the WINDOW lines.
fn record(r: &mut Recorder, began: Instant) -> bool {
    let was = r.started();
    let done = r.record(began);
    if !was && r.started() {
        mark("start");
    }
    if done {
        mark("end");
    }
    done
}

/// READY, then run.py's go: a line on stdin.
async fn gate() -> BoxResult<()> {
    line("READY");
    let n =
        tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new())).await??;
    if n == 0 {
        return Err("stdin closed before the go".into());
    }
    Ok(())
}

/// Runs this process's end of the case; the measuring side returns its outcome, the other
/// side runs until killed (or returns an error).
pub(crate) async fn run(
    s: Subject,
    role: Role,
    address: &str,
    bench: Bench,
    size: usize,
    w: Window,
    handlers: Option<u32>,
) -> BoxResult<Outcome> {
    let job = async {
        use Bench::{PubSub, PushPull, ReqRep};
        use Role::{Bind, Dial};
        match (bench, s, role) {
            (_, Subject::Weida(Transport::Inproc) | Subject::Substrate(Transport::Inproc), _) => {
                Err("an in-process transport has no two-process row".into())
            }
            (_, _, Role::Both) => Err("--role both is the one-process case".into()),
            (PushPull, Subject::Weida(t), Bind) => match handlers {
                Some(n) => weida_handlers(t, size, w, n).await,
                None => weida_pull(t, size, w).await,
            },
            (PushPull, Subject::Weida(_), Dial) => weida_push(address, size).await,
            (ReqRep, Subject::Weida(t), Bind) => weida_reply(t).await,
            (ReqRep, Subject::Weida(_), Dial) => weida_request(address, size, w).await,
            (PubSub, Subject::Weida(t), Bind) => weida_publish(t, size).await,
            (PubSub, Subject::Weida(_), Dial) => weida_subscribe(address, size, w).await,
            (PubSub, _, _) => Err("--bench pub_sub has weida rows only".into()),
            (PushPull, Subject::Tcp, Bind) => {
                let (s, _l) = tcp_accept().await?;
                framed_receive(s, size, w).await
            }
            (PushPull, Subject::Tcp, Dial) => framed_send(tcp_dial(address).await?, size).await,
            (ReqRep, Subject::Tcp, Bind) => {
                let (s, _l) = tcp_accept().await?;
                let (rd, wr) = s.into_split();
                framed_echo(rd, wr).await
            }
            (ReqRep, Subject::Tcp, Dial) => {
                let (rd, wr) = tcp_dial(address).await?.into_split();
                framed_ping(rd, wr, size, w).await
            }
            (PushPull, Subject::Substrate(Transport::Unix), Bind) => {
                let (s, _p) = unix_accept().await?;
                framed_receive(s, size, w).await
            }
            (PushPull, Subject::Substrate(Transport::Unix), Dial) => {
                framed_send(UnixStream::connect(address).await?, size).await
            }
            (ReqRep, Subject::Substrate(Transport::Unix), Bind) => {
                let (s, _p) = unix_accept().await?;
                let (rd, wr) = s.into_split();
                framed_echo(rd, wr).await
            }
            (ReqRep, Subject::Substrate(Transport::Unix), Dial) => {
                let (rd, wr) = UnixStream::connect(address).await?.into_split();
                framed_ping(rd, wr, size, w).await
            }
            (PushPull, Subject::QuinnLong, Bind) => {
                let (_ep, conn) = quinn_accept().await?;
                framed_receive(conn.accept_uni().await?, size, w).await
            }
            (PushPull, Subject::QuinnLong, Dial) => {
                let (_ep, conn) = rawquic::dial(address.parse()?).await?;
                quinn_long_send(conn.open_uni().await?, size).await
            }
            (ReqRep, Subject::QuinnLong, Bind) => {
                let (_ep, conn) = quinn_accept().await?;
                let (send, recv) = conn.accept_bi().await?;
                framed_echo(recv, send).await
            }
            (ReqRep, Subject::QuinnLong, Dial) => {
                let (_ep, conn) = rawquic::dial(address.parse()?).await?;
                let (send, recv) = conn.open_bi().await?;
                framed_ping(recv, send, size, w).await
            }
            (PushPull, Subject::Substrate(Transport::Quic), Bind) => {
                let (_ep, conn) = quinn_accept().await?;
                quinn_stream_receive(conn, size, w).await
            }
            (PushPull, Subject::Substrate(Transport::Quic), Dial) => {
                let (_ep, conn) = rawquic::dial(address.parse()?).await?;
                let body = payload(size);
                loop {
                    let mut s = conn.open_uni().await?;
                    s.write_chunk(body.clone()).await?;
                    s.finish()?;
                }
            }
            (ReqRep, Subject::Substrate(Transport::Quic), Bind) => {
                let (_ep, conn) = quinn_accept().await?;
                loop {
                    let (mut send, mut recv) = conn.accept_bi().await?;
                    let req = recv.read_to_end(MAX_BODY).await?;
                    send.write_chunk(Bytes::from(req)).await?;
                    send.finish()?;
                }
            }
            (ReqRep, Subject::Substrate(Transport::Quic), Dial) => {
                let (_ep, conn) = rawquic::dial(address.parse()?).await?;
                quinn_stream_request(conn, size, w).await
            }
            (_, _, _) => Err("no two-process case for this --bench".into()),
        }
    };
    tokio::time::timeout(lifetime(w), job)
        .await
        .map_err(|_| "the process's lifetime is over")?
}

async fn weida_pull(t: Transport, size: usize, w: Window) -> BoxResult<Outcome> {
    let server = Runtime::new(RuntimeConfig::default())?;
    let (address, _file) = bind_address(t);
    let listener = server.bind(&address).await?;
    let puller = listener.puller("/p")?;
    announce(&puller.address().to_string());
    check(puller.recv().await?.body.len(), size)?;
    let mut meter = Meter::new(w, size);
    loop {
        check(puller.recv().await?.body.len(), size)?;
        if tick(&mut meter) {
            return Ok(Outcome::Rate(meter.rate().ok_or("no complete window")?));
        }
    }
}

/// The puller's side as a service (docs/SERVICES.md): a queue registration with `n` handlers
/// at once, each a no-op that counts; what a handler costs next to `weida_pull`'s bare
/// `recv` loop.
async fn weida_handlers(t: Transport, size: usize, w: Window, n: u32) -> BoxResult<Outcome> {
    use std::future::Future;
    let server = Runtime::new(RuntimeConfig::default())?;
    let (address, _file) = bind_address(t);
    let listener = server.bind(&address).await?;
    let service = weida::service::Service::new(&server);
    let reg = service
        .queue(&listener, "/p")?
        .concurrency(n)
        .start()
        .await?;
    announce(&reg.address().ok_or("a queue has an address")?.to_string());
    // A no-op handler that counts: the meter is ticked as the bare loop ticks it, in the
    // call itself (a handler's synchronous part; run calls it on this one thread), so the row
    // measures the runtime around the handler, not a lock or a shared pointer of the bench's.
    let meter = std::cell::RefCell::new(Meter::new(w, size));
    let finished = std::cell::Cell::new(false);
    let serving = reg.run(|m, _| {
        let r = if m.body.len() != size {
            Err(format!("a body of {} bytes, not {size}", m.body.len()))
        } else {
            if tick(&mut meter.borrow_mut()) {
                finished.set(true);
            }
            Ok(weida::service::Outcome::Done)
        };
        std::future::ready(r)
    });
    tokio::pin!(serving);
    let done = std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(r) = serving.as_mut().poll(cx) {
            return std::task::Poll::Ready(r.err().map(|e| e.to_string()));
        }
        // The window closed in this poll: nothing more to wait for.
        if finished.get() {
            return std::task::Poll::Ready(None);
        }
        std::task::Poll::Pending
    });
    if let Some(e) = done.await {
        return Err(e.into());
    }
    if !finished.get() {
        return Err("the registration stopped".into());
    }
    let rate = meter.borrow().rate().ok_or("no complete window")?;
    if reg.counters().failed > 0 {
        return Err("a body of the wrong size".into());
    }
    Ok(Outcome::Rate(rate))
}

async fn weida_push(address: &str, size: usize) -> BoxResult<Outcome> {
    let client = Runtime::new(RuntimeConfig::default())?;
    let pusher = client.pusher();
    pusher.connect(address).await?;
    let body = payload(size);
    loop {
        pusher.send(body.clone()).await?;
    }
}

async fn weida_reply(t: Transport) -> BoxResult<Outcome> {
    let server = Runtime::new(RuntimeConfig::default())?;
    let (address, _file) = bind_address(t);
    let listener = server.bind(&address).await?;
    let replier = listener.replier("/r")?;
    announce(&replier.address().to_string());
    loop {
        let mut ex = replier.accept().await?;
        let body = ex.take_body().await?;
        ex.reply(body).await?;
    }
}

async fn weida_request(address: &str, size: usize, w: Window) -> BoxResult<Outcome> {
    let client = Runtime::new(RuntimeConfig::default())?;
    let requester = client.requester();
    requester.connect(address).await?;
    let body = payload(size);
    let mut rec = Recorder::new(w);
    loop {
        let began = Instant::now();
        check(requester.request(body.clone()).await?.len(), size)?;
        if record(&mut rec, began) {
            return Ok(Outcome::Latency(rec.latency().ok_or("no samples")?));
        }
    }
}

async fn weida_publish(t: Transport, size: usize) -> BoxResult<Outcome> {
    let server = Runtime::new(RuntimeConfig::default())?;
    let (address, _file) = bind_address(t);
    let listener = server.bind(&address).await?;
    let publisher = listener.publisher("/feed")?;
    announce(&publisher.address().to_string());
    let body = payload(size);
    let mut n = 0u64;
    loop {
        publisher.publish("bench.tick", body.clone())?;
        n += 1;
        if n % 32 == 0 {
            tokio::task::yield_now().await;
        }
    }
}

async fn weida_subscribe(address: &str, size: usize, w: Window) -> BoxResult<Outcome> {
    let client = Runtime::new(RuntimeConfig::default())?;
    let s = client.subscriber();
    s.connect(address).await?;
    s.subscribe("bench.#").await?;
    s.recv_many(256).await?;
    gate().await?;
    let mut meter = Meter::new(w, size);
    loop {
        for m in s.recv_many(256).await? {
            check(m.body.len(), size)?;
            if tick(&mut meter) {
                return Ok(Outcome::Rate(meter.rate().ok_or("no complete window")?));
            }
        }
    }
}

async fn tcp_accept() -> BoxResult<(TcpStream, TcpListener)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    announce(&listener.local_addr()?.to_string());
    let (s, _) = listener.accept().await?;
    s.set_nodelay(true)?;
    Ok((s, listener))
}

async fn tcp_dial(address: &str) -> BoxResult<TcpStream> {
    let s = TcpStream::connect(address.parse::<SocketAddr>()?).await?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// The accepted stream, and the socket file's guard (removed when dropped).
async fn unix_accept() -> BoxResult<(UnixStream, SocketFile)> {
    let path = socket_path();
    let listener = UnixListener::bind(&path)?;
    let file = SocketFile(path);
    announce(&file.0.display().to_string());
    let (s, _) = listener.accept().await?;
    Ok((s, file))
}

struct SocketFile(std::path::PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn quinn_accept() -> BoxResult<(quinn::Endpoint, quinn::Connection)> {
    let ep = rawquic::server()?;
    announce(&ep.local_addr()?.to_string());
    let conn = rawquic::accept(&ep).await?;
    Ok((ep, conn))
}

/// Counts u32-length-prefixed frames from the first one on.
async fn framed_receive<R: AsyncRead + Unpin>(rd: R, size: usize, w: Window) -> BoxResult<Outcome> {
    let mut rd = BufReader::with_capacity(64 * 1024, rd);
    check(read_frame(&mut rd).await?.len(), size)?;
    let mut meter = Meter::new(w, size);
    loop {
        check(read_frame(&mut rd).await?.len(), size)?;
        if tick(&mut meter) {
            return Ok(Outcome::Rate(meter.rate().ok_or("no complete window")?));
        }
    }
}

async fn framed_send<W: AsyncWrite + Unpin>(mut wr: W, size: usize) -> BoxResult<Outcome> {
    let body = payload(size);
    let mut scratch = Vec::with_capacity(COALESCE + 4);
    loop {
        write_frame(&mut wr, &mut scratch, &body).await?;
    }
}

async fn framed_echo<R, W>(rd: R, mut wr: W) -> BoxResult<Outcome>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut rd = BufReader::with_capacity(64 * 1024, rd);
    let mut scratch = Vec::with_capacity(COALESCE + 4);
    loop {
        let req = read_frame(&mut rd).await?;
        write_frame(&mut wr, &mut scratch, &req).await?;
    }
}

async fn framed_ping<R, W>(rd: R, mut wr: W, size: usize, w: Window) -> BoxResult<Outcome>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut rd = BufReader::with_capacity(64 * 1024, rd);
    let mut scratch = Vec::with_capacity(COALESCE + 4);
    let body = payload(size);
    let mut rec = Recorder::new(w);
    loop {
        let began = Instant::now();
        write_frame(&mut wr, &mut scratch, &body).await?;
        check(read_frame(&mut rd).await?.len(), size)?;
        if record(&mut rec, began) {
            return Ok(Outcome::Latency(rec.latency().ok_or("no samples")?));
        }
    }
}

/// The sending side of quinn-long: frames gathered into 64 KiB writes (see
/// `cases::quinn_long_push` for why).
async fn quinn_long_send(mut s: quinn::SendStream, size: usize) -> BoxResult<Outcome> {
    const GATHER: usize = 64 * 1024;
    let body = payload(size);
    let prefix = Bytes::copy_from_slice(&(body.len() as u32).to_be_bytes());
    let mut buf = BytesMut::with_capacity(GATHER + COALESCE + 4);
    loop {
        if body.len() <= COALESCE {
            buf.extend_from_slice(&prefix);
            buf.extend_from_slice(&body);
            if buf.len() >= GATHER {
                s.write_chunk(buf.split().freeze()).await?;
            }
        } else {
            s.write_chunk(prefix.clone()).await?;
            s.write_chunk(body.clone()).await?;
        }
    }
}

async fn quinn_stream_receive(
    conn: quinn::Connection,
    size: usize,
    w: Window,
) -> BoxResult<Outcome> {
    check(
        conn.accept_uni().await?.read_to_end(MAX_BODY).await?.len(),
        size,
    )?;
    let mut meter = Meter::new(w, size);
    loop {
        let v = conn.accept_uni().await?.read_to_end(MAX_BODY).await?;
        check(v.len(), size)?;
        if tick(&mut meter) {
            return Ok(Outcome::Rate(meter.rate().ok_or("no complete window")?));
        }
    }
}

async fn quinn_stream_request(
    conn: quinn::Connection,
    size: usize,
    w: Window,
) -> BoxResult<Outcome> {
    let body = payload(size);
    let mut rec = Recorder::new(w);
    loop {
        let began = Instant::now();
        let (mut send, mut recv) = conn.open_bi().await?;
        send.write_chunk(body.clone()).await?;
        send.finish()?;
        check(recv.read_to_end(MAX_BODY).await?.len(), size)?;
        if record(&mut rec, began) {
            return Ok(Outcome::Latency(rec.latency().ok_or("no samples")?));
        }
    }
}
