//! The command line: every subcommand and option, as clap parses them. Behaviour lives in
//! the modules named after the roles (serve, client, bench, identity).

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use weida::Fingerprint;

use crate::exit;
use crate::output::Format;

/// weida: messaging patterns over QUIC, AF_UNIX and in process, from the shell.
#[derive(Debug, Parser)]
#[command(name = "weida", version, after_help = exit::help())]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Create or show an identity: a key kept in a directory, named by its fingerprint.
    #[command(subcommand)]
    Id(IdCommand),
    /// Answer requests at URL (Req/Rep, the bound side).
    Rep(RepArgs),
    /// Receive pushed messages at URL and print them (Push/Pull, the bound side); with
    /// --connect, dial a bound pusher (`push --bind`) at URL and print its share instead.
    Pull(PullArgs),
    /// Serve URL's path as a queue with a command per message (docs/SERVICES.md): its exit
    /// status is the outcome (0 done, 75 retry, 65 drop, anything else a failure, which is a
    /// retry), with an attempt limit and a dead letter.
    Serve(HandlerArgs),
    /// Send a request to URL and print its reply.
    Req(ReqArgs),
    /// Answer surveys at URL: a respondent is a replier by another name (SURVEY, the bound
    /// side; the same options as `rep`).
    Respond(RepArgs),
    /// Be a BUS member at URL: print what the other members send, and send DATA (or stdin's
    /// lines) to every member connected with --connect.
    Bus(BusArgs),
    /// Be one end of a PAIR: bind URL (or, with --connect, dial the pair bound there), send
    /// DATA (or a file's or stdin's lines) to the other end, and print what it sends.
    Pair(PairArgs),
    /// Ask URL (and each --also) one question and print the answers that come before the
    /// deadline (SURVEY, the dialling side).
    Survey(SurveyArgs),
    /// Push messages to URL: arguments, a file, or stdin; with --bind, bind URL and deal them
    /// round-robin to the workers that dial it (`pull --connect`) instead.
    Push(PushArgs),
    /// Publish messages on TOPIC at URL: binds it, waits for subscribers, then publishes
    /// arguments, a file, or stdin (Pub/Sub, the bound side); with --connect, dials a
    /// collector (`sub --bind`) at URL instead.
    Pub(PubArgs),
    /// Subscribe to FILTERs at URL and print each message (Pub/Sub, the dialling side); with
    /// --bind, binds URL as a collector that dialling publishers (`pub --connect`) feed.
    Sub(SubArgs),
    /// Measure a pattern in one process on loopback.
    Bench(BenchArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the manual page weida(1) (roff), or write it and a page per command into DIR.
    Man {
        /// Write weida.1 and weida-<command>.1 (weida-rep.1, weida-id-new.1, ...) into DIR,
        /// and print their paths, instead of printing weida.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

impl Command {
    /// What `--progress` / `--no-progress` force for this command (`None`: neither was
    /// given); a command that draws no progress forces it off.
    pub(crate) fn progress_forced(&self) -> Option<bool> {
        match self {
            Self::Req(a) => a.progress.forced(),
            Self::Push(a) => a.progress.forced(),
            Self::Pull(a) => a.progress.forced(),
            Self::Pub(a) => a.progress.forced(),
            Self::Bench(a) => a.progress.forced(),
            Self::Id(_)
            | Self::Rep(_)
            | Self::Serve(_)
            | Self::Respond(_)
            | Self::Bus(_)
            | Self::Pair(_)
            | Self::Survey(_)
            | Self::Sub(_)
            | Self::Completions { .. }
            | Self::Man { .. } => Some(false),
        }
    }
}

/// Whether a command that can draw progress on stderr does.
#[derive(Debug, Args)]
pub(crate) struct ProgressArgs {
    /// Draw progress on stderr even when it is not a terminal (never on stdout): the input
    /// sent (req, push, pub), a raw reply (req), a message arriving (pull), the rate (bench).
    #[arg(long, overrides_with = "no_progress")]
    pub(crate) progress: bool,
    /// Draw no progress [default: drawn only when stderr is a terminal].
    #[arg(long, overrides_with = "progress")]
    pub(crate) no_progress: bool,
}

impl ProgressArgs {
    /// What the flags force, if either was given (the last one wins).
    fn forced(&self) -> Option<bool> {
        match (self.progress, self.no_progress) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum IdCommand {
    /// Create an identity in DIR (mode 0700) and print its fingerprint.
    New {
        /// Where to keep it [default: $XDG_CONFIG_HOME/weida/identity, else
        /// ~/.config/weida/identity].
        dir: Option<PathBuf>,
        /// Replace an identity (or anything) already in DIR: its key is lost for good.
        #[arg(long)]
        force: bool,
    },
    /// Print the fingerprint of the identity in DIR (what a peer pins).
    Show {
        /// Where it is kept [default: as for `id new`].
        dir: Option<PathBuf>,
    },
}

/// What both serving roles take.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to bind, with the endpoint's path: weida://127.0.0.1:0/jobs,
    /// weida+unix:///tmp/w.sock//jobs. Port 0 picks a free port.
    pub(crate) url: String,
    /// Present the identity kept in DIR (`weida id new DIR`) instead of a new ephemeral key,
    /// so the dialable address stays the same across restarts.
    #[arg(long, value_name = "DIR")]
    pub(crate) identity: Option<PathBuf>,
    /// Exit after N messages (requests received whole, for rep).
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<u64>,
    /// How to print each message received on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// Print `READY <address>` as the first line of stdout once the endpoint is bound (for
    /// scripts and tests; `listening on <address>` always goes to stderr).
    #[arg(long)]
    pub(crate) ready: bool,
    /// Do not print the messages received.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// The largest body collected into memory [default: the core's 16 MiB]; a larger one is
    /// refused with LIMIT_EXCEEDED.
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_body: Option<u64>,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("answer").required(true).args(["echo", "exec"])))]
pub(crate) struct RepArgs {
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
    /// Reply with the request's body and metadata.
    #[arg(long)]
    pub(crate) echo: bool,
    /// Run CMD (with `sh -c`) per request, the body on its stdin; reply with its stdout. A
    /// non-zero exit rejects the request with its stderr. WEIDA_PATH and WEIDA_PEER are set.
    #[arg(long, value_name = "CMD")]
    pub(crate) exec: Option<String>,
    /// Requests answered at once (run and replied). Each request is read before it takes a
    /// slot and all are read as they come, so requests slow to arrive hold up none; a command
    /// slow to run holds up no other until N are running.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) concurrency: u32,
}

/// `weida serve`: a queue whose handler is a command.
#[derive(Debug, Args)]
pub(crate) struct HandlerArgs {
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
    /// Run CMD (with `sh -c`) per message, the body on its stdin, with WEIDA_PATH, WEIDA_PEER
    /// and WEIDA_ATTEMPT (1 for a first delivery) set. Its exit status is the outcome: 0 done,
    /// 75 (EX_TEMPFAIL) retry, 65 (EX_DATAERR) drop; any other, or a signal, is a failure,
    /// which is a retry.
    #[arg(long, value_name = "CMD")]
    pub(crate) exec: String,
    /// Commands run at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) concurrency: u32,
    /// The attempts a message gets; at the limit a retry goes to --dead-letter (or is dropped,
    /// with a warning). Declaring it makes a retry a copy to this queue.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_attempts: Option<u32>,
    /// Where a message goes at the attempt limit: the address of a bound Pull path.
    #[arg(long, value_name = "URL")]
    pub(crate) dead_letter: Option<String>,
    /// Wait SECS before a retry's copy (in this process: a crash before then loses it).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub(crate) retry_after: Option<Duration>,
    /// On SIGINT or SIGTERM, how long the commands running are given to finish.
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "30")]
    pub(crate) drain: Duration,
}

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("redial")
        .args(["reconnect", "events", "later"])
        .multiple(true)
        .requires("connect")
))]
pub(crate) struct PullArgs {
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
    /// Dial URL, a bound pusher (`weida push --bind`, which prints the address with its pin
    /// and path), and claim a share of its messages, instead of binding URL: a worker
    /// (docs/PATTERNS.md §3.1). Messages print as `pull` prints them; with --ready, `READY
    /// <URL>` once the share is claimed. --trust-pin, --timeout, --reconnect, --events and
    /// --later are for dialling, and refused without it.
    #[arg(long)]
    pub(crate) connect: bool,
    /// With --connect, also accept a pusher presenting this key, for an address without a
    /// pin (a pin in the address decides alone). Repeatable.
    #[arg(long = "trust-pin", value_name = "sha256:HEX", requires = "connect")]
    pub(crate) trust_pins: Vec<Fingerprint>,
    /// With --connect, give up connecting and claiming a share after SECS, with status 6.
    #[arg(long, value_name = "SECS", value_parser = seconds, requires = "connect")]
    pub(crate) timeout: Option<Duration>,
    #[command(flatten)]
    pub(crate) reconnect: crate::events::ReconnectArgs,
    #[command(flatten)]
    pub(crate) progress: ProgressArgs,
}

