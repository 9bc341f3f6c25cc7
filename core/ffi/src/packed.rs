//! Packed batches: many message bodies in one buffer, so a batch crosses a foreign boundary as
//! one value instead of one value per message, and the budget of one such batch. Every binding
//! that packs uses this module: Node's receives (node/src/stream.rs `batch_out`), the Kotlin and
//! Swift receives (kotlin-swift/uniffi/src/packed.rs, which adds a per-message index of what
//! arrived with each body), and `sendMany` in Node, Kotlin and Swift (packed by lib/index.ts
//! `pack`, Weida.kt and Weida.swift `packed`, read back by [`unpack`]). The layout is private to
//! weida and its bindings, not a wire format.
//!
//! The layout of `n` bodies totalling `t` bytes, [`packed_len`]`(n, t)` bytes in all:
//!
//! ```text
//! body 0 | body 1 | ... | body n-1 | zeros to a multiple of 4 | end 0 | ... | end n-1
//! ```
//!
//! where `end i` is where body `i` ends (so body `i` is `[end i-1, end i)`, body 0 starting
//! at 0), a little-endian u32. The offsets are aligned, so JS may read them through a typed
//! array, and come after the bodies, so a writer learns them as it copies (test
//! `the_layout_is_the_bodies_end_to_end_then_each_end_aligned`).
//!
//! A packed batch is bounded ([`over_budget`]): at most [`PACK_COUNT`] messages and
//! [`PACK_BYTES`] of bodies, unless its first message alone is larger; what is over goes back
//! to the front of the endpoint's queue in order ([`keep_one_batch`]).

use std::fmt;

use bytes::Bytes;
use weida::{Message, Receiving};

use crate::inbox::give_back;

/// The most messages in one packed batch: the UniFFI index numbers a message's origin in 16
/// bits (kotlin-swift/uniffi/src/packed.rs), and a batch this large already amortises the call.
pub const PACK_COUNT: usize = u16::MAX as usize;

/// The most bytes of bodies in one packed batch, unless its first message alone is larger: the
/// default `max_collected_body`, far below a JVM array's or UniFFI's 2 GiB and the offsets'
/// 4 GiB, so a batch of large messages cannot overflow either.
pub const PACK_BYTES: usize = 16 << 20;

/// The most bytes of bodies a binding that can hand a body over by reference (Node's external
/// `Buffer`s) packs into one foreign buffer; above it (or for a single message) each body
/// crosses on its own ([`packs_whole`]). Two reasons: a body the application keeps keeps its
/// whole batch's buffer alive, as a pooled Node `Buffer` does its pool, so this bounds what one
/// held message pins; and a large body is shared without a copy, which packing would add. The
/// UniFFI bindings copy every body into the foreign heap anyway (each `ByteArray` or `Data` is
/// sliced out of the batch; Swift's `recvBatch` copies runs of bodies of at most this many
/// bytes into buffers its views share, for the first reason), so they pack whatever the size.
pub const ONE_BUFFER_MAX: usize = 64 * 1024;

/// Whether `count` bodies totalling `bytes` cross as one packed buffer in a binding that can
/// also hand them over one by one ([`ONE_BUFFER_MAX`]): one allocation for the batch instead of
/// one per message (a `Buffer` per 64 B body was ~8 % of Node's receiving thread).
pub fn packs_whole(count: usize, bytes: usize) -> bool {
    count > 1 && bytes <= ONE_BUFFER_MAX
}

/// How many of `ms` go in one packed batch ([`PACK_COUNT`], [`PACK_BYTES`]): at least one, and
/// the longest prefix within both caps.
pub fn budget(ms: &[Message]) -> usize {
    let mut bytes = 0usize;
    ms.iter()
        .take(PACK_COUNT)
        .position(|m| {
            bytes = bytes.saturating_add(m.body.len());
            bytes > PACK_BYTES
        })
        .map_or(ms.len().min(PACK_COUNT), |i| i.max(1))
}

/// What of `ms` is beyond one packed batch ([`budget`]), split off in order; the first message
/// always stays (tests `a_batch_above_its_byte_budget_is_split_in_order_keeping_at_least_one`,
/// `a_batch_above_its_count_is_split_at_pack_count`).
pub fn over_budget(ms: &mut Vec<Message>) -> Vec<Message> {
    ms.split_off(budget(ms))
}

/// Keeps in `ms` one packed batch ([`over_budget`]) and gives the rest back to the front of
/// `r`'s queue, in order, so the next receive takes it first (test
/// `what_is_over_budget_goes_back_to_the_front_in_order`).
pub fn keep_one_batch<R: Receiving>(r: &R, ms: &mut Vec<Message>) {
    let rest = over_budget(ms);
    if !rest.is_empty() {
        give_back(r, rest);
    }
}

/// The bytes `count` bodies totalling `bytes` take packed: the bodies, zeros to a multiple of 4,
/// and an offset each.
pub fn packed_len(count: usize, bytes: usize) -> usize {
    bytes.next_multiple_of(4) + 4 * count
}

