//! Push/Pull the other way round (docs/PATTERNS.md §3.1), as separate processes: `weida push
//! --bind` binds a pusher and deals its input round-robin to the `weida pull --connect`
//! workers that dial it. Nothing sleeps to synchronize: the pusher is ready at its READY line,
//! a worker at its own (printed once its share is claimed), the pusher exits once every
//! message it dealt is held by its worker, and a worker run with `--reconnect never` exits by
//! itself once the pusher has closed.

mod common;

use std::io::Write;

use common::{as_documented, weida, Documented, Served};

/// A bound pusher at `url`, started with `args` after it; ready once bound.
fn ventilator(url: &str, args: &[&str]) -> Served {
    let mut all = vec!["push", "--bind", url];
    all.extend_from_slice(args);
    Served::start(&all)
}

/// A worker pulling from `address`, started with `args` after it, which exits once the
/// pusher has closed; ready once its share is claimed.
fn worker(address: &str, args: &[&str]) -> Served {
    let mut all = vec!["pull", "--connect", address, "--reconnect", "never"];
    all.extend_from_slice(args);
    Served::start(&all)
}

/// Every line `s` prints until it exits, and its exit status checked to be 0.
fn lines_until_exit(s: &mut Served, who: &str) -> Vec<String> {
    let mut lines = Vec::new();
    while let Some(l) = s.next_line() {
        lines.push(l);
    }
    let status = s.wait();
    assert!(status.success(), "{who}: {status}: {}", s.stderr());
    lines
}

fn jobs(range: std::ops::RangeInclusive<u32>) -> Vec<String> {
    range.map(|i| format!("job {i}")).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn two_workers_share_what_a_bound_pusher_sends_over_quic_and_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let unix = format!("weida+unix://{}//jobs", dir.path().join("v.sock").display());
    for url in ["weida://127.0.0.1:0/jobs", unix.as_str()] {
        let all = jobs(1..=6);
        let mut args = vec!["--wait-workers", "2"];
        args.extend(all.iter().map(String::as_str));
        let mut pusher = ventilator(url, &args);
        let mut a = worker(&pusher.address, &[]);
        let mut b = worker(&pusher.address, &[]);
        // Every receipt resolved: each message is held by the worker it was dealt to.
        lines_until_exit(&mut pusher, "the pusher");
        let at_a = lines_until_exit(&mut a, "worker a");
        let at_b = lines_until_exit(&mut b, "worker b");
        // Round-robin per message: three each, and together every message once.
        assert_eq!((at_a.len(), at_b.len()), (3, 3), "{url}: {at_a:?} {at_b:?}");
        assert_eq!(sorted([at_a, at_b].concat()), all, "{url}");
        for w in [&a, &b] {
            assert!(w.stderr().contains("the pusher closed"), "{}", w.stderr());
        }
    }
}

#[test]
fn a_worker_that_joins_after_the_first_messages_gets_its_share_from_then_on() {
    let (mut pusher, mut input) = Served::start_piped(&[
        "push",
        "--bind",
        "weida://127.0.0.1:0/jobs",
        "--wait-workers",
        "1",
    ]);
    let mut a = worker(&pusher.address, &[]);
    // The only worker gets the first messages, read from stdin as they come.
    input.write_all(b"job 1\njob 2\n").unwrap();
    input.flush().unwrap();
    let first = vec![a.next_line().unwrap(), a.next_line().unwrap()];
    assert_eq!(sorted(first), jobs(1..=2));
    // Its READY line says its share is claimed: the next message is dealt among two.
    let mut b = worker(&pusher.address, &[]);
    input.write_all(b"job 3\njob 4\njob 5\njob 6\n").unwrap();
    drop(input);
    lines_until_exit(&mut pusher, "the pusher");
    let at_a = lines_until_exit(&mut a, "worker a");
    let at_b = lines_until_exit(&mut b, "worker b");
    assert_eq!((at_a.len(), at_b.len()), (2, 2), "{at_a:?} {at_b:?}");
    assert_eq!(sorted([at_a, at_b].concat()), jobs(3..=6));
}

