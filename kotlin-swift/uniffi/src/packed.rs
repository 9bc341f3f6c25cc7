//! [`Packed`]: received messages in the shape that is cheap to lift in Kotlin and Swift, and
//! [`take_ready`], the receive that needs no Rust future.
//!
//! Through JNA every FFI call allocates native structures that JNA tracks in a process-wide
//! map, and every lifted record field is a read of its own (Swift's generated readers go
//! through Foundation's generic copies); a `Vec<Message>` costs two UTF-8 strings (the path
//! and the peer's fingerprint) and a record per message (docs/PERFORMANCE.md, "Kotlin",
//! "Swift"). Here a batch is four fields whatever its size: the count, the bodies packed in
//! weida-ffi's layout (`weida_ffi::packed`, as Node's receives and `sendMany` pack them), a
//! fixed-width index of what else each message came with, and what the messages share (path,
//! peer, topic), once per run of messages that share it (looked up among the last [`SCAN`]
//! distinct ones). The Kotlin and Swift layers turn it back into `Message`s
//! (`Packed.messages()` in Weida.kt and Weida.swift); the layout is private to those files,
//! weida-ffi and this one, not a wire format.
//!
//! A packed batch is bounded by weida-ffi's budget (`weida_ffi::packed::over_budget`: at most
//! 65,535 messages, so an origin's index fits in 16 bits, and 16 MiB of bodies unless its first
//! message alone is larger, so a batch of large messages cannot overflow a JVM array or
//! UniFFI's 32-bit lengths). What is left over goes back to the front of the endpoint's queue,
//! in order.

use std::sync::Arc;

use weida::{IncomingMeta, Message as CoreMessage, Receiving};
use weida_ffi::call::ready_turn;
use weida_ffi::inbox::take_now;
use weida_ffi::packed as shared;

use crate::blob::Blob;
use crate::error::Result;
use crate::patterns::{entries, peer, MetaEntry, Peer};

/// Received messages, packed ([module doc](self)).
#[derive(Debug, Clone, Default, uniffi::Record)]
pub struct Packed {
    /// How many messages.
    pub count: u32,
    /// Every body, in order, packed as weida-ffi packs a batch: the bodies end to end, zeros to
    /// a multiple of 4, then where each body ends (a little-endian u32 each, `count` of them).
    pub bodies: Blob,
    /// Per message, in order, big-endian: its origin's index in `origins` (u16), flags (u8: 1
    /// a sequence number follows, 2 a gap follows), then the sequence number (u64) and the gap
    /// (u64) when flagged.
    pub index: Blob,
    /// What the messages came with, one origin for each run of messages that share it, end to
    /// end, big-endian, each: the path (a string); the peer (u8: 0 none, 1 a QUIC key, its
    /// fingerprint a string, 2 an AF_UNIX peer, uid u32, gid u32, pid i32); the topic (u8: 0
    /// none, 1 a string follows); the metadata (u32 entries, each a name string and a value,
    /// a u32 length and the bytes). A string is a u32 length and its UTF-8. One blob, read in
    /// place by the Kotlin and Swift layers: lifted as UniFFI records, two or three strings
    /// each, the origins took 22 % of a Swift receive of one message in a profile, the
    /// whole `Packed` record 38 % (docs/PERFORMANCE.md, "Ready calls in one FFI call").
    pub origins: Blob,
}

/// Appends `b` with its u32 length.
fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    let n = u32::try_from(b.len()).expect("a path, topic, key or metadata entry above 4 GiB");
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(b);
}

/// Appends the origin of a message that came with `meta` (the layout: [`Packed::origins`]).
fn put_origin(out: &mut Vec<u8>, meta: &IncomingMeta) {
    put_bytes(out, meta.path.as_bytes());
    match peer(meta.peer.as_ref()) {
        None => out.push(0),
        Some(Peer::Key { fingerprint }) => {
            out.push(1);
            put_bytes(out, fingerprint.as_bytes());
        }
        Some(Peer::Local { uid, gid, pid }) => {
            out.push(2);
            out.extend_from_slice(&uid.to_be_bytes());
            out.extend_from_slice(&gid.to_be_bytes());
            out.extend_from_slice(&pid.to_be_bytes());
        }
    }
    match &meta.topic {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            put_bytes(out, t.as_bytes());
        }
    }
    let entries = entries(&meta.metadata);
    let n = u32::try_from(entries.len()).expect("at most u32::MAX metadata entries");
    out.extend_from_slice(&n.to_be_bytes());
    for MetaEntry { name, value } in &entries {
        put_bytes(out, name.as_bytes());
        put_bytes(out, value);
    }
}