/// Writes `bodies` packed into `dst`, which is exactly [`packed_len`] of them long (a buffer the
/// foreign side allocated, written in place: Node's `Buffer`).
///
/// # Panics
///
/// If `dst` is not that long, or the bodies total above 4 GiB (the offsets are u32; a batch
/// within [`budget`] is 16 MiB at most unless one message alone is larger, which needs a
/// `max_collected_body` raised above 4 GiB).
pub fn pack_into<'a>(dst: &mut [u8], bodies: impl ExactSizeIterator<Item = &'a [u8]>) {
    let ends_at = dst
        .len()
        .checked_sub(4 * bodies.len())
        .expect("dst is packed_len long");
    let (out, ends) = dst.split_at_mut(ends_at);
    let mut at = 0;
    for (b, end) in bodies.zip(ends.chunks_exact_mut(4)) {
        out[at..at + b.len()].copy_from_slice(b);
        at += b.len();
        let offset = u32::try_from(at).expect("a packed batch above 4 GiB");
        end.copy_from_slice(&offset.to_le_bytes());
    }
    assert_eq!(at.next_multiple_of(4), ends_at, "dst is packed_len long");
    out[at..].fill(0);
}

/// `bodies` packed, in a new buffer ([`pack_into`], which says when it panics).
pub fn pack<'a>(bodies: impl ExactSizeIterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let total = bodies.clone().map(<[u8]>::len).sum();
    let mut out = vec![0; packed_len(bodies.len(), total)];
    pack_into(&mut out, bodies);
    out
}

/// The bodies of messages, in order, as [`pack_into`] takes them.
pub fn bodies(ms: &[Message]) -> impl ExactSizeIterator<Item = &[u8]> + Clone {
    ms.iter().map(|m| &m.body[..])
}

/// A packed batch that is not in the layout ([module doc](self)) for the count given with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a packed batch is malformed")
    }
}

impl std::error::Error for Malformed {}

/// A malformed batch is the caller's bad argument: INVALID_CONFIG, as a bad option is.
impl From<Malformed> for crate::Fail {
    fn from(m: Malformed) -> Self {
        Self::Core(weida::Error::InvalidConfig(m.to_string()))
    }
}

