//! Pub/Sub (PATTERNS §4, §4.1): filters end to end, isolation of a slow subscriber, drops by
//! cause, PerProducer ordering with gaps, the streamed fan-out, and the reverse pool of the
//! local socket transport. Each test runs over every transport it applies to.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{bind_address, config, pair, pair_with, payload, Transport};
use weida::{
    DropCause, Error, ErrorCode, GuaranteeSet, Limits, Listener, Ordering, PeerIdentity, Publisher,
    Runtime, RuntimeConfig, Subscriber,
};

fn ordered(limits: Limits, ordering: Ordering) -> RuntimeConfig {
    RuntimeConfig {
        guarantees: GuaranteeSet {
            ordering,
            ..GuaranteeSet::default()
        },
        ..config(limits)
    }
}

/// Receives until `n` messages arrived, or fails after `within`.
async fn take(sub: &Subscriber, n: usize) -> Vec<weida::Message> {
    let mut out = Vec::new();
    while out.len() < n {
        out.push(sub.recv().await.unwrap());
    }
    out
}

on_every_transport!(subscribe_filters_topics_by_segment, |t| async move {
    let (_s, listener, client) = pair(t).await;
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("sensors.*.temp").await.unwrap();
    sub.subscribe("alerts.#").await.unwrap();
    // (topic, selected): the grammar's table, end to end.
    let table = [
        ("sensors.kitchen.temp", true),
        ("sensors.temp", false),
        ("sensors.kitchen.temperature", false),
        ("sensors.kitchen.temp.max", false),
        ("alerts", true),
        ("alerts.fire.kitchen", true),
        ("alertsx", false),
        ("other", false),
    ];
    let mut expected = Vec::new();
    for (i, (topic, selected)) in table.iter().enumerate() {
        let n = publisher.publish(topic, format!("{i}")).unwrap();
        assert_eq!(n, *selected as usize, "{topic}");
        if *selected {
            expected.push(topic.to_string());
        }
    }
    let got = take(&sub, expected.len()).await;
    let mut topics: Vec<String> = got.iter().map(|m| m.meta.topic.clone().unwrap()).collect();
    topics.sort();
    expected.sort();
    assert_eq!(topics, expected);
    for m in &got {
        assert_eq!(&*m.meta.path, "/feed");
        assert_eq!(m.meta.gap, None, "no ordering required: no gap");
        assert_eq!(m.meta.sequence, None, "and no numbering either");
        match t {
            Transport::Quic => assert!(matches!(m.meta.peer, Some(PeerIdentity::Key(_)))),
            Transport::Unix => assert!(matches!(m.meta.peer, Some(PeerIdentity::Local { .. }))),
            Transport::Inproc => assert_eq!(m.meta.peer, None),
        }
    }
    assert_eq!(publisher.dropped().total(), 0);
});

on_every_transport!(unsubscribe_stops_delivery_once_it_returns, |t| async move {
    let (_s, listener, client) = pair(t).await;
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("a.#").await.unwrap();
    sub.subscribe("b").await.unwrap();
    assert_eq!(publisher.publish("a.x", "1").unwrap(), 1);
    assert!(sub.unsubscribe("a.#").await.unwrap());
    assert!(!sub.unsubscribe("a.#").await.unwrap(), "no longer held");
    assert_eq!(publisher.publish("a.x", "2").unwrap(), 0);
    publisher.publish("b", "3").unwrap();
    // "1" may or may not have been delivered before the unsubscribe; "2" never is.
    loop {
        let m = sub.recv().await.unwrap();
        assert_ne!(&m.body[..], b"2");
        if &m.body[..] == b"3" {
            break;
        }
    }
    assert_eq!(sub.filters(), vec!["b".to_string()]);
});

on_every_transport!(
    a_publisher_routes_a_topic_again_after_each_filter_change,
    |t| async move {
        // A publisher keeps the route of the topic it published last: every change of any
        // subscriber's filters (a subscribe, an unsubscribe, a subscriber gone) must reach the
        // next publish of that same topic.
        let (_s, listener, client) = pair(t).await;
        let publisher = listener.publisher("/feed").unwrap();
        let addr = publisher.address().to_string();
        assert_eq!(publisher.publish("t", "0").unwrap(), 0);
        let first = client.subscriber();
        first.connect(&addr).await.unwrap();
        first.subscribe("t").await.unwrap();
        assert_eq!(publisher.publish("t", "1").unwrap(), 1);
        let second = client.subscriber();
        second.connect(&addr).await.unwrap();
        second.subscribe("#").await.unwrap();
        assert_eq!(publisher.publish("t", "2").unwrap(), 2);
        assert_eq!(
            publisher.publish("u", "3").unwrap(),
            1,
            "another topic, routed anew"
        );
        assert_eq!(publisher.publish("t", "4").unwrap(), 2);
        assert!(first.unsubscribe("t").await.unwrap());
        assert_eq!(publisher.publish("t", "5").unwrap(), 1);
        second.close();
        publisher.until_subscribers(1).await;
        assert_eq!(publisher.publish("t", "6").unwrap(), 0);
        first.subscribe("t").await.unwrap();
        assert_eq!(publisher.publish("t", "7").unwrap(), 1);
        // "2" and "4" may arrive or not (in flight across the unsubscribe); "5" and "6", sent
        // after it returned, never do.
        let mut bodies = Vec::new();
        while bodies.last() != Some(&Bytes::from("7")) {
            bodies.push(first.recv().await.unwrap().body);
        }
        assert_eq!(bodies[0], Bytes::from("1"));
        assert!(!bodies.contains(&Bytes::from("5")) && !bodies.contains(&Bytes::from("6")));
    }
);

