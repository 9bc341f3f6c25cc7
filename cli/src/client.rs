//! The dialling roles: `weida req`, `weida survey` and `weida push` (`push --bind`, which
//! binds, is in bound_push.rs).

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use weida::{Error, Limits, Metadata, Pusher, Requester, Runtime, RuntimeConfig, Trust};

use crate::args::{usage_error, DialArgs, InputArgs, PushArgs, ReqArgs, SurveyArgs};
use crate::exit::Failure;
use crate::identity;
use crate::input::{Bodies, Input, Source};
use crate::output::{self, Format, RawOut};
use crate::progress;
use crate::signal::Stop;

/// Receipts awaited at once while pushing: the default stream budget of a connection, so
/// the window is never what limits the rate.
pub(crate) const RECEIPT_WINDOW: usize = 256;
/// How long `push` gives the listener to take what it sent before closing, without
/// `--timeout`. Not an error when it passes: every receipt has already resolved by then.
const DRAIN: Duration = Duration::from_secs(10);
/// How long `req` gives the listener to close the connection after its last reply. Every
/// reply is in, so this is courtesy: the listener closes at once (GOAWAY), rather than at its
/// idle timeout.
const CLOSE: Duration = Duration::from_secs(1);

/// `weida req`: one request (or one per line) and its reply on stdout. A signal interrupts it.
pub(crate) async fn req(args: ReqArgs, stop: &mut Stop) -> Result<(), Failure> {
    let rt = runtime(&args.dial, args.max_body)?;
    let done = stop.interrupt(request(&rt, args)).await;
    // However it ended, the peer learns now, not at its idle timeout (cli/README.md).
    rt.close().await;
    done
}

/// `weida req`'s work on `rt`.
async fn request(rt: &Runtime, args: ReqArgs) -> Result<(), Failure> {
    let source = source(args.data.into_iter().collect(), args.input, Split::Whole);
    let format = args.format.unwrap_or(match source {
        Source::Lines(_) => Format::Text,
        _ => Format::Raw,
    });
    let d = &args.dial;
    let requester = rt.requester();
    d.reconnect.follow(requester.events());
    connect(d, async {
        match d.reconnect.later {
            true => requester.connect_later(&d.url).await,
            false => requester.connect(&d.url).await,
        }
    })
    .await?;
    let meta = metadata(d);
    let what = || format!("requesting {}", d.url);
    let mut bodies = match source {
        Source::Whole(file) => {
            let input = Input::open(file.as_deref()).await?;
            let exchange = streamed_request(&requester, meta, input, format);
            match d.timeout {
                Some(t) => tokio::time::timeout(t, exchange)
                    .await
                    .unwrap_or_else(|_| Err(Failure::from(Error::Timeout { last_loss: None }))),
                None => exchange.await,
            }
            .map_err(|f| f.context(what()))?;
            rt.drain(CLOSE).await;
            return Ok(());
        }
        Source::Args(args) => Bodies::Args(args.into_iter()),
        Source::Lines(file) => Bodies::Lines(Input::open(file.as_deref()).await?),
    };
    let mut raw = RawOut::stdout();
    while let Some(body) = bodies.next().await? {
        let reply = within(d.timeout, requester.request_with(meta.clone(), body))
            .await
            .map_err(|e| Failure::from(e).context(what()))?;
        if format == Format::Raw {
            raw.write(&reply.body)
                .and_then(|()| raw.end())
                .map_err(Failure::output)?;
        } else {
            output::print_message(format, &reply.meta, &reply.body).map_err(Failure::output)?;
        }
    }
    rt.drain(CLOSE).await;
    Ok(())
}

/// `weida survey`: one question to every respondent, each answer on stdout as it comes until
/// the deadline, and a count on stderr. A signal interrupts it.
pub(crate) async fn survey(args: SurveyArgs, stop: &mut Stop) -> Result<(), Failure> {
    let rt = runtime(&args.dial, None)?;
    let done = stop.interrupt(ask(&rt, args)).await;
    rt.close().await;
    done
}

