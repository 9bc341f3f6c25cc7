//! SURVEY: one question to every connected respondent, their answers as they come until a
//! deadline (PATTERNS §6). A respondent is a replier under another name: the same route, the
//! same exchange on the wire, so nothing here is new to the protocol.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::reqrep::INLINE_REQUEST;
use super::{Dialer, Replier};
use crate::config::EndpointOptions;
use crate::connection::handles::Message;
use crate::connection::handshake::Flow;
use crate::connection::link::Link;
use crate::error::{Error, Result};
use crate::runtime::listener::Listener;
use crate::runtime::Runtime;
use crate::wire::{check_streams, Header, Metadata};

/// A respondent answers surveys at a bound path: a [`Replier`] by another name (its route, its
/// `accept` and its backpressure are a replier's, and a surveyor may be answered by either).
pub type Respondent = Replier;

impl Listener {
    /// Binds a [`Respondent`] at `path`.
    pub fn respondent(&self, path: &str) -> Result<Respondent> {
        self.replier(path)
    }

    /// Binds a [`Respondent`] at `path` with bounds of its own, as
    /// [`Listener::replier_with`].
    pub fn respondent_with(&self, path: &str, options: &EndpointOptions) -> Result<Respondent> {
        self.replier_with(path, options)
    }
}

/// Asks every connected respondent the same question and collects their answers until a
/// deadline.
///
/// ```no_run
/// # async fn f(rt: weida::Runtime, a: &str, b: &str) -> weida::Result<()> {
/// use std::time::Duration;
/// let surveyor = rt.surveyor();
/// surveyor.connect(a).await?;
/// surveyor.connect(b).await?;
/// let run = surveyor.survey("who has job 7?", Duration::from_millis(500)).await?;
/// while let Some(answer) = run.next().await {
///     match answer {
///         Ok(m) => println!("{:?} from {:?}", m.body, m.meta.peer),
///         Err(e) => println!("one respondent failed: {e}"),
///     }
/// }
/// println!("{} asked, {} answered late", run.respondents(), run.late());
/// # Ok(()) }
/// ```
pub struct Surveyor {
    dialer: Dialer,
}

impl Runtime {
    /// A [`Surveyor`].
    pub fn surveyor(&self) -> Surveyor {
        self.surveyor_with(&EndpointOptions::new())
            .expect("the runtime's own bounds are valid")
    }

    /// A [`Surveyor`] with bounds of its own: `reconnect` and `max_collected_body` (the
    /// largest answer collected).
    pub fn surveyor_with(&self, options: &EndpointOptions) -> Result<Surveyor> {
        Ok(Surveyor {
            dialer: Dialer::new(
                self.pool.clone(),
                options,
                check_streams::EXCHANGE,
                Flow::Unordered,
            )?,
        })
    }
}

super::dialling!(
    Surveyor,
    "It is asked from the first survey after it is live."
);

impl Surveyor {
    /// Asks every live respondent `body`, one exchange each, and returns once each was asked
    /// (its question written whole), failed to be, or `deadline` passed; answers are then
    /// read from the [`SurveyRun`] until the deadline. The deadline is this side's alone: a
    /// respondent never learns it. A respondent that could not be asked within it (a full
    /// stream budget, a window it does not read) is not counted in `respondents()`. No live
    /// respondent is an empty run, not `NotConnected`. Not cancel-safe: dropping the future
    /// resets the questions being written.
    pub async fn survey(&self, body: impl Into<Bytes>, deadline: Duration) -> Result<SurveyRun> {
        self.survey_with(Metadata::new(), body, deadline).await
    }

