//! Where a client's bodies come from: a file or stdin, read line by line or in chunks. Chunks
//! are handed on as they are read, so a whole-input message is never held in memory.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use indicatif::ProgressBar;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::exit::Failure;
use crate::progress;

/// How much one read takes: the core's own read chunk (`READ_CHUNK` in core/src/stream.rs),
/// large enough that a write per chunk costs little, small enough to stream in constant memory.
const CHUNK: usize = 64 * 1024;

/// An open input.
pub(crate) struct Input {
    reader: Box<dyn AsyncBufRead + Unpin + Send>,
    name: String,
    /// The bytes read so far, of the size when it is known, when progress is drawn (a long
    /// input is a long transfer: what is read is written on at once). Cleared when dropped.
    read: Option<ProgressBar>,
}

impl Input {
    /// `file`, or stdin when `None`.
    pub(crate) async fn open(file: Option<&Path>) -> Result<Self, Failure> {
        Ok(match file {
            Some(p) => {
                let opened = tokio::fs::File::open(p).await;
                let f = opened
                    .map_err(|e| Failure::from(e).context(format!("opening {}", p.display())))?;
                let size = f
                    .metadata()
                    .await
                    .ok()
                    .filter(|m| m.is_file())
                    .map(|m| m.len());
                let label = p.file_name().unwrap_or(p.as_os_str()).to_string_lossy();
                Self {
                    reader: Box::new(BufReader::with_capacity(CHUNK, f)),
                    read: progress::bytes(&label, size),
                    name: p.display().to_string(),
                }
            }
            None => {
                // Waiting on a terminal with no prompt looks like a hang; what is typed there
                // is no transfer to draw.
                let typed = std::io::IsTerminal::is_terminal(&std::io::stdin());
                if typed {
                    eprintln!("reading stdin (end it with Ctrl-D)");
                }
                Self {
                    reader: Box::new(BufReader::with_capacity(CHUNK, tokio::io::stdin())),
                    read: if typed {
                        None
                    } else {
                        progress::bytes("stdin", stdin_size())
                    },
                    name: "stdin".into(),
                }
            }
        })
    }

    /// The next line without its `\n` (nor a `\r` before it), `None` at the end. A last line
    /// without a newline is still a line; an empty line is an empty message.
    pub(crate) async fn line(&mut self) -> Result<Option<Bytes>, Failure> {
        let mut buf = Vec::new();
        let n = self
            .reader
            .read_until(b'\n', &mut buf)
            .await
            .map_err(|e| self.failed(e))?;
        if n == 0 {
            return Ok(None);
        }
        self.count(n);
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        Ok(Some(Bytes::from(buf)))
    }

    /// The next chunk as read, `None` at the end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
        let mut buf = BytesMut::with_capacity(CHUNK);
        let n = self
            .reader
            .read_buf(&mut buf)
            .await
            .map_err(|e| self.failed(e))?;
        self.count(n);
        Ok((n > 0).then(|| buf.freeze()))
    }

    fn count(&self, n: usize) {
        if let Some(read) = &self.read {
            read.inc(n as u64);
        }
    }

    fn failed(&self, e: std::io::Error) -> Failure {
        Failure::from(e).context(format!("reading {}", self.name))
    }
}

/// The size of stdin when it is a regular file (`weida push --whole < big.iso`), so its
/// progress has a total; `None` for a pipe or a terminal.
fn stdin_size() -> Option<u64> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let meta = std::fs::File::from(fd).metadata().ok()?;
    meta.is_file().then_some(meta.len())
}

/// Where the bodies come from, from the command line.
pub(crate) enum Source {
    /// Each argument is one message.
    Args(Vec<String>),
    /// One message per line of a file or stdin (`None`).
    Lines(Option<PathBuf>),
    /// A file or stdin (`None`) as one streamed message.
    Whole(Option<PathBuf>),
}

/// Whole bodies, one per message, from arguments or lines.
pub(crate) enum Bodies {
    /// What is left of the arguments.
    Args(std::vec::IntoIter<String>),
    /// The lines of an input.
    Lines(Input),
}

impl Bodies {
    /// The next body, `None` after the last.
    pub(crate) async fn next(&mut self) -> Result<Option<Bytes>, Failure> {
        match self {
            Self::Args(args) => Ok(args.next().map(Bytes::from)),
            Self::Lines(input) => input.line().await,
        }
    }
}
