//! `weida pub` and `weida sub` against each other, as separate processes. The publisher waits
//! for its subscribers (`--wait-subscribers`), so nothing here sleeps to synchronize; each
//! subscriber exits by itself (`--count`), and the publisher's linger ends when it has left.

mod common;

use std::os::unix::fs::MetadataExt;

use common::{as_documented, hex, json, noise, weida, Documented, Served};

/// A publisher bound on loopback at /feed, started with `args` after its URL.
fn publisher(args: &[&str]) -> Served {
    let mut all = vec!["pub", "weida://127.0.0.1:0/feed"];
    all.extend_from_slice(args);
    Served::start(&all)
}

/// A subscriber of `address`, started with `args` after it; ready once its filters are
/// installed at the publisher.
fn subscriber(address: &str, args: &[&str]) -> Served {
    let mut all = vec!["sub", address];
    all.extend_from_slice(args);
    Served::start(&all)
}

/// The publisher's exit status and stderr, once it exited by itself.
fn finished(mut p: Served) -> (std::process::ExitStatus, String) {
    let status = p.wait();
    (status, p.stderr())
}

#[test]
fn pub_waits_for_a_subscriber_and_sub_prints_each_message() {
    let p = publisher(&["news", "one", "two", "three", "--wait-subscribers", "1"]);
    let s = subscriber(&p.address, &["news", "--count", "3"]);
    let (mut lines, status) = s.finish();
    assert!(status.success(), "{status}");
    // Each copy is a stream of its own: no order between them without --ordering. The text
    // format shows each message's topic, then a tab.
    lines.sort();
    assert_eq!(lines, ["news\tone", "news\tthree", "news\ttwo"]);
    let (status, stderr) = finished(p);
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains("published 3 messages, 3 copies queued; none dropped"),
        "{stderr}"
    );
}