    /// [`Surveyor::survey`] with metadata. Not cancel-safe, as `survey` is not.
    pub async fn survey_with(
        &self,
        meta: Metadata,
        body: impl Into<Bytes>,
        deadline: Duration,
    ) -> Result<SurveyRun> {
        self.dialer.pool.ctx.check_open()?;
        let body: Bytes = body.into();
        let until = Instant::now() + deadline;
        let links = self.dialer.peers.live_links();
        let shared = Arc::new(Shared {
            late: AtomicU64::new(0),
            pending: AtomicUsize::new(0),
            settled: tokio::sync::Notify::new(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let asks = links.into_iter().map(|link| {
            let header = Header {
                meta: meta.clone(),
                ..Header::default()
            };
            ask(&self.dialer, link, header, body.clone(), until)
        });
        // Each respondent asked becomes an answer to wait for; the run owns those tasks, so
        // dropping it ends every exchange still open (the respondent's reply fails Canceled).
        let mut answering = JoinSet::new();
        let mut respondents = 0;
        for reply in futures_util::future::join_all(asks)
            .await
            .into_iter()
            .flatten()
        {
            respondents += 1;
            shared.pending.fetch_add(1, Ordering::AcqRel);
            let (tx, shared) = (tx.clone(), shared.clone());
            answering.spawn(async move {
                let answer = reply.body().await;
                // Late is decided where the answer arrives, not where the caller reads.
                if Instant::now() > until {
                    if answer.is_ok() {
                        shared.late.fetch_add(1, Ordering::Relaxed);
                    }
                } else {
                    let _ = tx.send(answer);
                }
                if shared.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                    shared.settled.notify_waiters();
                }
            });
        }
        Ok(SurveyRun {
            answers: tokio::sync::Mutex::new(Answers {
                rx,
                left: respondents,
            }),
            _answering: answering,
            until,
            respondents,
            shared,
        })
    }
}

/// What a survey's answer tasks share with its run.
struct Shared {
    late: AtomicU64,
    /// Exchanges still open: answered, failed or counted late, each leaves.
    pending: AtomicUsize,
    /// Wakes `settled` when the last one left.
    settled: tokio::sync::Notify,
}

/// Writes the question on `link`, bounded by `until`: the pending reply, or None when it
/// could not be asked in time (or the stream was refused: such a respondent was not asked).
async fn ask(
    dialer: &Dialer,
    link: Arc<Link>,
    header: Header,
    body: Bytes,
    until: Instant,
) -> Option<crate::PendingReply> {
    let within = until.saturating_duration_since(Instant::now());
    let asked = async {
        // As a request is written (reqrep.rs): a small question with its head, a large one
        // after it, so that the respondent is asked once the head is out.
        let small = body.len() <= INLINE_REQUEST;
        let (mut t, reply) = dialer
            .exchange_on(&link, header, small.then(|| body.clone()), Some(within))
            .await?;
        // A respondent may answer or refuse before the whole question is written, stopping
        // it: the refusal race (PATTERNS §1.6). Its reply then says why, so a write or a
        // finish that fails leaves the answer to the reply: dropping the respondent here
        // would lose its refusal from the survey.
        if small || t.write(body).await.is_ok() {
            let _ = t.finish().await;
        }
        Ok::<_, Error>(reply)
    };
    match tokio::time::timeout_at(until, asked).await {
        Ok(Ok(reply)) => Some(reply),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "a respondent could not be asked");
            None
        }
        Err(_) => None,
    }
}

/// The answers of one survey, as they arrive, until its deadline. Dropping it ends the
/// exchanges it was collecting: a respondent still answering is told (its reply fails
/// `Canceled`), exactly as a requester that walks away tells its replier. Its counts may be read
/// while a `next` waits (a binding's run is shared between threads).
pub struct SurveyRun {
    answers: tokio::sync::Mutex<Answers>,
    _answering: JoinSet<()>,
    until: Instant,
    respondents: usize,
    shared: Arc<Shared>,
}

/// The answers still to come.
struct Answers {
    rx: mpsc::UnboundedReceiver<Result<Message>>,
    /// Each asked respondent sends one, or is late.
    left: usize,
}

impl SurveyRun {
    /// The next answer: a respondent's reply, or the error of one that refused, failed or
    /// died mid-reply (one error among the answers; the others go on). None once every
    /// respondent answered, or the deadline passed (an answer that arrived before the deadline
    /// is still handed out after it). Cancel-safe.
    pub async fn next(&self) -> Option<Result<Message>> {
        let mut a = self.answers.lock().await;
        if let Ok(answer) = a.rx.try_recv() {
            a.left -= 1;
            return Some(answer);
        }
        if a.left == 0 {
            return None;
        }
        match tokio::time::timeout_at(self.until, a.rx.recv()).await {
            Ok(Some(answer)) => {
                a.left -= 1;
                Some(answer)
            }
            Ok(None) | Err(_) => {
                a.left = 0;
                None
            }
        }
    }

    /// How many respondents were asked (those that could not be asked within the deadline
    /// are not counted).
    pub fn respondents(&self) -> usize {
        self.respondents
    }

    /// Answers that arrived after the deadline while this run lived: counted, not delivered.
    pub fn late(&self) -> u64 {
        self.shared.late.load(Ordering::Relaxed)
    }

    /// Resolves once every asked respondent's exchange has ended: answered in time, failed,
    /// or answered late (then counted in `late()`). A respondent that never answers keeps it
    /// waiting, so bound it with a timeout of your own. Cancel-safe.
    pub async fn settled(&self) {
        loop {
            let n = self.shared.settled.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.shared.pending.load(Ordering::Acquire) == 0 {
                return;
            }
            n.await;
        }
    }

    /// The deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.until
    }
}
