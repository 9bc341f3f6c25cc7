//! PerProducer ordering outside Pub/Sub (GUARANTEES §4, PATTERNS §1.7, §6.1): a puller (bound
//! or dialling) or a pair whose runtime requires detect gets every message numbered, with the
//! gap before it; a level a pattern cannot honour is refused with NEGOTIATION_FAILED, never
//! accepted and left unnumbered.

mod common;

use bytes::Bytes;
use common::{bind_address, config, payload};
use weida::{
    EndpointOptions, ErrorCode, GuaranteeSet, Limits, Ordering, Pair, PeerEvent, Runtime,
    RuntimeConfig,
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

on_every_transport!(
    a_puller_that_requires_ordering_gets_every_message_numbered,
    |t| async move {
        let server = Runtime::new(ordered(Limits::default(), Ordering::Detect)).unwrap();
        let listener = server.bind(&bind_address(t)).await.unwrap();
        let puller = listener.puller("/jobs").unwrap();
        // The pusher's runtime requires nothing: a pusher numbers because its puller asks.
        let client = Runtime::new(config(Limits::default())).unwrap();
        let pusher = client.pusher();
        pusher.connect(&puller.address().to_string()).await.unwrap();
        // Small bodies (a lane's frames where lanes are on), large ones (a stream each) and a
        // streamed message, one at a time: one producer, numbered in send order.
        for i in 0..24u64 {
            let body = if i % 8 == 7 {
                payload(40_000)
            } else {
                payload(10 + i as usize)
            };
            if i == 12 {
                let mut t = pusher.open(Default::default()).await.unwrap();
                t.write(Bytes::from(body.clone())).await.unwrap();
                t.finish().await.unwrap();
            } else {
                pusher.send(body.clone()).await.unwrap();
            }
            let m = puller.recv().await.unwrap();
            assert_eq!(m.body, body, "{i}");
            assert_eq!(m.meta.sequence, Some(i + 1), "{i}");
            assert_eq!(m.meta.gap, Some(0), "{i}");
        }
        // A batch receive numbers what it takes the same way.
        for _ in 0..10 {
            pusher.send("b").await.unwrap();
        }
        let mut got = Vec::new();
        while got.len() < 10 {
            got.extend(puller.recv_many(10 - got.len()).await.unwrap());
        }
        let seqs: Vec<_> = got.iter().map(|m| (m.meta.sequence, m.meta.gap)).collect();
        let want: Vec<_> = (25..35).map(|s| (Some(s), Some(0))).collect();
        assert_eq!(seqs, want);
    }
);

on_every_transport!(a_refused_push_shows_up_as_a_gap, |t| async move {
    let limits = Limits {
        max_collected_body: 1000,
        ..Limits::default()
    };
    let server = Runtime::new(ordered(limits, Ordering::Detect)).unwrap();
    let listener = server.bind(&bind_address(t)).await.unwrap();
    let puller = listener.puller("/jobs").unwrap();
    let client = Runtime::new(config(Limits::default())).unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    pusher.send(payload(100)).await.unwrap();
    let first = puller.recv().await.unwrap();
    assert_eq!((first.meta.sequence, first.meta.gap), (Some(1), Some(0)));
    // Number 2 is above the puller's max_collected_body: its receive fails, and it is a
    // number the puller never delivers.
    pusher.send(payload(2000)).await.unwrap();
    pusher.send(payload(100)).await.unwrap();
    refusal_then_the_next_with_its_gap(|| puller.recv()).await;
});

/// Receives, in either order (the refused message's stream and the next one's race), the
/// refusal of number 2 (LIMIT_EXCEEDED) and number 3, a 100-byte body, with the gap of 1 it
/// leaves.
async fn refusal_then_the_next_with_its_gap<F, R>(mut recv: F)
where
    F: FnMut() -> R,
    R: std::future::Future<Output = weida::Result<weida::Message>>,
{
    let (mut refused, mut third) = (None, None);
    while refused.is_none() || third.is_none() {
        match recv().await {
            Ok(m) => third = Some(m),
            Err(e) => refused = Some(e.code()),
        }
    }
    assert_eq!(refused, Some(ErrorCode::LimitExceeded));
    let third = third.unwrap();
    assert_eq!((third.meta.sequence, third.meta.gap), (Some(3), Some(1)));
    assert_eq!(third.body, payload(100));
}

on_every_transport!(
    a_level_a_pattern_cannot_honour_is_refused_not_downgraded,
    |t| async move {
        // A puller that requires reassemble: a pusher only detects (it holds nothing back at
        // the puller), so it offers detect, and the connection is refused.
        let server = Runtime::new(ordered(Limits::default(), Ordering::Reassemble)).unwrap();
        let listener = server.bind(&bind_address(t)).await.unwrap();
        let puller = listener.puller("/jobs").unwrap();
        let replier = listener.replier("/echo").unwrap();
        let client = Runtime::new(config(Limits::default())).unwrap();
        let e = client
            .pusher()
            .connect(&puller.address().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NegotiationFailed, "{e}");
        // A pair and a dialling puller detect, and hold nothing back: refused by a listener
        // that requires reassemble, whichever role they claim in.
        let pair_at = listener.pair("/chat").unwrap();
        let pusher_at = listener.pusher("/deal").unwrap();
        let e = client
            .pair()
            .connect(&pair_at.address().unwrap().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NegotiationFailed, "{e}");
        let e = client
            .puller()
            .connect(&pusher_at.address().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NegotiationFailed, "{e}");
        // A requester numbers nothing and offers no ordering: refused by a listener that
        // requires it, on any path.
        let e = client
            .requester()
            .connect(&replier.address().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NegotiationFailed, "{e}");
        let e = client
            .peer()
            .connect(&replier.address().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NegotiationFailed, "{e}");

        // A runtime that requires ordering for what it receives still sends and asks: its
        // pushers and requesters require nothing of their connections.
        let plain = Runtime::new(config(Limits::default())).unwrap();
        let l = plain.bind(&bind_address(t)).await.unwrap();
        let pull = l.puller("/jobs").unwrap();
        let rep = l.replier("/echo").unwrap();
        let rep_address = rep.address().to_string();
        tokio::spawn(async move {
            while let Ok(mut ex) = rep.accept().await {
                let b = ex.take_body().await.unwrap();
                ex.reply(b).await.unwrap();
            }
        });
        let strict = Runtime::new(ordered(Limits::default(), Ordering::Reassemble)).unwrap();
        let pusher = strict.pusher();
        pusher.connect(&pull.address().to_string()).await.unwrap();
        pusher.send("x").await.unwrap();
        let m = pull.recv().await.unwrap();
        // The puller required nothing: nothing is numbered.
        assert_eq!((m.meta.sequence, m.meta.gap), (None, None));
        let req = strict.requester();
        req.connect(&rep_address).await.unwrap();
        assert_eq!(req.request("ping").await.unwrap(), Bytes::from("ping"));
        // But a dialling pair receives, and cannot hold back what the bound pair sends: a
        // runtime that requires reassemble refuses its own dialling pair and puller.
        let plain_pair = l.pair("/chat").unwrap();
        let e = strict
            .pair()
            .connect(&plain_pair.address().unwrap().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NegotiationFailed, "{e}");
        let plain_pusher = l.pusher("/deal").unwrap();
        let e = strict
            .puller()
            .connect(&plain_pusher.address().to_string())
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::NegotiationFailed, "{e}");
    }
);

