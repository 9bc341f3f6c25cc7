//! Pub/Sub the other way round (PATTERNS §4.4): dialling publishers feed a bound subscriber, a
//! collector, which keeps what its filters select. Over every transport.

mod common;

use std::collections::BTreeSet;

use bytes::Bytes;
use common::{bind_address, config, lanes_on, payload, Transport};
use weida::{
    BoundSubscriber, EndpointOptions, ErrorCode, GuaranteeSet, Limit, Limits, Listener, Ordering,
    Runtime, RuntimeConfig,
};

/// A collector in a runtime of its own, bound at `/logs`, with `config`.
async fn collector(t: Transport, config: RuntimeConfig) -> (Runtime, Listener, BoundSubscriber) {
    let rt = Runtime::new(config).unwrap();
    let l = rt.bind(&bind_address(t)).await.unwrap();
    let c = l.subscriber("/logs").unwrap();
    (rt, l, c)
}

on_every_transport!(two_dialling_publishers_feed_one_collector, |t| async move {
    let (_rc, _lc, c) = collector(t, config(Limits::default())).await;
    c.subscribe("logs.#").unwrap();
    let (ra, rb) = (
        Runtime::new(config(Limits::default())).unwrap(),
        Runtime::new(config(Limits::default())).unwrap(),
    );
    let (a, b) = (ra.publisher(), rb.publisher());
    for p in [&a, &b] {
        p.connect(&c.address().to_string()).await.unwrap();
        assert_eq!(p.peer_count(), 1);
    }
    for i in 0..20 {
        assert_eq!(a.publish("logs.a", format!("a{i}")).unwrap(), 1);
        assert_eq!(b.publish("logs.b.x", format!("b{i}")).unwrap(), 1);
    }
    let mut got = BTreeSet::new();
    while got.len() < 40 {
        let m = c.recv().await.unwrap();
        let body = String::from_utf8(m.body.to_vec()).unwrap();
        let want = if body.starts_with('a') {
            "logs.a"
        } else {
            "logs.b.x"
        };
        assert_eq!(m.meta.topic.as_deref(), Some(want), "{body}");
        assert!(got.insert(body));
    }
    let want: BTreeSet<_> = (0..20)
        .flat_map(|i| [format!("a{i}"), format!("b{i}")])
        .collect();
    assert_eq!(got, want);
    assert_eq!(c.discarded(), 0);
    assert_eq!(a.dropped().total() + b.dropped().total(), 0);
});

on_every_transport!(
    a_collector_keeps_what_its_filters_select_and_counts_the_rest,
    |t| async move {
        let (_rc, _lc, c) = collector(t, config(Limits::default())).await;
        let rp = Runtime::new(config(Limits::default())).unwrap();
        let p = rp.publisher();
        p.connect(&c.address().to_string()).await.unwrap();
        c.subscribe("logs.*.error").unwrap();
        assert_eq!(c.filters(), ["logs.*.error"]);
        for topic in [
            "logs.web.info",
            "logs.db.error",
            "metrics.web.error",
            "logs.web.error",
        ] {
            p.publish(topic, topic).unwrap();
        }
        let kept: BTreeSet<Bytes> = [c.recv().await.unwrap(), c.recv().await.unwrap()]
            .into_iter()
            .map(|m| m.body)
            .collect();
        let want: BTreeSet<Bytes> = ["logs.db.error", "logs.web.error"].map(Bytes::from).into();
        assert_eq!(kept, want);
        // On a lane the copies arrive in publish order, so every discard was seen by then;
        // as streams of their own they may complete in another order.
        if lanes_on() {
            assert_eq!(c.discarded(), 2, "logs.web.info, metrics.web.error");
        }
        assert!(c.unsubscribe("logs.*.error").unwrap());
        assert!(!c.unsubscribe("logs.*.error").unwrap());
        assert_eq!(
            c.subscribe("logs.**").unwrap_err().code(),
            ErrorCode::InvalidFilter
        );
        assert!(c.filters().is_empty());
        // With no filter nothing is kept, as a dialling subscriber with none gets nothing.
        p.publish("logs.web.error", "unwanted").unwrap();
        c.subscribe("end").unwrap();
        p.publish("end", "end").unwrap();
        assert_eq!(c.recv().await.unwrap().body, Bytes::from("end"));
        if lanes_on() {
            assert_eq!(c.discarded(), 3);
        }
    }
);