/// Origins looked up before a new one is added: a batch comes from few peers.
pub const SCAN: usize = 8;

/// `ms` packed, in order (at most one batch: `weida_ffi::packed::over_budget` first).
pub(crate) fn pack(ms: &[CoreMessage]) -> Packed {
    let count = u32::try_from(ms.len()).expect("at most PACK_COUNT messages are packed");
    let (index, origins) = described(ms);
    Packed {
        count,
        bodies: Blob(shared::pack(shared::bodies(ms))),
        index: Blob(index),
        origins: Blob(origins),
    }
}

/// The index and the origins of `ms` ([`Packed::index`], [`Packed::origins`]).
fn described(ms: &[CoreMessage]) -> (Vec<u8>, Vec<u8>) {
    let mut index = Vec::with_capacity(ms.len() * 3);
    let mut origins = Vec::new();
    let mut made = 0usize;
    // The metadata each origin was made from, to compare the next message's against.
    let mut seen: Vec<(usize, Arc<IncomingMeta>)> = Vec::new();
    for m in ms {
        let found = seen
            .iter()
            .rev()
            .take(SCAN)
            .find(|(_, s)| same_origin(s, &m.meta))
            .map(|(i, _)| *i);
        let origin = match found {
            Some(i) => i,
            None => {
                let meta = &m.meta;
                put_origin(&mut origins, meta);
                let i = made;
                made += 1;
                if meta.metadata.is_empty() {
                    seen.push((i, Arc::clone(meta)));
                }
                i
            }
        };
        let origin = u16::try_from(origin).expect("at most PACK_COUNT messages are packed");
        let flags = u8::from(m.meta.sequence.is_some()) | (u8::from(m.meta.gap.is_some()) << 1);
        index.extend_from_slice(&origin.to_be_bytes());
        index.push(flags);
        for v in [m.meta.sequence, m.meta.gap].into_iter().flatten() {
            index.extend_from_slice(&v.to_be_bytes());
        }
    }
    (index, origins)
}

/// A batch taken for the fast lane (`fast.rs`): its messages, with their index and origins
/// made, and their bodies not yet packed. [`Batch::write_some`] packs them straight into the
/// caller's buffer, so that each body is copied once on its way out of Rust: packed first into
/// a buffer of their own, they were copied twice, the first time into a zeroed allocation as
/// large as the batch (256 KiB at 1 KiB × 256), every batch (docs/PERFORMANCE.md, "Batches
/// written where they are read").
pub(crate) struct Batch {
    ms: Vec<CoreMessage>,
    bytes: usize,
    index: Vec<u8>,
    origins: Vec<u8>,
}

impl Batch {
    /// `ms` (at most one batch: `weida_ffi::packed::over_budget` first), described.
    pub(crate) fn new(ms: Vec<CoreMessage>) -> Self {
        let (index, origins) = described(&ms);
        let bytes = ms.iter().map(|m| m.body.len()).sum();
        Self {
            ms,
            bytes,
            index,
            origins,
        }
    }

    fn count(&self) -> u32 {
        u32::try_from(self.ms.len()).expect("at most PACK_COUNT messages are packed")
    }

    /// The bytes UniFFI writes for `Some(packed)`: the option's tag, the count, and each blob's
    /// length and bytes.
    pub(crate) fn written_len(&self) -> usize {
        1 + 4
            + 3 * 4
            + shared::packed_len(self.ms.len(), self.bytes)
            + self.index.len()
            + self.origins.len()
    }

    /// Writes `Some(packed)` as UniFFI writes it (test
    /// `a_batch_is_written_in_place_as_uniffi_writes_it`) into `out`, [`Batch::written_len`]
    /// bytes long, the bodies packed where they land.
    ///
    /// # Panics
    /// If `out` is not that long.
    pub(crate) fn write_some(&self, out: &mut [u8]) {
        assert_eq!(out.len(), self.written_len(), "out is written_len long");
        out[0] = 1;
        out[1..5].copy_from_slice(&self.count().to_be_bytes());
        let bodies = shared::packed_len(self.ms.len(), self.bytes);
        let mut at = 5;
        for (len, blob) in [
            (bodies, None),
            (self.index.len(), Some(&self.index)),
            (self.origins.len(), Some(&self.origins)),
        ] {
            // A blob is cut to an i32's length by the batch budget (`hand_out`'s note).
            let n = i32::try_from(len).expect("a blob above 2 GiB");
            out[at..at + 4].copy_from_slice(&n.to_be_bytes());
            let to = &mut out[at + 4..at + 4 + len];
            match blob {
                None => shared::pack_into(to, shared::bodies(&self.ms)),
                Some(b) => to.copy_from_slice(b),
            }
            at += 4 + len;
        }
    }

