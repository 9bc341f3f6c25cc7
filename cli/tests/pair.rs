//! `weida pair`: a bound pair and a dialling one as separate processes.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use common::{as_documented, weida, Documented, Served, PATIENCE};

/// The two ends exchange two messages each way: each prints what the other sent, and both
/// exit 0 once they received their two.
fn both_ways(url: &str) {
    let bound = Served::start(&["pair", url, "--count", "2", "from-bound-1", "from-bound-2"]);
    let out = weida()
        .args([
            "pair",
            "--connect",
            &bound.address,
            "--count",
            "2",
            "from-dial-1",
            "from-dial-2",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let mut heard: Vec<String> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    heard.sort();
    assert_eq!(heard, ["from-bound-1", "from-bound-2"]);
    let (mut lines, status) = bound.finish();
    lines.sort();
    assert_eq!(lines, ["from-dial-1", "from-dial-2"]);
    assert!(status.success(), "the bound pair exited {status}");
}

#[test]
fn a_pair_exchanges_messages_both_ways_over_quic() {
    both_ways("weida://127.0.0.1:0/chat");
}

#[test]
fn a_pair_exchanges_messages_both_ways_over_a_unix_socket() {
    // The dialling end sends its stdin's lines and stays (its stdin open) until the bound end
    // printed them: a dialling pair that leaves at once after its last receipt can lose, over
    // AF_UNIX, what the bound pair's transport held but had not taken (reported to the core).
    let dir = tempfile::tempdir().unwrap();
    let url = format!("weida+unix://{}//chat", dir.path().join("p.sock").display());
    let mut bound = Served::start(&["pair", &url, "--count", "2", "from-bound-1", "from-bound-2"]);
    let mut dialling = Command::new(assert_cmd::cargo::cargo_bin("weida"))
        .args(["pair", "--connect", &bound.address, "--ready"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("weida starts");
    let mut stdin = dialling.stdin.take().unwrap();
    stdin.write_all(b"from-dial-1\nfrom-dial-2\n").unwrap();
    let (tx, lines) = mpsc::channel();
    let out = BufReader::new(dialling.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || {
        lines
            .recv_timeout(PATIENCE)
            .expect("a line from the dialling end")
    };
    assert_eq!(next(), format!("READY {}", bound.address));
    let mut heard = vec![next(), next()];
    heard.sort();
    assert_eq!(heard, ["from-bound-1", "from-bound-2"]);
    let mut got = vec![bound.next_line().unwrap(), bound.next_line().unwrap()];
    got.sort();
    assert_eq!(got, ["from-dial-1", "from-dial-2"]);
    assert!(bound.wait().success(), "stderr: {}", bound.stderr());
    // Its input done and no --count: the dialling end exits 0.
    drop(stdin);
    assert!(dialling.wait().unwrap().success());
}

#[test]
fn a_second_peer_at_a_taken_pair_is_refused_with_status_9() {
    let mut bound = Served::start(&["pair", "weida://127.0.0.1:0/chat", "--count", "2"]);
    // The first peer's READY line says it holds the claim; it sends one message, then waits
    // for one that never comes, holding the pair until the test ends.
    let _first = Served::start(&[
        "pair",
        "--connect",
        &bound.address,
        "--count",
        "1",
        "still-here",
    ]);
    weida()
        .args(["pair", "--connect", &bound.address, "late"])
        .assert()
        .documented(9)
        .stderr(predicates::str::contains("the pair is taken"));
    // The bound end heard the first peer, never the refused one.
    assert_eq!(bound.next_line().as_deref(), Some("still-here"));
}

#[test]
fn a_bound_pair_with_no_peer_gives_up_its_send_with_status_6() {
    let mut bound = Served::start(&[
        "pair",
        "weida://127.0.0.1:0/chat",
        "--timeout",
        "0.3",
        "nobody hears this",
    ]);
    assert_eq!(bound.wait().code(), Some(6), "stderr: {}", bound.stderr());
    as_documented(Some(6), &bound.stderr());
}