on_every_transport!(
    a_slow_collector_is_dropped_and_counted_rather_than_blocking,
    |t| async move {
        let rp = Runtime::new(config(Limits::default())).unwrap();
        let p = rp
            .publisher_with(&EndpointOptions::new().endpoint_queue(4))
            .unwrap();
        let small = Limits {
            endpoint_queue: 2,
            stream_receive_window: 64 * 1024,
            connection_receive_window: 128 * 1024,
            ..Limits::default()
        };
        let (_rs, _ls, stalled) = collector(t, config(small)).await;
        let (_rr, _lr, reader) = collector(t, config(Limits::default())).await;
        for s in [&stalled, &reader] {
            s.subscribe("#").unwrap();
            p.connect(&s.address().to_string()).await.unwrap();
        }
        let body = payload(8 * 1024);
        // Each publish follows the reader's receipt of the one before: the collector that keeps
        // pace gets every copy, whatever the stalled one does.
        for i in 0..400 {
            assert!(p.publish("t", body.clone()).unwrap() >= 1, "{i}");
            let m = reader.recv().await.unwrap();
            assert_eq!(m.body.len(), body.len(), "{i}");
        }
        let d = p.dropped();
        assert!(d.queue_full > 0, "{d:?}");
        assert_eq!(d.total(), d.queue_full, "{d:?}");
        assert_eq!(stalled.recv().await.unwrap().body.len(), body.len());
    }
);

on_every_transport!(
    what_a_dialling_publisher_cannot_send_is_refused_to_it,
    |t| async move {
        let limits = Limits {
            subscriber_buffer_bytes: 1000,
            ..Limits::default()
        };
        let rp = Runtime::new(config(limits)).unwrap();
        let p = rp.publisher();
        // Nobody connected: a copy for nobody, not an error.
        assert_eq!(p.publish("t", "alone").unwrap(), 0);
        let (_rc, lc, c) = collector(t, config(Limits::default())).await;
        c.subscribe("t").unwrap();
        p.connect(&c.address().to_string()).await.unwrap();
        let e = p.publish("t", payload(2000)).unwrap_err();
        assert!(
            matches!(
                e,
                weida::Error::LimitExceeded {
                    limit: Limit::ByteBudget,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            p.publish("bad..topic", "x").unwrap_err().code(),
            ErrorCode::InvalidFilter
        );
        assert_eq!(p.dropped().total(), 0);
        assert_eq!(p.publish("t", "fits").unwrap(), 1);
        assert_eq!(c.recv().await.unwrap().body, Bytes::from("fits"));
        // A path that takes no transfer, and one where nothing is bound, fail the connect.
        let _r = lc.replier("/rpc").unwrap();
        let rpc = lc.address().with_path("/rpc").unwrap().to_string();
        assert_eq!(
            p.connect(&rpc).await.unwrap_err().code(),
            ErrorCode::Unsupported
        );
        let none = lc.address().with_path("/none").unwrap().to_string();
        assert_eq!(
            p.connect(&none).await.unwrap_err().code(),
            ErrorCode::UnknownEndpoint
        );
        assert_eq!(p.peer_count(), 1);
    }
);

on_every_transport!(
    a_collector_that_requires_ordering_gets_each_publisher_numbered,
    |t| async move {
        let ordered = RuntimeConfig {
            guarantees: GuaranteeSet {
                ordering: Ordering::Detect,
                ..GuaranteeSet::default()
            },
            ..config(Limits::default())
        };
        let (_rc, _lc, c) = collector(t, ordered).await;
        c.subscribe("#").unwrap();
        let (ra, rb) = (
            Runtime::new(config(Limits::default())).unwrap(),
            Runtime::new(config(Limits::default())).unwrap(),
        );
        let (a, b) = (ra.publisher(), rb.publisher());
        for p in [&a, &b] {
            p.connect(&c.address().to_string()).await.unwrap();
        }
        // One at a time, so each arrives before the next is published.
        for i in 1..=10u64 {
            for (p, name) in [(&a, "a"), (&b, "b")] {
                p.publish(name, format!("{name}{i}")).unwrap();
                let m = c.recv().await.unwrap();
                assert_eq!(m.body, Bytes::from(format!("{name}{i}")));
                assert_eq!(m.meta.sequence, Some(i), "{name}{i}");
                assert_eq!(m.meta.gap, Some(0), "{name}{i}");
            }
        }
    }
);
