//! Failures: each reaches the user as its documented exit status, with the error's cause.

mod common;

use common::{as_documented, help_statuses, noise, weida, Documented, Served};
use predicates::str::contains;

const OTHER_KEY: &str = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

#[test]
fn a_wrong_pin_is_untrusted_and_names_both_keys() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    let wrong = rep.address.replace(&rep.pin(), OTHER_KEY);
    weida()
        .args(["req", &wrong, "hi"])
        .assert()
        .documented(3)
        .stdout("")
        .stderr(contains(format!(
            "error: untrusted peer {} (the address pins {OTHER_KEY})",
            rep.pin()
        )))
        .stderr(contains(format!("while connecting to {wrong}")));
    // A push fails the same way, before sending anything.
    weida()
        .args(["push", &wrong, "hi"])
        .assert()
        .documented(3)
        .stderr(contains(rep.pin()));
}

#[test]
fn an_unpinned_address_is_refused_unless_trust_pin_names_the_key() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    let unpinned = rep.address.replace(&format!("{}@", rep.pin()), "");
    assert!(!unpinned.contains("sha256"));
    weida()
        .args(["req", &unpinned, "hi"])
        .assert()
        .documented(3)
        .stderr(contains("no pin or anchor accepts it"))
        .stderr(contains(format!("--trust-pin {}", rep.pin())));
    weida()
        .args(["req", &unpinned, "hi", "--trust-pin", OTHER_KEY])
        .assert()
        .documented(3);
    weida()
        .args(["req", &unpinned, "hi", "--trust-pin", &rep.pin()])
        .assert()
        .success()
        .stdout("hi");
}

#[test]
fn an_unknown_endpoint_path_has_its_own_status() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    weida()
        .args(["req", &rep.at("/nope"), "hi"])
        .assert()
        .documented(4)
        .stderr(contains("error: unknown endpoint \"/nope\""))
        .stderr(contains("code: UNKNOWN_ENDPOINT (exit status 4)"));
}

#[test]
fn a_large_push_to_an_unknown_path_is_reported() {
    // Larger than the stream window, so the refusal reaches the writer (PATTERNS §1.6).
    let pull = Served::start(&["pull", "--quiet", "weida://127.0.0.1:0/jobs"]);
    weida()
        .args(["push", &pull.at("/nope"), "--whole"])
        .write_stdin(noise(2 << 20))
        .assert()
        .documented(4)
        .stderr(contains("unknown endpoint"));
}

#[test]
fn a_push_above_the_pullers_max_body_is_limit_exceeded_and_pull_goes_on() {
    let mut pull = Served::start(&[
        "pull",
        "--max-body",
        "1000",
        "--format",
        "hex",
        "weida://127.0.0.1:0/jobs",
    ]);
    weida()
        .args(["push", &pull.address, "--whole"])
        .write_stdin(noise(2 << 20))
        .assert()
        .documented(9)
        .stderr(contains("LIMIT_EXCEEDED"));
    weida()
        .args(["push", &pull.address, "small"])
        .assert()
        .success();
    assert_eq!(pull.next_line().as_deref(), Some("736d616c6c"));
    assert!(pull
        .stderr()
        .contains("warning: a message could not be received"));
}

#[test]
fn a_push_to_a_rep_path_is_unsupported() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    weida()
        .args(["push", &rep.address, "--whole"])
        .write_stdin(noise(2 << 20))
        .assert()
        .documented(10);
}

#[test]
fn a_reply_lost_after_the_request_arrived_is_indeterminate() {
    // The replier reads the request whole, then dies before answering (its command kills
    // it). Over AF_UNIX the requester learns at once that the connection is gone.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("weida+unix://{}//x", dir.path().join("s.sock").display());
    let _rep = Served::start(&[
        "rep",
        "--quiet",
        "--exec",
        "cat >/dev/null; kill -9 $PPID",
        &url,
    ]);
    weida()
        .args(["req", &url, "charge card 42"])
        .assert()
        .documented(7)
        .stderr(contains("error: indeterminate"))
        .stderr(contains("check before retrying"));
}

#[test]
fn a_missing_socket_is_unreachable_without_a_repeated_cause() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let url = format!("weida+unix://{}//x", sock.display());
    let out = weida()
        .args(["req", &url, "hi"])
        .assert()
        .documented(5)
        .get_output()
        .stderr
        .clone();
    let stderr = String::from_utf8(out).unwrap();
    let said = format!(
        "nothing listens at local socket {}: no such socket file",
        sock.display()
    );
    assert!(stderr.contains(&said), "{stderr}");
    assert!(
        !stderr.contains("caused by"),
        "the cause repeats the message: {stderr}"
    );
}

