//! Message lanes (docs/decisions/0001-message-lanes.md): small complete messages as frames on
//! one long-lived stream per connection and path. Every other pattern test runs with lanes on
//! and off (`WEIDA_TEST_LANE_MAX`); these are the behaviours only lanes have.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{bind_address, config, Transport};
use weida::{ErrorCode, Limits, Runtime, RuntimeConfig};

fn with_lanes(limits: Limits, lane_max_message: usize) -> RuntimeConfig {
    RuntimeConfig {
        lane_max_message,
        ..config(limits)
    }
}

/// Two runtimes with lanes up to `lane_max_message`, a puller at `/jobs` and a pusher
/// connected to it. The runtimes are returned to keep them alive.
async fn lane_pair(
    t: Transport,
    limits: Limits,
    lane_max_message: usize,
) -> (Runtime, Runtime, weida::Puller, weida::Pusher) {
    let server = Runtime::new(with_lanes(limits.clone(), lane_max_message)).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let puller = listener.puller("/jobs").unwrap();
    let client = Runtime::new(with_lanes(limits, lane_max_message)).unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    (server, client, puller, pusher)
}

async fn fifo(t: Transport) {
    let (server, client, puller, pusher) = lane_pair(t, Limits::default(), 16 * 1024).await;
    for i in 0..2000u32 {
        pusher.send(i.to_be_bytes().to_vec()).await.unwrap();
    }
    // A lane is one stream: its messages arrive in the order they were sent.
    let mut got = Vec::new();
    while got.len() < 2000 {
        for m in puller.recv_many(256).await.unwrap() {
            got.push(u32::from_be_bytes(m.body[..].try_into().unwrap()));
        }
    }
    assert_eq!(got, (0..2000).collect::<Vec<_>>());
    let c = client.counters();
    assert_eq!(c.lane_messages_sent, 2000, "{c:?}");
    assert_eq!(c.streams_opened, 1, "one lane carried them all: {c:?}");
    assert_eq!(server.counters().lane_messages_received, 2000);
}
on_every_transport!(a_lane_carries_small_messages_in_order_on_one_stream, fifo);

async fn larger_bodies_keep_their_stream(t: Transport) {
    let (_server, client, puller, pusher) = lane_pair(t, Limits::default(), 1024).await;
    pusher.send(vec![1u8; 1024]).await.unwrap();
    pusher.send(vec![2u8; 1025]).await.unwrap();
    let mut sizes = vec![
        puller.recv().await.unwrap().body.len(),
        puller.recv().await.unwrap().body.len(),
    ];
    sizes.sort();
    assert_eq!(sizes, vec![1024, 1025]);
    let c = client.counters();
    assert_eq!(c.lane_messages_sent, 1, "{c:?}");
    assert_eq!(
        c.streams_opened, 2,
        "the lane and the larger message's own stream"
    );
}
on_every_transport!(
    a_body_above_lane_max_message_keeps_its_own_stream,
    larger_bodies_keep_their_stream
);

async fn refused(t: Transport) {
    let (_s, listener, client) = common::pair(t).await;
    if !common::lanes_on() {
        return;
    }
    // Bound to a puller when the pusher connects, to a replier after: the path check passes,
    // and the lane meets a path of another pattern (PROTOCOL §3.1.5).
    let before = listener.puller("/rpc").unwrap();
    let pusher = client.pusher();
    pusher.connect(&before.address().to_string()).await.unwrap();
    before.close();
    drop(before);
    let replier = listener.replier("/rpc").unwrap();
    // The first sends are queued on the lane before its refusal comes back; the refusal is then
    // reported, once, to the next send, as a stream's refusal is when it wins the race.
    let mut sent = 0;
    let e = loop {
        match pusher.send("hello").await {
            Ok(()) => sent += 1,
            Err(e) => break e,
        }
        assert!(sent < 100_000, "the refusal never came back");
        if sent % 64 == 0 {
            tokio::task::yield_now().await;
        }
    };
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
    assert!(client.counters().lane_messages_lost + client.counters().lane_messages_sent >= sent);
    drop(replier);
}
on_every_transport!(
    a_lane_refused_by_the_peer_is_reported_to_the_sender,
    refused
);

/// Small bounds, so that a path nobody reads backs up quickly.
fn stalling_limits() -> Limits {
    Limits {
        endpoint_queue: 2,
        stream_receive_window: 8 * 1024,
        connection_receive_window: 1 << 20,
        ..Limits::default()
    }
}

