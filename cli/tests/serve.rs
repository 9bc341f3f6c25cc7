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
    // A failure is logged with the command's stderr.
    assert!(stderr.contains("cannot parse poison"), "{stderr}");
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
