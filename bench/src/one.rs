//! `--one`: a single case, for the benchmark suite (bench/suite/run.py) that runs every system
//! as a worker process. No header and no tables: one JSON line per repetition on stdout, the
//! same fields as the records of `--json`, and the exit status says whether every rep worked.
//!
//! ```text
//! weida-bench --one --bench push_pull --transport quic --size 64 --system weida --secs 1
//! weida-bench --one --bench req_rep --system tcp
//! ```

use serde_json::{json, Value};

use crate::cases::{self, System, Transport};
use crate::twoproc::{self, Role};
use crate::{Bench, Options, Outcome};

/// What the single case measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// weida over `--transport`.
    Weida(Transport),
    /// The substrate of `--transport`, as in the main tables (raw quinn with a stream per
    /// message, a framed `UnixStream`, a tokio mpsc).
    Substrate(Transport),
    /// Raw quinn with one long-lived stream of u32-length-prefixed frames (a uni stream for
    /// Push/Pull, a bidi stream for Req/Rep ping-pong).
    QuinnLong,
    /// One loopback TCP connection (Nagle off) of u32-length-prefixed frames.
    Tcp,
}

impl Subject {
    /// The name the suite files the row under.
    fn key(self) -> &'static str {
        match self {
            Self::Weida(_) => "weida",
            Self::Substrate(Transport::Quic) => "quinn-stream",
            Self::Substrate(Transport::Unix) => "framed-unix",
            Self::Substrate(Transport::Inproc) => "tokio-mpsc",
            Self::QuinnLong => "quinn-long",
            Self::Tcp => "framed-tcp",
        }
    }

    fn transport(self) -> &'static str {
        match self {
            Self::Weida(t) | Self::Substrate(t) => match t {
                Transport::Quic => "quic",
                Transport::Unix => "unix",
                Transport::Inproc => "inproc",
            },
            Self::QuinnLong => "quic",
            Self::Tcp => "tcp",
        }
    }
}

/// The subject named by `--system` and `--transport`, checked for `--one`.
pub(crate) fn subject(o: &Options) -> Result<Subject, String> {
    if !matches!(
        o.only_bench,
        Some(Bench::PushPull | Bench::ReqRep | Bench::PubSub)
    ) {
        return Err("--one needs --bench push_pull, req_rep or pub_sub".into());
    }
    if o.only_bench == Some(Bench::PubSub) && !matches!(o.only_system, Some(System::Weida)) {
        return Err("--bench pub_sub has weida rows only".into());
    }
    if o.only_bench == Some(Bench::PushPull) && o.only_size.is_none() {
        return Err("--one --bench push_pull needs --size".into());
    }
    if o.transports.len() > 1 {
        return Err("--one takes at most one --transport".into());
    }
    let t = o.transports.first().copied();
    match (o.one, o.only_system) {
        (Some(Subject::QuinnLong), _) if matches!(t, None | Some(Transport::Quic)) => {
            Ok(Subject::QuinnLong)
        }
        (Some(Subject::Tcp), _) if t.is_none() => Ok(Subject::Tcp),
        (Some(s), _) => Err(format!(
            "--system {} takes no --transport other than its own",
            s.key()
        )),
        (None, Some(System::Substrate)) => Ok(Subject::Substrate(t.unwrap_or(Transport::Quic))),
        (None, Some(System::Weida)) => Ok(Subject::Weida(t.unwrap_or(Transport::Quic))),
        (None, None) => Err("--one needs --system".into()),
    }
}

fn measure(o: &Options, s: Subject, bench: Bench, size: usize) -> Result<Outcome, String> {
    let (w, f) = (o.window, o.flavour);
    if o.role != Role::Both {
        // Whatever happens to run.py, this process ends within its bound.
        let limit = twoproc::lifetime(w) + std::time::Duration::from_secs(2);
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            std::process::exit(3);
        });
        let address = o.address.as_deref().unwrap_or_default();
        return crate::run_on(
            f,
            twoproc::run(s, o.role, address, bench, size, w, o.handlers),
        )
        .map_err(|e| e.to_string());
    }
    let r = match (bench, s) {
        (Bench::PubSub, Subject::Weida(t)) => {
            crate::run_on(f, cases::pub_sub(t, o.width, size, w)).map(Outcome::Rate)
        }
        (Bench::PubSub, _) => return Err("--bench pub_sub has weida rows only".into()),
        (Bench::ReqRep, Subject::Weida(t)) => {
            crate::run_on(f, cases::req_rep(t, System::Weida, size, w)).map(Outcome::Latency)
        }
        (Bench::ReqRep, Subject::Substrate(t)) => {
            crate::run_on(f, cases::req_rep(t, System::Substrate, size, w)).map(Outcome::Latency)
        }
        (Bench::ReqRep, Subject::QuinnLong) => {
            crate::run_on(f, cases::quinn_long_reqrep(size, w)).map(Outcome::Latency)
        }
        (Bench::ReqRep, Subject::Tcp) => {
            crate::run_on(f, cases::tcp_reqrep(size, w)).map(Outcome::Latency)
        }
        (_, Subject::Weida(t)) => {
            crate::run_on(f, cases::push_pull(t, System::Weida, size, w)).map(Outcome::Rate)
        }
        (_, Subject::Substrate(t)) => {
            crate::run_on(f, cases::push_pull(t, System::Substrate, size, w)).map(Outcome::Rate)
        }
        (_, Subject::QuinnLong) => {
            crate::run_on(f, cases::quinn_long_push(size, w)).map(Outcome::Rate)
        }
        (_, Subject::Tcp) => crate::run_on(f, cases::tcp_push(size, w)).map(Outcome::Rate),
    };
    r.map_err(|e| e.to_string())
}