async fn stalled_path(t: Transport) {
    let limits = stalling_limits();
    let server = Runtime::new(config(limits.clone())).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let stalled = listener.puller("/stalled").unwrap();
    let reading = listener.puller("/reading").unwrap();
    let client = Runtime::new(RuntimeConfig {
        // Also bounds each send to the reading path below: long enough for a loaded machine.
        send_timeout: Some(Duration::from_millis(1000)),
        ..config(limits)
    })
    .unwrap();
    let to_stalled = client.pusher();
    to_stalled
        .connect(&stalled.address().to_string())
        .await
        .unwrap();
    let to_reading = client.pusher();
    to_reading
        .connect(&reading.address().to_string())
        .await
        .unwrap();
    // Nobody reads /stalled: its lane (or its streams) backs up until send waits.
    let body = Bytes::from(vec![0u8; 1000]);
    let mut accepted = 0;
    let e = loop {
        match to_stalled.send(body.clone()).await {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
        assert!(accepted < 100_000, "a stalled path never pushed back");
    };
    assert_eq!(e.code(), ErrorCode::Timeout, "{e}");
    // Another path of the same peer is not stalled by it.
    for i in 0..200u32 {
        // A send that times out (a stall of the whole machine, not of this path) queued
        // nothing, and is tried again.
        loop {
            match to_reading.send(i.to_be_bytes().to_vec()).await {
                Err(e) if e.code() == ErrorCode::Timeout => continue,
                r => break r.unwrap(),
            }
        }
        let m = reading.recv().await.unwrap();
        assert_eq!(m.body, Bytes::from(i.to_be_bytes().to_vec()));
    }
    drop(stalled);
}
on_every_transport!(a_stalled_lane_does_not_stall_another_path, stalled_path);

async fn mixed(t: Transport, server_lanes: usize, client_lanes: usize) {
    let server = Runtime::new(with_lanes(Limits::default(), server_lanes)).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let puller = listener.puller("/jobs").unwrap();
    let publisher = listener.publisher("/feed").unwrap();
    let client = Runtime::new(with_lanes(Limits::default(), client_lanes)).unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();
    for i in 0..50u32 {
        pusher.send(i.to_be_bytes().to_vec()).await.unwrap();
        publisher.publish("t", i.to_be_bytes().to_vec()).unwrap();
        assert_eq!(sub.recv().await.unwrap().body.len(), 4);
    }
    let mut n = 0;
    while n < 50 {
        n += puller.recv_many(64).await.unwrap().len();
    }
    // Lanes are used only when both offered them.
    let used = server_lanes > 0 && client_lanes > 0;
    assert_eq!(client.counters().lane_messages_sent > 0, used);
    // A publisher writes a lane to each subscriber too: over AF_UNIX on a parked connection,
    // where both HELLOs also set the bit for that (this implementation's set it with lanes).
    assert_eq!(server.counters().lane_messages_sent > 0, used);
}

#[tokio::test]
async fn a_peer_without_lanes_interoperates() {
    common::bounded(async {
        for t in [Transport::Quic, Transport::Inproc, Transport::Unix] {
            mixed(t, 0, 16 * 1024).await;
            mixed(t, 16 * 1024, 0).await;
            mixed(t, 16 * 1024, 16 * 1024).await;
        }
    })
    .await
}

async fn lost_mid_lane(t: Transport) {
    let (server, listener, client) = common::pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    // Fewer than the stream budget and the lane's queue: the sends do not wait for a reader.
    for i in 0..200u32 {
        pusher.send(i.to_be_bytes().to_vec()).await.unwrap();
    }
    let first = puller.recv().await.unwrap();
    // The listener's side goes away with the lane mid-way: what arrived is whole, and (on a
    // lane) a prefix of what was sent, in order; nothing is delivered twice or in part.
    server.shutdown();
    let mut got = vec![u32::from_be_bytes(first.body[..].try_into().unwrap())];
    while let Ok(m) = puller.recv().await {
        assert_eq!(m.body.len(), 4);
        got.push(u32::from_be_bytes(m.body[..].try_into().unwrap()));
    }
    if common::lanes_on() {
        assert_eq!(got, (0..got.len() as u32).collect::<Vec<_>>());
    } else {
        let mut s = got.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), got.len(), "nothing twice");
    }
    // The sender learns of the loss at its next send.
    let e = loop {
        if let Err(e) = pusher.send("after").await {
            break e;
        }
        tokio::task::yield_now().await;
    };
    assert!(matches!(e.code(), ErrorCode::ConnectionLost), "{e:?}");
}
on_every_transport!(
    a_connection_lost_mid_lane_loses_only_what_was_unread,
    lost_mid_lane
);

