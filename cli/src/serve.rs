//! The serving roles: `weida rep` and `weida pull`. Each binds the address without its path,
//! registers the path, announces the dialable address, and takes messages until `--count`,
//! or a signal (after which it finishes what it already holds).

use std::cell::Cell;
use std::convert::Infallible;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::io::AsyncWriteExt;
use weida::{
    Address, Error, Exchange, GuaranteeSet, IncomingMeta, Limits, Listener, Runtime, RuntimeConfig,
};

use crate::args::{BusArgs, PullArgs, RepArgs, ServeArgs};
use crate::exit::Failure;
use crate::identity;
use crate::input::Input;
use crate::output;
use crate::progress;
use crate::signal::Stop;

/// How long a stopping `rep` gives its last replies to reach their requesters.
const DRAIN: Duration = Duration::from_secs(5);
/// How long a stopping role waits before closing, so that QUIC acknowledges what it received
/// (quinn delays an ACK by at most 25 ms): a pusher's receipt needs that ACK, and without it
/// the pusher would report a message this side printed as lost.
const ACK_LINGER: Duration = Duration::from_millis(100);
/// How often `pull` looks at the bytes received for its progress line.
const TICK: Duration = Duration::from_millis(100);
/// How far from whole the messages arriving at `pull` must be before its progress line is
/// drawn: four of the core's read chunks, so small messages at a high rate, each whole within
/// a tick, draw nothing.
const ARRIVING: u64 = 256 * 1024;

/// `weida rep`: answers each request with its own body (`--echo`) or a command's output
/// (`--exec`), up to `--concurrency` at once. A request is read before it takes one of those
/// answer slots, and every request is read at once as it comes, so requests slow to arrive
/// (stalled ones, from anyone) hold up no other: what bounds them is the core's (each
/// connection's `peer_share`, `max_connections`, `body_idle_timeout`), not the slots
/// (PATTERNS §1.12, RELIABILITY §6.2). New requests are taken while fewer than
/// `--concurrency` read ones wait for a slot, so a slow command holds back the intake, not
/// the reading.
pub(crate) async fn rep(args: RepArgs, stop: &mut Stop) -> Result<(), Failure> {
    let s = &args.serve;
    let (rt, listener, path) = bind(s).await?;
    let replier = listener.replier(&path)?;
    announce(replier.address(), s.ready)?;
    let slots = args.concurrency as usize;
    let served = async {
        let mut answered = 0u64;
        let mut reading = FuturesUnordered::new();
        let mut waiting = std::collections::VecDeque::new();
        let mut running = FuturesUnordered::new();
        let mut closed = false;
        loop {
            while running.len() < slots {
                let Some((x, body)) = waiting.pop_front() else {
                    break;
                };
                running.push(answer(x, body, args.exec.as_deref(), s));
            }
            // Accept while the count allows (requests still being read or answered may yet
            // count) and few enough read ones wait; stop once nothing more will be accepted
            // and every request is read and answered.
            let held = reading.len() + waiting.len() + running.len();
            let taken = answered + held as u64;
            let more = !closed && s.count.is_none_or(|n| taken < n);
            if !more && held == 0 {
                return Ok(());
            }
            let room = more && waiting.len() < slots;
            tokio::select! {
                Some(done) = running.next(), if !running.is_empty() => {
                    done?;
                    answered += 1;
                }
                Some(read) = reading.next(), if !reading.is_empty() => {
                    if let Some(read) = read {
                        waiting.push_back(read);
                    }
                }
                accepted = replier.accept(), if room => match accepted {
                    Ok(x) => reading.push(read_request(x)),
                    Err(Error::Closed) => closed = true,
                    Err(e) => return Err(Failure::from(e).context("accepting a request")),
                },
            }
        }
    };
    let served = stop
        .finish(served, || replier.close())
        .await
        .and_then(|r| r);
    replier.close();
    close(&rt, &served).await;
    drop(listener);
    served
}

/// Reads one request whole. None when it could not be (it does not count): the failure is
/// reported on stderr, the requester told why, and the replier goes on.
async fn read_request(mut ex: Exchange) -> Option<(Exchange, Bytes)> {
    match ex.take_body().await {
        Ok(b) => Some((ex, b)),
        Err(e) => {
            let meta = ex.meta().clone();
            warn("a request could not be read", &meta, &e);
            // Tell the requester why (LIMIT_EXCEEDED for a body above --max-body); when the
            // request was cancelled or its connection lost, nobody hears it, harmlessly.
            let _ = ex.fail(&e).await;
            None
        }
    }
}

/// Answers one request read whole; a failure to send the reply is reported on stderr and
/// the replier goes on.
async fn answer(
    ex: Exchange,
    body: Bytes,
    exec: Option<&str>,
    s: &ServeArgs,
) -> Result<(), Failure> {
    let meta = ex.meta().clone();
    if !s.quiet {
        output::print_message(s.format, &meta, &body).map_err(Failure::output)?;
    }
    let sent = match exec {
        None => ex.reply_with(meta.metadata.clone(), body).await,
        Some(cmd) => match run(cmd, &meta, body).await {
            Ok(stdout) => ex.reply(stdout).await,
            Err(reason) => ex.reject(&reason).await,
        },
    };
    if let Err(e) = sent {
        warn("a reply could not be sent", &meta, &e);
    }
    Ok(())
}

