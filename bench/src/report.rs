//! The report: the header (machine and command), the markdown tables, and the JSON document.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cases::{System, Transport};
use crate::{Bench, Flavour, Options, Outcome, Record};

/// The machine the numbers come from.
pub(crate) struct Machine {
    pub(crate) nproc: usize,
    pub(crate) kernel: String,
    pub(crate) rustc: &'static str,
    pub(crate) cpu: String,
    pub(crate) loadavg: String,
}

impl Machine {
    pub(crate) fn probe() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Self {
            nproc: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            kernel: format!(
                "{} {}",
                std::env::consts::OS,
                read("/proc/sys/kernel/osrelease").trim()
            ),
            rustc: env!("WEIDA_BENCH_RUSTC"),
            cpu: read("/proc/cpuinfo")
                .lines()
                .find_map(|l| {
                    l.strip_prefix("model name")
                        .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
                })
                .unwrap_or_else(|| "unknown".into()),
            loadavg: read("/proc/loadavg")
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// The exact command, as typed through cargo.
pub(crate) fn command(o: &Options) -> String {
    let mut c = "cargo run --release -p weida-bench --".to_string();
    for a in &o.args {
        c.push(' ');
        c.push_str(a);
    }
    c
}

pub(crate) fn header(o: &Options, m: &Machine) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# weida-bench\n");
    let _ = writeln!(s, "- command: `{}`", command(o));
    let _ = writeln!(
        s,
        "- machine: nproc {}, {}, {}, cpu {}, load average at start {}",
        m.nproc, m.kernel, m.rustc, m.cpu, m.loadavg
    );
    let _ = writeln!(
        s,
        "- settings: {} rep{} per measurement, {:.2} s window after {:.2} s warmup; main tables on a {} tokio runtime{}",
        o.reps,
        if o.reps == 1 { "" } else { "s" },
        o.window.measure.as_secs_f64(),
        o.window.warmup.as_secs_f64(),
        o.flavour.name(),
        if o.quick { " (--quick: a smoke run, not numbers to quote)" } else { "" }
    );
    let _ = writeln!(
        s,
        "- cells: median over the reps [min–max]; a ratio is weida / substrate, the median of the per-rep paired ratios [min–max]\n"
    );
    s
}

fn size_name(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1024 && n % 1024 == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.2}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn fixed(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A ratio with two significant digits below 0.1 (weida in process is far below its channel).
fn ratio(v: f64) -> String {
    if v >= 0.1 {
        format!("{v:.2}")
    } else if v >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

/// Median, min and max of the values that exist.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) n: usize,
}

impl Summary {
    pub(crate) fn of(values: &[Option<f64>]) -> Option<Self> {
        let mut v: Vec<f64> = values
            .iter()
            .flatten()
            .copied()
            .filter(|x| x.is_finite())
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let mid = v.len() / 2;
        let median = if v.len() % 2 == 1 {
            v[mid]
        } else {
            (v[mid - 1] + v[mid]) / 2.0
        };
        Some(Self {
            median,
            min: v[0],
            max: v[v.len() - 1],
            n: v.len(),
        })
    }

    fn cell(s: Option<Self>, f: fn(f64) -> String) -> (String, String) {
        match s {
            Some(s) => (f(s.median), format!("{}–{}", f(s.min), f(s.max))),
            None => ("failed".into(), "".into()),
        }
    }

    fn ratio_cell(s: Option<Self>) -> String {
        match s {
            Some(s) => format!("{} [{}–{}]", ratio(s.median), ratio(s.min), ratio(s.max)),
            None => "–".into(),
        }
    }

    fn to_json(s: Option<Self>) -> Value {
        match s {
            Some(s) => json!({"median": s.median, "min": s.min, "max": s.max, "reps": s.n}),
            None => Value::Null,
        }
    }
}

/// What a figure is read from a record.
type Pick = fn(&Outcome) -> Option<f64>;

fn rate(o: &Outcome) -> Option<f64> {
    match o {
        Outcome::Rate(r) => Some(r.per_second()),
        Outcome::Latency(_) => None,
    }
}

fn p50(o: &Outcome) -> Option<f64> {
    match o {
        Outcome::Latency(l) => Some(l.p50_us),
        Outcome::Rate(_) => None,
    }
}

fn p99(o: &Outcome) -> Option<f64> {
    match o {
        Outcome::Latency(l) => Some(l.p99_us),
        Outcome::Rate(_) => None,
    }
}

/// Which measurements a series takes.
#[derive(Debug, Clone, Copy)]
struct Sel {
    bench: Bench,
    transport: Transport,
    size: usize,
    flavour: Flavour,
}

/// Values per rep (None where a measurement failed) of `system`'s records matching `sel`.
fn series(
    records: &[Record],
    reps: usize,
    sel: Sel,
    system: System,
    pick: Pick,
) -> Vec<Option<f64>> {
    let mut v = vec![None; reps];
    for r in records {
        if r.bench == sel.bench
            && r.transport == sel.transport
            && r.size == sel.size
            && r.flavour == sel.flavour
            && r.system == system
        {
            v[r.rep] = r.outcome.as_ref().ok().and_then(pick);
        }
    }
    v
}

/// Whether anything was measured for `sel` (filters can leave cases out).
fn ran(records: &[Record], sel: Sel) -> bool {
    records.iter().any(|r| {
        r.bench == sel.bench
            && r.transport == sel.transport
            && r.size == sel.size
            && r.flavour == sel.flavour
    })
}

/// Per-rep ratios a / b, paired by repetition.
fn paired(a: &[Option<f64>], b: &[Option<f64>]) -> Vec<Option<f64>> {
    a.iter()
        .zip(b)
        .map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) if *b > 0.0 => Some(a / b),
            _ => None,
        })
        .collect()
}