/// What both client roles take.
#[derive(Debug, Args)]
pub(crate) struct DialArgs {
    /// The endpoint to dial, with the listener's pin and the path, as `rep`/`pull` print it:
    /// weida://sha256:<hex>@127.0.0.1:4433/jobs.
    pub(crate) url: String,
    /// Present the identity kept in DIR instead of a new ephemeral key.
    #[arg(long, value_name = "DIR")]
    pub(crate) identity: Option<PathBuf>,
    /// Also accept a listener presenting this key, for an address without a pin (a pin in
    /// the address decides alone). Repeatable.
    #[arg(long = "trust-pin", value_name = "sha256:HEX")]
    pub(crate) trust_pins: Vec<Fingerprint>,
    /// Give up after SECS: bounds connecting, each request until its whole reply, and each
    /// wait for the peer's stream budget (push --bind: the wait for --wait-workers, each
    /// message's wait for a worker, and the wait for the receipts).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub(crate) timeout: Option<Duration>,
    /// Metadata sent with each message. Repeatable.
    #[arg(short = 'm', long = "meta", value_name = "NAME=VALUE", value_parser = name_value)]
    pub(crate) meta: Vec<(String, String)>,
    #[command(flatten)]
    pub(crate) reconnect: crate::events::ReconnectArgs,
}

