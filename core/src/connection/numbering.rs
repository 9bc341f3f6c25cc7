//! A sender's PerProducer numbering on one connection (PROTOCOL.md §3.3, §4): a producer name
//! and the next number, for a pusher whose peer required ordering.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::wire::Header;

/// One producer's numbering: messages are numbered from 1 in the order they are queued.
#[derive(Debug)]
pub(crate) struct Numbering {
    /// Opaque, 8 random bytes: distinct per connection, so a redialled connection is a new
    /// producer whose numbers restart without a false gap at the receiver.
    producer: Bytes,
    last: AtomicU64,
}

impl Numbering {
    pub(crate) fn new() -> Self {
        // Distinctness, not secrecy: a producer name only has to differ between producers.
        let producer: [u8; 8] = rand::random();
        Self {
            producer: Bytes::copy_from_slice(&producer),
            last: AtomicU64::new(0),
        }
    }

    /// Gives `header` the next number and this producer's name.
    pub(crate) fn number(&self, header: &mut Header) {
        self.stamp(header, self.take());
    }

    /// Takes the next number without a header: a copy numbered when it is queued, which keeps
    /// its number if it is then dropped, so the drop is a gap at the receiver.
    pub(crate) fn take(&self) -> u64 {
        self.last.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Gives `header` the number `seq` (one [`Numbering::take`] gave) and this producer's name.
    pub(crate) fn stamp(&self, header: &mut Header, seq: u64) {
        header.sequence = Some(seq);
        header.producer = Some(self.producer.clone());
    }

    /// `header` as numbered, at its largest: for the peer's header bound before a number is
    /// taken.
    pub(crate) fn largest(&self, header: &Header) -> Header {
        let mut h = header.clone();
        h.sequence = Some(crate::wire::varint::MAX);
        h.producer = Some(self.producer.clone());
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_start_at_one_and_name_the_producer() {
        let n = Numbering::new();
        let (mut a, mut b) = (Header::default(), Header::default());
        n.number(&mut a);
        n.number(&mut b);
        assert_eq!((a.sequence, b.sequence), (Some(1), Some(2)));
        assert_eq!(a.producer, b.producer);
        assert_eq!(a.producer.as_ref().map(Bytes::len), Some(8));
        assert_ne!(a.producer, Numbering::new().largest(&a).producer);
    }
}