/// `weida survey`'s work on `rt`. Succeeds when some respondent answered (or none was there
/// to ask); when every asked respondent failed, fails as the first did; when none answered by
/// the deadline, TIMEOUT.
async fn ask(rt: &Runtime, args: SurveyArgs) -> Result<(), Failure> {
    let d = &args.dial;
    let surveyor = rt.surveyor();
    d.reconnect.follow(surveyor.events());
    for url in std::iter::once(&d.url).chain(&args.also) {
        within(d.timeout, surveyor.connect(url))
            .await
            .map_err(|e| Failure::from(e).context(format!("connecting to {url}")))?;
    }
    let body = match args.data {
        Some(b) if b != "-" => Bytes::from(b),
        _ => {
            let mut input = Input::open(None).await?;
            let mut whole = bytes::BytesMut::new();
            while let Some(c) = input.chunk().await? {
                whole.extend_from_slice(&c);
            }
            whole.freeze()
        }
    };
    let run = surveyor
        .survey_with(metadata(d), body, args.deadline)
        .await
        .map_err(|e| Failure::from(e).context("surveying"))?;
    let format = args.format.unwrap_or(Format::Text);
    let (mut answered, mut failed) = (0usize, None);
    while let Some(a) = run.next().await {
        match a {
            Ok(m) => {
                answered += 1;
                output::print_message(format, &m.meta, &m.body).map_err(Failure::output)?;
            }
            Err(e) => {
                eprintln!("weida: an answer failed: {e}");
                failed.get_or_insert(e);
            }
        }
    }
    eprintln!(
        "weida: {} asked, {answered} answered, {} late",
        run.respondents(),
        run.late()
    );
    rt.drain(CLOSE).await;
    match (answered, failed) {
        (0, Some(e)) => Err(Failure::from(e).context("surveying")),
        (0, None) if run.respondents() > 0 => {
            Err(Failure::from(Error::Timeout { last_loss: None }).context("surveying"))
        }
        _ => Ok(()),
    }
}

/// A request streamed from `input` while its reply is read: a replier may answer (or refuse)
/// before the request ends, and its answer is what the caller gets, as in the core's
/// `Requester::request`.
async fn streamed_request(
    requester: &Requester,
    meta: Metadata,
    mut input: Input,
    format: Format,
) -> Result<(), Failure> {
    let (mut request, pending) = requester.open(meta).await?;
    let write = async move {
        while let Some(chunk) = input.chunk().await? {
            request.write(chunk).await?;
        }
        // Req/Rep needs no receipt: the reply proves more.
        request.finish().await?;
        Ok::<(), Failure>(())
    };
    let read = async move {
        if format == Format::Raw {
            // Raw is streamed to stdout as it arrives: a reply of any size, in constant memory.
            let mut reply = pending.reply().await?;
            let received = progress::bytes("reply", None);
            let mut out = RawOut::stdout();
            while let Some(chunk) = reply.read_chunk().await? {
                out.write(&chunk).map_err(Failure::output)?;
                if let Some(r) = &received {
                    r.inc(chunk.len() as u64);
                }
            }
            out.end().map_err(Failure::output)
        } else {
            let reply = pending.body().await?;
            output::print_message(format, &reply.meta, &reply.body).map_err(Failure::output)
        }
    };
    tokio::pin!(write, read);
    let mut written: Option<Failure> = None;
    let mut writing = true;
    loop {
        tokio::select! {
            r = &mut read => {
                return match (r, written) {
                    // The reply was only cancelled because the request failed: say why.
                    (Err(f), Some(w)) if matches!(f.weida(), Some(Error::Canceled)) => Err(w),
                    (r, _) => r,
                };
            }
            w = &mut write, if writing => {
                writing = false;
                match w {
                    Ok(()) => {}
                    // Our own input failed: the request was cancelled (dropped), so the reply
                    // can only be CANCELED; the input's error is the one to report.
                    Err(f) if f.weida().is_none() => return Err(f),
                    // The replier stopped the request: its reply (an ERROR with the reason)
                    // is still coming.
                    Err(f) => written = Some(f),
                }
            }
        }
    }
}

/// `weida push`: every message sent, then every receipt awaited, then a graceful drain. A
/// signal interrupts it.
pub(crate) async fn push(args: PushArgs, stop: &mut Stop) -> Result<(), Failure> {
    if args.bind {
        return crate::bound_push::push(args, stop).await;
    }
    let rt = runtime(&args.dial, None)?;
    let done = stop.interrupt(pushed(&rt, args)).await;
    // However it ended, the peer learns now, not at its idle timeout (cli/README.md).
    rt.close().await;
    done
}

/// `weida push`'s work on `rt`.
async fn pushed(rt: &Runtime, args: PushArgs) -> Result<(), Failure> {
    let source = source(args.data, args.input, Split::Lines);
    let d = &args.dial;
    let pusher = rt.pusher();
    d.reconnect.follow(pusher.events());
    connect(d, async {
        match d.reconnect.later {
            true => pusher.connect_later(&d.url).await,
            false => pusher.connect(&d.url).await,
        }
    })
    .await?;
    let meta = metadata(d);
    let sent = match source {
        Source::Whole(file) => {
            let input = Input::open(file.as_deref()).await?;
            push_whole(&pusher, meta, d.timeout, input).await
        }
        Source::Args(args) => {
            push_each(&pusher, &meta, d.timeout, Bodies::Args(args.into_iter())).await
        }
        Source::Lines(file) => {
            let input = Input::open(file.as_deref()).await?;
            push_each(&pusher, &meta, d.timeout, Bodies::Lines(input)).await
        }
    };
    sent.map_err(|f| f.context(format!("pushing to {}", d.url)))?;
    rt.drain(d.timeout.unwrap_or(DRAIN)).await;
    Ok(())
}