struct PushRow {
    transport: Transport,
    size: usize,
    system: System,
    rate: Option<Summary>,
    ratio: Option<Summary>,
}

struct LatRow {
    transport: Transport,
    system: System,
    p50: Option<Summary>,
    p99: Option<Summary>,
    ratio_p50: Option<Summary>,
    ratio_p99: Option<Summary>,
}

struct FlavourRow {
    system: System,
    size: usize,
    current: Option<Summary>,
    multi: Option<Summary>,
    /// weida / quinn on each flavour (weida rows only).
    vs_current: Option<Summary>,
    vs_multi: Option<Summary>,
    multi_over_current: Option<Summary>,
}

/// The summarized tables.
pub(crate) struct Tables {
    push: Vec<PushRow>,
    lat: Vec<LatRow>,
    flavour: Vec<FlavourRow>,
}

impl Tables {
    pub(crate) fn build(o: &Options, records: &[Record]) -> Self {
        let reps = o.reps;
        let mut push = Vec::new();
        for &t in &o.transports {
            for size in crate::SIZES {
                let sel = Sel {
                    bench: Bench::PushPull,
                    transport: t,
                    size,
                    flavour: o.flavour,
                };
                if !ran(records, sel) {
                    continue;
                }
                let w = series(records, reps, sel, System::Weida, rate);
                let s = series(records, reps, sel, System::Substrate, rate);
                push.push(PushRow {
                    transport: t,
                    size,
                    system: System::Weida,
                    rate: Summary::of(&w),
                    ratio: Summary::of(&paired(&w, &s)),
                });
                push.push(PushRow {
                    transport: t,
                    size,
                    system: System::Substrate,
                    rate: Summary::of(&s),
                    ratio: None,
                });
            }
        }
        let mut lat = Vec::new();
        for &t in &o.transports {
            let sel = Sel {
                bench: Bench::ReqRep,
                transport: t,
                size: crate::REQ_SIZE,
                flavour: o.flavour,
            };
            if !ran(records, sel) {
                continue;
            }
            let get = |sys, pick| series(records, reps, sel, sys, pick);
            let (w50, w99) = (get(System::Weida, p50), get(System::Weida, p99));
            let (s50, s99) = (get(System::Substrate, p50), get(System::Substrate, p99));
            lat.push(LatRow {
                transport: t,
                system: System::Weida,
                p50: Summary::of(&w50),
                p99: Summary::of(&w99),
                ratio_p50: Summary::of(&paired(&w50, &s50)),
                ratio_p99: Summary::of(&paired(&w99, &s99)),
            });
            lat.push(LatRow {
                transport: t,
                system: System::Substrate,
                p50: Summary::of(&s50),
                p99: Summary::of(&s99),
                ratio_p50: None,
                ratio_p99: None,
            });
        }
        let mut flavour = Vec::new();
        if o.flavour_table && o.transports.contains(&Transport::Quic) {
            for system in [System::Weida, System::Substrate] {
                for size in crate::FLAVOUR_SIZES {
                    let get = |sys, flavour| {
                        let sel = Sel {
                            bench: Bench::Flavour,
                            transport: Transport::Quic,
                            size,
                            flavour,
                        };
                        series(records, reps, sel, sys, rate)
                    };
                    let sel = Sel {
                        bench: Bench::Flavour,
                        transport: Transport::Quic,
                        size,
                        flavour: Flavour::Current,
                    };
                    if !ran(records, sel) {
                        continue;
                    }
                    let cur = get(system, Flavour::Current);
                    let multi = get(system, Flavour::Multi);
                    let weida_only = |f| {
                        (system == System::Weida)
                            .then(|| {
                                Summary::of(&paired(
                                    &get(System::Weida, f),
                                    &get(System::Substrate, f),
                                ))
                            })
                            .flatten()
                    };
                    flavour.push(FlavourRow {
                        system,
                        size,
                        current: Summary::of(&cur),
                        multi: Summary::of(&multi),
                        vs_current: weida_only(Flavour::Current),
                        vs_multi: weida_only(Flavour::Multi),
                        multi_over_current: Summary::of(&paired(&multi, &cur)),
                    });
                }
            }
        }
        Self { push, lat, flavour }
    }