on_every_transport!(
    a_batched_receive_gives_back_the_room_its_copies_held,
    |t| async move {
        // Four copies fill the subscriber's queue: unless each batch taken gives their room
        // back, the next round's copies wait in the transport for ever. (Without lanes, over
        // AF_UNIX four copies at once find the parked pool empty: see
        // `an_empty_reverse_pool_drops_and_the_subscription_survives`.)
        if t == Transport::Unix && !common::lanes_on() {
            return;
        }
        let limits = Limits {
            endpoint_queue: 4,
            ..Limits::default()
        };
        let (_s, listener, client) = pair_with(t, limits).await;
        let publisher = listener.publisher("/feed").unwrap();
        let sub = client.subscriber();
        sub.connect(&publisher.address().to_string()).await.unwrap();
        sub.subscribe("t").await.unwrap();
        for round in 0..20u8 {
            for i in 0..4u8 {
                assert_eq!(publisher.publish("t", vec![round, i]).unwrap(), 1);
            }
            // All four admitted (room for each), then taken in one batch.
            sub.until_queued(4).await;
            let mut got: Vec<_> = sub
                .recv_many(64)
                .await
                .unwrap()
                .into_iter()
                .map(|m| m.body)
                .collect();
            let want: Vec<_> = (0..4u8).map(|i| Bytes::from(vec![round, i])).collect();
            if common::lanes_on() {
                assert_eq!(got, want, "in publish order");
            } else {
                got.sort();
                assert_eq!(got, want, "each once");
            }
        }
        assert_eq!(publisher.dropped().total(), 0);
    }
);

on_every_transport!(
    a_subscribers_queue_holds_at_most_endpoint_queue_copies,
    |t| async move {
        // Sixteen copies toward a subscriber whose queue holds four: as each one is taken,
        // the next is admitted, and the queue never holds more than four, however many of the
        // copies behind them were already read (a lane's batch takes room for each).
        if t == Transport::Unix && !common::lanes_on() {
            return;
        }
        let server = Runtime::new(config(Limits::default())).unwrap();
        let listener = server.bind(&bind_address(t)).await.unwrap();
        let small = Limits {
            endpoint_queue: 4,
            ..Limits::default()
        };
        let client = Runtime::new(config(small)).unwrap();
        let publisher = listener.publisher("/feed").unwrap();
        let sub = client.subscriber();
        sub.connect(&publisher.address().to_string()).await.unwrap();
        sub.subscribe("t").await.unwrap();
        for i in 0..16u8 {
            assert_eq!(publisher.publish("t", vec![i]).unwrap(), 1);
        }
        let mut got = Vec::new();
        while got.len() < 16 {
            sub.until_queued(4.min(16 - got.len())).await;
            assert!(sub.queued() <= 4, "{} queued", sub.queued());
            got.push(sub.try_recv().unwrap().unwrap().body[0]);
        }
        if !common::lanes_on() {
            got.sort_unstable();
        }
        assert_eq!(got, (0..16u8).collect::<Vec<_>>());
        assert_eq!(publisher.dropped().total(), 0);
    }
);

on_every_transport!(
    a_filter_given_before_connect_is_installed_by_connect,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        let publisher = listener.publisher("/feed").unwrap();
        let sub = client.subscriber();
        assert!(matches!(sub.recv().await, Err(Error::NotConnected)));
        sub.subscribe("x").await.unwrap();
        sub.connect(&publisher.address().to_string()).await.unwrap();
        assert_eq!(publisher.subscriber_count(), 1);
        assert_eq!(publisher.publish("x", "hello").unwrap(), 1);
        assert_eq!(&sub.recv().await.unwrap().body[..], b"hello");
    }
);

on_every_transport!(refusals_are_typed, |t| async move {
    let limits = Limits {
        max_filters: 2,
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let publisher = listener.publisher("/feed").unwrap();
    let puller = listener.puller("/jobs").unwrap();
    // A malformed filter is refused locally, never widened.
    let sub = client.subscriber();
    for bad in ["", "a..b", "a.#.b", "a*", "#x"] {
        let e = sub.subscribe(bad).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidFilter, "{bad:?}: {e}");
    }
    // Nothing bound there / not a publisher.
    let base = listener.address().to_string();
    let unknown = client.subscriber();
    let at = |p: &str| match t {
        Transport::Unix => format!("{base}/{p}"),
        _ => format!("{base}{p}"),
    };
    unknown.subscribe("x").await.unwrap();
    let e = unknown.connect(&at("/nothing")).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownEndpoint, "{e}");
    let e = unknown
        .connect(&puller.address().to_string())
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
    // max_filters.
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("a").await.unwrap();
    sub.subscribe("b").await.unwrap();
    let e = sub.subscribe("c").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e}");
    assert_eq!(sub.filters(), vec!["a".to_string(), "b".to_string()]);
    // The publisher: a malformed topic, a body above the byte budget.
    assert_eq!(
        publisher.publish("a.", "x").unwrap_err().code(),
        ErrorCode::InvalidFilter
    );
    let big = Bytes::from(payload(Limits::default().subscriber_buffer_bytes + 1));
    assert_eq!(
        publisher.publish("a", big).unwrap_err().code(),
        ErrorCode::LimitExceeded
    );
    assert_eq!(publisher.dropped().total(), 0, "a refusal is not a drop");
});

