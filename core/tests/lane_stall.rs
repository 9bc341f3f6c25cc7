//! A lane whose reader stalls while its writer keeps writing (issue: "too many gaps"). The
//! receiving QUIC stack (quinn-proto 0.11.19) keeps a stream's unread bytes as one piece per
//! STREAM frame and compacts them only in part: after a compaction, pieces at least
//! `buffered / 1024` (and 128) bytes long that filled their packets are kept as they are, and
//! only the pieces between two of them are merged. Past 1,024 pieces it closes the whole
//! connection with INTERNAL_ERROR `too many gaps in stream buffer`, though the bytes are
//! contiguous and nothing was lost. A sender whose packets alternate a lane-only piece of a
//! few hundred bytes with a packet that carries a few bytes of the lane and a lot of another
//! stream builds exactly that: kept, merged, kept, merged. A weida sender writing small
//! messages on a lane beside large transfers can; so can any peer, on purpose.
//!
//! The bound that makes it impossible for gap-free data is a stream window under 64 KiB
//! (1,024 pieces need 512 kept ones of at least 128 bytes); `Limits::stream_receive_window`
//! sets it, at the cost of each stream's throughput over a long path (docs/RELIABILITY.md §3).

mod common;

use std::time::Duration;

use common::raw::dial_with;
use weida::{EndpointOptions, Limits, LossCause, PeerEvent, Runtime};

/// A dialler's HELLO that offers message lanes (PROTOCOL §3.1.1, §4.1).
const HELLO_WITH_LANES: &[u8] = &[
    0x01, 0x0a, 0x00, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00, 0x02, 0x01, 0x01,
];

/// A lane's opening: type `03` and a head naming `path` (PROTOCOL §4.1).
fn lane_head(path: &str) -> Vec<u8> {
    let head = weida::wire::Header {
        path: Some(path.into()),
        ..Default::default()
    };
    [&[0x03][..], &head.to_bytes()].concat()
}

/// The head of a lane frame with no header fields and a body of `len` bytes.
fn frame_head(len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    weida::wire::lane_frame::encode_frame_head(&weida::wire::Header::default(), len, &mut out);
    out
}

/// Waits until `conn` has sent a datagram more than `before`, and returns the new count: a
/// write is in a packet of its own once it returns.
async fn sent(conn: &quinn::Connection, before: u64) -> u64 {
    loop {
        let now = conn.stats().udp_tx.datagrams;
        if now > before {
            return now;
        }
        tokio::task::yield_now().await;
    }
}

/// How a run of the alternating pattern ended.
#[derive(Debug, PartialEq)]
enum Ended {
    /// Every pair was written and the connection is up.
    Up,
    /// The stalled lane ran out of flow-control credit: its writer waits (having written
    /// this many bytes of the long frame's body), the connection is up.
    Held(usize),
    /// The listener closed the connection.
    Closed(String),
}