    pub(crate) fn markdown(&self, o: &Options) -> String {
        let mut s = String::new();
        let name = |t: Transport, sys: System, reqrep: bool| match sys {
            System::Weida => "weida".to_string(),
            System::Substrate => t.substrate(reqrep).to_string(),
        };
        if !self.push.is_empty() {
            let _ = writeln!(
                s,
                "## Push/Pull throughput: one pusher → one puller, pipelined ({})\n",
                o.flavour.name()
            );
            let _ = writeln!(
                s,
                "| transport | size | system | msgs/s | msgs/s min–max | MB/s | weida / substrate (msgs/s) |"
            );
            let _ = writeln!(s, "|---|---:|---|---:|---:|---:|---:|");
            for r in &self.push {
                let (m, range) = Summary::cell(r.rate, si);
                let mb = r
                    .rate
                    .map(|x| fixed(x.median * r.size as f64 / 1e6))
                    .unwrap_or_else(|| "–".into());
                let ratio = if r.system == System::Weida {
                    Summary::ratio_cell(r.ratio)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {m} | {range} | {mb} | {ratio} |",
                    r.transport.name(),
                    size_name(r.size),
                    name(r.transport, r.system, false)
                );
            }
        }
        if !self.lat.is_empty() {
            let _ = writeln!(
                s,
                "\n## Req/Rep latency: {}, one request outstanding ({})\n",
                size_name(crate::REQ_SIZE),
                o.flavour.name()
            );
            let _ = writeln!(
                s,
                "| transport | system | p50 µs | p50 min–max | p99 µs | p99 min–max | weida / substrate p50 | weida / substrate p99 |"
            );
            let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|");
            for r in &self.lat {
                let (a, ar) = Summary::cell(r.p50, fixed);
                let (b, br) = Summary::cell(r.p99, fixed);
                let (x, y) = if r.system == System::Weida {
                    (
                        Summary::ratio_cell(r.ratio_p50),
                        Summary::ratio_cell(r.ratio_p99),
                    )
                } else {
                    (String::new(), String::new())
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {a} | {ar} | {b} | {br} | {x} | {y} |",
                    r.transport.name(),
                    name(r.transport, r.system, true)
                );
            }
        }
        if !self.flavour.is_empty() {
            let _ = writeln!(
                s,
                "\n## Runtime flavour: Push/Pull over QUIC, msgs/s, current-thread vs multi-thread (2 workers)\n"
            );
            let _ = writeln!(
                s,
                "| system | size | current-thread | min–max | weida / quinn | multi-thread ×2 | min–max | weida / quinn | multi / current |"
            );
            let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
            for r in &self.flavour {
                let (c, cr) = Summary::cell(r.current, si);
                let (m, mr) = Summary::cell(r.multi, si);
                let (vc, vm) = if r.system == System::Weida {
                    (
                        Summary::ratio_cell(r.vs_current),
                        Summary::ratio_cell(r.vs_multi),
                    )
                } else {
                    (String::new(), String::new())
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {c} | {cr} | {vc} | {m} | {mr} | {vm} | {} |",
                    name(Transport::Quic, r.system, false),
                    size_name(r.size),
                    Summary::ratio_cell(r.multi_over_current)
                );
            }
        }
        s
    }
}