/// Where a client's bodies come from, besides arguments.
#[derive(Debug, Clone, Args)]
pub(crate) struct InputArgs {
    /// Read the body (or bodies) from FILE instead.
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// One message per line of input (the newline is not sent).
    #[arg(long, conflicts_with = "whole")]
    pub(crate) lines: bool,
    /// The whole input as one message, streamed as it is read (never held whole).
    #[arg(long)]
    pub(crate) whole: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ReqArgs {
    #[command(flatten)]
    pub(crate) dial: DialArgs,
    /// The request body; `-` or nothing reads stdin (whole, unless --lines).
    #[arg(conflicts_with = "file")]
    pub(crate) data: Option<String>,
    #[command(flatten)]
    pub(crate) input: InputArgs,
    /// How to print the reply [default: raw, or text with --lines].
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// The largest reply collected into memory for text, hex and json [default: 16 MiB]
    /// (raw replies are streamed).
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_body: Option<u64>,
    #[command(flatten)]
    pub(crate) progress: ProgressArgs,
}

#[derive(Debug, Args)]
pub(crate) struct BusArgs {
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
    /// Another member's address, as its `bus` prints it: what this member sends reaches it.
    /// Repeatable; each is dialled before anything is sent (it must be bound already) and
    /// redialled if its connection is lost.
    #[arg(long = "connect", value_name = "URL")]
    pub(crate) connect: Vec<String>,
    /// Messages to send, each to every member connected (once connected); without any, each
    /// line of stdin is sent as it is read.
    pub(crate) data: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct PairArgs {
    /// The address to bind, with the pair's path: weida://127.0.0.1:0/chat,
    /// weida+unix:///tmp/w.sock//chat. With --connect, the bound pair to dial, with its pin
    /// and path, as its `weida pair --ready` prints it.
    pub(crate) url: String,
    /// Dial URL and claim the pair bound there, instead of binding it. One peer at a time:
    /// a pair another peer holds refuses this one with status 9.
    #[arg(long)]
    pub(crate) connect: bool,
    /// Messages to send to the other end, one each; without any (and without --file), each
    /// line of stdin is sent as it is read.
    #[arg(conflicts_with = "file")]
    pub(crate) data: Vec<String>,
    /// Send each line of FILE instead (the newline is not sent).
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// Present the identity kept in DIR instead of a new ephemeral key (bound: so the
    /// address the peer dials, its pin, stays the same across restarts).
    #[arg(long, value_name = "DIR")]
    pub(crate) identity: Option<PathBuf>,
    /// With --connect, also accept a pair presenting this key, for an address without a pin
    /// (a pin in the address decides alone). Repeatable.
    #[arg(long = "trust-pin", value_name = "sha256:HEX", requires = "connect")]
    pub(crate) trust_pins: Vec<Fingerprint>,
    /// Give up after SECS, with status 6: each send (bound: its wait for a peer to claim the
    /// pair; with --connect: connecting, and each wait for the peer's stream budget), and
    /// the wait for what was sent to be taken at the end.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub(crate) timeout: Option<Duration>,
    /// Metadata sent with each message. Repeatable.
    #[arg(short = 'm', long = "meta", value_name = "NAME=VALUE", value_parser = name_value)]
    pub(crate) meta: Vec<(String, String)>,
    /// Exit (status 0) once N messages were received and the input is sent; without it,
    /// exit once the input is sent and taken by the other end.
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<u64>,
    /// How to print each message received on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// Print `READY <address>` as the first line of stdout once the pair is bound (with
    /// --connect: `READY <URL>` once it is connected and has claimed the pair).
    #[arg(long)]
    pub(crate) ready: bool,
    /// Do not print the messages received.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// The largest body collected into memory [default: the core's 16 MiB]; a larger one is
    /// refused with LIMIT_EXCEEDED.
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_body: Option<u64>,
}

#[derive(Debug, Args)]
pub(crate) struct SurveyArgs {
    #[command(flatten)]
    pub(crate) dial: DialArgs,
    /// Another respondent to ask, as URL is given. Repeatable.
    #[arg(long = "also", value_name = "URL")]
    pub(crate) also: Vec<String>,
    /// How long to wait for answers; a respondent that has not answered by then is not
    /// waited for.
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "1")]
    pub(crate) deadline: Duration,
    /// The question; `-` or nothing reads stdin, whole.
    pub(crate) data: Option<String>,
    /// How to print each answer [default: text, one line each].
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
}