/// Runs `--one` and returns the exit status.
pub(crate) fn run(o: &Options, s: Subject) -> i32 {
    let bench = o.only_bench.unwrap_or(Bench::PushPull);
    let size = o.only_size.unwrap_or(crate::REQ_SIZE);
    let mut status = 0;
    for rep in 0..o.reps {
        let mut v = json!({
            "system": s.key(),
            "language": "rust",
            "pattern": match bench {
                Bench::ReqRep => "req_rep",
                Bench::PubSub => "pub_sub",
                _ => "push_pull",
            },
            "width": if bench == Bench::PubSub { o.width } else { 1 },
            "transport": s.transport(),
            "size": size,
            "rep": rep,
            "secs": o.window.measure.as_secs_f64(),
            "warmup": o.window.warmup.as_secs_f64(),
            "role": match o.role { Role::Both => "both", Role::Bind => "bind", Role::Dial => "dial" },
            "flavour": match o.flavour { crate::Flavour::Current => "current", crate::Flavour::Multi => "multi" },
        });
        let extra = match measure(o, s, bench, size) {
            Ok(Outcome::Rate(x)) => json!({
                "messages": x.messages,
                "seconds": x.elapsed.as_secs_f64(),
                (if bench == Bench::PubSub { "copies_per_s" } else { "msgs_per_s" }): x.per_second(),
                "mb_per_s": x.per_second() * size as f64 / 1e6,
            }),
            Ok(Outcome::Latency(l)) => {
                json!({"p50_us": l.p50_us, "p99_us": l.p99_us, "samples": l.samples})
            }
            Err(e) => {
                status = 1;
                json!({"error": e})
            }
        };
        if let (Value::Object(a), Value::Object(b)) = (&mut v, extra) {
            a.extend(b);
        }
        println!("{v}");
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn one_names_each_subject() {
        let s = |a: &str| crate::parse(args(a)).map(|o| o.one);
        assert_eq!(
            s("--one --bench push_pull --size 64 --system weida --transport unix"),
            Ok(Some(Subject::Weida(Transport::Unix)))
        );
        assert_eq!(
            s("--one --bench req_rep --system substrate"),
            Ok(Some(Subject::Substrate(Transport::Quic)))
        );
        assert_eq!(
            s("--one --bench req_rep --system quinn-long"),
            Ok(Some(Subject::QuinnLong))
        );
        assert_eq!(
            s("--one --bench push_pull --size 1024 --system tcp"),
            Ok(Some(Subject::Tcp))
        );
        assert!(
            s("--one --bench push_pull --system tcp").is_err(),
            "no size"
        );
        assert!(s("--one --bench req_rep --system tcp --transport unix").is_err());
        assert!(s("--one --bench flavour --system weida").is_err());
        assert!(s("--system tcp").is_err(), "tcp only with --one");
    }

    #[test]
    fn a_role_needs_one_and_dial_needs_an_address() {
        let p = |a: &str| crate::parse(args(a)).map(|o| (o.role, o.address));
        assert_eq!(
            p("--one --bench req_rep --system tcp --role bind"),
            Ok((Role::Bind, None))
        );
        assert_eq!(
            p("--one --bench req_rep --system tcp --role dial --address 127.0.0.1:9"),
            Ok((Role::Dial, Some("127.0.0.1:9".to_string())))
        );
        assert!(p("--one --bench req_rep --system tcp --role dial").is_err());
        assert!(p("--one --bench req_rep --system tcp --address 127.0.0.1:9").is_err());
        assert!(p("--bench req_rep --role bind").is_err());
    }
}