async fn close_with_a_lane(t: Transport) {
    let (_s, listener, client) = common::pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    for i in 0..3u8 {
        pusher.send(vec![i]).await.unwrap();
    }
    for _ in 0..3 {
        puller.recv().await.unwrap();
    }
    // A lane still open toward the path does not keep a closed puller's queue alive.
    puller.close();
    let e = puller.recv().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Closed);
    if !common::lanes_on() {
        // Small streams lose the refusal race to their FIN (PATTERNS §1.6): nothing to check.
        return;
    }
    // On a lane, what is sent after the close is refused, and the refusal reaches a sender.
    let e = loop {
        if let Err(e) = pusher.send("late").await {
            break e;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(e.code(), ErrorCode::UnknownEndpoint, "{e}");
}
on_every_transport!(
    a_closed_puller_ends_its_receive_with_a_lane_open,
    close_with_a_lane
);

async fn round_robin_without_peer_lanes(t: Transport) {
    // The pullers' runtime does not offer lanes, the pusher's does: one pick per message
    // still alternates between the two.
    let server = Runtime::new(with_lanes(Limits::default(), 0)).unwrap();
    let a_listener = server.bind(&bind_address(t)).await.unwrap();
    let b_listener = server.bind(&bind_address(t)).await.unwrap();
    let a = a_listener.puller("/jobs").unwrap();
    let b = b_listener.puller("/jobs").unwrap();
    let client = Runtime::new(with_lanes(Limits::default(), 16 * 1024)).unwrap();
    let pusher = client.pusher();
    pusher.connect(&a.address().to_string()).await.unwrap();
    pusher.connect(&b.address().to_string()).await.unwrap();
    for i in 0..10u8 {
        pusher.send(vec![i]).await.unwrap();
    }
    for p in [&a, &b] {
        for _ in 0..5 {
            p.recv().await.unwrap();
        }
    }
    assert_eq!(client.counters().lane_messages_sent, 0);
}
on_every_transport!(
    a_pusher_with_lanes_round_robins_pullers_without_them,
    round_robin_without_peer_lanes
);

async fn try_send_and_try_recv(t: Transport) {
    let (_server, listener, client) = common::pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    // Nothing connected: the error `send` would return (from `send` itself when lanes are
    // off and the body comes back).
    let e = match pusher.try_send(Bytes::from_static(b"x")) {
        Err(e) => e,
        Ok(back) => pusher.send(back.unwrap()).await.unwrap_err(),
    };
    assert_eq!(e.code(), ErrorCode::NotConnected, "{e}");
    pusher.connect(&puller.address().to_string()).await.unwrap();
    assert!(puller.try_recv().is_none(), "nothing sent yet");
    // Fewer than the stream budget and the endpoint queue: with lanes off each is a stream,
    // and nobody reads until all are sent.
    let mut queued_at_once = 0;
    for i in 0..50u32 {
        let body = Bytes::from(i.to_be_bytes().to_vec());
        match pusher.try_send(body).unwrap() {
            None => queued_at_once += 1,
            Some(body) => pusher.send(body).await.unwrap(),
        }
    }
    if common::lanes_on() {
        assert!(
            queued_at_once > 0,
            "a lane with room takes a message at once"
        );
    } else {
        assert_eq!(
            queued_at_once, 0,
            "without lanes every body comes back for send"
        );
    }
    // Received in order whichever way each went out (one lane, or one stream each in order
    // of sending on one connection when lanes are off: compare as a set then).
    let mut got = Vec::new();
    while got.len() < 50 {
        let m = match puller.try_recv() {
            Some(r) => r.unwrap(),
            None => puller.recv().await.unwrap(),
        };
        got.push(u32::from_be_bytes(m.body[..].try_into().unwrap()));
    }
    if !common::lanes_on() {
        got.sort();
    }
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    assert!(puller.try_recv().is_none());
    // A body larger than a lane takes comes back untouched.
    let big = Bytes::from(vec![5u8; 64 * 1024]);
    assert_eq!(pusher.try_send(big.clone()).unwrap(), Some(big));
    // After close, the receive error is there at once.
    puller.close();
    assert_eq!(
        puller.try_recv().unwrap().unwrap_err().code(),
        ErrorCode::Closed
    );
}
on_every_transport!(
    try_send_queues_at_once_or_gives_the_body_back_and_try_recv_takes_what_is_ready,
    try_send_and_try_recv
);

async fn try_send_never_waits(t: Transport) {
    let limits = stalling_limits();
    let server = Runtime::new(with_lanes(limits.clone(), 16 * 1024)).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let stalled = listener.puller("/stalled").unwrap();
    let client = Runtime::new(with_lanes(limits, 16 * 1024)).unwrap();
    let pusher = client.pusher();
    pusher
        .connect(&stalled.address().to_string())
        .await
        .unwrap();
    // Nobody reads: the lane (opened by a send) fills, and try_send hands the body back
    // instead of waiting.
    let body = Bytes::from(vec![0u8; 1000]);
    pusher.send(body.clone()).await.unwrap();
    let mut queued = 0;
    let back = loop {
        match pusher.try_send(body.clone()).unwrap() {
            None => queued += 1,
            Some(b) => break b,
        }
        assert!(queued < 100_000, "a full lane never gave the body back");
        // Let the writer run, as time passing would.
        tokio::task::yield_now().await;
    };
    assert_eq!(back, body);
    assert!(queued >= 2, "{queued}");
}
on_every_transport!(
    a_full_lane_gives_the_body_back_to_try_send,
    try_send_never_waits
);

async fn try_send_round_robin(t: Transport) {
    // Bodies try_send gives back (too large for a lane) go to the peer whose turn it was:
    // the fallback to send does not skip a puller.
    let server = Runtime::new(with_lanes(Limits::default(), 16 * 1024)).unwrap();
    let a_listener = server.bind(&bind_address(t)).await.unwrap();
    let b_listener = server.bind(&bind_address(t)).await.unwrap();
    let a = a_listener.puller("/jobs").unwrap();
    let b = b_listener.puller("/jobs").unwrap();
    let client = Runtime::new(with_lanes(Limits::default(), 16)).unwrap();
    let pusher = client.pusher();
    pusher.connect(&a.address().to_string()).await.unwrap();
    pusher.connect(&b.address().to_string()).await.unwrap();
    for i in 0..10u8 {
        let body = Bytes::from(vec![i; 100]);
        let back = pusher
            .try_send(body)
            .unwrap()
            .expect("above lane_max_message");
        pusher.send(back).await.unwrap();
    }
    for p in [&a, &b] {
        for _ in 0..5 {
            p.recv().await.unwrap();
        }
        assert!(p.try_recv().is_none());
    }
}
on_every_transport!(
    bodies_try_send_gives_back_keep_the_round_robin,
    try_send_round_robin
);

async fn try_send_off_the_runtime(t: Transport) {
    let (_server, _client, puller, pusher) = lane_pair(t, Limits::default(), 16 * 1024).await;
    // From a thread with no runtime: nothing is started there, so before any lane is open
    // the body comes back (and nothing panics for want of a runtime).
    let off = |body: &'static [u8]| {
        std::thread::scope(|s| {
            s.spawn(|| pusher.try_send(Bytes::from_static(body)).unwrap())
                .join()
                .unwrap()
        })
    };
    assert_eq!(off(b"first"), Some(Bytes::from_static(b"first")));
    pusher.send("opens the lane").await.unwrap();
    assert_eq!(off(b"queued off the runtime"), None);
    assert_eq!(puller.recv().await.unwrap().body, "opens the lane");
    assert_eq!(puller.recv().await.unwrap().body, "queued off the runtime");
}
on_every_transport!(
    try_send_from_a_thread_off_the_runtime_queues_on_an_open_lane,
    try_send_off_the_runtime
);

