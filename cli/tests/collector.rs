//! Pub/Sub the other way round (docs/PATTERNS.md §4.4), as separate processes: `weida sub
//! --bind` is a collector, and `weida pub --connect` processes feed it. Nothing sleeps to
//! synchronize: the collector is ready at its READY line, each publisher exits once the
//! collector has taken what it sent (its linger ends in a drain), and the collector exits by
//! itself (`--count`).

mod common;

use common::{json, weida, Documented, Served};
use predicates::str::contains;

/// A collector bound at `url`, started with `args` after it; ready once bound with its
/// filters.
fn collector(url: &str, args: &[&str]) -> Served {
    let mut all = vec!["sub", "--bind", url];
    all.extend_from_slice(args);
    Served::start(&all)
}

/// `weida pub --connect ADDRESS` with `args` after it.
fn feed(address: &str, args: &[&str]) -> assert_cmd::Command {
    let mut c = weida();
    c.args(["pub", "--connect", address]).args(args);
    c
}

#[test]
fn a_collector_prints_what_its_filters_select_from_two_publishers_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let unix = format!("weida+unix://{}//logs", dir.path().join("c.sock").display());
    for url in ["weida://127.0.0.1:0/logs", unix.as_str()] {
        let mut c = collector(url, &["--count", "2", "logs.#"]);
        // The first publisher's metrics message reaches the collector, and no filter there
        // selects it.
        feed(&c.address, &["--keyed"])
            .write_stdin("metrics.cpu 42\nlogs.web.info hello\n")
            .assert()
            .success()
            .stdout("")
            .stderr(contains(
                "published 2 messages, 2 copies queued; none dropped",
            ));
        assert_eq!(
            c.next_line().as_deref(),
            Some("logs.web.info\thello"),
            "{url}"
        );
        // The first publisher exited once the collector had taken its copies, so the
        // metrics message is received (and discarded) before the second publisher's.
        feed(&c.address, &["logs.db.error", "world"])
            .assert()
            .success()
            .stderr(contains("published 1 message, 1 copy queued; none dropped"));
        assert_eq!(
            c.next_line().as_deref(),
            Some("logs.db.error\tworld"),
            "{url}"
        );
        assert_eq!(c.next_line(), None, "{url}: --count 2 ends it");
        let status = c.wait();
        assert!(status.success(), "{url}: {status}: {}", c.stderr());
        assert!(
            c.stderr()
                .contains("discarded 1 message that no filter selected"),
            "{url}: {}",
            c.stderr()
        );
    }
}

#[test]
fn a_collector_numbers_each_publisher_and_sees_its_identity() {
    let dir = tempfile::tempdir().unwrap();
    let id = dir.path().join("id");
    let made = weida().args(["id", "new"]).arg(&id).assert().success();
    let fingerprint = String::from_utf8(made.get_output().stdout.clone()).unwrap();
    let c = collector(
        "weida://127.0.0.1:0/logs",
        &[
            "--count",
            "2",
            "--ordering",
            "detect",
            "--format",
            "json",
            "logs.#",
        ],
    );
    feed(&c.address, &["logs.a", "x", "y", "--identity"])
        .arg(&id)
        .assert()
        .success();
    let (lines, status) = c.finish();
    assert!(status.success(), "{status}");
    let mut got: Vec<(u64, String)> = lines
        .iter()
        .map(|l| {
            let v = json(l);
            assert_eq!(v["gap"], 0, "{l}");
            assert_eq!(v["topic"], "logs.a", "{l}");
            assert_eq!(v["path"], "/logs", "{l}");
            assert_eq!(v["peer"]["fingerprint"], fingerprint.trim(), "{l}");
            (
                v["sequence"].as_u64().unwrap(),
                v["body"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(got, [(1, "x".into()), (2, "y".into())]);
}

#[test]
fn pub_connect_where_nothing_listens_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let url = format!("weida+unix://{}//logs", sock.display());
    let out = feed(&url, &["logs.a", "x"])
        .assert()
        .documented(5)
        .get_output()
        .stderr
        .clone();
    let stderr = String::from_utf8(out).unwrap();
    assert!(
        stderr.contains(&format!("while connecting to {url}")),
        "{stderr}"
    );
    // Nothing was published: there is no summary to print.
    assert!(!stderr.contains("published"), "{stderr}");
}

#[test]
fn pub_connect_to_a_path_that_is_no_collector_is_refused() {
    let rep = Served::start(&["rep", "--echo", "weida://127.0.0.1:0/jobs"]);
    // A replier's path takes no one-way transfer.
    feed(&rep.address, &["logs.a", "x"]).assert().documented(10);
    feed(&rep.at("/nothing"), &["logs.a", "x"])
        .assert()
        .documented(4);
}

#[test]
fn options_that_make_no_sense_on_the_other_side_are_refused() {
    let pin = format!("sha256:{}", "0".repeat(64));
    for refused in [
        vec!["--trust-pin", &pin],
        vec!["--timeout", "1"],
        vec!["--later"],
        vec!["--reconnect", "never"],
        vec!["--events"],
        // A collector numbers each publisher's copies (detect) and cannot reassemble them.
        vec!["--ordering", "reassemble"],
    ] {
        weida()
            .args(["sub", "--bind", "weida://127.0.0.1:0/logs", "logs.#"])
            .args(&refused)
            .assert()
            .documented(2);
    }
    for refused in [
        vec!["--wait-subscribers", "1"],
        vec!["--ready"],
        vec!["--whole"],
    ] {
        feed("weida://127.0.0.1:9/logs", &["logs.a"])
            .args(&refused)
            .assert()
            .documented(2);
    }
    // --trust-pin is for dialling.
    weida()
        .args([
            "pub",
            "weida://127.0.0.1:0/logs",
            "logs.a",
            "x",
            "--trust-pin",
            &pin,
        ])
        .assert()
        .documented(2);
}

#[test]
fn sigint_stops_a_collector_with_status_0_and_its_count() {
    let mut c = collector("weida://127.0.0.1:0/logs", &["logs.#"]);
    c.signal("INT");
    let status = c.wait();
    assert_eq!(status.code(), Some(0), "{}", c.stderr());
    assert!(
        c.stderr()
            .contains("discarded 0 messages that no filter selected"),
        "{}",
        c.stderr()
    );
}