#[derive(Debug, Args)]
pub(crate) struct PushArgs {
    #[command(flatten)]
    pub(crate) dial: DialArgs,
    /// Bind URL (with the path: weida://127.0.0.1:0/jobs, weida+unix:///tmp/w.sock//jobs) as
    /// a bound pusher, which workers dial (`weida pull --connect`), instead of dialling a
    /// puller: each message goes to the next worker, round-robin, and waits for one to be
    /// connected (docs/PATTERNS.md §3.1). --trust-pin, --reconnect, --events and --later are
    /// for dialling, and refused with it.
    #[arg(long, conflicts_with_all = ["trust_pins", "reconnect", "events", "later"])]
    pub(crate) bind: bool,
    /// Bodies, one message each; without any (and without --file), stdin is read, one
    /// message per line unless --whole.
    #[arg(conflicts_with = "file")]
    pub(crate) data: Vec<String>,
    #[command(flatten)]
    pub(crate) input: InputArgs,
    /// With --bind, print `READY <address>` as the first line of stdout once the pusher is
    /// bound: the address workers dial.
    #[arg(long, requires = "bind")]
    pub(crate) ready: bool,
    /// With --bind, send only once N workers are connected (polled: the core has no event
    /// for an arrival).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "bind")]
    pub(crate) wait_workers: usize,
    #[command(flatten)]
    pub(crate) progress: ProgressArgs,
}

/// The ordering a subscriber requires of its publishers (GUARANTEES §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OrderingArg {
    /// No numbering: copies arrive as their streams do.
    None,
    /// PerProducer detect: each copy carries its sequence and the gap before it.
    Detect,
    /// PerProducer reassemble: copies are also held and put back in order (bounded).
    Reassemble,
}