/// Sends small bodies (a lane's frames where lanes are on), large ones (a stream each) and a
/// streamed message from `from` to `to`, one at a time, and checks each arrives numbered from
/// `first` with no gap (`numbered`), or not numbered at all.
async fn numbered_one_at_a_time(from: &Pair, to: &Pair, first: u64, numbered: bool) {
    for i in 0..12u64 {
        let body = if i % 4 == 3 {
            payload(40_000)
        } else {
            payload(10 + i as usize)
        };
        if i == 6 {
            let mut t = from.open(Default::default()).await.unwrap();
            t.write(Bytes::from(body.clone())).await.unwrap();
            t.finish().await.unwrap();
        } else {
            from.send(body.clone()).await.unwrap();
        }
        let m = to.recv().await.unwrap();
        assert_eq!(m.body, body, "{i}");
        if numbered {
            assert_eq!(
                (m.meta.sequence, m.meta.gap),
                (Some(first + i), Some(0)),
                "{i}"
            );
        } else {
            assert_eq!((m.meta.sequence, m.meta.gap), (None, None), "{i}");
        }
    }
}

on_every_transport!(
    a_pair_numbers_both_ways_when_its_peer_requires_ordering,
    |t| async move {
        let server = Runtime::new(ordered(Limits::default(), Ordering::Detect)).unwrap();
        let listener = server.bind(&bind_address(t)).await.unwrap();
        let mut events = listener.events();
        let bound = listener.pair("/chat").unwrap();
        let address = bound.address().unwrap().to_string();
        let client = Runtime::new(ordered(Limits::default(), Ordering::Detect)).unwrap();
        let dialling = client.pair();
        dialling.connect(&address).await.unwrap();
        numbered_one_at_a_time(&dialling, &bound, 1, true).await;
        numbered_one_at_a_time(&bound, &dialling, 1, true).await;

        // A dialling pair that requires nothing: what it sends is numbered (the bound side
        // asked), what it receives is not (it did not). The bound pair is claimable again
        // before its listener tells of the first peer's loss.
        client.close().await;
        drop(dialling);
        loop {
            match events.next().await.expect("the listener is held") {
                Ok(PeerEvent::Lost { .. }) => break,
                Ok(_) => continue,
                Err(missed) => panic!("{missed:?}"),
            }
        }
        let plain = Runtime::new(config(Limits::default())).unwrap();
        let dialling = plain.pair();
        dialling.connect(&address).await.unwrap();
        numbered_one_at_a_time(&dialling, &bound, 1, true).await;
        numbered_one_at_a_time(&bound, &dialling, 1, false).await;
    }
);

