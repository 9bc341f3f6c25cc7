//! `weida-bench`: weida against the substrate each transport is built on, in one process run.
//!
//! ```text
//! cargo run --release -p weida-bench -- [--quick] [--reps N] [--secs S] [--json out.json]
//! ```
//!
//! See bench/README.md for what each row measures and how to read the ratios.

mod cases;
mod fanout;
mod filters;
mod meter;
mod one;
mod rawquic;
mod report;
mod twoproc;

use std::future::Future;
use std::time::{Duration, Instant};

use cases::{System, Transport};
use meter::Window;

pub(crate) type BoxResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Push/Pull body sizes.
const SIZES: [usize; 4] = [64, 1024, 64 * 1024, 1 << 20];
/// The Req/Rep body size.
const REQ_SIZE: usize = 64;
/// Sizes of the runtime flavour comparison.
const FLAVOUR_SIZES: [usize; 2] = [64, 1024];

/// The tokio runtime a measurement runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// `new_current_thread`: every task, client and server, on one thread.
    Current,
    /// `new_multi_thread` with 2 workers.
    Multi,
}

impl Flavour {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Current => "current-thread",
            Self::Multi => "multi-thread, 2 workers",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Self::Current => "current",
            Self::Multi => "multi",
        }
    }
}

/// Which table a measurement belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bench {
    PushPull,
    ReqRep,
    /// Push/Pull over QUIC, weida and quinn, on each runtime flavour.
    Flavour,
    /// Pub/Sub copies/s at a width (`--one` only: the suite's rows; the fan-out table is
    /// `fanout.rs`).
    PubSub,
}

/// What one measurement produced.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome {
    Rate(meter::Rate),
    Latency(meter::Latency),
}

/// One measurement of one system in one repetition.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) bench: Bench,
    pub(crate) transport: Transport,
    pub(crate) size: usize,
    pub(crate) system: System,
    pub(crate) flavour: Flavour,
    pub(crate) rep: usize,
    pub(crate) outcome: Result<Outcome, String>,
}

/// The command line.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) quick: bool,
    pub(crate) reps: usize,
    pub(crate) window: Window,
    pub(crate) json: Option<String>,
    pub(crate) flavour: Flavour,
    pub(crate) transports: Vec<Transport>,
    pub(crate) flavour_table: bool,
    /// Profiling filters: only this bench, this size, this system.
    pub(crate) only_bench: Option<Bench>,
    pub(crate) only_size: Option<usize>,
    pub(crate) only_system: Option<System>,
    /// `--one`: the subject of the single case (see `one.rs`).
    pub(crate) one: Option<one::Subject>,
    /// `--width`: subscribers of `--one --bench pub_sub`.
    pub(crate) width: usize,
    /// `--role` and `--address`: one end of the `--one` case (see `twoproc.rs`).
    pub(crate) role: twoproc::Role,
    pub(crate) address: Option<String>,
    /// `--handlers N`: the two-process Push/Pull puller served by N handlers (twoproc.rs).
    pub(crate) handlers: Option<u32>,
    pub(crate) args: Vec<String>,
}

const USAGE: &str = "\
usage: cargo run --release -p weida-bench -- [options]

  --quick            smoke run: 2 reps, 0.25 s windows (under a minute)
  --reps N           repetitions per measurement (default 5; quick 2)
  --secs S           measured window per measurement, seconds (default 1.5; quick 0.25)
  --warmup S         warmup before each window, seconds (default 0.3; quick 0.1)
  --json PATH        also write every measurement and the tables as JSON
  --flavour F        runtime of the main tables: current (default) or multi (2 workers)
  --transport T      only this transport (quic, unix, inproc); repeatable
  --no-flavour-table skip the runtime flavour comparison
  --bench B          only push_pull, req_rep or flavour (for profiling one case)
  --size N           only bodies of N bytes (for profiling)
  --system S         only weida or substrate (for profiling; no ratios then)
  --handlers N       with --one --bench push_pull --role bind: the puller is a service
                     queue with N no-op handlers at once (docs/SERVICES.md), not a recv loop
  --one              one case, no tables: JSON lines on stdout, one per rep (bench/suite);
                     needs --bench push_pull|req_rep; --system may also be quinn-long (one
                     long framed QUIC stream) or tcp (framed loopback TCP); --bench pub_sub
                     --width N (weida only) publishes flat out to N subscribers, copies/s
  --role R           with --one: both (default), bind (print ADDRESS, then serve or
                     measure) or dial (--address ADDR): one end per process (bench/suite)
  -h, --help         this text";

fn parse_args() -> Result<Options, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    parse(args)
}

