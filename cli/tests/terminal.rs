//! What `weida` does on a terminal, on a real one: a pseudo-terminal (openpty, in raw mode so
//! that it translates nothing) holds one of the process's stdout or stderr, a pipe the other.

mod common;

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use common::{noise, Served, PATIENCE};

/// Which of the process's outputs is the terminal.
#[derive(Clone, Copy)]
enum OnTerminal {
    Stdout,
    Stderr,
}

/// What a run printed: on the terminal, and into the pipe.
struct Ran {
    terminal: Vec<u8>,
    piped: Vec<u8>,
}

/// A new pseudo-terminal in raw mode, 80 columns by 24 rows: its master and its slave.
fn pty() -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors it opened into the two ints; the null name and
    // termios are allowed, and the winsize outlives the call.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both were just opened by openpty, and nothing else owns them.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // Raw: no "\n" to "\r\n" on output, so what the process wrote is what the test reads.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&slave);
    // SAFETY: a zeroed termios is a valid value to fill, and fd is open for the whole block.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(fd, &mut t), 0);
        libc::cfmakeraw(&mut t);
        assert_eq!(libc::tcsetattr(fd, libc::TCSANOW, &t), 0);
    }
    (master, slave)
}

/// Runs `weida ARGS` with `stdin`, `which` of its outputs on a new terminal and the other
/// in a pipe; checks it succeeded and returns what each received.
fn run(args: &[&str], stdin: &[u8], which: OnTerminal) -> Ran {
    let (master, slave) = pty();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("weida"));
    // A terminal that can draw (CI may run with TERM unset or dumb).
    cmd.args(args).env("TERM", "xterm").stdin(Stdio::piped());
    let terminal = Stdio::from(slave.try_clone().unwrap());
    match which {
        OnTerminal::Stdout => cmd.stdout(terminal).stderr(Stdio::piped()),
        OnTerminal::Stderr => cmd.stderr(terminal).stdout(Stdio::piped()),
    };
    let mut child = cmd.spawn().expect("weida starts");
    // Only the child holds the terminal now (the command kept a copy): once it exits,
    // reading the master ends (EIO).
    drop((cmd, slave));
    let reader = std::thread::spawn(move || {
        let mut master = File::from(master);
        let mut got = Vec::new();
        let mut buf = [0u8; 64 * 1024];
        loop {
            match master.read(&mut buf) {
                Ok(0) => return got,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.raw_os_error() == Some(libc::EIO) => return got,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("reading the terminal: {e}"),
            }
        }
    });
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    // Waited for on a thread, so a run that never ends fails the test instead of hanging it.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let out = rx
        .recv_timeout(PATIENCE)
        .expect("weida exits")
        .expect("its output");
    let terminal = reader.join().unwrap();
    let piped = match which {
        OnTerminal::Stdout => out.stderr,
        OnTerminal::Stderr => out.stdout,
    };
    assert!(
        out.status.success(),
        "{}: {}{}",
        out.status,
        String::from_utf8_lossy(&terminal),
        String::from_utf8_lossy(&piped)
    );
    Ran { terminal, piped }
}

#[test]
fn req_ends_a_raw_reply_with_a_newline_on_a_terminal_only() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    // A reply from an argument, then one streamed from stdin: a newline only where missing,
    // none after an empty reply (the prompt is on its own line already).
    for (args, stdin, shown) in [
        (vec!["hello"], "", "hello\n"),
        (vec!["two\n"], "", "two\n"),
        (vec![""], "", ""),
        (vec!["-"], "streamed", "streamed\n"),
    ] {
        let mut all = vec!["req", rep.address.as_str()];
        all.extend(args.iter().copied());
        let ran = run(&all, stdin.as_bytes(), OnTerminal::Stdout);
        assert_eq!(String::from_utf8_lossy(&ran.terminal), shown, "{args:?}");
        // Into a pipe, the reply's bytes exactly.
        let piped = common::weida()
            .args(&all)
            .write_stdin(stdin)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let expected = if args == ["-"] { stdin } else { args[0] };
        assert_eq!(String::from_utf8_lossy(&piped), expected, "{args:?}");
    }
}

#[test]
fn progress_is_drawn_on_a_terminal_and_never_on_stdout() {
    let rep = Served::start(&["rep", "--echo", "--quiet", "weida://127.0.0.1:0/echo"]);
    let body = noise(1_500_000);
    let ran = run(&["req", &rep.address, "-"], &body, OnTerminal::Stderr);
    assert!(ran.piped == body, "stdout is the reply alone, byte-exact");
    let drawn = String::from_utf8_lossy(&ran.terminal);
    // The request's input (a pipe: no size, a spinner with the bytes), and the raw reply.
    assert!(
        drawn.contains("stdin ") && drawn.contains("reply "),
        "{drawn}"
    );
    assert!(drawn.contains("MiB"), "{drawn}");
}