on_every_transport!(
    a_pair_refused_above_its_peers_limit_is_a_gap,
    |t| async move {
        let limits = Limits {
            max_collected_body: 1000,
            ..Limits::default()
        };
        let server = Runtime::new(ordered(limits.clone(), Ordering::Detect)).unwrap();
        let listener = server.bind(&bind_address(t)).await.unwrap();
        let bound = listener.pair("/chat").unwrap();
        let client = Runtime::new(ordered(limits, Ordering::Detect)).unwrap();
        let dialling = client.pair();
        dialling
            .connect(&bound.address().unwrap().to_string())
            .await
            .unwrap();
        for (from, to) in [(&dialling, &bound), (&bound, &dialling)] {
            from.send(payload(100)).await.unwrap();
            let first = to.recv().await.unwrap();
            assert_eq!((first.meta.sequence, first.meta.gap), (Some(1), Some(0)));
            // Number 2 is above the receiver's max_collected_body: its receive fails, and it
            // is a number never delivered. The send itself may be refused before its FIN is
            // queued (the refusal race, PATTERNS §1.6); its number was taken either way.
            if let Err(e) = from.send(payload(2000)).await {
                assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e}");
            }
            from.send(payload(100)).await.unwrap();
            refusal_then_the_next_with_its_gap(|| to.recv()).await;
        }
    }
);