#[test]
fn sub_prints_only_the_topics_its_filters_select() {
    let dir = tempfile::tempdir().unwrap();
    let ticks = dir.path().join("ticks");
    std::fs::write(
        &ticks,
        "prices.btc.eur 100\nprices.btc.usd 101\nprices.eth.eur 200\n\
         prices.eth.usd 201\nprices.btc.eur.fast 102\nprices.sol.eur 300\n",
    )
    .unwrap();
    let p = publisher(&[
        "--keyed",
        "--file",
        ticks.to_str().unwrap(),
        "--wait-subscribers",
        "1",
        "-v",
    ]);
    let s = subscriber(
        &p.address,
        &[
            "prices.*.eur",
            "--count",
            "3",
            "--ordering",
            "detect",
            "--format",
            "json",
        ],
    );
    let (lines, status) = s.finish();
    assert!(status.success(), "{status}");
    let mut got: Vec<(u64, String, String)> = lines
        .iter()
        .map(|l| {
            let v = json(l);
            assert_eq!(v["gap"], 0, "{l}");
            (
                v["sequence"].as_u64().unwrap(),
                v["topic"].as_str().unwrap().to_string(),
                v["body"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    // The publisher numbers the copies it makes for this subscriber: had it made one for a
    // usd tick (interleaved with the eur ones), the three eur copies could not be 1, 2, 3.
    assert_eq!(
        got,
        [
            (1, "prices.btc.eur".into(), "100".into()),
            (2, "prices.eth.eur".into(), "200".into()),
            (3, "prices.sol.eur".into(), "300".into()),
        ]
    );
    let (status, stderr) = finished(p);
    assert!(status.success(), "{status}: {stderr}");
    for (topic, copies) in [
        ("prices.btc.eur (3 bytes)", "1 copy queued"),
        ("prices.btc.usd (3 bytes)", "0 copies queued"),
        ("prices.btc.eur.fast (3 bytes)", "0 copies queued"),
    ] {
        assert!(
            stderr.contains(&format!("published {topic}: {copies}")),
            "{stderr}"
        );
    }
    assert!(
        stderr.contains("published 6 messages, 3 copies queued; none dropped"),
        "{stderr}"
    );
}

#[test]
fn sub_json_lines_carry_topic_sequence_gap_and_the_publishers_key() {
    let p = publisher(&["a.b", "x", "y", "--wait-subscribers", "1"]);
    let s = subscriber(
        &p.address,
        &[
            "a.#",
            "--count",
            "2",
            "--ordering",
            "reassemble",
            "--format",
            "json",
        ],
    );
    let (lines, status) = s.finish();
    assert!(status.success(), "{status}");
    // Reassembled: in the publisher's order.
    for (i, (line, body)) in lines.iter().zip(["x", "y"]).enumerate() {
        let v = json(line);
        assert_eq!(v["topic"], "a.b");
        assert_eq!(v["sequence"], i as u64 + 1);
        assert_eq!(v["gap"], 0);
        assert_eq!(v["path"], "/feed");
        assert_eq!(v["peer"]["kind"], "key");
        assert_eq!(v["peer"]["fingerprint"], p.pin());
        assert_eq!(v["body"], body);
    }
    // Without --ordering the publisher numbers nothing for this subscriber (it numbers only a
    // subscriber that requires ordering): the line has no sequence and no gap.
    let p = publisher(&["a.b", "x", "--wait-subscribers", "1"]);
    let s = subscriber(&p.address, &["a.b", "--count", "1", "--format", "json"]);
    let (lines, _) = s.finish();
    let v = json(&lines[0]);
    assert_eq!(v["topic"], "a.b");
    assert!(v.get("gap").is_none(), "{v}");
    assert!(v.get("sequence").is_none(), "{v}");
}

#[test]
fn pub_whole_streams_a_large_stdin_byte_exactly() {
    let body = noise(1_500_000);
    let p = Served::start_with_stdin(
        &[
            "pub",
            "weida://127.0.0.1:0/blobs",
            "blobs.big",
            "--whole",
            "--wait-subscribers",
            "1",
            "-v",
        ],
        Some(body.clone()),
    );
    let s = subscriber(&p.address, &["blobs.#", "--count", "1", "--format", "hex"]);
    let (lines, status) = s.finish();
    assert!(status.success(), "{status}");
    assert_eq!(lines.len(), 1, "one message, not one per chunk");
    assert!(lines[0] == hex(&body), "the received body differs");
    let (status, stderr) = finished(p);
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains("published blobs.big (1500000 bytes, streamed): 1 of 1 copy kept"),
        "{stderr}"
    );
}

#[test]
fn pub_and_sub_over_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("weida+unix://{}//feed", dir.path().join("s.sock").display());
    let p = Served::start(&["pub", &url, "t", "hi", "--wait-subscribers", "1"]);
    assert_eq!(
        p.address, url,
        "no pin over AF_UNIX: the kernel proves the peer"
    );
    let s = subscriber(&url, &["t", "--count", "1", "--format", "json"]);
    let (lines, status) = s.finish();
    assert!(status.success(), "{status}");
    let v = json(&lines[0]);
    let me = std::fs::metadata(dir.path()).unwrap();
    assert_eq!(v["peer"]["kind"], "local");
    assert_eq!(v["peer"]["uid"], me.uid());
    assert_eq!(v["topic"], "t");
    assert_eq!(v["body"], "hi");
    let (status, stderr) = finished(p);
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn an_invalid_filter_or_topic_has_its_own_status() {
    // Checked before any dial or bind: nothing needs to listen at this address.
    let out = weida()
        .args(["sub", "weida://127.0.0.1:9/feed", "prices.eur", "a..b"])
        .assert()
        .documented(12)
        .get_output()
        .stderr
        .clone();
    let stderr = String::from_utf8(out).unwrap();
    assert!(
        stderr.contains("invalid filter \"a..b\": has an empty segment"),
        "{stderr}"
    );
    assert!(
        stderr.contains("code: INVALID_FILTER (exit status 12)"),
        "{stderr}"
    );
    weida()
        .args(["pub", "weida://127.0.0.1:0/feed", "prices.*", "x"])
        .assert()
        .documented(12)
        .stderr(predicates::str::contains("invalid topic \"prices.*\""));
    // A --keyed line's topic is checked as it is published.
    weida()
        .args(["pub", "weida://127.0.0.1:0/feed", "--keyed"])
        .write_stdin("ok 1\nnot..ok 2\n")
        .assert()
        .documented(12)
        .stderr(predicates::str::contains("publishing message 2 on not..ok"));
}

#[test]
fn a_body_above_the_byte_budget_is_refused_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("line");
    std::fs::write(&file, vec![b'x'; (1 << 20) + 1]).unwrap();
    weida()
        .args(["pub", "weida://127.0.0.1:0/feed", "t", "--file"])
        .arg(&file)
        .assert()
        .documented(9)
        .stderr(predicates::str::contains("--whole streams it"));
}

#[test]
fn sub_without_redial_exits_0_when_the_publisher_closes_unless_its_count_is_unmet() {
    for (count, expected) in [(None, 0), (Some("5"), 5)] {
        // The publisher waits for a second subscriber; Ctrl-C ends it, and it closes.
        let p = publisher(&["t", "x", "--wait-subscribers", "2"]);
        let mut args = vec!["t", "--reconnect", "never"];
        args.extend(count.iter().flat_map(|n| ["--count", n]));
        let mut s = subscriber(&p.address, &args);
        p.signal("INT");
        let status = s.wait();
        assert_eq!(status.code(), Some(expected), "{}", s.stderr());
        as_documented(status.code(), &s.stderr());
        // Without --count the end of the feed is the end of the work; with one, a feed that
        // ends first is a lost connection.
        let said = if expected == 0 {
            "the publisher closed"
        } else {
            "code: CONNECTION_LOST (exit status 5)"
        };
        assert!(s.stderr().contains(said), "{}", s.stderr());
        let (status, stderr) = finished(p);
        assert_eq!(status.code(), Some(130), "interrupted before it published");
        as_documented(status.code(), &stderr);
    }
}

/// By default `sub` redials a publisher that went away: the publisher at the same socket,
/// restarted, is heard again with no second `sub`, and `--events` says what happened, one JSON
/// line each on stderr.
#[test]
fn sub_hears_its_publisher_again_after_a_restart_and_prints_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let at = format!("weida+unix://{}//feed", dir.path().join("p.sock").display());
    let first = Served::start(&["pub", &at, "t", "x", "--wait-subscribers", "1"]);
    let address = first.address.clone();
    let mut s = subscriber(&address, &["t", "--count", "2", "--events"]);
    assert_eq!(s.next_line().as_deref(), Some("t\tx"));
    // The first publisher published and exits; a second one takes the same socket.
    let (status, _) = finished(first);
    assert!(status.success());
    let second = Served::start(&["pub", &at, "t", "y", "--wait-subscribers", "1"]);
    assert_eq!(s.next_line().as_deref(), Some("t\ty"));
    let status = s.wait();
    assert!(status.success(), "{}", s.stderr());
    let events: Vec<serde_json::Value> = s
        .stderr()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"connected"), "{kinds:?}");
    let lost = kinds
        .iter()
        .position(|k| *k == "lost")
        .expect("a lost event");
    assert_eq!(kinds[lost + 1], "retrying", "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"connected"), "{kinds:?}");
    assert!(events.iter().all(|e| e["url"] == address.as_str()));
    drop(second);
}

#[test]
fn pub_wait_for_subscribers_is_bounded_by_timeout() {
    weida()
        .args(["pub", "weida://127.0.0.1:0/feed", "t", "x"])
        .args(["--wait-subscribers", "1", "--timeout", "0.2"])
        .assert()
        .documented(6)
        .stderr(predicates::str::contains(
            "while waiting for 1 subscriber (0 arrived)",
        ));
}

#[test]
fn sigint_stops_sub_with_status_0() {
    // The publisher waits for a second subscriber that never comes: it stays up.
    let p = publisher(&["t", "x", "--wait-subscribers", "2"]);
    let mut s = subscriber(&p.address, &["t"]);
    s.signal("INT");
    let status = s.wait();
    assert_eq!(status.code(), Some(0), "{}", s.stderr());
}
