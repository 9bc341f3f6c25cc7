//! Helpers for the CLI tests: a serving `weida` child process that is killed when the test
//! ends, however it ends, and a `weida` client command with a deadline.
//!
//! Nothing here sleeps to synchronize: a server is ready when it has printed its READY line,
//! and its output is read line by line as it comes, each wait bounded so a hang fails the
//! test instead of stalling the suite.

#![allow(dead_code)] // each test binary uses its own subset

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

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
        let dir = tempfile::tempdir().unwrap();
        let stderr = dir.path().join("stderr");
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("weida"))
            .args(args)
            .arg("--ready")
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .expect("weida starts");
        if let Some(bytes) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                use std::io::Write;
                // A child that exits early closes the pipe: its status tells the test why.
                let _ = pipe.write_all(&bytes);
            });
        }
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
        let mut served = Self {
            child,
            address: String::new(),
            lines,
            stderr,
            _dir: dir,
        };
        let ready = served
            .next_line()
            .unwrap_or_else(|| panic!("no READY line; stderr: {}", served.stderr()));
        served.address = ready
            .strip_prefix("READY ")
            .unwrap_or_else(|| panic!("the first line is {ready:?}"))
            .to_string();
        served
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