// A subscriber that tries to hold many filters (RELIABILITY §5): at the default max_filters
// (1024) the publisher holds the first 1024 and refuses each one more with LimitExceeded;
// those it holds still select, and the refused one selects nothing.
on_every_transport!(
    filters_beyond_max_filters_are_refused_and_those_held_still_select,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        let publisher = listener.publisher("/feed").unwrap();
        let sub = client.subscriber();
        sub.connect(&publisher.address().to_string()).await.unwrap();
        let max = Limits::default().max_filters;
        assert_eq!(max, 1024);
        for i in 0..max {
            sub.subscribe(&format!("f.{i}")).await.unwrap();
        }
        for extra in [max, max + 1] {
            let e = sub.subscribe(&format!("f.{extra}")).await.unwrap_err();
            assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e}");
            assert!(e.to_string().contains("max_filters"), "{e}");
        }
        assert_eq!(sub.filters().len(), max);
        for i in [0, max / 2, max - 1] {
            assert_eq!(
                publisher
                    .publish(&format!("f.{i}"), format!("{i}"))
                    .unwrap(),
                1
            );
        }
        assert_eq!(publisher.publish(&format!("f.{max}"), "no").unwrap(), 0);
        let mut bodies: Vec<_> = take(&sub, 3).await.into_iter().map(|m| m.body).collect();
        bodies.sort();
        let mut want = [0, max / 2, max - 1].map(|i| Bytes::from(i.to_string()));
        want.sort();
        assert_eq!(bodies, want);
        assert_eq!(publisher.dropped().total(), 0);
    }
);

on_every_transport!(a_publisher_path_refuses_inbound_transfers, |t| async move {
    let (_s, listener, client) = pair(t).await;
    let publisher = listener.publisher("/feed").unwrap();
    let pusher = client.pusher();
    // The path check at connect says so at once (PROTOCOL §3.1.5) ...
    let e = pusher
        .connect(&publisher.address().to_string())
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
    // ... and a publisher bound after the check refuses the transfer itself.
    let before = listener.puller("/later").unwrap();
    pusher.connect(&before.address().to_string()).await.unwrap();
    before.close();
    drop(before);
    let _later = listener.publisher("/later").unwrap();
    // 2 MiB: beyond the stream window, so the refusal (not the receipt) decides the outcome.
    let e = pusher.send(payload(2 << 20)).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
});

/// Publishes `n` copies to a fast and a stalled subscriber: the fast one gets every copy, the
/// publisher never waits, and the stalled one's losses are counted.
async fn slow_subscriber(t: Transport) {
    // Small windows, so a stalled subscriber's lane (or its streams) fills them soon.
    let limits = Limits {
        endpoint_queue: 4,
        max_concurrent_uni_streams: 4,
        max_parked_reverse: 2,
        stream_receive_window: 16 * 1024,
        connection_receive_window: 32 * 1024,
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let publisher = listener.publisher("/feed").unwrap();
    let addr = publisher.address().to_string();
    let fast = client.subscriber();
    fast.connect(&addr).await.unwrap();
    fast.subscribe("t").await.unwrap();
    let slow = client.subscriber();
    slow.connect(&addr).await.unwrap();
    slow.subscribe("t").await.unwrap();
    let n = 300usize;
    for i in 0..n {
        // Never blocks, whatever the stalled subscriber does; paced by the fast one.
        let mut body = format!("{i}:").into_bytes();
        body.resize(512, b'.');
        assert!(publisher.publish("t", body.clone()).unwrap() >= 1);
        assert_eq!(fast.recv().await.unwrap().body, Bytes::from(body));
    }
    let stalled = publisher.dropped_on("t");
    assert!(stalled.total() > 0, "{stalled:?}");
    assert_eq!(stalled.dead_subscriber, 0);
    // Now the stalled one reads: what it gets and what was dropped add up to every copy.
    let mut received = 0u64;
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    while received + publisher.dropped_on("t").total() < n as u64 {
        tokio::select! {
            m = slow.recv() => { m.unwrap(); received += 1; }
            // Drops on the writer's side (an empty reverse pool) have no event to wait on.
            _ = tick.tick() => {}
        }
    }
    assert_eq!(received + publisher.dropped_on("t").total(), n as u64);
    assert!(
        received >= 4,
        "the stalled subscriber still got its queue: {received}"
    );
}

on_every_transport!(slow_subscriber_drops_not_blocks, slow_subscriber);

/// A copy dropped at the byte budget is a number the subscriber never sees: a gap.
async fn gap_under_detect(t: Transport) {
    let limits = Limits {
        subscriber_buffer_bytes: 1000,
        ..Limits::default()
    };
    let server = Runtime::new(config(limits.clone())).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let client = Runtime::new(ordered(limits, Ordering::Detect)).unwrap();
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();
    // One synchronous burst: the writer cannot run in between (a current-thread runtime).
    assert_eq!(publisher.publish("t", payload(600)).unwrap(), 1);
    assert_eq!(publisher.publish("t", payload(600)).unwrap(), 0);
    assert_eq!(publisher.publish("t", payload(100)).unwrap(), 1);
    assert_eq!(publisher.dropped_on("t").of(DropCause::ByteBudget), 1);
    let got = take(&sub, 2).await;
    assert_eq!((got[0].meta.sequence, got[0].meta.gap), (Some(1), Some(0)));
    assert_eq!((got[1].meta.sequence, got[1].meta.gap), (Some(3), Some(1)));
    assert_eq!(got[1].body.len(), 100);
}

on_every_transport!(a_dropped_copy_shows_up_as_a_gap, gap_under_detect);

/// A copy whose header (here its topic) is above the subscriber's `max_header_size` is never
/// queued or written (PROTOCOL.md §5.3, §4.1): the publisher drops it, counted `Refused`, and
/// the subscriber sees the gap, refuses nothing and keeps its lane; as a lane frame and as a
/// transfer (a body above `lane_max_message`). A path whose header alone is above the bound,
/// which no copy could carry, is refused at subscribe.
async fn header_above_subscriber_bound(t: Transport) {
    let server = Runtime::new(config(Limits::default())).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let small = Limits {
        max_header_size: 64,
        ..Limits::default()
    };
    let client = Runtime::new(ordered(small, Ordering::Detect)).unwrap();
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t.#").await.unwrap();
    publisher.until_subscribers(1).await;
    let long = format!("t.{}", "x".repeat(100));
    let big = 1 + RuntimeConfig::default().lane_max_message;
    for (topic, size, queued) in [
        ("t", 10, 1),
        (&long[..], 10, 0),
        ("t", 20, 1),
        (&long[..], big, 0),
        ("t", big, 1),
        ("t", 30, 1),
    ] {
        let n = publisher.publish(topic, payload(size)).unwrap();
        assert_eq!(n, queued, "{topic} {size}");
    }
    // Sorted: a transfer and the lane's frames are not ordered between them (over AF_UNIX
    // each goes on a socket of its own); the numbers 2 and 4 are what never came.
    let mut seen: Vec<_> = take(&sub, 4)
        .await
        .iter()
        .map(|m| (m.meta.sequence.unwrap(), m.body.len()))
        .collect();
    seen.sort();
    assert_eq!(seen, vec![(1, 10), (3, 20), (5, big), (6, 30)]);
    assert_eq!(publisher.dropped_on(&long).of(DropCause::Refused), 2);
    assert_eq!(publisher.dropped().total(), 2);
    assert_eq!(
        client.counters().streams_refused,
        0,
        "nothing above the bound was written"
    );
    let far = listener.publisher(&format!("/{}", "f".repeat(70))).unwrap();
    let sub = client.subscriber();
    sub.connect(&far.address().to_string()).await.unwrap();
    let e = sub.subscribe("t").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e:?}");
}

