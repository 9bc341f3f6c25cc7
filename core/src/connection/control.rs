//! The reader of a control stream (PROTOCOL.md §3.1): whole frames out of its bytes.

use crate::error::{Error, Result};
use crate::transport::reader::StreamReader;
use crate::transport::RecvHalf;
use crate::wire::ControlFrame;

/// Reads control frames from a control stream.
pub(crate) struct ControlReader {
    reader: StreamReader,
    buf: Vec<u8>,
}

impl ControlReader {
    pub(crate) fn new(recv: RecvHalf) -> Self {
        Self {
            reader: StreamReader::new(recv),
            buf: Vec::new(),
        }
    }

    pub(crate) fn with_reader(reader: StreamReader) -> Self {
        Self {
            reader,
            buf: Vec::new(),
        }
    }

    /// The next whole frame; None at the peer's FIN. Cancel-safe: a frame read in part stays
    /// buffered for the next call.
    pub(crate) async fn next(&mut self) -> Result<Option<ControlFrame>> {
        loop {
            match ControlFrame::decode(&self.buf) {
                Ok(Some((f, used))) => {
                    self.buf.drain(..used);
                    return Ok(Some(f));
                }
                Ok(None) => {}
                // A version this side does not speak is a failed negotiation, not a bad frame.
                Err(crate::wire::DecodeError::Unsupported(what)) => {
                    return Err(Error::NegotiationFailed(format!("unsupported {what}")))
                }
                Err(e) => return Err(Error::Protocol(format!("control stream: {e}"))),
            }
            match self.reader.chunk(64 * 1024).await {
                Ok(Some(b)) => self.buf.extend_from_slice(&b),
                Ok(None) => return Ok(None),
                Err(e) => return Err(e.into_read_error()),
            }
        }
    }
}
