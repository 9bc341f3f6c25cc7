//! `weida rep` and `weida req` against each other, as separate processes.

mod common;

use common::{json, noise, weida, Documented, Served};

#[test]
fn req_prints_the_echo_of_an_argument_and_rep_prints_the_request() {
    let mut rep = Served::start(&["rep", "--echo", "weida://127.0.0.1:0/echo"]);
    assert!(rep.address.starts_with("weida://sha256:") && rep.address.ends_with("/echo"));
    weida()
        .args(["req", &rep.address, "hello"])
        .assert()
        .success()
        .stdout("hello");
    assert_eq!(rep.next_line().as_deref(), Some("hello"));
    assert!(
        rep.stderr()
            .contains(&format!("listening on {}", rep.address)),
        "stderr: {}",
        rep.stderr()
    );
}

#[test]
fn req_streams_stdin_whole_and_prints_the_raw_reply_byte_exactly() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    // Above the core's 64 KiB inline request and its 1 MiB stream window: written in chunks
    // while the reply is read.
    let body = noise(1_500_000);
    let out = weida()
        .args(["req", &rep.address, "-"])
        .write_stdin(body.clone())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(out.len(), body.len());
    assert!(out == body, "the echoed body differs");
}

#[test]
fn req_lines_sends_one_request_per_line() {
    let mut rep = Served::start(&["rep", "--echo", "weida://127.0.0.1:0/echo"]);
    weida()
        .args(["req", &rep.address, "--lines"])
        .write_stdin("one\ntwo\r\n\nthree")
        .assert()
        .success()
        .stdout("one\ntwo\n\nthree\n");
    let seen: Vec<_> = (0..4).map(|_| rep.next_line().unwrap()).collect();
    assert_eq!(seen, ["one", "two", "", "three"]);
}

#[test]
fn req_prints_the_reply_in_each_format() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    for (format, expected) in [("text", "a\\nb\n"), ("hex", "610a62\n"), ("raw", "a\nb")] {
        weida()
            .args(["req", &rep.address, "a\nb", "--format", format])
            .assert()
            .success()
            .stdout(expected);
    }
    let out = weida()
        .args(["req", &rep.address, "a\nb", "--format", "json", "-m", "k=v"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json(std::str::from_utf8(&out).unwrap().trim_end());
    assert_eq!(v["body"], "a\nb");
    assert_eq!(v["size"], 3);
    assert_eq!(v["path"], "/echo");
    // The reply comes from the replier: its key, the one the address pins.
    assert_eq!(v["peer"]["kind"], "key");
    assert_eq!(v["peer"]["fingerprint"], rep.pin());
    // --echo replies with the request's metadata.
    assert_eq!(
        v["metadata"],
        serde_json::json!([{"name": "k", "value": "v"}])
    );
}

#[test]
fn rep_exec_replies_with_the_commands_stdout() {
    let rep = Served::start(&[
        "rep",
        "--quiet",
        "--exec",
        "tr a-z A-Z; printf ' %s' \"$WEIDA_PATH\"",
        "weida://127.0.0.1:0/up",
    ]);
    weida()
        .args(["req", &rep.address, "hello"])
        .assert()
        .success()
        .stdout("HELLO /up");
}

#[test]
fn rep_exec_failure_rejects_with_the_commands_stderr_and_rep_goes_on() {
    let rep = Served::start(&[
        "rep",
        "--quiet",
        "--exec",
        "cat >/dev/null; echo 'no such job' >&2; exit 3",
        "weida://127.0.0.1:0/jobs",
    ]);
    for _ in 0..2 {
        weida()
            .args(["req", &rep.address, "job 1"])
            .assert()
            .documented(8)
            .stderr(predicates::str::contains("error: rejected: no such job"))
            .stderr(predicates::str::contains("exit status: 3"))
            .stderr(predicates::str::contains("code: REJECTED (exit status 8)"));
    }
}

#[test]
fn rep_count_exits_after_n_requests() {
    let rep = Served::start(&["rep", "--echo", "--count", "2", "weida://127.0.0.1:0/echo"]);
    for body in ["x", "y"] {
        weida()
            .args(["req", &rep.address, body])
            .assert()
            .success()
            .stdout(body);
    }
    let (lines, status) = rep.finish();
    assert_eq!(lines, ["x", "y"]);
    assert!(status.success(), "{status}");
}

/// Requests opened and never finished (from a peer that stops writing) hold up no other, even
/// with one answer slot: `rep` reads every request as it comes, and a request takes a slot
/// only once it is read whole (PATTERNS §1.12). Were requests read in their slots, the next
/// request would wait for the stalled ones' `body_idle_timeout` (30 s), far beyond this test's
/// bound.
#[test]
fn rep_answers_others_while_a_request_is_stalled() {
    let rep = Served::start(&[
        "rep",
        "--echo",
        "--quiet",
        "--concurrency",
        "1",
        "weida://127.0.0.1:0/echo",
    ]);
    let io = tokio::runtime::Runtime::new().unwrap();
    let (_rt, _held) = io.block_on(async {
        let rt = weida::Runtime::new(weida::RuntimeConfig::default()).unwrap();
        let requester = rt.requester();
        requester.connect(&rep.address).await.unwrap();
        let mut held = Vec::new();
        for _ in 0..4 {
            let (mut request, reply) = requester.open(weida::Metadata::new()).await.unwrap();
            request.write(&b"half a question"[..]).await.unwrap();
            held.push((request, reply));
        }
        (rt, (requester, held))
    });
    weida()
        .args(["req", &rep.address, "hello"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success()
        .stdout("hello");
}

#[test]
fn req_over_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("weida+unix://{}//echo", dir.path().join("s.sock").display());
    let rep = Served::start(&["rep", "--echo", "--quiet", &url]);
    assert_eq!(rep.address, url);
    weida()
        .args(["req", &rep.address, "local"])
        .assert()
        .success()
        .stdout("local");
}

#[test]
fn sigint_stops_a_serving_role_cleanly() {
    let mut rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    weida()
        .args(["req", &rep.address, "before"])
        .assert()
        .success();
    rep.signal("INT");
    let status = rep.wait();
    assert_eq!(status.code(), Some(0), "stderr: {}", rep.stderr());
    assert!(
        rep.stderr().contains("stopping"),
        "stderr: {}",
        rep.stderr()
    );
}

#[test]
fn progress_is_drawn_on_stderr_only_when_asked_and_stdout_stays_exact() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    let body = noise(1_500_000);
    // In a pipe nothing is drawn unless --progress forces it; the last of the two flags wins.
    for (flags, drawn) in [
        (&[][..], false),
        (&["--progress"][..], true),
        (&["--progress", "--no-progress"][..], false),
        (&["--no-progress", "--progress"][..], true),
    ] {
        let out = weida()
            .args(["req", &rep.address, "-"])
            .args(flags)
            .write_stdin(body.clone())
            .assert()
            .success()
            .get_output()
            .clone();
        assert!(
            out.stdout == body,
            "{flags:?}: stdout is the reply alone, byte-exact"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        if drawn {
            assert!(
                stderr.contains("stdin ") && stderr.contains("reply "),
                "{stderr}"
            );
        } else {
            assert_eq!(stderr, "", "{flags:?}");
        }
    }
}