fn system_key(s: System) -> &'static str {
    match s {
        System::Weida => "weida",
        System::Substrate => "substrate",
    }
}

fn bench_key(b: Bench) -> &'static str {
    match b {
        Bench::PushPull => "push_pull",
        Bench::ReqRep => "req_rep",
        Bench::Flavour => "flavour",
        Bench::PubSub => "pub_sub",
    }
}

/// The one-line summary of a measurement, for the progress log.
pub(crate) fn progress_line(r: &Record) -> String {
    let what = format!(
        "{} {} {} {} [{}]",
        bench_key(r.bench),
        r.transport.name(),
        size_name(r.size),
        match r.system {
            System::Weida => "weida".to_string(),
            System::Substrate => r.transport.substrate(r.bench == Bench::ReqRep).to_string(),
        },
        r.flavour.key()
    );
    match &r.outcome {
        Ok(Outcome::Rate(x)) => format!("{what}: {} msgs/s", si(x.per_second())),
        Ok(Outcome::Latency(l)) => format!("{what}: p50 {:.1} µs p99 {:.1} µs", l.p50_us, l.p99_us),
        Err(e) => format!("{what}: FAILED {e}"),
    }
}

pub(crate) fn json(
    o: &Options,
    m: &Machine,
    records: &[Record],
    t: &Tables,
    elapsed: Duration,
) -> Value {
    let recs: Vec<Value> = records
        .iter()
        .map(|r| {
            let mut v = json!({
                "bench": bench_key(r.bench),
                "transport": r.transport.name(),
                "size": r.size,
                "system": system_key(r.system),
                "substrate": r.transport.substrate(r.bench == Bench::ReqRep),
                "flavour": r.flavour.key(),
                "rep": r.rep,
            });
            let extra = match &r.outcome {
                Ok(Outcome::Rate(x)) => json!({
                    "messages": x.messages,
                    "seconds": x.elapsed.as_secs_f64(),
                    "msgs_per_s": x.per_second(),
                    "mb_per_s": x.per_second() * r.size as f64 / 1e6,
                }),
                Ok(Outcome::Latency(l)) => {
                    json!({"p50_us": l.p50_us, "p99_us": l.p99_us, "samples": l.samples})
                }
                Err(e) => json!({"error": e}),
            };
            if let (Value::Object(a), Value::Object(b)) = (&mut v, extra) {
                a.extend(b);
            }
            v
        })
        .collect();
    let push: Vec<Value> = t
        .push
        .iter()
        .map(|r| {
            json!({
                "transport": r.transport.name(), "size": r.size, "system": system_key(r.system),
                "msgs_per_s": Summary::to_json(r.rate), "weida_over_substrate": Summary::to_json(r.ratio),
            })
        })
        .collect();
    let lat: Vec<Value> = t
        .lat
        .iter()
        .map(|r| {
            json!({
                "transport": r.transport.name(), "system": system_key(r.system),
                "p50_us": Summary::to_json(r.p50), "p99_us": Summary::to_json(r.p99),
                "weida_over_substrate_p50": Summary::to_json(r.ratio_p50),
                "weida_over_substrate_p99": Summary::to_json(r.ratio_p99),
            })
        })
        .collect();
    let flavour: Vec<Value> = t
        .flavour
        .iter()
        .map(|r| {
            json!({
                "system": system_key(r.system), "size": r.size,
                "current_msgs_per_s": Summary::to_json(r.current), "multi_msgs_per_s": Summary::to_json(r.multi),
                "weida_over_quinn_current": Summary::to_json(r.vs_current),
                "weida_over_quinn_multi": Summary::to_json(r.vs_multi),
                "multi_over_current": Summary::to_json(r.multi_over_current),
            })
        })
        .collect();
    json!({
        "command": command(o),
        "machine": {"nproc": m.nproc, "kernel": m.kernel, "rustc": m.rustc, "cpu": m.cpu, "loadavg_at_start": m.loadavg},
        "settings": {
            "quick": o.quick, "reps": o.reps,
            "warmup_s": o.window.warmup.as_secs_f64(), "window_s": o.window.measure.as_secs_f64(),
            "flavour": o.flavour.key(),
        },
        "elapsed_s": elapsed.as_secs_f64(),
        "tables": {"push_pull": push, "req_rep": lat, "flavour": flavour},
        "records": recs,
    })
}
