//! PerProducer ordering outside Pub/Sub (GUARANTEES §4, PATTERNS §1.7): a puller whose runtime
//! requires detect gets every pushed message numbered, with the gap before it; a level a
//! pattern cannot honour is refused with NEGOTIATION_FAILED, never accepted and left unnumbered.

mod common;

use bytes::Bytes;
use common::{bind_address, config, payload};
use weida::{ErrorCode, GuaranteeSet, Limits, Ordering, Runtime, RuntimeConfig};

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
    let (mut refused, mut third) = (None, None);
    while refused.is_none() || third.is_none() {
        match puller.recv().await {
            Ok(m) => third = Some(m),
            Err(e) => refused = Some(e.code()),
        }
    }
    assert_eq!(refused, Some(ErrorCode::LimitExceeded));
    let third = third.unwrap();
    assert_eq!((third.meta.sequence, third.meta.gap), (Some(3), Some(1)));
    assert_eq!(third.body, payload(100));
});

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
    }
);