/// The bodies of the next two messages, sorted (two senders: no order between them).
async fn two_sorted(puller: &weida::Puller) -> Vec<Bytes> {
    let mut got = vec![
        puller.recv().await.unwrap().body,
        puller.recv().await.unwrap().body,
    ];
    got.sort();
    got
}

/// Two pushers of one runtime share the connection to a path, and so its lane. When that lane
/// fails (the path was closed), one of them is told; each then sends on the lane that replaces
/// it, never on the failed one it used before (each keeps a handle to the lane it sends on).
async fn shared_lane_replaced(t: Transport) {
    let (_s, listener, client) = common::pair(t).await;
    if !common::lanes_on() {
        return;
    }
    let puller = listener.puller("/jobs").unwrap();
    let address = puller.address().to_string();
    let (a, b) = (client.pusher(), client.pusher());
    a.connect(&address).await.unwrap();
    b.connect(&address).await.unwrap();
    a.send("from a").await.unwrap();
    b.send("from b").await.unwrap();
    assert_eq!(two_sorted(&puller).await, ["from a", "from b"]);
    assert_eq!(client.counters().streams_opened, 1, "one lane for both");

    puller.close();
    drop(puller);
    let e = loop {
        if let Err(e) = a.send("late").await {
            break e;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(e.code(), ErrorCode::UnknownEndpoint, "{e}");
    let puller = listener.puller("/jobs").unwrap();
    b.send("after, from b").await.unwrap();
    a.send("after, from a").await.unwrap();
    assert_eq!(
        two_sorted(&puller).await,
        ["after, from a", "after, from b"]
    );
    assert_eq!(client.counters().streams_opened, 2, "one new lane for both");
}
on_every_transport!(
    a_failed_lane_is_replaced_for_every_sender_of_the_connection,
    shared_lane_replaced
);

/// Several tasks on a multi-thread runtime share one lane over a local socket (their pusher's
/// connection), each sending runs (`send_many`, dealt under one lock) and single messages
/// between them, the queue filling and the writer task taking it on whichever worker runs it:
/// each sender's messages arrive whole, once, and in its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_and_single_sends_of_many_tasks_keep_each_senders_order_on_a_local_socket() {
    const TASKS: u32 = 3;
    const EACH: u32 = 20_000;
    common::bounded(async {
        let (_server, _client, puller, pusher) =
            lane_pair(Transport::Unix, Limits::default(), 16 * 1024).await;
        let pusher = std::sync::Arc::new(pusher);
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let pusher = pusher.clone();
            tasks.push(tokio::spawn(async move {
                let body = |i: u32| {
                    let mut b = vec![0u8; 8 + (i as usize % 700)];
                    b[..4].copy_from_slice(&t.to_be_bytes());
                    b[4..8].copy_from_slice(&i.to_be_bytes());
                    Bytes::from(b)
                };
                let mut i = 0;
                while i < EACH {
                    // Runs of 1 to 300, a single send between them.
                    let n = (1 + (i * 7 + t * 13) % 300).min(EACH - i);
                    let (sent, r) = pusher.send_many((i..i + n).map(body)).await;
                    r.unwrap();
                    assert_eq!(sent, n as usize);
                    i += n;
                    if i < EACH {
                        pusher.send(body(i)).await.unwrap();
                        i += 1;
                    }
                }
            }));
        }
        let mut next = vec![0u32; TASKS as usize];
        let mut left = TASKS * EACH;
        while left > 0 {
            for m in puller.recv_many(512).await.unwrap() {
                let t = u32::from_be_bytes(m.body[..4].try_into().unwrap()) as usize;
                let i = u32::from_be_bytes(m.body[4..8].try_into().unwrap());
                assert_eq!(i, next[t], "task {t}'s messages in its order, each once");
                assert_eq!(m.body.len(), 8 + (i as usize % 700));
                next[t] += 1;
                left -= 1;
            }
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(next, vec![EACH; TASKS as usize]);
    })
    .await
}

/// The listener's side goes away while runs are sent over a local socket: what arrived is a
/// prefix of what was sent, in order, and a later run is told (`send_many`'s error), as a
/// later `send` is (`a_connection_lost_mid_lane_loses_only_what_was_unread`).
#[tokio::test]
async fn a_connection_lost_under_runs_loses_only_what_was_unread_on_a_local_socket() {
    common::bounded(async {
        let (server, client, puller, pusher) =
            lane_pair(Transport::Unix, Limits::default(), 16 * 1024).await;
        let run = |from: u32| (from..from + 50).map(|i| Bytes::from(i.to_be_bytes().to_vec()));
        let (n, r) = pusher.send_many(run(0)).await;
        r.unwrap();
        assert_eq!(n, 50);
        let mut got = vec![u32::from_be_bytes(
            puller.recv().await.unwrap().body[..].try_into().unwrap(),
        )];
        server.shutdown();
        while let Ok(m) = puller.recv().await {
            got.push(u32::from_be_bytes(m.body[..].try_into().unwrap()));
        }
        assert_eq!(got, (0..got.len() as u32).collect::<Vec<_>>());
        let mut from = 50;
        let e = loop {
            let (n, r) = pusher.send_many(run(from)).await;
            from += n as u32;
            if let Err(e) = r {
                break e;
            }
            tokio::task::yield_now().await;
        };
        assert!(matches!(e.code(), ErrorCode::ConnectionLost), "{e:?}");
        drop(client);
    })
    .await
}