on_every_transport!(
    a_copy_whose_header_is_above_the_subscribers_bound_is_dropped_not_written,
    header_above_subscriber_bound
);

/// A publisher whose byte budget is 1000 and a subscriber of "t" that reassembles with a hold
/// of `hold`, which got copy 1 while copy 2 was dropped at the publisher (its budget full).
async fn a_number_missing(t: Transport, hold: usize) -> (Runtime, Runtime, Publisher, Subscriber) {
    let limits = Limits {
        subscriber_buffer_bytes: 1000,
        max_reorder_hold: hold,
        ..Limits::default()
    };
    let server = Runtime::new(config(limits.clone())).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let client = Runtime::new(ordered(limits, Ordering::Reassemble)).unwrap();
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();
    publisher.publish("t", payload(600)).unwrap(); // 1
    assert_eq!(publisher.publish("t", payload(600)).unwrap(), 0); // 2: dropped
    (server, client, publisher, sub)
}

async fn full_hold(t: Transport) {
    let (_server, _client, publisher, sub) = a_number_missing(t, 2).await;
    for _ in 0..3 {
        publisher.publish("t", payload(100)).unwrap(); // 3, 4, 5
    }
    let got = take(&sub, 4).await;
    let seen: Vec<_> = got
        .iter()
        .map(|m| (m.meta.sequence.unwrap(), m.meta.gap.unwrap()))
        .collect();
    // 3 and 4 wait for 2; the third held copy passes the hold of 2, which releases 3 with
    // the gap it was waiting for.
    assert_eq!(seen, vec![(1, 0), (3, 1), (4, 0), (5, 0)]);
}

on_every_transport!(a_full_hold_reports_the_drop_it_was_waiting_for, full_hold);

on_every_transport!(
    what_a_gone_publisher_left_held_is_delivered_with_its_gap,
    |t| async move {
        let (server, _client, publisher, sub) = a_number_missing(t, 16).await;
        publisher.publish("t", payload(100)).unwrap(); // 3
        publisher.publish("t", payload(100)).unwrap(); // 4
                                                       // 3 and 4 wait for 2, which never comes: the publisher's runtime drains (its copies
                                                       // written out) and goes. Its connection's end releases them with the gap they waited
                                                       // for, rather than dropping what arrived.
        let first = sub.recv().await.unwrap();
        assert_eq!((first.meta.sequence, first.meta.gap), (Some(1), Some(0)));
        server.drain(Duration::from_secs(5)).await;
        let got = take(&sub, 2).await;
        let seen: Vec<_> = got
            .iter()
            .map(|m| (m.meta.sequence.unwrap(), m.meta.gap.unwrap()))
            .collect();
        assert_eq!(seen, vec![(3, 1), (4, 0)]);
    }
);

on_every_transport!(
    a_subscriber_that_requires_ordering_negotiates_it,
    |t| async move {
        // The publisher's runtime requires nothing; it offers every level it implements.
        let (_s, listener, _c) = pair(t).await;
        let publisher = listener.publisher("/feed").unwrap();
        let client = Runtime::new(ordered(Limits::default(), Ordering::Reassemble)).unwrap();
        let sub = client.subscriber();
        sub.connect(&publisher.address().to_string()).await.unwrap();
        sub.subscribe("#").await.unwrap();
        let mut got = Vec::new();
        for i in 0..20 {
            publisher.publish("x.y", format!("{i}")).unwrap();
            got.push(sub.recv().await.unwrap());
        }
        for (i, m) in got.iter().enumerate() {
            assert_eq!(m.meta.sequence, Some(i as u64 + 1));
            assert_eq!(m.meta.gap, Some(0));
            assert_eq!(m.body, Bytes::from(format!("{i}")));
        }
    }
);