#[test]
fn push_bind_whole_streams_a_file_to_one_worker_byte_exactly() {
    let body = common::noise(1_500_000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blob.bin");
    std::fs::write(&file, &body).unwrap();
    let mut pusher = ventilator(
        "weida://127.0.0.1:0/blobs",
        &["--whole", "--file", file.to_str().unwrap()],
    );
    let w = Served::start(&[
        "pull",
        "--connect",
        &pusher.address,
        "--count",
        "1",
        "--format",
        "hex",
    ]);
    let (lines, status) = w.finish();
    assert!(status.success(), "{status}");
    assert_eq!(lines.len(), 1, "one message, not one per chunk");
    assert!(lines[0] == common::hex(&body), "the pulled body differs");
    assert!(pusher.wait().success(), "{}", pusher.stderr());
}

#[test]
fn a_message_a_worker_refuses_is_a_warning_and_the_rest_go_on_to_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jobs.txt");
    // Above the stream window, so the refusal is reported, never outrun by the receipt
    // (docs/PATTERNS.md §1.6).
    let big = "a".repeat(2 << 20);
    std::fs::write(&file, format!("{big}\nsmall\n")).unwrap();
    let mut pusher = ventilator(
        "weida://127.0.0.1:0/jobs",
        &["--wait-workers", "2", "--file", file.to_str().unwrap()],
    );
    // The first to claim a share gets the first message, which is above its --max-body.
    let mut picky = worker(&pusher.address, &["--max-body", "1000"]);
    let mut b = worker(&pusher.address, &[]);
    assert_eq!(pusher.wait().code(), Some(9), "{}", pusher.stderr());
    let stderr = pusher.stderr();
    as_documented(Some(9), &stderr);
    assert!(
        stderr.contains("warning: a message was not delivered to its worker"),
        "{stderr}"
    );
    assert!(stderr.contains("1 of 2 messages not delivered"), "{stderr}");
    assert_eq!(lines_until_exit(&mut b, "worker b"), ["small"]);
    assert!(lines_until_exit(&mut picky, "the picky worker").is_empty());
    assert!(
        picky
            .stderr()
            .contains("warning: a message could not be received"),
        "{}",
        picky.stderr()
    );
}

#[test]
fn a_worker_whose_pusher_closes_before_its_count_exits_with_status_5() {
    let mut pusher = ventilator("weida://127.0.0.1:0/jobs", &["--wait-workers", "1", "only"]);
    let mut w = worker(&pusher.address, &["--count", "2"]);
    assert_eq!(w.next_line().as_deref(), Some("only"));
    assert!(pusher.wait().success(), "{}", pusher.stderr());
    let status = w.wait();
    assert_eq!(status.code(), Some(5), "{}", w.stderr());
    as_documented(status.code(), &w.stderr());
    assert!(w.stderr().contains("(1 of 2)"), "{}", w.stderr());
}

#[test]
fn a_bound_pusher_no_worker_dials_gives_up_with_status_6() {
    for wait in [&["x"][..], &["--wait-workers", "1", "x"][..]] {
        let mut pusher = ventilator(
            "weida://127.0.0.1:0/jobs",
            &[&["--timeout", "0.3"], wait].concat(),
        );
        assert_eq!(pusher.wait().code(), Some(6), "{}", pusher.stderr());
        as_documented(Some(6), &pusher.stderr());
    }
}

#[test]
fn pull_connect_to_what_is_no_bound_pusher_is_refused() {
    let pull = Served::start(&["pull", "weida://127.0.0.1:0/jobs"]);
    // A puller's path takes no claim.
    weida()
        .args(["pull", "--connect", &pull.address])
        .assert()
        .documented(10);
    weida()
        .args(["pull", "--connect", &pull.at("/nothing")])
        .assert()
        .documented(4);
}

#[test]
fn options_that_make_no_sense_on_the_other_side_are_refused() {
    let pin = format!("sha256:{}", "0".repeat(64));
    // Dialling options, with a pusher that binds.
    for refused in [
        vec!["--trust-pin", &pin],
        vec!["--reconnect", "never"],
        vec!["--events"],
        vec!["--later"],
    ] {
        weida()
            .args(["push", "--bind", "weida://127.0.0.1:0/jobs", "x"])
            .args(&refused)
            .assert()
            .documented(2);
    }
    // A bound pusher's options, with one that dials.
    for refused in [vec!["--ready"], vec!["--wait-workers", "1"]] {
        weida()
            .args(["push", "weida://127.0.0.1:9/jobs", "x"])
            .args(&refused)
            .assert()
            .documented(2);
    }
    // Dialling options, with a puller that binds.
    for refused in [
        vec!["--trust-pin", &pin],
        vec!["--timeout", "1"],
        vec!["--reconnect", "never"],
        vec!["--events"],
        vec!["--later"],
    ] {
        weida()
            .args(["pull", "weida://127.0.0.1:0/jobs"])
            .args(&refused)
            .assert()
            .documented(2);
    }
}