/// Runs `cmd` with `sh -c`, the request body on its stdin. Its stdout is the reply; a failure
/// is the reason the request is rejected with (its stderr, and its exit status).
async fn run(cmd: &str, meta: &IncomingMeta, body: Bytes) -> Result<Vec<u8>, String> {
    let output = run_output(cmd, meta, body, &[]).await?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    Err(failure_reason(&output))
}

/// What a command that failed says: its stderr, and its exit status.
pub(crate) fn failure_reason(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stderr = stderr.trim();
    if stderr.is_empty() {
        format!("the command failed ({})", output.status)
    } else {
        format!("{stderr} ({})", output.status)
    }
}

/// Runs `cmd` with `sh -c`, `body` on its stdin, WEIDA_PATH and WEIDA_PEER set (and `env`),
/// to its end: what it wrote and how it ended. `Err` when it could not be run at all.
pub(crate) async fn run_output(
    cmd: &str,
    meta: &IncomingMeta,
    body: Bytes,
    env: &[(&str, String)],
) -> Result<std::process::Output, String> {
    let peer = meta
        .peer
        .as_ref()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("WEIDA_PATH", &*meta.path)
        .env("WEIDA_PEER", peer)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // An exchange abandoned by a second Ctrl-C takes its command with it.
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: cannot run sh -c {cmd:?}: {e}");
            return Err("the command could not be started".into());
        }
    };
    let mut stdin = child.stdin.take().expect("piped");
    // Fed while its output is read, so a command that writes before it has read all of its
    // input cannot deadlock on a full pipe. One that never reads its input is fine: the
    // broken pipe is ignored.
    let feed = async move {
        let _ = stdin.write_all(&body).await;
    };
    let (_, output) = tokio::join!(feed, child.wait_with_output());
    output.map_err(|e| format!("the command could not be waited for: {e}"))
}

/// `weida pull`: prints each message as it arrives whole. The core's `recv` collects every
/// message it has taken at once, so one that is slow to arrive holds up no other (PATTERNS
/// §1.12); printing is one at a time, in the order messages complete.
pub(crate) async fn pull(args: PullArgs, stop: &mut Stop) -> Result<(), Failure> {
    if args.connect {
        return crate::bound_push::pull(args, stop).await;
    }
    let s = &args.serve;
    let (rt, listener, path) = bind(s).await?;
    let puller = listener.puller(&path)?;
    announce(puller.address(), s.ready)?;
    let mut received = 0u64;
    // The bytes received when the last message was whole (or failed).
    let settled = Cell::new(rt.counters().bytes_received);
    let served = async {
        while s.count.is_none_or(|n| received < n) {
            let next = stop.finish(puller.recv(), || puller.close()).await?;
            settled.set(rt.counters().bytes_received);
            match next {
                Ok(m) => {
                    received += 1;
                    if !s.quiet {
                        output::print_message(s.format, &m.meta, &m.body)
                            .map_err(Failure::output)?;
                    }
                }
                Err(Error::Closed) => break,
                // A message cancelled by its sender, above --max-body, or cut by a lost
                // connection: that message is gone, the puller goes on.
                Err(e) => warn(
                    "a message could not be received",
                    &IncomingMeta::default(),
                    &e,
                ),
            }
        }
        Ok(())
    };
    let served = tokio::select! {
        served = served => served,
        never = arriving(&rt, &settled) => match never {},
    };
    puller.close();
    close(&rt, &served).await;
    drop(listener);
    served
}