fn parse(args: Vec<String>) -> Result<Options, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut o = Options {
        quick,
        reps: if quick { 2 } else { 5 },
        window: Window {
            warmup: Duration::from_secs_f64(if quick { 0.1 } else { 0.3 }),
            measure: Duration::from_secs_f64(if quick { 0.25 } else { 1.5 }),
        },
        json: None,
        flavour: Flavour::Current,
        transports: Vec::new(),
        flavour_table: true,
        only_bench: None,
        only_size: None,
        only_system: None,
        one: None,
        role: twoproc::Role::Both,
        handlers: None,
        address: None,
        width: 1,
        args: args.clone(),
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let secs = |v: String, name: &str| -> Result<Duration, String> {
            v.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("{name} takes a positive number of seconds, not {v:?}"))
        };
        match a.as_str() {
            "--quick" => {}
            "--reps" => {
                let v = value("--reps")?;
                o.reps = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("--reps takes a positive count, not {v:?}"))?;
            }
            "--secs" => o.window.measure = secs(value("--secs")?, "--secs")?,
            "--warmup" => o.window.warmup = secs(value("--warmup")?, "--warmup")?,
            "--json" => o.json = Some(value("--json")?),
            "--flavour" => {
                o.flavour = match value("--flavour")?.as_str() {
                    "current" => Flavour::Current,
                    "multi" => Flavour::Multi,
                    other => return Err(format!("--flavour is current or multi, not {other:?}")),
                }
            }
            "--transport" => o.transports.push(match value("--transport")?.as_str() {
                "quic" => Transport::Quic,
                "unix" => Transport::Unix,
                "inproc" => Transport::Inproc,
                other => {
                    return Err(format!(
                        "--transport is quic, unix or inproc, not {other:?}"
                    ))
                }
            }),
            "--no-flavour-table" => o.flavour_table = false,
            "--bench" => {
                o.only_bench = Some(match value("--bench")?.as_str() {
                    "push_pull" => Bench::PushPull,
                    "req_rep" => Bench::ReqRep,
                    "flavour" => Bench::Flavour,
                    "pub_sub" => Bench::PubSub,
                    other => {
                        return Err(format!(
                            "--bench is push_pull, req_rep, flavour or pub_sub, not {other:?}"
                        ))
                    }
                })
            }
            "--width" => {
                let v = value("--width")?;
                o.width = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("--width takes a positive count, not {v:?}"))?;
            }
            "--size" => {
                let v = value("--size")?;
                o.only_size = Some(
                    v.parse()
                        .map_err(|_| format!("--size takes bytes, not {v:?}"))?,
                );
            }
            "--system" => {
                let v = value("--system")?;
                match v.as_str() {
                    "weida" => o.only_system = Some(System::Weida),
                    "substrate" => o.only_system = Some(System::Substrate),
                    "quinn-long" => o.one = Some(one::Subject::QuinnLong),
                    "tcp" => o.one = Some(one::Subject::Tcp),
                    other => {
                        return Err(format!(
                            "--system is weida, substrate, quinn-long or tcp, not {other:?}"
                        ))
                    }
                }
            }
            "--one" => {}
            "--role" => {
                o.role = match value("--role")?.as_str() {
                    "both" => twoproc::Role::Both,
                    "bind" => twoproc::Role::Bind,
                    "dial" => twoproc::Role::Dial,
                    other => return Err(format!("--role is both, bind or dial, not {other:?}")),
                }
            }
            "--address" => o.address = Some(value("--address")?),
            "--handlers" => {
                let v = value("--handlers")?;
                o.handlers = Some(
                    v.parse()
                        .ok()
                        .filter(|&n: &u32| n >= 1)
                        .ok_or_else(|| format!("--handlers takes a count from 1, not {v:?}"))?,
                );
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if (o.role == twoproc::Role::Dial) != o.address.is_some() {
        return Err("--address goes with --role dial, and only with it".into());
    }
    if o.handlers.is_some() && o.role != twoproc::Role::Bind {
        return Err("--handlers is for --one --bench push_pull --role bind only".into());
    }
    if o.role != twoproc::Role::Both && !args_have(&o.args, "--one") {
        return Err("--role is for --one only".into());
    }
    if args_have(&o.args, "--one") {
        o.one = Some(one::subject(&o)?);
        if !args_have(&o.args, "--reps") {
            o.reps = 1;
        }
    } else if o.one.is_some() {
        return Err("--system quinn-long and tcp are for --one only".into());
    }
    if o.transports.is_empty() {
        o.transports = Transport::ALL.to_vec();
    }
    Ok(o)
}

fn args_have(args: &[String], flag: &str) -> bool {
    args.iter().any(|a| a == flag)
}

/// Runs one measurement on a fresh tokio runtime of `flavour`, so no task or socket of one
/// measurement outlives it into the next.
pub(crate) fn run_on<T>(flavour: Flavour, f: impl Future<Output = BoxResult<T>>) -> BoxResult<T> {
    let rt = match flavour {
        Flavour::Current => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        Flavour::Multi => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?,
    };
    let r = rt.block_on(f);
    rt.shutdown_timeout(Duration::from_millis(200));
    r
}

