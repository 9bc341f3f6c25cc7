//! Helpers for the CLI tests: a serving `weida` child process that is killed when the test
//! ends, however it ends, and a `weida` client command with a deadline.
//!
//! Nothing here sleeps to synchronize: a server is ready when it has printed its READY line,
//! and its output is read line by line as it comes, each wait bounded so a hang fails the
//! test instead of stalling the suite.

#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long any one wait on a child may take before the test fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// A `weida` client invocation, killed if it runs past [`PATIENCE`].
pub(crate) fn weida() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("weida").expect("the weida binary is built");
    c.timeout(PATIENCE);
    c
}

/// A `weida` that prints a READY line (`rep`, `pull`, `pub`, `sub`) run with `--ready`; killed
/// on drop.
pub(crate) struct Served {
    child: Child,
    /// The dialable address from its READY line.
    pub(crate) address: String,
    lines: Receiver<String>,
    stderr: PathBuf,
    _dir: tempfile::TempDir,
}

impl Served {
    /// Starts `weida ARGS --ready` and waits for its READY line.
    pub(crate) fn start(args: &[&str]) -> Self {
        Self::start_with_stdin(args, None)
    }

    /// [`Served::start`] with `stdin` written to its stdin (then closed) on a thread, or an
    /// empty stdin for `None`.
    pub(crate) fn start_with_stdin(args: &[&str], stdin: Option<Vec<u8>>) -> Self {
        let (mut served, pipe) = Self::spawn(args, stdin.is_some());
        if let (Some(bytes), Some(mut pipe)) = (stdin, pipe) {
            std::thread::spawn(move || {
                use std::io::Write;
                // A child that exits early closes the pipe: its status tells the test why.
                let _ = pipe.write_all(&bytes);
            });
        }
        served.ready();
        served
    }

    /// [`Served::start`] with its stdin a pipe the test writes to as it goes (its input ends
    /// when the pipe is dropped).
    pub(crate) fn start_piped(args: &[&str]) -> (Self, ChildStdin) {
        let (mut served, pipe) = Self::spawn(args, true);
        served.ready();
        (served, pipe.expect("a piped stdin"))
    }

