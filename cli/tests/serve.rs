//! `weida serve` (docs/SERVICES.md, cli/README.md): a queue whose handler is a command, its
//! exit status the outcome, with an attempt limit and a dead letter, as separate processes.
//! Nothing sleeps to synchronize: each role is ready at its READY line, and `--count` ends the
//! service once that many commands have run.

mod common;

use common::{weida, Served};

#[test]
fn a_command_per_message_its_exit_status_the_outcome_with_retries_and_a_dead_letter() {
    let dead = Served::start(&["pull", "--count", "1", "weida://127.0.0.1:0/dead"]);
    // ok: done at once; flaky: retried (75) until its second attempt; bad: dropped (65);
    // poison: fails (3) on both attempts, then is a dead letter.
    let script = r#"read -r b; case "$b" in
        ok) exit 0 ;;
        flaky) [ "$WEIDA_ATTEMPT" -ge 2 ] && exit 0; exit 75 ;;
        bad) exit 65 ;;
        *) echo "cannot parse $b" >&2; exit 3 ;;
    esac"#;
    let mut service = Served::start(&[
        "serve",
        "--quiet",
        "--count",
        "6",
        "--max-attempts",
        "2",
        "--dead-letter",
        &dead.address,
        "--exec",
        script,
        "weida://127.0.0.1:0/jobs",
    ]);
    weida()
        .args(["push", &service.address, "ok", "flaky", "bad", "poison"])
        .assert()
        .success();
    let (printed, status) = dead.finish();
    assert!(status.success());
    assert_eq!(printed, ["poison"]);
    let status = service.wait();
    let stderr = service.stderr();
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains(
            "stopped: 2 handled, 2 retried, 1 dead-lettered, 1 dropped, 2 failed; 0 unfinished, 0 waiting copies dropped"
        ),
        "{stderr}"
    );
    // A failure is logged as it happens with the message's path, its sender, the attempt and
    // the command's stderr; the drop's Unsupported once.
    let failures: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: a handler failed:"))
        .collect();
    assert_eq!(failures.len(), 2, "{stderr}");
    for (line, attempt) in failures.iter().zip(1..) {
        assert!(
            line.contains("path=/jobs")
                && line.contains("peer=")
                && !line.contains("peer=none")
                && line.contains(&format!("attempt={attempt}"))
                && line.contains("cannot parse poison"),
            "{line}"
        );
    }
    assert_eq!(
        stderr.matches("warning: drop: Unsupported").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn a_message_at_its_limit_with_no_dead_letter_is_dropped_with_a_warning_on_stderr() {
    let mut service = Served::start(&[
        "serve",
        "--quiet",
        "--count",
        "1",
        "--max-attempts",
        "1",
        "--exec",
        "exit 75",
        "weida://127.0.0.1:0/jobs",
    ]);
    weida()
        .args(["push", &service.address, "once"])
        .assert()
        .success();
    let status = service.wait();
    let stderr = service.stderr();
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains("warning: a message at its attempt limit (1) dropped: no dead-letter address is declared"),
        "{stderr}"
    );
    assert!(
        stderr.contains("stopped: 0 handled, 0 retried, 0 dead-lettered, 1 dropped, 0 failed"),
        "{stderr}"
    );
}

#[test]
fn a_dead_letter_address_that_is_the_queue_itself_is_refused() {
    let out = weida()
        .args([
            "serve",
            "--dead-letter",
            "weida://127.0.0.1:45999/jobs",
            "--exec",
            "true",
            "weida://127.0.0.1:45999/jobs",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("come back"), "{stderr}");
}

#[test]
fn a_signal_stops_taking_and_waits_for_the_command_running_within_drain() {
    // The command is still running when the signal comes (a second of work); the stop lets
    // it finish and counts it handled.
    let mut service = Served::start(&[
        "serve",
        "--drain",
        "30",
        "--exec",
        "cat >/dev/null; sleep 1",
        "weida://127.0.0.1:0/jobs",
    ]);
    weida()
        .args(["push", &service.address, "slow"])
        .assert()
        .success();
    // Printed by the handler before it runs the command.
    assert_eq!(service.next_line().as_deref(), Some("slow"));
    service.signal("INT");
    let status = service.wait();
    let stderr = service.stderr();
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains(
            "stopped: 1 handled, 0 retried, 0 dead-lettered, 0 dropped, 0 failed; 0 unfinished"
        ),
        "{stderr}"
    );
}

#[test]
fn a_command_still_running_at_the_drain_deadline_is_reported_unfinished() {
    let mut service = Served::start(&[
        "serve",
        "--drain",
        "0.2",
        "--exec",
        "cat >/dev/null; sleep 60",
        "weida://127.0.0.1:0/jobs",
    ]);
    weida()
        .args(["push", &service.address, "stuck"])
        .assert()
        .success();
    assert_eq!(service.next_line().as_deref(), Some("stuck"));
    let signalled = std::time::Instant::now();
    service.signal("TERM");
    let status = service.wait();
    let stderr = service.stderr();
    // It ends at the deadline, not with the command: the command is killed, and its message
    // is a failure (no limit declared: gone).
    assert!(
        signalled.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        signalled.elapsed()
    );
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains(
            "stopped: 0 handled, 0 retried, 0 dead-lettered, 1 dropped, 1 failed; 1 unfinished"
        ),
        "{stderr}"
    );
}