/// `weida bus`: a member bound at the URL. It connects to every `--connect` first (a member
/// sends only to members connected and live), sends DATA (or stdin's lines as they come) to all
/// of them, and prints what the others send until `--count` or a signal.
pub(crate) async fn bus(args: BusArgs, stop: &mut Stop) -> Result<(), Failure> {
    let s = &args.serve;
    let (rt, listener, path) = bind(s).await?;
    let member = rt.bus(&listener, &path)?;
    announce(member.address(), s.ready)?;
    for url in &args.connect {
        member
            .connect(url)
            .await
            .map_err(|e| Failure::from(e).context(format!("connecting to {url}")))?;
    }
    for d in &args.data {
        member.send(Bytes::from(d.clone())).await?;
    }
    let mut lines = match args.data.is_empty() {
        true => Some(Input::open(None).await?),
        false => None,
    };
    let mut received = 0u64;
    let served = async {
        while s.count.is_none_or(|n| received < n) {
            let line = async {
                match &mut lines {
                    Some(i) => i.line().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                l = line => match l? {
                    Some(body) => {
                        member.send(body).await?;
                    }
                    None => lines = None,
                },
                next = stop.finish(member.recv(), || member.close()) => match next? {
                    Ok(m) => {
                        received += 1;
                        if !s.quiet {
                            output::print_message(s.format, &m.meta, &m.body)
                                .map_err(Failure::output)?;
                        }
                    }
                    Err(Error::Closed) => break,
                    Err(e) => warn("a message could not be received", &IncomingMeta::default(), &e),
                },
            }
        }
        Ok::<_, Failure>(())
    };
    let served = served.await;
    member.close();
    close(&rt, &served).await;
    drop(listener);
    served
}

/// `pull`'s progress line: while messages are arriving, a spinner with the bytes received
/// since the last one was whole, drawn once past [`ARRIVING`] and cleared when the next is
/// whole. The core's `recv` collects a message out of sight, so this reads the runtime's
/// count of bytes received on a tick: with several large messages arriving at once, it is
/// their sum since the last one was whole.
pub(crate) async fn arriving(rt: &Runtime, settled: &Cell<u64>) -> Infallible {
    if !progress::drawn() {
        return std::future::pending().await;
    }
    let mut shown: Option<indicatif::ProgressBar> = None;
    let mut tick = tokio::time::interval(TICK);
    loop {
        tick.tick().await;
        let pending = rt.counters().bytes_received.saturating_sub(settled.get());
        if pending < ARRIVING {
            // Dropped, the line is cleared.
            shown = None;
            continue;
        }
        match &shown {
            Some(line) => line.set_position(pending),
            None => shown = progress::bytes_from("receiving", None, pending),
        }
    }
}

/// Ends a serving role's connections from its side.
///
/// A dialler's drain is graceful by protocol (GOAWAY, then the listener closes once it took
/// every stream), but the core has no such close for a listener: so this waits for the
/// acknowledgements (a fixed wait, bounded, in place of the facility the core lacks), then
/// drains (the replies' receipts), which returns once its closes have been sent.
/// A role abandoned by a second signal only closes: exiting at once is what was asked, and
/// its peers still learn at once.
pub(crate) async fn close(rt: &Runtime, served: &Result<(), Failure>) {
    if served.as_ref().is_err_and(Failure::is_interrupted) {
        rt.close().await;
        return;
    }
    tokio::time::sleep(ACK_LINGER).await;
    rt.drain(DRAIN).await;
}

/// A runtime presenting `--identity` (or an ephemeral key), bound to the URL without its path,
/// and the path to register.
async fn bind(s: &ServeArgs) -> Result<(Runtime, Listener, String), Failure> {
    bind_url(&s.url, s.identity.as_deref(), s.max_body).await
}

/// [`bind`] for any serving role: `url` with its path, `--identity DIR`, `--max-body`.
pub(crate) async fn bind_url(
    url: &str,
    identity: Option<&Path>,
    max_body: Option<u64>,
) -> Result<(Runtime, Listener, String), Failure> {
    bind_requiring(url, identity, max_body, GuaranteeSet::default()).await
}

/// [`bind_url`] for a runtime that requires `guarantees` of its peers: a collector's
/// `--ordering` (`sub --bind`).
pub(crate) async fn bind_requiring(
    url: &str,
    identity: Option<&Path>,
    max_body: Option<u64>,
    guarantees: GuaranteeSet,
) -> Result<(Runtime, Listener, String), Failure> {
    let ctx = |e: Error| Failure::from(e).context(format!("binding {url}"));
    let address = Address::parse(url).map_err(ctx)?;
    let path = address.endpoint_path().map_err(ctx)?.to_string();
    let identity = identity::load_or_ephemeral(identity)?;
    // The core's bind takes no pin; one written here would otherwise be silently ignored.
    if let Some(pin) = address.pin() {
        if *pin != identity.fingerprint() {
            return Err(Failure::msg(format!(
                "{url} pins {pin}, but this listener's key is {}",
                identity.fingerprint()
            ))
            .hint("bind without a pin, or pass --identity with the directory of that key"));
        }
    }
    let defaults = Limits::default();
    let rt = Runtime::new(RuntimeConfig {
        identity,
        guarantees,
        limits: Limits {
            max_collected_body: max_body.unwrap_or(defaults.max_collected_body),
            ..defaults
        },
        ..RuntimeConfig::default()
    })?;
    let listener = rt
        .bind(&address.without_path().to_string())
        .await
        .map_err(ctx)?;
    Ok((rt, listener, path))
}

/// `READY <address>` first on stdout when asked (a script waits for that line, never for a
/// sleep), and `listening on <address>` on stderr for people.
pub(crate) fn announce(address: &Address, ready: bool) -> Result<(), Failure> {
    if ready {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "READY {address}")
            .and_then(|()| out.flush())
            .map_err(Failure::output)?;
    }
    eprintln!("listening on {address}");
    Ok(())
}

/// One message or exchange failed; the role goes on.
pub(crate) fn warn(what: &str, meta: &IncomingMeta, e: &Error) {
    let from = meta
        .peer
        .as_ref()
        .map(|p| format!(" from {p}"))
        .unwrap_or_default();
    let path = if meta.path.is_empty() {
        String::new()
    } else {
        format!(" at {}", meta.path)
    };
    progress::note(format!("warning: {what}{path}{from}: {e}"));
}