    /// Starts `weida ARGS --ready`, its stdin a pipe (returned) or empty.
    fn spawn(args: &[&str], piped: bool) -> (Self, Option<ChildStdin>) {
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr");
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("weida"))
            .args(args)
            .arg("--ready")
            .stdin(if piped { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .expect("weida starts");
        let pipe = child.stdin.take();
        // Lines are read on a thread so every wait can have a deadline.
        let (tx, lines) = mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let served = Self {
            child,
            address: String::new(),
            lines,
            stderr,
            _dir: dir,
        };
        (served, pipe)
    }

    /// Waits for its READY line and keeps the address.
    fn ready(&mut self) {
        let ready = self
            .next_line()
            .unwrap_or_else(|| panic!("no READY line; stderr: {}", self.stderr()));
        self.address = ready
            .strip_prefix("READY ")
            .unwrap_or_else(|| panic!("the first line is {ready:?}"))
            .to_string();
    }

    /// The next line of its stdout; `None` once it closed stdout (exited).
    pub(crate) fn next_line(&mut self) -> Option<String> {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(l) => Some(l),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no output from weida within {PATIENCE:?}; stderr: {}",
                self.stderr()
            ),
        }
    }

    /// Every line it prints until it exits (it must exit by itself: `--count`), and its
    /// exit status.
    pub(crate) fn finish(mut self) -> (Vec<String>, ExitStatus) {
        let mut rest = Vec::new();
        while let Some(l) = self.next_line() {
            rest.push(l);
        }
        (rest, self.wait())
    }

    /// Waits for it to exit: its stdout closes when it does (the wait for that is bounded by
    /// [`PATIENCE`]), then its status is collected. Output not yet read is discarded.
    pub(crate) fn wait(&mut self) -> ExitStatus {
        while self.next_line().is_some() {}
        self.child.wait().unwrap()
    }

    /// Sends it a signal with kill(1).
    pub(crate) fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{name} failed");
    }

    /// What it printed on stderr so far.
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits until its stderr holds `text` (a progress line, which ends in no newline), looking
    /// every 10 ms: a file has no event to wait on. Fails the test after [`PATIENCE`].
    pub(crate) fn wait_for_stderr(&self, text: &str) {
        let start = Instant::now();
        while !self.stderr().contains(text) {
            assert!(
                start.elapsed() < PATIENCE,
                "no {text:?} on stderr within {PATIENCE:?}: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The address of another path on the same listener.
    pub(crate) fn at(&self, path: &str) -> String {
        let (listener, _) = self.listener_and_path();
        format!("{listener}{path}")
    }

    /// The SHA-256 pin in its address.
    pub(crate) fn pin(&self) -> String {
        let start = self.address.find("sha256:").expect("a pinned address");
        self.address[start..start + 7 + 64].to_string()
    }

    fn listener_and_path(&self) -> (String, String) {
        // weida://sha256:..@host:port/path: the path starts at the first '/' after "//".
        let after = self.address.find("://").unwrap() + 3;
        let slash = after + self.address[after..].find('/').unwrap();
        (
            self.address[..slash].to_string(),
            self.address[slash..].to_string(),
        )
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `n` bytes that are not UTF-8 and not periodic (xorshift), so a reordered, dropped or
/// duplicated chunk cannot go unnoticed.
pub(crate) fn noise(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut v: Vec<u8> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    v[0] = 0xff; // never valid UTF-8
    v
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One JSON line.
pub(crate) fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"))
}

/// What `weida --help` prints, run once per test binary.
pub(crate) fn help() -> &'static str {
    static HELP: OnceLock<String> = OnceLock::new();
    HELP.get_or_init(|| {
        let out = weida().arg("--help").output().expect("weida --help runs");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    })
}

/// The lines of `weida --help`'s block after `title` (`Commands:`), up to the blank line.
pub(crate) fn help_block(title: &str) -> impl Iterator<Item = &'static str> {
    help()
        .split_once(&format!("{title}\n"))
        .unwrap_or_else(|| panic!("no {title:?} block in weida --help"))
        .1
        .lines()
        .take_while(|l| !l.trim().is_empty())
}

/// The "Exit status:" block of `weida --help`, parsed: each status and its meaning (a line
/// that starts with no number goes on with the meaning above it).
pub(crate) fn help_statuses() -> &'static BTreeMap<i32, String> {
    static STATUSES: OnceLock<BTreeMap<i32, String>> = OnceLock::new();
    STATUSES.get_or_init(|| {
        let mut statuses = BTreeMap::new();
        let mut last = None;
        for line in help_block("Exit status:") {
            let (first, rest) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
            match first.parse::<i32>() {
                Ok(status) => {
                    statuses.insert(status, rest.trim().to_string());
                    last = Some(status);
                }
                Err(_) => {
                    let status = last.unwrap_or_else(|| panic!("{line:?} follows no status"));
                    let meaning: &mut String = statuses.get_mut(&status).unwrap();
                    meaning.push(' ');
                    meaning.push_str(line.trim());
                }
            }
        }
        statuses
    })
}

/// Whether `meaning` (a line of the help's block) names the core code `code` as a word.
fn names(meaning: &str, code: &str) -> bool {
    meaning
        .split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
        .any(|word| word == code)
}

/// Checks that a run that exited with `status` and printed `stderr` is what `weida --help`
/// documents for that status: the core code its report names (`code: UNTRUSTED (exit status
/// 3)`) is the one the help's line for the status names (a code no line names is status 1,
/// "any other error"); a status without a core code (usage, interrupted, success) is what the
/// help says it is.
pub(crate) fn as_documented(status: Option<i32>, stderr: &str) {
    let status = status.expect("an exit status, not a signal");
    let statuses = help_statuses();
    let meaning = statuses
        .get(&status)
        .unwrap_or_else(|| panic!("status {status} is not in weida --help: {statuses:?}"));
    let reported = stderr.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("code: ")?;
        let (code, said) = rest.split_once(" (exit status ")?;
        Some((
            code.to_string(),
            said.trim_end_matches(')').parse::<i32>().ok()?,
        ))
    });
    match reported {
        Some((code, said)) => {
            assert_eq!(
                said, status,
                "the report says {said}, the process exited {status}"
            );
            if status == 1 {
                let elsewhere = statuses.iter().find(|(_, m)| names(m, &code));
                assert!(
                    elsewhere.is_none(),
                    "{code} is documented as {elsewhere:?}, not 1"
                );
            } else {
                assert!(
                    names(meaning, &code),
                    "--help documents {status} as {meaning:?}, not {code}"
                );
            }
        }
        None => {
            let (said, documented) = match status {
                0 => ("", "success"),
                1 => ("error: ", "any other error"),
                // clap's report of a usage error ends by pointing at the help.
                2 => ("try '--help'", "usage"),
                130 => ("error: interrupted", "interrupted"),
                _ => panic!("status {status} without a `code:` line: {stderr}"),
            };
            assert!(stderr.contains(said), "status {status}, stderr: {stderr}");
            assert!(
                meaning.contains(documented),
                "--help documents {status} as {meaning:?}, not {documented:?}"
            );
        }
    }
}

/// [`as_documented`] on an `assert_cmd` run, after its status: `.documented(3)` in place of
/// `.code(3)`.
pub(crate) trait Documented {
    fn documented(self, status: i32) -> Self;
}

impl Documented for assert_cmd::assert::Assert {
    fn documented(self, status: i32) -> Self {
        let a = self.code(status);
        as_documented(
            Some(status),
            &String::from_utf8_lossy(&a.get_output().stderr),
        );
        a
    }
}