/// One planned measurement.
#[derive(Debug, Clone, Copy)]
struct Case {
    bench: Bench,
    transport: Transport,
    size: usize,
    flavour: Flavour,
}

fn plan(o: &Options) -> Vec<Case> {
    let mut cases = Vec::new();
    for &transport in &o.transports {
        for size in SIZES {
            cases.push(Case {
                bench: Bench::PushPull,
                transport,
                size,
                flavour: o.flavour,
            });
        }
    }
    for &transport in &o.transports {
        cases.push(Case {
            bench: Bench::ReqRep,
            transport,
            size: REQ_SIZE,
            flavour: o.flavour,
        });
    }
    if o.flavour_table && o.transports.contains(&Transport::Quic) {
        for flavour in [Flavour::Current, Flavour::Multi] {
            for size in FLAVOUR_SIZES {
                cases.push(Case {
                    bench: Bench::Flavour,
                    transport: Transport::Quic,
                    size,
                    flavour,
                });
            }
        }
    }
    cases.retain(|c| {
        !matches!(o.only_bench, Some(b) if b != c.bench)
            && !matches!(o.only_size, Some(n) if n != c.size)
    });
    cases
}

fn measure(c: Case, system: System, w: Window) -> Result<Outcome, String> {
    let r = match c.bench {
        Bench::PubSub => Err("pub_sub runs with --one only".into()),
        Bench::PushPull | Bench::Flavour => {
            run_on(c.flavour, cases::push_pull(c.transport, system, c.size, w)).map(Outcome::Rate)
        }
        Bench::ReqRep => {
            run_on(c.flavour, cases::req_rep(c.transport, system, c.size, w)).map(Outcome::Latency)
        }
    };
    r.map_err(|e| e.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--pubsub-memory") {
        let n = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(256);
        fanout::memory_probe(n);
    }
    if args.get(1).map(String::as_str) == Some("--pubsub-width") {
        // The paced fan-out row of one width, alone (for profiling): `--pubsub-width N SECS`.
        let n = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(256);
        let secs = args.get(3).and_then(|v| v.parse().ok()).unwrap_or(2.0);
        fanout::width_probe(n, secs);
    }
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("weida-bench: {e}\n");
            }
            eprintln!("{USAGE}");
            std::process::exit(if e.is_empty() { 0 } else { 2 });
        }
    };
    if let Some(subject) = o.one {
        std::process::exit(one::run(&o, subject));
    }
    let machine = report::Machine::probe();
    print!("{}", report::header(&o, &machine));

    let cases = plan(&o);
    let systems = if o.only_system.is_some() { 1 } else { 2 };
    let total = cases.len() * systems * o.reps;
    let began = Instant::now();
    let mut records = Vec::with_capacity(total);
    for rep in 0..o.reps {
        for &c in &cases {
            // Interleaved: weida, then its substrate, then the next case; repetition after
            // repetition, so drift on a shared machine hits both alike.
            for system in [System::Weida, System::Substrate] {
                if o.only_system.is_some_and(|s| s != system) {
                    continue;
                }
                let outcome = measure(c, system, o.window);
                let r = Record {
                    bench: c.bench,
                    transport: c.transport,
                    size: c.size,
                    system,
                    flavour: c.flavour,
                    rep,
                    outcome,
                };
                eprintln!(
                    "[{:>3}/{total} {:>5.1}s] rep {} {}",
                    records.len() + 1,
                    began.elapsed().as_secs_f64(),
                    rep + 1,
                    report::progress_line(&r)
                );
                records.push(r);
            }
        }
    }
    let elapsed = began.elapsed();
    let tables = report::Tables::build(&o, &records);
    print!("{}", tables.markdown(&o));
    let mut pubsub_failed = false;
    if o.only_bench.is_none() {
        print!("{}", filters::table(o.reps.max(3)));
        if o.transports.contains(&Transport::Quic) {
            match fanout::table(o.reps, o.window, o.quick) {
                Ok(t) => print!("{t}"),
                Err(e) => {
                    eprintln!("weida-bench: Pub/Sub table failed: {e}");
                    pubsub_failed = true;
                }
            }
        }
    }
    println!(
        "\nTotal measuring time {:.0} s; load average at end {}.",
        elapsed.as_secs_f64(),
        report::Machine::probe().loadavg
    );
    if let Some(path) = &o.json {
        let doc = report::json(&o, &machine, &records, &tables, elapsed);
        match std::fs::write(
            path,
            serde_json::to_string_pretty(&doc).expect("serializable"),
        ) {
            Ok(()) => eprintln!("wrote {path}"),
            Err(e) => {
                eprintln!("weida-bench: cannot write {path}: {e}");
                std::process::exit(1);
            }
        }
    }
    if pubsub_failed || records.iter().any(|r| r.outcome.is_err()) {
        eprintln!("weida-bench: some measurements failed (see the tables)");
        std::process::exit(1);
    }
}
