//! `weida push` and `weida pull` against each other, as separate processes.

mod common;

use std::os::unix::fs::MetadataExt;

use common::{hex, json, noise, weida, Documented, Served};

/// The bodies of `lines` (JSON lines from `pull --format json`), sorted: separate streams
/// carry no order between them.
fn bodies(lines: &[String]) -> Vec<String> {
    let mut v: Vec<String> = lines
        .iter()
        .map(|l| json(l)["body"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn push_from_arguments_a_file_and_stdin_lines_reaches_pull() {
    let pull = Served::start(&[
        "pull",
        "--format",
        "json",
        "--count",
        "6",
        "weida://127.0.0.1:0/jobs",
    ]);
    weida()
        .args(["push", &pull.address, "arg 1", "arg 2"])
        .assert()
        .success()
        .stdout("");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jobs.txt");
    std::fs::write(&file, "file 1\nfile 2\n").unwrap();
    weida()
        .args(["push", &pull.address, "--file", file.to_str().unwrap()])
        .assert()
        .success();
    weida()
        .args(["push", &pull.address])
        .write_stdin("stdin 1\nstdin 2")
        .assert()
        .success();
    let (lines, status) = pull.finish();
    assert!(status.success(), "{status}");
    assert_eq!(
        bodies(&lines),
        ["arg 1", "arg 2", "file 1", "file 2", "stdin 1", "stdin 2"]
    );
}

/// A puller at /blobs that prints one message in hex and exits, started with `extra` options.
fn one_in_hex(extra: &[&str]) -> Served {
    let mut args = vec!["pull", "--format", "hex", "--count", "1"];
    args.extend_from_slice(extra);
    args.push("weida://127.0.0.1:0/blobs");
    Served::start(&args)
}

#[test]
fn push_whole_streams_a_large_stdin_byte_exactly() {
    let pull = one_in_hex(&[]);
    let body = noise(1_500_000);
    weida()
        .args(["push", &pull.address, "--whole"])
        .write_stdin(body.clone())
        .assert()
        .success();
    let (lines, status) = pull.finish();
    assert!(status.success());
    assert_eq!(lines.len(), 1, "one message, not one per chunk or line");
    assert!(lines[0] == hex(&body), "the pulled body differs");
}

#[test]
fn push_whole_file_arrives_as_base64_json_byte_exactly() {
    let pull = Served::start(&[
        "pull",
        "--format",
        "json",
        "--count",
        "1",
        "weida://127.0.0.1:0/blobs",
    ]);
    let body = noise(1_200_000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blob.bin");
    std::fs::write(&file, &body).unwrap();
    // A file has a size: its progress line shows the bytes of the total (on stderr only).
    weida()
        .args(["push", &pull.address, "--whole", "--progress", "--file"])
        .arg(&file)
        .assert()
        .success()
        .stdout("")
        .stderr(predicates::str::contains("blob.bin "))
        .stderr(predicates::str::contains("/1.14 MiB"));
    let (lines, _) = pull.finish();
    let v = json(&lines[0]);
    assert_eq!(v["size"], body.len());
    assert!(v.get("body").is_none(), "binary is never printed as text");
    use base64::Engine as _;
    let got = base64::engine::general_purpose::STANDARD
        .decode(v["body_base64"].as_str().unwrap())
        .unwrap();
    assert!(got == body, "the pulled body differs");
}

#[test]
fn pull_prints_each_format() {
    for (format, expected) in [
        ("text", "a\\nb"),
        ("hex", "610a62"),
        ("raw", "a"), // raw adds nothing: the body's own newline splits it
    ] {
        let mut pull = Served::start(&[
            "pull",
            "--format",
            format,
            "--count",
            "1",
            "weida://127.0.0.1:0/f",
        ]);
        weida()
            .args(["push", &pull.address, "a\nb"])
            .assert()
            .success();
        assert_eq!(pull.next_line().as_deref(), Some(expected), "{format}");
        if format == "raw" {
            assert_eq!(pull.next_line().as_deref(), Some("b"));
            assert_eq!(pull.next_line(), None, "nothing after the body");
        }
    }
}

#[test]
fn json_lines_carry_the_pushers_key_path_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let id = dir.path().join("pusher");
    let created = weida()
        .args(["id", "new"])
        .arg(&id)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let fingerprint = String::from_utf8(created).unwrap().trim().to_string();
    let mut pull = Served::start(&["pull", "--format", "json", "weida://127.0.0.1:0/jobs"]);
    weida()
        .args(["push", &pull.address, "--identity"])
        .arg(&id)
        .args(["-m", "job=42", "-m", "job=43", "body"])
        .assert()
        .success();
    let v = json(&pull.next_line().unwrap());
    assert_eq!(v["peer"]["kind"], "key");
    assert_eq!(v["peer"]["fingerprint"], fingerprint);
    assert_eq!(v["path"], "/jobs");
    assert_eq!(
        v["metadata"],
        serde_json::json!([{"name": "job", "value": "42"}, {"name": "job", "value": "43"}])
    );
    assert_eq!(v["body"], "body");
    assert!(v.get("topic").is_none() && v.get("sequence").is_none() && v.get("gap").is_none());
}

#[test]
fn over_a_unix_socket_the_peer_is_the_kernels_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("weida+unix://{}//jobs", dir.path().join("s.sock").display());
    let mut pull = Served::start(&["pull", "--format", "json", &url]);
    weida().args(["push", &url, "hi"]).assert().success();
    let v = json(&pull.next_line().unwrap());
    let me = std::fs::metadata(dir.path()).unwrap();
    assert_eq!(v["peer"]["kind"], "local");
    assert_eq!(v["peer"]["uid"], me.uid());
    assert_eq!(v["peer"]["gid"], me.gid());
    assert!(v["peer"]["pid"].as_i64().unwrap() > 0);
    assert_eq!(v["body"], "hi");
}

#[test]
fn pull_exits_0_when_its_reader_goes_away() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("weida"))
        .args(["pull", "--ready", "weida://127.0.0.1:0/jobs"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    let address = ready.trim().strip_prefix("READY ").unwrap().to_string();
    drop(out); // `weida pull | head -1`: the reader is gone
    weida().args(["push", &address, "x"]).assert().success();
    // Waited for on a thread, so a pull that never exits fails the test instead of hanging.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait().unwrap()));
    let status = rx.recv_timeout(common::PATIENCE).expect("pull exits");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn pull_draws_a_message_arriving_on_stderr_and_prints_it_whole_on_stdout() {
    use std::io::Write;
    let pull = one_in_hex(&["--progress"]);
    let body = noise(1_500_000);
    let mut push = std::process::Command::new(assert_cmd::cargo::cargo_bin("weida"))
        .args(["push", &pull.address, "--whole"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = push.stdin.take().unwrap();
    // Half a megabyte, streamed as it is read: at the puller, past 256 KiB and not whole.
    stdin.write_all(&body[..512 * 1024]).unwrap();
    pull.wait_for_stderr("receiving ");
    stdin.write_all(&body[512 * 1024..]).unwrap();
    drop(stdin);
    // Waited for on a thread, so a push that never exits fails the test instead of hanging.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(push.wait().unwrap()));
    assert!(rx
        .recv_timeout(common::PATIENCE)
        .expect("push exits")
        .success());
    let (lines, status) = pull.finish();
    assert!(status.success(), "{status}");
    // stdout holds the message alone: the progress line went to stderr.
    assert_eq!(lines.len(), 1);
    assert!(lines[0] == hex(&body), "the pulled body differs");
}

/// `push --later` may start before its puller: it records the address, its message waits for
/// the puller (bounded by --timeout) and arrives once the puller binds. Without `--later` the
/// same push fails at once: nothing listens there yet.
#[test]
fn push_later_starts_before_its_puller_and_delivers_once_it_binds() {
    let dir = tempfile::tempdir().unwrap();
    let at = format!("weida+unix://{}//jobs", dir.path().join("p.sock").display());
    weida()
        .args(["push", &at, "too soon"])
        .assert()
        .documented(5);
    let mut push = std::process::Command::new(assert_cmd::cargo::cargo_bin("weida"))
        .args(["push", "--later", "--timeout", "30", &at, "early"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pull = Served::start(&["pull", &at, "--count", "1"]);
    assert_eq!(pull.next_line().as_deref(), Some("early"));
    assert!(push.wait().unwrap().success());
}
