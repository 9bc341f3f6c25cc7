//! `weida respond` and `weida survey` against each other, as separate processes.

mod common;

use common::{weida, Served};

#[test]
fn survey_prints_each_respondents_answer_and_counts_them() {
    let a = Served::start(&["respond", "--echo", "--quiet", "weida://127.0.0.1:0/a"]);
    let b = Served::start(&["respond", "--echo", "--quiet", "weida://127.0.0.1:0/b"]);
    let out = weida()
        .args([
            "survey",
            &a.address,
            "--also",
            &b.address,
            "--deadline",
            "20",
            "who?",
        ])
        .assert()
        .success();
    let out = out.get_output();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "who?\nwho?\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 asked, 2 answered, 0 late"), "stderr: {err}");
}

#[test]
fn a_survey_nobody_answers_in_time_is_a_timeout() {
    // `rep --exec` runs the command per request: one that sleeps answers after the deadline.
    let slow = Served::start(&[
        "respond",
        "--exec",
        "sleep 5; cat",
        "--quiet",
        "weida://127.0.0.1:0/slow",
    ]);
    let out = weida()
        .args(["survey", &slow.address, "--deadline", "0.3", "q"])
        .assert()
        .code(6);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("1 asked, 0 answered"), "stderr: {err}");
}
