//! `weida pair`: one end of a PAIR (PATTERNS §6.1), bound at its URL or, with `--connect`,
//! dialling the pair bound there. Either end sends its input to the other and prints what
//! the other sends, at the same time.

use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

use weida::{EndpointOptions, Error, ErrorCode, IncomingMeta, Metadata, Pair, Runtime};

use crate::args::PairArgs;
use crate::client::{dialling_runtime, within};
use crate::exit::Failure;
use crate::input::{Bodies, Input};
use crate::output;
use crate::serve::{self, announce, warn};
use crate::signal::Stop;

/// How long a dialling pair gives the bound one to close its streams before closing, without
/// `--timeout` (as `push` does); every receipt has resolved by then.
const DRAIN: Duration = Duration::from_secs(10);
/// Receipts awaited at once while sending (as `push` does).
const RECEIPT_WINDOW: usize = 256;

/// `weida pair`: binds (or dials and claims) the pair, then sends and receives together until
/// the input is sent and, with `--count N`, N messages were received. A signal interrupts it.
pub(crate) async fn run(args: PairArgs, stop: &mut Stop) -> Result<(), Failure> {
    if args.connect {
        let rt = dialling_runtime(
            args.identity.as_deref(),
            &args.trust_pins,
            args.timeout,
            args.max_body,
            weida::ReconnectPolicy::default(),
        )?;
        let done = stop.interrupt(dialled(&rt, &args)).await;
        // However it ended, the peer learns now, not at its idle timeout; the pair it held is
        // claimable again.
        rt.close().await;
        done
    } else {
        let (rt, listener, path) =
            serve::bind_url(&args.url, args.identity.as_deref(), args.max_body).await?;
        let options = EndpointOptions::new().send_timeout(args.timeout);
        let pair = listener.pair_with(&path, &options)?;
        announce(pair.address().expect("a bound pair's"), args.ready)?;
        let done = stop.interrupt(exchange(&pair, &args)).await;
        pair.close();
        // Every receipt already resolved in `exchange`; this closes as `pull` and `rep` do.
        serve::close(&rt, &done).await;
        drop(listener);
        done
    }
}

/// The dialling end's work on `rt`: connect, claim, then [`exchange`].
async fn dialled(rt: &Runtime, args: &PairArgs) -> Result<(), Failure> {
    let pair = rt.pair();
    within(args.timeout, pair.connect(&args.url))
        .await
        .map_err(|e| claim_failure(e, &args.url))?;
    if args.ready {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "READY {}", args.url)
            .and_then(|()| out.flush())
            .map_err(Failure::output)?;
    }
    exchange(&pair, args).await?;
    rt.drain(args.timeout.unwrap_or(DRAIN)).await;
    pair.close();
    Ok(())
}

/// A failed connect, naming the pair that is taken when that is why.
fn claim_failure(e: Error, url: &str) -> Failure {
    let taken = e.code() == ErrorCode::LimitExceeded;
    let failure = Failure::from(e);
    if taken {
        failure
            .context(format!(
                "claiming the pair at {url}: the pair is taken by another peer"
            ))
            .hint("a pair has one peer at a time: try again once the other peer has left")
    } else {
        failure.context(format!("connecting to {url}"))
    }
}

/// Sends every body of the input and prints every message received, together: done once the
/// input is sent and (with `--count N`) N messages were received; without `--count`, once
/// the input is sent.
async fn exchange(pair: &Pair, args: &PairArgs) -> Result<(), Failure> {
    let meta: Metadata = args
        .meta
        .iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    let mut bodies = match (args.data.is_empty(), &args.file) {
        (false, _) => Bodies::Args(args.data.clone().into_iter()),
        (true, file) => Bodies::Lines(Input::open(file.as_deref()).await?),
    };
    let sending = async {
        let sent = async {
            let mut receipts = FuturesUnordered::new();
            while let Some(body) = bodies.next().await? {
                let mut t = pair.open(meta.clone()).await?;
                t.write(body).await?;
                receipts.push(t.finish().await?.delivered());
                if receipts.len() >= RECEIPT_WINDOW {
                    receipts.next().await.expect("not empty")?;
                }
            }
            // Every message taken by the other end: only then may this end leave.
            within(args.timeout, async {
                while let Some(r) = receipts.next().await {
                    r?;
                }
                Ok(())
            })
            .await?;
            Ok::<_, Failure>(())
        };
        sent.await.map_err(|f| {
            let unclaimed = pair.address().is_some() && pair.peer_count() == 0;
            let timed_out = f.weida().is_some_and(|e| e.code() == ErrorCode::Timeout);
            let f = f.context("sending to the other end of the pair");
            match unclaimed && timed_out {
                true => f.hint("no peer claimed the pair before --timeout passed"),
                false => f,
            }
        })
    };
    let receiving = async {
        let mut received = 0u64;
        while args.count.is_none_or(|n| received < n) {
            match pair.recv().await {
                Ok(m) => {
                    received += 1;
                    if !args.quiet {
                        output::print_message(args.format, &m.meta, &m.body)
                            .map_err(Failure::output)?;
                    }
                }
                Err(Error::Closed) => {
                    return match args.count {
                        Some(_) => Err(Failure::from(Error::Closed)
                            .context("receiving from the other end of the pair")),
                        None => Ok(()),
                    };
                }
                // A message cancelled by its sender, above --max-body, or cut by a lost
                // connection: that message is gone, the pair goes on.
                Err(e) => warn(
                    "a message could not be received",
                    &IncomingMeta::default(),
                    &e,
                ),
            }
        }
        Ok::<_, Failure>(())
    };
    if args.count.is_some() {
        tokio::try_join!(sending, receiving)?;
        return Ok(());
    }
    // Without --count, receiving goes on only while there is input to send.
    tokio::pin!(sending);
    tokio::select! {
        sent = &mut sending => sent,
        received = receiving => {
            received?;
            sending.await
        }
    }
}