impl From<OrderingArg> for weida::Ordering {
    fn from(o: OrderingArg) -> Self {
        match o {
            OrderingArg::None => Self::None,
            OrderingArg::Detect => Self::Detect,
            OrderingArg::Reassemble => Self::Reassemble,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct PubArgs {
    /// The address to bind, with the publisher's path: weida://127.0.0.1:0/feed,
    /// weida+unix:///tmp/w.sock//feed. Subscribers dial the address it prints. With
    /// --connect, the collector to dial, as `weida sub --bind` prints it.
    pub(crate) url: String,
    /// Dial URL, a collector (`weida sub --bind`), instead of binding it: every message goes
    /// to the collector, whose filters choose what it keeps (docs/PATTERNS.md §4.4).
    /// --wait-subscribers, --ready and --whole are a bound publisher's, and refused with it.
    #[arg(long, conflicts_with_all = ["wait_subscribers", "ready", "whole"])]
    pub(crate) connect: bool,
    /// The topic of every message: segments separated by `.` (prices.btc.eur), no wildcards.
    #[arg(required_unless_present = "keyed")]
    pub(crate) topic: Option<String>,
    /// Bodies, one message each; without any (and without --file), stdin is read, one
    /// message per line unless --whole.
    #[arg(conflicts_with_all = ["file", "keyed"])]
    pub(crate) data: Vec<String>,
    #[command(flatten)]
    pub(crate) input: InputArgs,
    /// Each line of input is `TOPIC BODY` (split at the first space): the topic is per line,
    /// and no TOPIC argument is given.
    #[arg(long, conflicts_with_all = ["topic", "whole"])]
    pub(crate) keyed: bool,
    /// Present the identity kept in DIR instead of a new ephemeral key, so subscribers' pins
    /// stay valid across restarts (with --connect: the key the collector sees).
    #[arg(long, value_name = "DIR")]
    pub(crate) identity: Option<PathBuf>,
    /// With --connect, also accept a collector presenting this key, for an address without a
    /// pin (a pin in the address decides alone). Repeatable.
    #[arg(long = "trust-pin", value_name = "sha256:HEX", requires = "connect")]
    pub(crate) trust_pins: Vec<Fingerprint>,
    /// Print `READY <address>` as the first line of stdout once the publisher is bound.
    #[arg(long)]
    pub(crate) ready: bool,
    /// Publish only once N subscribers are connected with a filter (polled: the core has no
    /// event for an arrival).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) wait_subscribers: usize,
    /// Give up the wait for subscribers after SECS, with status 6 (with --connect: give up
    /// connecting to the collector).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub(crate) timeout: Option<Duration>,
    /// After the last message, keep serving for at most SECS so the copies queued reach
    /// their subscribers; ends early once every subscriber has left (with --connect: once
    /// every copy is written and the collector has taken them).
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = seconds)]
    pub(crate) linger: Duration,
    /// Print, per message, how many copies were queued (on stderr).
    #[arg(short, long)]
    pub(crate) verbose: bool,
    #[command(flatten)]
    pub(crate) progress: ProgressArgs,
}

#[derive(Debug, Args)]
pub(crate) struct SubArgs {
    /// The publisher to dial, with its pin and path, as `weida pub` prints it:
    /// weida://sha256:<hex>@127.0.0.1:4433/feed. With --bind, the address to bind, with the
    /// collector's path: weida://127.0.0.1:0/logs.
    pub(crate) url: String,
    /// Bind URL as a collector, which publishers dial (`weida pub --connect`), instead of
    /// dialling a publisher: every copy crosses the connection, and what no filter selects
    /// is discarded here and counted on stderr at the end (docs/PATTERNS.md §4.4).
    /// --trust-pin, --timeout, --reconnect, --events and --later are for dialling, and
    /// refused with it.
    #[arg(long, conflicts_with_all = ["trust_pins", "timeout", "reconnect", "events", "later"])]
    pub(crate) bind: bool,
    /// What to receive: topics' segments separated by `.`, `*` for one whole segment, a
    /// trailing `#` for any number (prices.*.eur, alerts.#).
    #[arg(required = true, value_name = "FILTER")]
    pub(crate) filters: Vec<String>,
    /// Present the identity kept in DIR instead of a new ephemeral key (with --bind: so the
    /// collector's address, its pin, stays the same across restarts).
    #[arg(long, value_name = "DIR")]
    pub(crate) identity: Option<PathBuf>,
    /// Also accept a publisher presenting this key, for an address without a pin (a pin in
    /// the address decides alone). Repeatable.
    #[arg(long = "trust-pin", value_name = "sha256:HEX")]
    pub(crate) trust_pins: Vec<Fingerprint>,
    /// Give up connecting and installing the filters after SECS, with status 6.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub(crate) timeout: Option<Duration>,
    /// Exit (status 0) after N messages.
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<u64>,
    /// How to print each message received on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// The ordering to require of the publisher: `detect` adds each message's sequence and
    /// gap, `reassemble` also puts them back in order (not with --bind: a collector numbers
    /// each publisher's copies as a puller does, and cannot reassemble them).
    #[arg(long, value_enum, default_value_t = OrderingArg::None)]
    pub(crate) ordering: OrderingArg,
    /// Print `READY <address>` as the first line of stdout once every filter is installed at
    /// the publisher: what is published after it is selected. With --bind, once the collector
    /// is bound with its filters, and the address is the one publishers dial.
    #[arg(long)]
    pub(crate) ready: bool,
    /// Do not print the messages received.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// The largest body collected into memory [default: the core's 16 MiB]; a larger copy is
    /// refused (the publisher counts it as dropped; with --bind, a warning here, and the
    /// collector goes on).
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_body: Option<u64>,
    #[command(flatten)]
    pub(crate) reconnect: crate::events::ReconnectArgs,
}

/// Which pattern `bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchPattern {
    /// One-way messages: rate received.
    PushPull,
    /// Request and echoed reply: rate and latency.
    ReqRep,
}

