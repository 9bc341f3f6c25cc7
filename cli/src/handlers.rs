//! `weida serve`: a queue served by the handler runtime (docs/SERVICES.md), a command per
//! message whose exit status is the outcome. What each outcome does (the copy, the attempt
//! header, the limit, the dead letter, the counters) is the core's `service` layer; this file
//! maps exit statuses and prints.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use weida::service::{Outcome, Service};

use crate::args::HandlerArgs;
use crate::exit::Failure;
use crate::output;
use crate::serve::{announce, bind_url, failure_reason, run_output};
use crate::signal::Stop;

/// The exit status that asks for a retry: sysexits' EX_TEMPFAIL, "try again later".
pub(crate) const RETRY: i32 = 75;
/// The exit status that drops the message: sysexits' EX_DATAERR, "the input was wrong", which
/// no retry mends.
pub(crate) const DROP: i32 = 65;

fn print_warnings(warnings: Vec<String>) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

/// Serves until `--count` messages are finished or a signal; then stops the registration
/// within `--drain` and prints its counters on stderr.
pub(crate) async fn serve(args: HandlerArgs, stop: &mut Stop) -> Result<(), Failure> {
    let s = &args.serve;
    let (rt, listener, path) = bind_url(&s.url, s.identity.as_deref(), s.max_body).await?;
    let mut b = Service::new(&rt)
        .queue(&listener, &path)?
        .concurrency(args.concurrency);
    if let Some(n) = args.max_attempts {
        b = b.max_attempts(n);
    }
    if let Some(d) = &args.dead_letter {
        b = b.dead_letter(d);
    }
    let reg = Arc::new(b.start().await?);
    // The runtime's warnings (a failure with its peer, path, attempt and the command's
    // stderr; a message dropped at its limit; Unsupported; a copy not sent) go to stderr as
    // they are logged, and what is left at the end after the stop.
    let warnings = tokio::spawn({
        let reg = reg.clone();
        async move {
            loop {
                print_warnings(reg.next_warnings().await);
            }
        }
    });
    announce(reg.address().expect("a queue has its own address"), s.ready)?;
    let finished = Arc::new(AtomicU64::new(0));
    let enough = Arc::new(tokio::sync::Notify::new());
    let (cmd, later, count) = (Arc::new(args.exec.clone()), args.retry_after, s.count);
    let (format, quiet) = (s.format, s.quiet);
    let served = reg.run(|m, attempt| {
        let (cmd, finished, enough) = (cmd.clone(), finished.clone(), enough.clone());
        async move {
            if !quiet {
                let _ = output::print_message(format, &m.meta, &m.body);
            }
            let env = [("WEIDA_ATTEMPT", attempt.to_string())];
            let ran = run_output(&cmd, &m.meta, m.body.clone(), &env).await;
            if count.is_some_and(|n| finished.fetch_add(1, Ordering::SeqCst) + 1 >= n) {
                enough.notify_one();
            }
            let output = ran?;
            match output.status.code() {
                Some(0) => Ok(Outcome::Done),
                Some(RETRY) => Ok(later.map_or(Outcome::Retry, Outcome::RetryAfter)),
                Some(DROP) => Ok(Outcome::Drop),
                // A failure, logged by the runtime with the message's peer and path.
                _ => Err(failure_reason(&output)),
            }
        }
    });
    // A stop lets the commands running finish within --drain; the loop also ends by itself if
    // the queue is closed under it. What it still runs when the stop returns (past the
    // deadline) is dropped with it: each such command is killed, its message a failure.
    let ended = tokio::sync::Notify::new();
    let mut served = Box::pin(async {
        let r = served.await;
        ended.notify_one();
        r
    });
    let stopping = async {
        tokio::select! {
            _ = stop.next() => {}
            _ = enough.notified() => {}
            _ = ended.notified() => {}
        }
        reg.stop(args.drain).await
    };
    tokio::pin!(stopping);
    let mut ran = None;
    let stopped = loop {
        tokio::select! {
            r = &mut served, if ran.is_none() => ran = Some(r),
            stopped = &mut stopping => break stopped,
        }
    };
    drop(served);
    warnings.abort();
    print_warnings(reg.take_warnings());
    if let Some(r) = ran {
        r?;
    }
    let c = reg.counters();
    eprintln!(
        "stopped: {} handled, {} retried, {} dead-lettered, {} dropped, {} failed; \
         {} unfinished, {} waiting copies dropped",
        c.handled,
        c.retried,
        c.dead_lettered,
        c.dropped,
        c.failed,
        stopped.unfinished,
        stopped.copies_dropped
    );
    drop(listener);
    // As every serving role ends: the pushers' receipts need this side's acknowledgements.
    let served = Ok(());
    crate::serve::close(&rt, &served).await;
    served
}
