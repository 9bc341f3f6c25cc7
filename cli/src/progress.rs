//! The progress lines a long transfer draws on stderr, as `weida bench` draws its rate: bytes
//! and rate against the total when the size is known, a spinner with the bytes when it is not.
//! Drawn only where someone watches (`shown`), never on stdout, and cleared when done, so what
//! a command prints is the same with or without them.

use std::ffi::OsStr;
use std::fmt::Display;
use std::io::IsTerminal;
use std::sync::OnceLock;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

/// How often a line may be redrawn (indicatif's own default for stderr).
const REDRAWS_PER_SEC: u8 = 20;

/// Where the lines are drawn: `None` when they are not drawn at all.
static LINES: OnceLock<Option<MultiProgress>> = OnceLock::new();
/// Whether stdout is a terminal, where what is printed shares the screen with the lines.
static STDOUT_IS_TERMINAL: OnceLock<bool> = OnceLock::new();

/// Whether progress is drawn: as `--progress` / `--no-progress` say (`forced`), else only when
/// stderr is a terminal that can draw one (not `TERM=dumb`): a pipe, a file or a log never
/// fills with redraws.
pub(crate) fn shown(forced: Option<bool>, stderr_is_terminal: bool, term: Option<&OsStr>) -> bool {
    forced.unwrap_or(stderr_is_terminal && term.is_none_or(|t| t != "dumb"))
}

/// Decides once, at start, whether this process draws progress (see [`shown`]).
pub(crate) fn init(forced: Option<bool>) {
    let draw = shown(
        forced,
        std::io::stderr().is_terminal(),
        std::env::var_os("TERM").as_deref(),
    );
    // Drawn on stderr as it is, terminal or not: the decision is made above, and indicatif's
    // own check would hide a forced line.
    let lines = draw.then(|| {
        MultiProgress::with_draw_target(ProgressDrawTarget::term_like_with_hz(
            Box::new(console::Term::buffered_stderr()),
            REDRAWS_PER_SEC,
        ))
    });
    let _ = LINES.set(lines);
    let _ = STDOUT_IS_TERMINAL.set(std::io::stdout().is_terminal());
}

fn lines() -> Option<&'static MultiProgress> {
    LINES.get().and_then(Option::as_ref)
}

/// True when this process draws progress.
pub(crate) fn drawn() -> bool {
    lines().is_some()
}

/// A line for `what` (a file's name, `stdin`, `reply`) moving `total` bytes, or an unknown
/// number: bytes, total, rate and a bar when the total is known, else a spinner with the
/// bytes and the rate. `None` when progress is not drawn. Cleared when dropped.
pub(crate) fn bytes(what: &str, total: Option<u64>) -> Option<ProgressBar> {
    bytes_from(what, total, 0)
}

/// [`bytes`] for a transfer first seen when `at` bytes had already moved: the rate counts
/// from now, not as if `at` had moved in an instant.
pub(crate) fn bytes_from(what: &str, total: Option<u64>, at: u64) -> Option<ProgressBar> {
    let lines = lines()?;
    let template = match total {
        Some(_) => "{prefix} {bytes}/{total_bytes} {binary_bytes_per_sec} [{bar:30}] {eta}",
        None => "{prefix} {spinner} {bytes} {binary_bytes_per_sec}",
    };
    // Hidden until it is added below, so nothing is drawn before its position is set.
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
    let style = ProgressStyle::with_template(template)
        .expect("a valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(what.to_string());
    bar.set_position(at);
    bar.reset_eta();
    let line = lines.add(bar.with_finish(ProgressFinish::AndClear));
    // Drawn at once, whatever the redraw budget: a transfer that starts shows, even when the
    // lines before it used the budget up and it ends within the next redraw.
    line.force_draw();
    Some(line)
}

/// `bar` drawn with the others, or hidden when progress is not drawn.
pub(crate) fn add(bar: ProgressBar) -> ProgressBar {
    match lines() {
        Some(lines) => lines.add(bar.with_finish(ProgressFinish::AndClear)),
        None => ProgressBar::hidden(),
    }
}

/// A line of text on stderr that a progress line being drawn cannot garble: the lines are
/// cleared, the text printed, and the lines drawn again below it.
pub(crate) fn note(text: impl Display) {
    match lines() {
        Some(lines) => lines.suspend(|| eprintln!("{text}")),
        None => eprintln!("{text}"),
    }
}

/// Runs `print`, a write to stdout, so that it cannot garble a progress line: around it the
/// lines are cleared and drawn again when stdout is a terminal (the screen they share). Into a
/// pipe or a file, `print` just runs.
pub(crate) fn above<T>(print: impl FnOnce() -> T) -> T {
    match lines() {
        Some(lines) if STDOUT_IS_TERMINAL.get() == Some(&true) => lines.suspend(print),
        _ => print(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_drawn_on_a_terminal_unless_forced_either_way() {
        let xterm = Some(OsStr::new("xterm"));
        assert!(shown(None, true, xterm));
        assert!(shown(None, true, None));
        assert!(!shown(None, false, xterm), "a pipe or a file");
        assert!(!shown(None, true, Some(OsStr::new("dumb"))));
        assert!(shown(Some(true), false, xterm), "--progress");
        assert!(!shown(Some(false), true, xterm), "--no-progress");
    }
}
