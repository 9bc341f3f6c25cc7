//! `weida id`, `weida bench`, `weida completions` and `weida man`.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{help_block, help_statuses, weida, Documented, Served};
use predicates::str::contains;

fn fingerprint_of(out: &[u8]) -> String {
    let s = std::str::from_utf8(out).unwrap().trim().to_string();
    assert!(
        s.len() == 7 + 64 && s.starts_with("sha256:"),
        "{s:?} is not a fingerprint"
    );
    s
}

fn id(args: &[&str], dir: &Path) -> String {
    let out = weida()
        .arg("id")
        .args(args)
        .arg(dir)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    fingerprint_of(&out)
}

#[test]
fn id_new_makes_an_owner_only_identity_that_show_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nested").join("identity");
    let made = id(&["new"], &dir);
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "mode {mode:o}");
    assert_eq!(id(&["show"], &dir), made);
    assert_eq!(id(&["show"], &dir), made, "stable across shows");
}

#[test]
fn id_new_refuses_an_existing_identity_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("identity");
    let first = id(&["new"], &dir);
    weida()
        .args(["id", "new"])
        .arg(&dir)
        .assert()
        .documented(1)
        .stderr(contains(format!("holds the identity {first}")))
        .stderr(contains("--force"));
    assert_eq!(id(&["show"], &dir), first, "a refused new changes nothing");
    let second = id(&["new", "--force"], &dir);
    assert_ne!(second, first);
    assert_eq!(id(&["show"], &dir), second);
}

#[test]
fn id_default_directory_is_under_xdg_config_home() {
    let tmp = tempfile::tempdir().unwrap();
    let made = weida()
        .args(["id", "new"])
        .env("XDG_CONFIG_HOME", tmp.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(
        id(&["show"], &tmp.path().join("weida/identity")),
        fingerprint_of(&made)
    );
}

#[test]
fn id_show_of_a_missing_directory_says_how_to_make_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("none");
    weida()
        .args(["id", "show"])
        .arg(&dir)
        .assert()
        .documented(1)
        .stderr(contains(format!(
            "loading the identity in {}",
            dir.display()
        )))
        .stderr(contains("weida id new"));
}

#[test]
fn a_listener_with_an_identity_is_pinned_to_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("identity");
    let fp = id(&["new"], &dir);
    let dir = dir.to_str().unwrap();
    // Every serving role, each started twice: the address it prints pins the same key.
    for role in [&["rep", "--echo"][..], &["pull"], &["pub", "--keyed"]] {
        for _ in 0..2 {
            let mut args = role.to_vec();
            args.extend(["--identity", dir, "weida://127.0.0.1:0/p"]);
            let served = Served::start(&args);
            assert_eq!(served.pin(), fp, "{role:?}");
            assert!(served.address.ends_with("/p"), "{}", served.address);
            served.wait_for_stderr(&format!("listening on {}", served.address));
        }
    }
}

fn bench(args: &[&str]) -> serde_json::Value {
    let out = weida()
        .args(["bench", "--duration", "0.3", "--json"])
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("one JSON object")
}

#[test]
fn bench_push_pull_reports_a_positive_rate() {
    let v = bench(&["--size", "100"]);
    assert_eq!(v["pattern"], "push-pull");
    assert_eq!(v["transport"], "quic");
    assert_eq!(v["size"], 100);
    assert_eq!(v["concurrency"], 1);
    let messages = v["messages"].as_u64().unwrap();
    assert!(messages > 0);
    assert_eq!(v["bytes"].as_u64().unwrap(), messages * 100);
    assert!(v["msgs_per_sec"].as_f64().unwrap() > 0.0);
    assert!(v["mb_per_sec"].as_f64().unwrap() > 0.0);
    assert!(v["duration_secs"].as_f64().unwrap() >= 0.3);
    assert!(v["latency_us"].is_null());
}

#[test]
fn bench_req_rep_reports_latency_percentiles() {
    let v = bench(&[
        "--pattern",
        "req-rep",
        "--transport",
        "unix",
        "--concurrency",
        "2",
    ]);
    assert_eq!(v["pattern"], "req-rep");
    assert_eq!(v["transport"], "unix");
    assert_eq!(v["concurrency"], 2);
    assert!(v["msgs_per_sec"].as_f64().unwrap() > 0.0);
    let p = |q: &str| v["latency_us"][q].as_f64().unwrap();
    assert!(p("p50") > 0.0 && p("p50") <= p("p90") && p("p90") <= p("p99"));
}

#[test]
fn bench_prints_an_aligned_table_without_json() {
    let out = weida()
        .args(["bench", "--duration", "0.2", "--transport", "inproc"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let table = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(lines[0].contains("msgs/s") && lines[0].contains("p99 us"));
    assert!(lines[1].starts_with("push-pull  inproc"), "{table}");
    // Fixed-width columns: the row is as long as the header, each value under its name.
    assert_eq!(lines[0].len(), lines[1].len(), "{table}");
}

#[test]
fn completions_for_bash() {
    weida()
        .args(["completions", "bash"])
        .assert()
        .success()
        .stdout(contains("_weida()"))
        .stdout(contains("complete -F _weida"))
        .stdout(contains("--trust-pin"));
}

/// The commands `weida --help` lists, but for clap's `help`.
fn commands() -> Vec<String> {
    help_block("Commands:")
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect()
}

/// A man page's text with roff's escapes of `-` and `'` undone.
fn unescaped(page: &[u8]) -> String {
    String::from_utf8(page.to_vec())
        .unwrap()
        .replace("\\-", "-")
        .replace("\\*(Aq", "'")
}

#[test]
fn man_page_lists_every_command_and_the_exit_statuses() {
    let page = unescaped(&weida().arg("man").output().unwrap().stdout);
    assert!(page.contains(".TH weida 1"), "{page}");
    let commands = commands();
    assert!(commands.len() >= 10, "{commands:?}");
    for c in &commands {
        assert!(
            page.contains(&format!("weida-{c}(1)")),
            "no weida-{c}(1): {page}"
        );
    }
    // Each status of `weida --help`'s block, with the same meaning, in its own section.
    let section = page
        .split_once(".SH \"EXIT STATUS\"\n")
        .expect("an EXIT STATUS section")
        .1;
    let section = section.split(".SH ").next().unwrap();
    for (status, meaning) in help_statuses() {
        let entry = format!(".TP\n\\fB{status}\\fR\n{meaning}\n");
        assert!(section.contains(&entry), "no {entry:?} in {section}");
    }
}

#[test]
fn man_dir_writes_a_page_per_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let out = weida()
        .args(["man", "--dir"])
        .arg(&dir)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let listed: Vec<String> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let mut expected = vec!["weida".to_string()];
    expected.extend(commands().iter().map(|c| format!("weida-{c}")));
    expected.extend(["weida-id-new".into(), "weida-id-show".into()]);
    for name in &expected {
        let path = dir.join(format!("{name}.1"));
        assert!(
            listed.contains(&path.display().to_string()),
            "{name}: {listed:?}"
        );
        let page = unescaped(&std::fs::read(&path).unwrap());
        assert!(page.contains(&format!(".TH {name} 1")), "{name}: {page}");
    }
    assert_eq!(listed.len(), expected.len(), "{listed:?}");
}