/// A command that never answers, and ends with the `rep` that ran it (a plain `sleep` would
/// outlive a killed `rep`).
const HANG: &str = "cat >/dev/null; while kill -0 $PPID 2>/dev/null; do sleep 0.05; done";

#[test]
fn a_request_past_its_timeout_is_timeout() {
    let rep = Served::start(&["rep", "--quiet", "--exec", HANG, "weida://127.0.0.1:0/slow"]);
    weida()
        .args(["req", &rep.address, "hi", "--timeout", "0.3"])
        .assert()
        .documented(6)
        .stderr(contains("timed out"));
}

/// A dial that no listener answers fails fast as a failed connection, naming the address
/// (issue 17 part 4: the core's UNREACHABLE at its 5 s connect_timeout, exit status 5), where
/// it used to wait for the idle timeout (30 s) and end as TIMEOUT (6).
#[test]
fn a_dial_where_nothing_listens_fails_fast_as_a_failed_connection() {
    // A port nothing listens on: bound, then released.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("weida://{OTHER_KEY}@127.0.0.1:{port}/x");
    weida()
        .args(["req", &url, "hi"])
        // Fast: killed past this, the run has no status and the test fails.
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .documented(5)
        .stdout("")
        .stderr(contains(format!("answered at 127.0.0.1:{port}")))
        .stderr(contains(format!("while connecting to {url}")));
}

#[test]
fn a_bind_address_pinning_another_key_is_refused() {
    weida()
        .args([
            "rep",
            "--echo",
            &format!("weida://{OTHER_KEY}@127.0.0.1:0/echo"),
        ])
        .assert()
        .documented(1)
        .stderr(contains(format!(
            "pins {OTHER_KEY}, but this listener's key is sha256:"
        )));
}

#[test]
fn an_address_without_a_path_is_an_error_naming_the_part() {
    weida()
        .args(["pull", "weida://127.0.0.1:0"])
        .assert()
        .documented(1)
        .stderr(contains("invalid address (path)"));
}

#[test]
fn command_line_misuse_exits_2() {
    weida()
        .args(["rep", "weida://127.0.0.1:0/x"])
        .assert()
        .documented(2)
        .stderr(contains("--echo"));
    weida()
        .args(["push", "weida://127.0.0.1:1/x", "--whole", "body"])
        .assert()
        .documented(2)
        .stderr(contains("--lines and --whole apply to a file or stdin"));
    weida()
        .args(["req", "weida://127.0.0.1:1/x", "--trust-pin", "md5:00"])
        .assert()
        .documented(2);
}

#[test]
fn help_lists_every_exit_status() {
    // Parsed as every test of a status reads it (`Documented`): a status and its meaning a line.
    let numbers: Vec<i32> = help_statuses().keys().copied().collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 130]);
    for (status, starts) in [
        (0, "success"),
        (1, "any other error"),
        (2, "command-line usage"),
        (3, "UNTRUSTED"),
        (4, "UNKNOWN_ENDPOINT"),
        (5, "UNREACHABLE, NOT_CONNECTED, CONNECTION_LOST or CLOSED"),
        (6, "TIMEOUT"),
        (7, "INDETERMINATE"),
        (8, "REJECTED"),
        (9, "LIMIT_EXCEEDED"),
        (10, "UNSUPPORTED"),
        (11, "CANCELED"),
        (12, "INVALID_FILTER"),
        (130, "interrupted"),
    ] {
        let meaning = &help_statuses()[&status];
        assert!(meaning.starts_with(starts), "{status}: {meaning:?}");
    }
}

#[test]
fn ctrl_c_interrupts_a_client_with_status_130() {
    let mut rep = Served::start(&["rep", "--exec", HANG, "weida://127.0.0.1:0/slow"]);
    let req = std::process::Command::new(assert_cmd::cargo::cargo_bin("weida"))
        .args(["req", &rep.address, "waiting"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The replier prints the request once it has it: the client is now waiting for a reply.
    assert_eq!(rep.next_line().as_deref(), Some("waiting"));
    let status = std::process::Command::new("kill")
        .args(["-INT", &req.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = req.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    as_documented(out.status.code(), &String::from_utf8_lossy(&out.stderr));
}