/// The whole input as one message, written chunk by chunk as it is read.
async fn push_whole(
    pusher: &Pusher,
    meta: Metadata,
    timeout: Option<Duration>,
    mut input: Input,
) -> Result<(), Failure> {
    let mut t = pusher.open(meta).await?;
    // A failed read drops `t` unfinished: the puller sees CANCELED, never a short body.
    while let Some(chunk) = input.chunk().await? {
        t.write(chunk).await?;
    }
    let delivery = t.finish().await?;
    Ok(within(timeout, delivery.delivered()).await?)
}

/// Each body as its own message; the receipts are awaited a window at a time, so a refusal
/// or a loss is reported without a round trip per message.
async fn push_each(
    pusher: &Pusher,
    meta: &Metadata,
    timeout: Option<Duration>,
    mut bodies: Bodies,
) -> Result<(), Failure> {
    let mut receipts = FuturesUnordered::new();
    while let Some(body) = bodies.next().await? {
        receipts.push(send(pusher, meta.clone(), body).await?);
        if receipts.len() >= RECEIPT_WINDOW {
            receipts.next().await.expect("not empty")?;
        }
    }
    within(timeout, async {
        while let Some(r) = receipts.next().await {
            r?;
        }
        Ok(())
    })
    .await?;
    Ok(())
}

/// Sends one whole message and returns the wait for its receipt: `Pusher::send` drops the
/// receipt, and then a refusal or a loss after it returned would never be reported.
async fn send(
    pusher: &Pusher,
    meta: Metadata,
    body: Bytes,
) -> Result<impl Future<Output = weida::Result<()>>, Failure> {
    let mut t = pusher.open(meta).await?;
    t.write(body).await?;
    Ok(t.finish().await?.delivered())
}

/// What the command line says to send: the arguments, else the input split as asked.
pub(crate) fn source(data: Vec<String>, input: InputArgs, default: Split) -> Source {
    let stdin_named = data.len() == 1 && data[0] == "-";
    if !data.is_empty() && !stdin_named {
        if input.lines || input.whole {
            usage_error(
                "--lines and --whole apply to a file or stdin, not to bodies given as arguments",
            );
        }
        return Source::Args(data);
    }
    let split = if input.lines {
        Split::Lines
    } else if input.whole {
        Split::Whole
    } else {
        default
    };
    match split {
        Split::Lines => Source::Lines(input.file),
        Split::Whole => Source::Whole(input.file),
    }
}

/// How a read input is cut into messages when the command line does not say.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Split {
    /// One message per line.
    Lines,
    /// The whole input as one streamed message.
    Whole,
}

/// A runtime presenting `--identity` (or an ephemeral key), trusting the address's pin and
/// `--trust-pin`, its stream-slot waits bounded by `--timeout`.
fn runtime(d: &DialArgs, max_body: Option<u64>) -> Result<Runtime, Failure> {
    dialling_runtime(
        d.identity.as_deref(),
        &d.trust_pins,
        d.timeout,
        max_body,
        d.reconnect.policy(),
    )
}

/// [`runtime`] from its parts, for a dialling role whose options are not [`DialArgs`]
/// (`pair --connect`).
pub(crate) fn dialling_runtime(
    identity: Option<&std::path::Path>,
    trust_pins: &[weida::Fingerprint],
    timeout: Option<Duration>,
    max_body: Option<u64>,
    reconnect: weida::ReconnectPolicy,
) -> Result<Runtime, Failure> {
    let defaults = Limits::default();
    let config = RuntimeConfig {
        identity: identity::load_or_ephemeral(identity)?,
        trust: Trust::pinned(trust_pins.iter().copied()),
        send_timeout: timeout,
        limits: Limits {
            max_collected_body: max_body.unwrap_or(defaults.max_collected_body),
            ..defaults
        },
        reconnect,
        ..RuntimeConfig::default()
    };
    Ok(Runtime::new(config)?)
}

/// Dials `--url` (the future `connecting`), bounded by `--timeout`, naming the address in
/// the error.
async fn connect(
    d: &DialArgs,
    connecting: impl Future<Output = weida::Result<()>>,
) -> Result<(), Failure> {
    within(d.timeout, connecting)
        .await
        .map_err(|e| Failure::from(e).context(format!("connecting to {}", d.url)))
}

/// The `--meta` entries, in the order given (duplicates kept, as the wire keeps them).
pub(crate) fn metadata(d: &DialArgs) -> Metadata {
    d.meta.iter().map(|(n, v)| (n.clone(), v.clone())).collect()
}

/// `f`, or `Timeout` once `timeout` passes (dropping `f`, which cancels what it was doing).
pub(crate) async fn within<T>(
    timeout: Option<Duration>,
    f: impl Future<Output = weida::Result<T>>,
) -> weida::Result<T> {
    match timeout {
        Some(t) => tokio::time::timeout(t, f)
            .await
            .unwrap_or(Err(Error::Timeout { last_loss: None })),
        None => f.await,
    }
}