/// Which transport `bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchTransport {
    /// weida:// on 127.0.0.1.
    Quic,
    /// weida+unix:// in a temporary directory.
    Unix,
    /// weida+inproc://, no socket at all.
    Inproc,
}

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The pattern to measure.
    #[arg(long, value_enum, default_value_t = BenchPattern::PushPull)]
    pub(crate) pattern: BenchPattern,
    /// The transport to measure.
    #[arg(long, value_enum, default_value_t = BenchTransport::Quic)]
    pub(crate) transport: BenchTransport,
    /// Body size in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64)]
    pub(crate) size: usize,
    /// How long to measure, in seconds.
    #[arg(long, value_name = "SECS", default_value = "3", value_parser = positive_seconds)]
    pub(crate) duration: Duration,
    /// Senders (or requesters) running at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) concurrency: u32,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// No live rate line on stderr (it is also hidden when stderr is not a terminal, unless
    /// --progress).
    #[arg(short, long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) progress: ProgressArgs,
}

/// Reports a command line that clap accepted but that makes no sense, as clap reports its
/// own (status 2, the usage line), and exits.
pub(crate) fn usage_error(message: &str) -> ! {
    use clap::CommandFactory;
    let e = Cli::command().error(clap::error::ErrorKind::ArgumentConflict, message);
    let _ = e.print();
    std::process::exit(exit::USAGE.into())
}

/// Seconds as a decimal number (`0.5`, `30`).
fn seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{s:?} is not a duration"))
}

fn positive_seconds(s: &str) -> Result<Duration, String> {
    let d = seconds(s)?;
    if d.is_zero() {
        return Err("the duration must be above zero".into());
    }
    Ok(d)
}

fn name_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("{s:?} is not NAME=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_and_metadata_parse() {
        assert_eq!(seconds("0.25"), Ok(Duration::from_millis(250)));
        assert!(seconds("-1").is_err() && seconds("x").is_err());
        assert!(positive_seconds("0").is_err());
        assert_eq!(name_value("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(name_value("=b").is_err() && name_value("ab").is_err());
    }
}