/// The `count` bodies packed in `all`, each a slice of it: a whole batch crossed as one value
/// and costs one copy, not a conversion and an allocation per body. Whatever `all` and `count`
/// are (they come from a foreign caller), this returns [`Malformed`] rather than panic, and
/// allocates at most one slice handle per 4 bytes of `all` (`count` is checked against its
/// size first): the offsets must not decrease, the last must round up to where they start,
/// and the padding must be zeros (test `malformed_packed_batches_are_refused_never_a_panic`).
pub fn unpack(all: Bytes, count: usize) -> Result<Vec<Bytes>, Malformed> {
    let ends_at = count
        .checked_mul(4)
        .and_then(|n| all.len().checked_sub(n))
        .ok_or(Malformed)?;
    let mut out = Vec::with_capacity(count);
    let mut start = 0;
    for end in all[ends_at..].chunks_exact(4) {
        let end = usize::try_from(u32::from_le_bytes([end[0], end[1], end[2], end[3]]))
            .map_err(|_| Malformed)?;
        if end < start || end > ends_at {
            return Err(Malformed);
        }
        out.push(all.slice(start..end));
        start = end;
    }
    // Only the padding, zeros, may lie between the last body and the offsets: a batch that
    // reads back is the one batch of its bodies the layout allows.
    if start.next_multiple_of(4) != ends_at || all[start..ends_at].iter().any(|&b| b != 0) {
        return Err(Malformed);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use weida::IncomingMeta;

    use super::*;

    fn messages(sizes: &[usize]) -> Vec<Message> {
        let meta = Arc::new(IncomingMeta::default());
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| Message {
                meta: Arc::clone(&meta),
                body: Bytes::from(vec![i as u8; n]),
            })
            .collect()
    }

    fn lens(ms: &[Message]) -> Vec<usize> {
        ms.iter().map(|m| m.body.len()).collect()
    }

    #[test]
    fn the_layout_is_the_bodies_end_to_end_then_each_end_aligned() {
        let packed = pack([&b"ab"[..], b"", b"cde"].into_iter());
        assert_eq!(
            packed,
            [
                b'a', b'b', b'c', b'd', b'e', 0, 0, 0, // bodies, zeros to 8
                2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, // ends, u32 LE
            ]
        );
        assert_eq!(packed.len(), packed_len(3, 5));
        let back = unpack(Bytes::from(packed), 3).unwrap();
        assert_eq!(back, [&b"ab"[..], b"", b"cde"]);

        // Aligned already: no padding; nothing at all: nothing.
        assert_eq!(
            pack([&b"abcd"[..]].into_iter()),
            [b'a', b'b', b'c', b'd', 4, 0, 0, 0]
        );
        assert!(pack(std::iter::empty::<&[u8]>()).is_empty());
        assert_eq!(unpack(Bytes::new(), 0).unwrap(), Vec::<Bytes>::new());
    }

    #[test]
    fn pack_into_writes_a_buffer_it_was_given_whole() {
        let ms = messages(&[1, 6, 0]);
        // Dirty, as a freshly allocated foreign buffer may be: the padding is zeroed.
        let mut dst = vec![0xff; packed_len(3, 7)];
        pack_into(&mut dst, bodies(&ms));
        assert_eq!(dst, pack(bodies(&ms)));
        let back = unpack(Bytes::from(dst), 3).unwrap();
        assert_eq!(back.iter().map(Bytes::len).collect::<Vec<_>>(), [1, 6, 0]);
        assert_eq!(back[1], ms[1].body);
    }

    #[test]
    fn malformed_packed_batches_are_refused_never_a_panic() {
        let good = pack([&b"ab"[..], b"cde"].into_iter());
        let refused = |all: Vec<u8>, count: usize| unpack(Bytes::from(all), count).is_err();
        // A count the buffer cannot hold, up to one whose offsets' size overflows.
        assert!(refused(good.clone(), 4));
        assert!(refused(good.clone(), usize::MAX / 4 + 1));
        assert!(refused(good.clone(), usize::MAX));
        assert!(refused(vec![], 1));
        // A count too small: the last end read is not where the offsets start.
        assert!(refused(good.clone(), 1));
        // Bytes after nothing.
        assert!(refused(vec![0; 3], 0));
        // An end past the bodies, a decreasing end, an end short of the padding.
        let mut past = good.clone();
        past[12] = 9;
        assert!(refused(past, 2));
        let mut back = good.clone();
        back[8] = 4;
        back[12] = 3;
        assert!(refused(back, 2));
        let mut short = good.clone();
        short[12] = 3;
        assert!(refused(short, 2));
        // Padding that is not zeros (good's bodies end at 5, its padding is bytes 5 to 7).
        for at in 5..8 {
            let mut dirty = good.clone();
            dirty[at] = 1;
            assert!(refused(dirty, 2), "padding byte {at}");
        }
        // A huge offset.
        let mut huge = good.clone();
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(refused(huge, 2));
        // Every truncation and every count of a good batch: an answer, never a panic.
        for cut in 0..=good.len() {
            for count in 0..8 {
                let r = unpack(Bytes::copy_from_slice(&good[..cut]), count);
                let whole = (cut == good.len() && count == 2) || (cut == 0 && count == 0);
                assert_eq!(r.is_ok(), whole, "{cut} {count}");
            }
        }
    }

    #[test]
    fn a_batch_above_its_byte_budget_is_split_in_order_keeping_at_least_one() {
        let mut ms = messages(&[PACK_BYTES / 2, PACK_BYTES / 2, 1, 2]);
        let rest = over_budget(&mut ms);
        assert_eq!(lens(&ms), [PACK_BYTES / 2; 2]);
        assert_eq!(lens(&rest), [1, 2]);

        let mut one = messages(&[PACK_BYTES + 1, 3]);
        let rest = over_budget(&mut one);
        assert_eq!(
            (lens(&one), lens(&rest)),
            (vec![PACK_BYTES + 1], vec![3]),
            "a first message above the budget still goes, alone"
        );

        let mut within = messages(&[PACK_BYTES - 1, 1]);
        assert!(over_budget(&mut within).is_empty());
        assert_eq!(within.len(), 2);
        assert!(over_budget(&mut Vec::new()).is_empty());
    }

    #[test]
    fn a_batch_above_its_count_is_split_at_pack_count() {
        let mut ms = messages(&vec![0; PACK_COUNT + 5]);
        let rest = over_budget(&mut ms);
        assert_eq!((ms.len(), rest.len()), (PACK_COUNT, 5));
        // In order: the messages were numbered by their first byte (`i as u8`).
        let mut ms = messages(&vec![1; PACK_COUNT + 5]);
        let rest = over_budget(&mut ms);
        assert_eq!(rest[0].body[0], (PACK_COUNT % 256) as u8);
        assert_eq!(rest[4].body[0], ((PACK_COUNT + 4) % 256) as u8);
    }

    #[test]
    fn what_is_over_budget_goes_back_to_the_front_in_order() {
        let p = crate::testing::pair();
        let mut ms = messages(&vec![1; PACK_COUNT + 3]);
        keep_one_batch(&p.puller, &mut ms);
        assert_eq!(ms.len(), PACK_COUNT);
        let next = crate::inbox::take_now(&p.puller, 10).unwrap().unwrap();
        assert_eq!(
            next.iter().map(|m| m.body[0]).collect::<Vec<_>>(),
            [PACK_COUNT, PACK_COUNT + 1, PACK_COUNT + 2].map(|i| (i % 256) as u8)
        );
    }

    #[test]
    fn a_malformed_batch_is_the_callers_invalid_config() {
        let f = crate::Fail::from(Malformed);
        assert_eq!(f.code(), Some(weida::ErrorCode::InvalidConfig));
        assert!(f.message().contains("malformed"), "{}", f.message());
    }

    #[test]
    fn only_a_small_batch_of_several_packs_whole() {
        assert!(packs_whole(2, ONE_BUFFER_MAX));
        assert!(!packs_whole(2, ONE_BUFFER_MAX + 1));
        assert!(!packs_whole(1, 10));
        assert!(!packs_whole(0, 0));
    }
}