async fn streamed(t: Transport) {
    let limits = Limits {
        subscriber_buffer_bytes: 64 * 1024,
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let publisher = listener.publisher("/video").unwrap();
    let addr = publisher.address().to_string();
    let a = client.subscriber();
    a.connect(&addr).await.unwrap();
    a.subscribe("frames.#").await.unwrap();
    let b = client.subscriber();
    b.connect(&addr).await.unwrap();
    b.subscribe("frames.hd").await.unwrap();
    // 1.25 MiB: twenty times the byte budget, which `publish` refuses.
    let body = payload(40 * 32 * 1024);
    assert_eq!(
        publisher
            .publish("frames.hd", body.clone())
            .unwrap_err()
            .code(),
        ErrorCode::LimitExceeded
    );
    let mut f = publisher.open("frames.hd").unwrap();
    assert_eq!(f.copies(), 2);
    let send = async {
        for c in body.chunks(32 * 1024) {
            assert_eq!(f.write(Bytes::copy_from_slice(c)).await.unwrap(), 2);
        }
        f.finish()
    };
    let (attached, ma, mb) = tokio::join!(send, a.recv(), b.recv());
    assert_eq!(attached, 2);
    for m in [ma.unwrap(), mb.unwrap()] {
        assert_eq!(m.meta.topic.as_deref(), Some("frames.hd"));
        assert_eq!(m.body.len(), body.len());
        assert!(m.body == body, "byte-exact");
    }
    assert_eq!(publisher.dropped().total(), 0);
}

on_every_transport!(
    a_streamed_publish_carries_a_payload_no_publish_could_take,
    streamed
);

async fn streamed_stall(t: Transport) {
    let limits = Limits {
        subscriber_buffer_bytes: 64 * 1024,
        endpoint_queue: 1,
        stream_receive_window: 64 * 1024,
        connection_receive_window: 128 * 1024,
        max_concurrent_uni_streams: 4,
        // How long a write waits for the stalled copy's room before dropping it; the reader
        // must find room within it too, so it is long enough for a loaded machine.
        fanout_wait: Duration::from_millis(3000),
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let publisher = listener.publisher("/video").unwrap();
    let addr = publisher.address().to_string();
    let reader = client.subscriber();
    reader.connect(&addr).await.unwrap();
    reader.subscribe("f").await.unwrap();
    let stalled = client.subscriber();
    stalled.connect(&addr).await.unwrap();
    stalled.subscribe("f").await.unwrap();
    // The stalled subscriber's queue is full (it never reads from here on).
    publisher.publish("f", "first").unwrap();
    assert_eq!(&reader.recv().await.unwrap().body[..], b"first");
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    while stalled.queued() < 1 {
        tick.tick().await;
    }
    let body = payload(4 << 20);
    let mut f = publisher.open("f").unwrap();
    assert_eq!(f.copies(), 2);
    let send = async {
        for c in body.chunks(32 * 1024) {
            f.write(Bytes::copy_from_slice(c)).await.unwrap();
        }
        f.finish()
    };
    let (attached, m) = tokio::join!(send, reader.recv());
    let m = m.unwrap();
    assert!(
        m.body == body,
        "the reading subscriber got the whole payload"
    );
    assert_eq!(
        attached, 1,
        "the stalled copy was dropped, the reader's kept"
    );
    let d = publisher.dropped_on("f");
    assert_eq!(d.byte_budget, 1, "{d:?}");
    // The stalled subscriber never sees a fragment: what it has is the first message only.
    assert_eq!(&stalled.recv().await.unwrap().body[..], b"first");
    assert_eq!(stalled.queued(), 0);
}

on_every_transport!(
    a_streamed_publish_keeps_the_reader_when_another_stalls,
    streamed_stall
);

/// The two ceilings of a stalled subscriber: below `subscriber_buffer_bytes / endpoint_queue`
/// the queue refuses first, above it the byte budget.
async fn ceilings(t: Transport) {
    let limits = Limits {
        endpoint_queue: 4,
        subscriber_buffer_bytes: 64 * 1024, // crossover 16 KiB
        max_concurrent_uni_streams: 2,
        stream_receive_window: 16 * 1024,
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("#").await.unwrap();
    // Synchronous bursts (current-thread runtime: the writer runs only when we await), so
    // which bound refuses is a function of the payload alone.
    for _ in 0..20 {
        publisher.publish("small", payload(1024)).unwrap();
    }
    let small = publisher.dropped_on("small");
    assert_eq!(small.queue_full, 16, "{small:?}");
    assert_eq!(small.byte_budget, 0, "{small:?}");
    // Let the writer take the small ones off the queue (the subscriber holds them).
    let got = take(&sub, 4).await;
    assert_eq!(got.len(), 4);
    for _ in 0..20 {
        publisher.publish("large", payload(30 * 1024)).unwrap();
    }
    let large = publisher.dropped_on("large");
    assert_eq!(large.queue_full, 0, "{large:?}");
    assert_eq!(large.byte_budget, 18, "{large:?}");
}

on_every_transport!(stalled_subscriber_ceilings_follow_the_payload, ceilings);

/// A subscriber that goes with copies still queued for it: they are counted, not kept.
async fn dead_subscriber(t: Transport) {
    let server = Runtime::new(config(Limits::default())).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let client = Runtime::new(config(Limits {
        endpoint_queue: 2,
        max_concurrent_uni_streams: 2,
        stream_receive_window: 16 * 1024,
        connection_receive_window: 32 * 1024,
        ..Limits::default()
    }))
    .unwrap();
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();
    for _ in 0..2 {
        assert_eq!(publisher.publish("t", "x").unwrap(), 1);
    }
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    while sub.queued() < 2 {
        tick.tick().await;
    }
    // Its queue is full: what follows waits unread in its stream slots or its lane's window
    // until the writer waits too, and the publisher's queue holds the rest.
    for _ in 0..20 {
        assert_eq!(publisher.publish("t", vec![b'y'; 4096]).unwrap(), 1);
    }
    // The subscriber goes without unsubscribing.
    client.shutdown();
    while publisher.subscriber_count() > 0 {
        tick.tick().await;
    }
    assert_eq!(
        publisher.publish("t", "z").unwrap(),
        0,
        "gone from the filters"
    );
    let d = publisher.dropped_on("t");
    assert!(d.dead_subscriber >= 1, "{d:?}");
}

#[tokio::test]
async fn a_dead_subscriber_loses_its_queue_counted_quic() {
    common::bounded(dead_subscriber(Transport::Quic)).await
}

#[tokio::test]
async fn a_dead_subscriber_loses_its_queue_counted_inproc() {
    common::bounded(dead_subscriber(Transport::Inproc)).await
}

#[tokio::test]
async fn a_local_subscriber_that_parks_nothing_is_refused_at_subscribe() {
    common::bounded(async {
        let server = Runtime::new(config(Limits::default())).unwrap();
        let listener = server.bind(&bind_address(Transport::Unix)).await.unwrap();
        let publisher = listener.publisher("/feed").unwrap();
        let client = Runtime::new(config(Limits {
            max_parked_reverse: 0,
            ..Limits::default()
        }))
        .unwrap();
        let sub = client.subscriber();
        sub.connect(&publisher.address().to_string()).await.unwrap();
        let e = sub.subscribe("t").await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
        assert!(sub.filters().is_empty());
        assert_eq!(publisher.subscriber_count(), 0);
    })
    .await
}

/// A publisher bound over AF_UNIX on a default runtime, and a subscriber of a runtime made from
/// `client`, subscribed to "t" on it.
async fn local_feed(client: RuntimeConfig) -> (Runtime, Listener, Runtime, Publisher, Subscriber) {
    let server = Runtime::new(config(Limits::default())).unwrap();
    let listener = server.bind(&bind_address(Transport::Unix)).await.unwrap();
    let client = Runtime::new(client).unwrap();
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();
    (server, listener, client, publisher, sub)
}

/// Over AF_UNIX the lane is a parked connection the publisher keeps, and the subscriber parks a
/// replacement at once (PROTOCOL.md §3.7 step 6): with a pool of one, a larger copy after the
/// lane opened still finds a parked connection, where without the replacement every one would
/// be dropped as `reverse_pool_empty` for as long as the lane lives.
#[tokio::test]
async fn a_lane_on_a_parked_connection_leaves_the_pool_its_size() {
    if !common::lanes_on() {
        return;
    }
    common::bounded(async {
        let limits = Limits {
            max_parked_reverse: 1,
            ..Limits::default()
        };
        let (_server, _listener, client, publisher, sub) = local_feed(config(limits)).await;
        publisher.publish("t", "small").unwrap();
        assert_eq!(&sub.recv().await.unwrap().body[..], b"small");
        assert_eq!(client.counters().lane_messages_received, 1);
        // Above lane_max_message: a parked connection of its own. The replacement is parked
        // a moment after the lane opened, so a copy published before it arrives may be
        // dropped; one published after it is delivered.
        let big = vec![7u8; 32 * 1024];
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for n in 0.. {
            assert!(
                n < 500,
                "no larger copy arrived: {:?}",
                publisher.dropped_on("t")
            );
            publisher.publish("t", big.clone()).unwrap();
            tokio::select! {
                m = sub.recv() => { assert_eq!(m.unwrap().body[..], big[..]); break; }
                _ = tick.tick() => {}
            }
        }
        // The lane still carries the small ones, in order.
        for i in 0..3u8 {
            publisher.publish("t", vec![i]).unwrap();
        }
        for i in 0..3u8 {
            assert_eq!(sub.recv().await.unwrap().body[..], [i]);
        }
        assert_eq!(client.counters().lane_messages_received, 4);
    })
    .await;
}

/// A publisher keeps a parked connection as a lane only where both HELLOs set FEATURES bits 0
/// and 2 (PROTOCOL.md §3.1.1, §3.7): a subscriber that offers no lanes gets each copy as a
/// transfer on a parked connection of its own, and the publisher sends no lane at all.
#[tokio::test]
async fn a_local_subscriber_without_lanes_gets_each_copy_on_a_parked_connection() {
    common::bounded(async {
        let (server, _listener, client, publisher, sub) = local_feed(RuntimeConfig {
            lane_max_message: 0,
            ..config(Limits::default())
        })
        .await;
        // One at a time: eight parked connections, one taken per copy and parked again.
        for i in 0..20u8 {
            publisher.publish("t", vec![i]).unwrap();
            assert_eq!(sub.recv().await.unwrap().body[..], [i]);
        }
        assert_eq!(client.counters().lane_messages_received, 0);
        assert_eq!(server.counters().lane_messages_sent, 0);
        assert_eq!(publisher.dropped().total(), 0);
    })
    .await;
}

#[tokio::test]
async fn an_empty_reverse_pool_drops_and_the_subscription_survives() {
    common::bounded(async {
        let limits = Limits {
            max_parked_reverse: 2,
            endpoint_queue: 2,
            ..Limits::default()
        };
        let (_server, _listener, _client, publisher, sub) = local_feed(config(limits)).await;
        // Above lane_max_message (16 KiB by default): each copy takes a parked connection of
        // its own (a small one would ride the session's lane, §4.2).
        let big = |i: u8| vec![i; 32 * 1024];
        for i in 0..50 {
            publisher.publish("t", big(i)).unwrap();
            // The writer takes each copy off the queue: the pool, not the queue, runs out.
            tokio::task::yield_now().await;
        }
        // The writer takes every copy off the queue at once; beyond the two parked
        // connections (and what re-parks meanwhile) they find the pool empty.
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        // After a stall, ticks come 10 ms apart, not in a burst that would spend the retry
        // count below in no time.
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut received = 0u64;
        while received + publisher.dropped_on("t").total() < 50 {
            tokio::select! {
                m = sub.recv() => { m.unwrap(); received += 1; }
                _ = tick.tick() => {}
            }
        }
        let d = publisher.dropped_on("t");
        assert!(d.reverse_pool_empty > 0, "{d:?}");
        assert_eq!(received + d.total(), 50);
        // The subscription survives: once connections are parked again, copies arrive.
        let mut n = 0;
        loop {
            publisher.publish("t", big(99)).unwrap();
            n += 1;
            tokio::select! {
                m = sub.recv() => { assert_eq!(m.unwrap().body[..], big(99)[..]); break; }
                _ = tick.tick() => assert!(n < 500, "no copy arrived after the pool emptied"),
            }
        }
    })
    .await
}

on_every_transport!(a_closed_subscriber_refuses_more_work, |t| async move {
    let (_s, listener, client) = pair(t).await;
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();
    assert!(
        sub.recv_many(0).await.unwrap().is_empty(),
        "up to 0 is none"
    );
    sub.close();
    assert_eq!(sub.recv().await.unwrap_err().code(), ErrorCode::Closed);
    let again = sub.connect(&publisher.address().to_string()).await;
    assert_eq!(again.unwrap_err().code(), ErrorCode::Closed);
    assert_eq!(
        sub.subscribe("u").await.unwrap_err().code(),
        ErrorCode::Closed
    );
});

on_every_transport!(
    try_recv_takes_what_is_ready_without_waiting,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        let publisher = listener.publisher("/feed").unwrap();
        let sub = client.subscriber();
        // Not connected: the error `recv` would return at once.
        assert_eq!(
            sub.try_recv().unwrap().unwrap_err().code(),
            ErrorCode::NotConnected
        );
        sub.connect(&publisher.address().to_string()).await.unwrap();
        sub.subscribe("a.#").await.unwrap();
        assert!(sub.try_recv().is_none(), "nothing published yet");
        // No more than the parked reverse connections over AF_UNIX (one copy each).
        for i in 0..5u8 {
            publisher.publish("a.b", vec![i]).unwrap();
        }
        let mut got = Vec::new();
        while got.len() < 5 {
            let m = match sub.try_recv() {
                Some(r) => r.unwrap(),
                None => sub.recv().await.unwrap(),
            };
            assert_eq!(m.meta.topic.as_deref(), Some("a.b"));
            got.push(m.body[0]);
        }
        assert_eq!(got, (0..5).collect::<Vec<_>>());
        assert!(sub.try_recv().is_none());
        sub.close();
        assert_eq!(
            sub.try_recv().unwrap().unwrap_err().code(),
            ErrorCode::Closed
        );
    }
);

on_every_transport!(
    a_subscriber_whose_publishers_are_all_gone_gets_what_is_queued_then_connection_lost,
    |t| async move {
        let (first, listener, client) = pair(t).await;
        let (second, other, _) = pair(t).await;
        let publishers = [
            listener.publisher("/feed").unwrap(),
            other.publisher("/feed").unwrap(),
        ];
        let sub = client.subscriber();
        for p in &publishers {
            sub.connect(&p.address().to_string()).await.unwrap();
        }
        sub.subscribe("t").await.unwrap();
        for i in 0..3u8 {
            publishers[0].publish("t", vec![i]).unwrap();
        }
        while sub.queued() < 3 {
            tokio::task::yield_now().await;
        }
        // One publisher gone: the other still delivers, and nothing is an error yet.
        first.shutdown();
        publishers[1].publish("t", vec![3]).unwrap();
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(sub.recv().await.unwrap().body[0]);
        }
        got.sort();
        assert_eq!(got, [0, 1, 2, 3]);
        // Every publisher gone: what is queued first, then the loss with its cause.
        publishers[1].publish("t", vec![4]).unwrap();
        while sub.queued() < 1 {
            tokio::task::yield_now().await;
        }
        second.shutdown();
        assert_eq!(&sub.recv().await.unwrap().body[..], [4]);
        let e = sub.recv().await.unwrap_err();
        assert!(
            matches!(e, Error::ConnectionLost(weida::LossCause::PeerClosed)),
            "{e:?}"
        );
    }
);

on_every_transport!(
    a_fan_out_chunk_above_the_byte_budget_is_refused_and_the_copies_stay_attached,
    |t| async move {
        let limits = Limits {
            subscriber_buffer_bytes: 64 * 1024,
            ..Limits::default()
        };
        let (_s, listener, client) = pair_with(t, limits).await;
        let publisher = listener.publisher("/video").unwrap();
        let sub = client.subscriber();
        sub.connect(&publisher.address().to_string()).await.unwrap();
        sub.subscribe("f").await.unwrap();
        let mut f = publisher.open("f").unwrap();
        assert_eq!(f.write_now(&b"head, "[..]).unwrap(), 1);
        let above = Bytes::from(payload(64 * 1024 + 1));
        for e in [
            f.write_now(above.clone()).unwrap_err(),
            f.write(above).await.unwrap_err(),
        ] {
            assert!(
                matches!(
                    e,
                    Error::LimitExceeded {
                        limit: weida::Limit::ByteBudget,
                        ..
                    }
                ),
                "{e:?}"
            );
        }
        // Nothing of the refused chunk went out, and the copy goes on.
        assert_eq!(f.copies(), 1);
        assert_eq!(f.write(&b"tail"[..]).await.unwrap(), 1);
        assert_eq!(f.finish(), 1);
        assert_eq!(&sub.recv().await.unwrap().body[..], b"head, tail");
        assert_eq!(publisher.dropped().total(), 0);
    }
);

/// A small copy rides the subscriber's message lane when both sides offer lanes, so small
/// copies arrive in publish order (PATTERNS §4): over QUIC and in process a stream the
/// publisher opens, over AF_UNIX one parked connection kept as the lane (§4.2), with the pool's
/// two other connections and the replacement the subscriber parks left for larger copies. With
/// lanes off every copy is a stream of its own: each arrives once, in no promised order (over
/// AF_UNIX a burst then finds the parked pool empty, which is
/// `an_empty_reverse_pool_drops_and_the_subscription_survives`).
async fn small_copies_in_order(t: Transport) {
    if t == Transport::Unix && !common::lanes_on() {
        return;
    }
    let (_s, listener, client) = pair(t).await;
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();
    // Fewer than either queue bound (endpoint_queue, 256): nothing is dropped.
    let n = 200u32;
    for i in 0..n {
        assert_eq!(publisher.publish("t", i.to_be_bytes().to_vec()).unwrap(), 1);
    }
    let mut got: Vec<u32> = take(&sub, n as usize)
        .await
        .iter()
        .map(|m| u32::from_be_bytes(m.body[..].try_into().unwrap()))
        .collect();
    let on_lane = client.counters().lane_messages_received;
    if common::lanes_on() {
        assert_eq!(on_lane, u64::from(n), "every copy came on the lane");
        assert_eq!(got, (0..n).collect::<Vec<_>>(), "in publish order");
    } else {
        assert_eq!(on_lane, 0, "no lane");
        got.sort_unstable();
        assert_eq!(got, (0..n).collect::<Vec<_>>(), "each copy once");
    }
}

#[tokio::test]
async fn small_copies_ride_the_subscribers_lane_in_publish_order_quic() {
    common::bounded(small_copies_in_order(Transport::Quic)).await;
}

#[tokio::test]
async fn small_copies_ride_the_subscribers_lane_in_publish_order_inproc() {
    common::bounded(small_copies_in_order(Transport::Inproc)).await;
}

#[tokio::test]
async fn small_copies_ride_the_subscribers_lane_in_publish_order_unix() {
    common::bounded(small_copies_in_order(Transport::Unix)).await;
}

on_every_transport!(
    a_copy_handed_back_wakes_a_waiting_receive_and_the_waits_for_tests_resolve_on_their_event,
    |t| async move {
        let (_s, listener, client) = pair(t).await;
        let publisher = listener.publisher("/feed").unwrap();
        let sub = client.subscriber();
        sub.connect(&publisher.address().to_string()).await.unwrap();
        sub.subscribe("t").await.unwrap();
        // Resolved by the subscribe's own event, not by polling.
        publisher.until_subscribers(1).await;
        for i in 0..2u8 {
            publisher.publish("t", vec![i]).unwrap();
        }
        sub.until_queued(2).await;
        assert_eq!(sub.queued(), 2);
        let (first, second) = (sub.recv().await.unwrap(), sub.recv().await.unwrap());
        // A receive already waiting on an empty queue gets a copy handed back.
        let (got, ()) = tokio::join!(sub.recv(), async {
            tokio::task::yield_now().await;
            sub.give_back(first);
        });
        assert_eq!(&got.unwrap().body[..], [0]);
        // A copy handed back goes before one queued meanwhile.
        publisher.publish("t", vec![2]).unwrap();
        sub.until_queued(1).await;
        sub.give_back(second);
        assert_eq!(&sub.recv().await.unwrap().body[..], [1]);
        assert_eq!(&sub.recv().await.unwrap().body[..], [2]);
        let waiting = tokio::spawn(async move { sub.recv().await.map(|m| m.body) });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // A subscriber that goes: the count falls to 0 once its copies are counted.
        client.shutdown();
        publisher.until_subscribers(0).await;
        assert_eq!(publisher.subscriber_count(), 0);
        assert!(waiting.await.unwrap().is_err());
    }
);

/// A publisher at /feed and a subscriber to "t" its publisher counts.
async fn subscribed_to_t(listener: &Listener, client: &Runtime) -> (Publisher, Subscriber) {
    let publisher = listener.publisher("/feed").unwrap();
    let sub = client.subscriber();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    sub.subscribe("t").await.unwrap();
    publisher.until_subscribers(1).await;
    (publisher, sub)
}

/// A fan-out's canceler (PATTERNS §4.1): a write waiting for a full subscriber's room fails
/// `Canceled` when it is called, every copy is cancelled (the subscriber never sees the
/// message), later writes fail `Canceled`, `finish` reports no copy, and the publisher goes on.
async fn fanout_canceler(t: Transport) {
    let limits = Limits {
        subscriber_buffer_bytes: 1000,
        fanout_wait: Duration::from_secs(60),
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let (publisher, sub) = subscribed_to_t(&listener, &client).await;
    let mut f = publisher.open("t").unwrap();
    let canceler = f.canceler();
    assert_eq!(f.write_now(payload(600)).unwrap(), 1);
    // No room for a second 600 bytes until the copy's writer runs, which it cannot before the
    // cancel (a current-thread runtime: the join polls the write, then cancels).
    let (written, ()) = tokio::join!(f.write(payload(600)), async {
        assert!(canceler.cancel());
    });
    assert_eq!(written.unwrap_err().code(), ErrorCode::Canceled);
    assert_eq!(f.copies(), 0);
    assert_eq!(
        f.write_now(&b"late"[..]).unwrap_err().code(),
        ErrorCode::Canceled
    );
    assert_eq!(f.finish(), 0);
    assert!(!canceler.cancel());
    publisher.publish("t", &b"after"[..]).unwrap();
    let m = sub.recv().await.unwrap();
    assert_eq!(&m.body[..], b"after", "the cancelled message never arrives");
}
on_every_transport!(
    a_fanout_canceler_interrupts_a_waiting_write_and_cancels_every_copy,
    fanout_canceler
);

/// After `finish` a fan-out's canceler does nothing: the message arrives whole.
async fn fanout_canceler_after_finish(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let (publisher, sub) = subscribed_to_t(&listener, &client).await;
    let mut f = publisher.open("t").unwrap();
    let canceler = f.canceler();
    f.write_now(&b"who"[..]).unwrap();
    f.write(&b"le"[..]).await.unwrap();
    assert_eq!(f.finish(), 1);
    assert!(!canceler.cancel());
    assert_eq!(&sub.recv().await.unwrap().body[..], b"whole");
}
on_every_transport!(
    a_fanout_canceler_after_finish_does_nothing,
    fanout_canceler_after_finish
);