    /// The batch as a [`Packed`], for UniFFI's encoding: the answer of the UniFFI call
    /// [`take_ready`], and a lane's batch larger than the caller's buffer, kept for its next
    /// call.
    pub(crate) fn into_packed(self) -> Packed {
        Packed {
            count: self.count(),
            bodies: Blob(shared::pack(shared::bodies(&self.ms))),
            index: Blob(self.index),
            origins: Blob(self.origins),
        }
    }
}

/// Whether a message with `b` has the origin made from `a` (which has no metadata). The
/// messages of one lane share their metadata: the pointer compare settles most.
fn same_origin(a: &Arc<IncomingMeta>, b: &Arc<IncomingMeta>) -> bool {
    Arc::ptr_eq(a, b)
        || (b.metadata.is_empty() && a.path == b.path && a.peer == b.peer && a.topic == b.topic)
}

/// Up to `max` messages (at least one) that are ready now, packed, in one FFI call with no
/// future: what makes a receive of ready messages cheap on the JVM. None: nothing is ready,
/// take the waiting receive. An empty batch: this thread has finished
/// `weida_ffi::call::READY_STREAK` operations at once in a row, so the caller yields to its
/// dispatcher before it takes the waiting receive, and a stream of ready messages cannot
/// starve its other coroutines. The error a receive would report now is returned.
pub(crate) fn take_ready<R: Receiving>(r: &R, max: u32) -> Result<Option<Packed>> {
    Ok(take_ready_within(r, max, usize::MAX)?
        .0
        .map(Batch::into_packed))
}

/// [`take_ready`] whose batch, written as UniFFI writes an `Option<Packed>`, takes at most
/// `room` bytes unless its first message alone does not fit (the Kotlin fast lane's buffer,
/// `fast.rs`). What is left goes back to the front of the queue, in order. True with it when
/// the batch was cut to `room` (a larger buffer would have taken more).
pub(crate) fn take_ready_within<R: Receiving>(
    r: &R,
    max: u32,
    room: usize,
) -> Result<(Option<Batch>, bool)> {
    if !ready_turn() {
        return Ok((Some(Batch::new(Vec::new())), false));
    }
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    match take_now(r, max) {
        None => Ok((None, false)),
        Some(Ok(ms)) => {
            let (packed, cut) = pack_within(r, ms, room);
            Ok((Some(packed), cut))
        }
        Some(Err(f)) => Err(f.into()),
    }
}

/// One batch of `ms` (the batch budget), cut to what takes at most `room` bytes written as
/// UniFFI writes an `Option<Packed>` unless its first message alone does not fit; the rest
/// goes back to the front of `r`'s queue, in order. True with it when `room` cut it.
pub(crate) fn pack_within<R: Receiving>(
    r: &R,
    mut ms: Vec<CoreMessage>,
    room: usize,
) -> (Batch, bool) {
    let keep = shared::budget(&ms);
    let mut rest = ms.split_off(keep);
    let mut batch = Batch::new(ms);
    let cut = batch.written_len() > room && keep > 1;
    if cut {
        let fits = fitting(&batch.ms, batch.origins.len(), room);
        let mut ms = batch.ms;
        let mut over = ms.split_off(fits);
        over.append(&mut rest);
        rest = over;
        batch = Batch::new(ms);
    }
    // One give-back for all that is left, so that it keeps its order (not weida-ffi's
    // `keep_one_batch`: a second give-back, for what `room` cuts, would land behind it).
    if !rest.is_empty() {
        weida_ffi::inbox::give_back(r, rest);
    }
    (batch, cut)
}

