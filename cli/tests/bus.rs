//! `weida bus` members as separate processes.

mod common;

use common::{weida, Served};

#[test]
fn a_bus_member_hears_what_another_sends() {
    // The first member prints what it receives; the second connects to it, sends two
    // messages to every member it connected, and exits having received none.
    let mut first = Served::start(&["bus", "weida://127.0.0.1:0/chat", "--count", "2"]);
    weida()
        .args([
            "bus",
            "weida://127.0.0.1:0/chat",
            "--connect",
            &first.address,
            "--count",
            "0",
            "hello",
            "again",
        ])
        .assert()
        .success()
        .stdout("");
    assert_eq!(first.next_line().as_deref(), Some("hello"));
    assert_eq!(first.next_line().as_deref(), Some("again"));
}