/// A raw QUIC dialler opens a lane to a puller that never receives (a queue of one, full
/// after the first frame, its lane reader waiting with the second) and a lane to a puller that receives everything, then writes
/// `pairs` times: `piece` bytes of the stalled lane alone in a packet, then 10 bytes of it
/// with a frame of 1,300 bytes of the other lane in the next packet (the stalled lane's
/// stream has the higher priority, so its 10 bytes lead that packet). Both lanes carry one
/// long frame each, so every byte is a valid part of a message. With how it ended comes how
/// the listener's events (`Listener::events`) said the connection ended, when it did.
async fn alternate(limits: Limits, pairs: usize, piece: usize) -> (Ended, Option<LossCause>) {
    let rt = Runtime::new(common::config(limits)).unwrap();
    let listener = rt.bind("weida://127.0.0.1:0").await.unwrap();
    let mut events = listener.events();
    let stalled = listener
        .puller_with("/stalled", &EndpointOptions::new().endpoint_queue(1))
        .unwrap();
    let read = listener.puller("/read").unwrap();
    let reader = tokio::spawn(async move { while read.recv().await.is_ok() {} });
    let conn = dial_with(&listener, b"weida/0", quinn::TransportConfig::default())
        .await
        .unwrap();
    let (mut control, mut hello) = conn.open_bi().await.unwrap();
    control
        .write_all(&[&[0x00][..], HELLO_WITH_LANES].concat())
        .await
        .unwrap();
    hello.read_chunk(1 << 16, true).await.unwrap();
    let mut a = conn.open_uni().await.unwrap();
    a.set_priority(1).unwrap();
    // The first whole frame fills the stalled puller's queue of one, and its lane reader waits
    // with the second for room that never comes: the long frame after them is never read.
    let first = [frame_head(1), vec![0], frame_head(1), vec![0]].concat();
    let long = frame_head(pairs * (piece + 10));
    a.write_all(&[lane_head("/stalled"), first, long].concat())
        .await
        .unwrap();
    let mut b = conn.open_uni().await.unwrap();
    b.write_all(&lane_head("/read")).await.unwrap();
    let other = [frame_head(1300), vec![1; 1300]].concat();
    let (piece, tail) = (vec![2; piece], [3; 10]);
    let guard = Duration::from_secs(2);
    let mut n = conn.stats().udp_tx.datagrams;
    let mut ended = Ended::Up;
    let mut written = 0;
    for _ in 0..pairs {
        let write = async {
            a.write_all(&piece).await?;
            written += piece.len();
            n = sent(&conn, n).await;
            a.write_all(&tail).await?;
            written += tail.len();
            b.write_all(&other).await?;
            n = sent(&conn, n).await;
            Ok::<(), quinn::WriteError>(())
        };
        match tokio::time::timeout(guard, write).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => break,
            Err(_) => {
                ended = Ended::Held(written);
                break;
            }
        }
    }
    // What the listener made of the last packets, acknowledged or closed.
    let settled = tokio::time::timeout(Duration::from_millis(500), conn.closed()).await;
    drop((reader, stalled));
    let ended = match settled {
        Ok(quinn::ConnectionError::ConnectionClosed(c)) => {
            Ended::Closed(String::from_utf8_lossy(&c.reason).into_owned())
        }
        Ok(e) => Ended::Closed(e.to_string()),
        Err(_) => ended,
    };
    if !matches!(ended, Ended::Closed(_)) {
        return (ended, None);
    }
    // The listener's side of the close: its events end the connection with a cause, bounded
    // by a guard should that event never come.
    let lost = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(event) = events.next().await {
            if let Ok(PeerEvent::Lost { cause, .. }) = event {
                return Some(cause);
            }
        }
        None
    })
    .await
    .ok()
    .flatten();
    (ended, lost)
}

/// The defect, as it stands: gap-free data on a stalled lane closes the whole connection. It
/// fails today on quinn-proto 0.11.19 (the connection closed `too many gaps in stream buffer`
/// after about 530 to 710 pairs, in 3 of 4 runs of 800; 2,000 pairs here), and is ignored
/// until a quinn release compacts contiguous pieces whatever their size:
/// `cargo test -p weida --test lane_stall -- --ignored`.
#[tokio::test]
#[ignore = "fails on quinn-proto 0.11.19: its reassembly closes the connection (lane_stall.rs)"]
async fn a_stalled_lane_fed_in_alternating_packets_keeps_its_connection() {
    assert_eq!(alternate(Limits::default(), 2000, 200).await.0, Ended::Up);
}

/// While the defect stands, a connection it closes is lost on both sides, each told why: the
/// dialler reads the close's reason, and the listener's events end the connection with cause
/// `transport_error` naming it (what an application with a `Listener::events` loop sees). The
/// close comes in most runs, not all (3 of 4 runs of 800 pairs), so this takes up to eight
/// runs to see one. Should no run close (a quinn that compacts contiguous pieces whatever their
/// size), it fails: the ignored test above then passes and is to be run in CI instead.
#[tokio::test]
async fn a_connection_closed_for_too_many_gaps_is_lost_on_both_sides_with_its_reason() {
    for _ in 0..8 {
        let (ended, lost) = alternate(Limits::default(), 2000, 200).await;
        let Ended::Closed(reason) = ended else {
            continue;
        };
        assert!(
            reason.contains("too many gaps"),
            "the dialler read: {reason}"
        );
        match lost {
            Some(LossCause::TransportError(why)) => {
                assert!(why.contains("too many gaps"), "the listener said: {why}")
            }
            other => panic!("the listener's events ended the connection with {other:?}"),
        }
        return;
    }
    panic!("no run of eight closed the connection: see a_stalled_lane_fed_in_alternating_packets_keeps_its_connection");
}

/// With a stream window under 64 KiB the same sender runs out of credit on the stalled lane
/// and waits, and the connection stays up: at most 511 kept pieces of 128 bytes fit.
#[tokio::test]
async fn under_a_64_kib_stream_window_a_stalled_lane_only_holds_its_writer() {
    let window = 63 * 1024;
    let limits = Limits {
        stream_receive_window: window,
        ..Limits::default()
    };
    match alternate(limits, 2000, 200).await.0 {
        Ended::Held(written) => assert!(written <= window as usize, "{written}"),
        e => panic!("{e:?}"),
    }
}