on_every_transport!(
    a_bound_pusher_numbers_what_it_deals_to_a_puller_that_requires_ordering,
    |t| async move {
        let server = Runtime::new(config(Limits::default())).unwrap();
        let listener = server.bind(&bind_address(t)).await.unwrap();
        let jobs = listener.pusher("/jobs").unwrap();
        let address = jobs.address().to_string();
        let strict = Runtime::new(ordered(Limits::default(), Ordering::Detect)).unwrap();
        let a = strict.puller();
        a.connect(&address).await.unwrap();
        for i in 0..6u64 {
            let body = if i == 3 { payload(40_000) } else { payload(10) };
            jobs.send(body.clone()).await.unwrap();
            let m = a.recv().await.unwrap();
            assert_eq!(m.body, body);
            assert_eq!((m.meta.sequence, m.meta.gap), (Some(i + 1), Some(0)), "{i}");
        }
        // A worker that requires nothing is dealt unnumbered messages; the first keeps its
        // numbering, one producer per claim, with no gap for what went to the other.
        let plain = Runtime::new(config(Limits::default())).unwrap();
        let b = plain.puller();
        b.connect(&address).await.unwrap();
        for _ in 0..6 {
            jobs.send(payload(10)).await.unwrap();
        }
        let (mut at_a, mut at_b) = (Vec::new(), Vec::new());
        while at_a.len() + at_b.len() < 6 {
            tokio::select! {
                m = a.recv() => at_a.push(m.unwrap()),
                m = b.recv() => at_b.push(m.unwrap()),
            }
        }
        assert_eq!((at_a.len(), at_b.len()), (3, 3));
        let a_seqs: Vec<_> = at_a.iter().map(|m| (m.meta.sequence, m.meta.gap)).collect();
        assert_eq!(
            a_seqs,
            (7..10).map(|s| (Some(s), Some(0))).collect::<Vec<_>>()
        );
        assert!(at_b
            .iter()
            .all(|m| m.meta.sequence.is_none() && m.meta.gap.is_none()));
    }
);

on_every_transport!(
    a_bus_copy_dropped_for_a_slow_member_is_a_gap_there,
    |t| async move {
        let ra = Runtime::new(config(Limits::default())).unwrap();
        let la = ra.bind(&bind_address(t)).await.unwrap();
        let a = ra
            .bus_with(&la, "/fast", &EndpointOptions::new().endpoint_queue(4))
            .unwrap();
        // The stalled member requires ordering, and its buffers are small, so the sender's
        // writer toward it fills soon and later copies are dropped.
        let small = Limits {
            endpoint_queue: 2,
            stream_receive_window: 64 * 1024,
            connection_receive_window: 128 * 1024,
            ..Limits::default()
        };
        let rs = Runtime::new(ordered(small, Ordering::Detect)).unwrap();
        let ls = rs.bind(&bind_address(t)).await.unwrap();
        let stalled = rs.bus(&ls, "/bus").unwrap();
        let rr = Runtime::new(config(Limits::default())).unwrap();
        let lr = rr.bind(&bind_address(t)).await.unwrap();
        let reader = rr.bus(&lr, "/bus").unwrap();
        a.connect(&stalled.address().to_string()).await.unwrap();
        a.connect(&reader.address().to_string()).await.unwrap();
        let body = payload(8 * 1024);
        for _ in 0..400 {
            a.send(body.clone()).await.unwrap();
            reader.recv().await.unwrap();
        }
        let dropped = a.dropped();
        assert!(dropped.queue_full > 0, "{dropped:?}");
        assert_eq!(dropped.total(), dropped.queue_full, "{dropped:?}");
        // Everything queued for the stalled member arrives, numbered from 1: the drops came
        // after it. (Each copy on a stream of its own may overtake another, so the numbers
        // are compared as a set.)
        let queued = 400 - dropped.queue_full;
        let mut seqs = Vec::new();
        for _ in 1..=queued {
            seqs.push(stalled.recv().await.unwrap().meta.sequence.unwrap());
        }
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=queued).collect::<Vec<_>>());
        // Its writer is empty now: the next copy is queued, and its gap is every copy dropped.
        assert_eq!(a.send("after").await.unwrap(), 2);
        let m = stalled.recv().await.unwrap();
        assert_eq!(m.body, Bytes::from("after"));
        assert_eq!(
            (m.meta.sequence, m.meta.gap),
            (Some(401), Some(dropped.queue_full))
        );
        // The reader required nothing: nothing it got is numbered.
        assert_eq!(reader.recv().await.unwrap().meta.sequence, None);
    }
);