/// How many of `ms` (at least one) fit in `room` bytes written, given the origins that all of
/// them need (those of a prefix are a prefix of those): each body with its end offset and its
/// index entry, and up to 3 bytes of padding.
fn fitting(ms: &[CoreMessage], origins: usize, room: usize) -> usize {
    let mut used = 1 + 4 + 3 * 4 + origins + 3;
    ms.iter()
        .position(|m| {
            let index = 3 + 8
                * (usize::from(m.meta.sequence.is_some()) + usize::from(m.meta.gap.is_some()));
            used = used.saturating_add(m.body.len() + 4 + index);
            used > room
        })
        .map_or(ms.len(), |i| i.max(1))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use weida_ffi::packed::{over_budget, PACK_COUNT};

    use super::*;

    fn messages(sizes: &[usize]) -> Vec<CoreMessage> {
        let meta = Arc::new(IncomingMeta::default());
        sizes
            .iter()
            .map(|&n| CoreMessage {
                meta: Arc::clone(&meta),
                body: Bytes::from(vec![n as u8; n]),
            })
            .collect()
    }

    /// The origin of a message with an empty path, no peer, no topic and no metadata.
    fn one_bare_origin() -> Vec<u8> {
        vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    }

    #[test]
    fn an_origin_is_its_path_peer_topic_and_metadata_end_to_end() {
        let mut meta = IncomingMeta::default();
        meta.path = "/p".into();
        meta.topic = Some("t".into());
        meta.peer = Some(weida::PeerIdentity::Local {
            uid: 1,
            gid: 2,
            pid: -3,
        });
        meta.metadata.insert("k", Bytes::from_static(b"v1"));
        let mut out = Vec::new();
        put_origin(&mut out, &meta);
        let mut want = vec![0, 0, 0, 2, b'/', b'p', 2, 0, 0, 0, 1, 0, 0, 0, 2];
        want.extend_from_slice(&(-3i32).to_be_bytes());
        want.extend_from_slice(&[1, 0, 0, 0, 1, b't', 0, 0, 0, 1]);
        want.extend_from_slice(&[0, 0, 0, 1, b'k', 0, 0, 0, 2, b'v', b'1']);
        assert_eq!(out, want);
    }

    #[test]
    fn a_full_batch_keeps_every_origin_index_in_16_bits() {
        let mut ms = messages(&vec![0; PACK_COUNT + 5]);
        let rest = over_budget(&mut ms);
        assert_eq!((ms.len(), rest.len()), (PACK_COUNT, 5));
        let p = pack(&ms);
        assert_eq!(
            p.origins.0,
            one_bare_origin(),
            "one origin shared by every message of one meta"
        );
        assert_eq!(p.count as usize, PACK_COUNT);
        assert_eq!(p.index.0.len(), PACK_COUNT * 3);
    }

    #[test]
    fn the_bodies_are_in_weida_ffis_layout_and_the_index_beside_them() {
        let mut ms = messages(&[3, 0, 5]);
        let mut meta = IncomingMeta::default();
        (meta.sequence, meta.gap) = (Some(7), Some(2));
        ms[2].meta = Arc::new(meta);
        let p = pack(&ms);
        assert_eq!(p.count, 3);
        let bodies = shared::unpack(Bytes::from(p.bodies.0), 3).unwrap();
        assert_eq!(bodies, [&[3u8; 3][..], &[], &[5; 5]]);
        // The sequence and gap are per message: all three share one origin.
        let mut index = vec![0, 0, 0, 0, 0, 0, 0, 0, 3];
        index.extend_from_slice(&7u64.to_be_bytes());
        index.extend_from_slice(&2u64.to_be_bytes());
        assert_eq!(p.index.0, index);
        assert_eq!(p.origins.0, one_bare_origin());
    }

    #[test]
    fn a_batch_is_written_in_place_as_uniffi_writes_it() {
        use uniffi::Lower;
        let mut meta = IncomingMeta::default();
        meta.path = "/jobs".into();
        meta.sequence = Some(7);
        let meta = Arc::new(meta);
        let batches = [
            messages(&[]),
            messages(&[0, 1, 5, 64]),
            vec![CoreMessage {
                meta,
                body: Bytes::from_static(b"with a path and a sequence"),
            }],
        ];
        for ms in batches {
            let mut want = Vec::new();
            <Option<Packed> as Lower<crate::UniFfiTag>>::write(Some(pack(&ms)), &mut want);
            let batch = Batch::new(ms);
            // Over older bytes, as the lane's kept buffer holds them: the padding is written.
            let mut got = vec![0xAA; batch.written_len()];
            batch.write_some(&mut got);
            assert_eq!(got, want);
            let mut packed = Vec::new();
            <Option<Packed> as Lower<crate::UniFfiTag>>::write(
                Some(batch.into_packed()),
                &mut packed,
            );
            assert_eq!(
                packed, want,
                "a batch for UniFFI's encoding is what pack makes"
            );
        }
    }
}
