//! An endpoint's own bounds (`EndpointOptions`): `max_collected_body`, `endpoint_queue` and
//! `send_timeout` set when the endpoint is made apply to it alone, and every other endpoint of
//! the runtime keeps the runtime's.

mod common;

use std::time::Duration;

use common::{pair, pair_with, payload, Transport};
use weida::{EndpointOptions, Error, ErrorCode, Limit, Limits, Metadata};

fn is_collected_limit(e: &Error) -> bool {
    matches!(
        e,
        Error::LimitExceeded {
            limit: Limit::CollectedBody,
            ..
        }
    )
}

/// A puller with a lower bound refuses what its neighbour on the same listener takes; one
/// with a higher bound takes what the runtime's bound would refuse (on a stream of its own
/// and on a lane alike).
async fn collected_per_puller(t: Transport) {
    let limits = Limits {
        max_collected_body: 1000,
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let small = listener
        .puller_with("/small", &EndpointOptions::new().max_collected_body(100))
        .unwrap();
    let plain = listener.puller("/plain").unwrap();
    let large = listener
        .puller_with(
            "/large",
            &EndpointOptions::new().max_collected_body(1 << 20),
        )
        .unwrap();
    let to = |p: &weida::Puller| p.address().to_string();
    let (to_small, to_plain, to_large) = (client.pusher(), client.pusher(), client.pusher());
    to_small.connect(&to(&small)).await.unwrap();
    to_plain.connect(&to(&plain)).await.unwrap();
    to_large.connect(&to(&large)).await.unwrap();

    to_small.send(payload(101)).await.unwrap();
    let e = small.recv().await.unwrap_err();
    assert!(is_collected_limit(&e), "{e:?}");
    assert!(e.to_string().contains("max_collected_body 100 "), "{e}");
    to_small.send(payload(100)).await.unwrap();
    assert_eq!(small.recv().await.unwrap().body.len(), 100);

    to_plain.send(payload(101)).await.unwrap();
    assert_eq!(plain.recv().await.unwrap().body.len(), 101);
    to_plain.send(payload(1001)).await.unwrap();
    assert!(is_collected_limit(&plain.recv().await.unwrap_err()));

    // 4 KiB fits a lane (16 KiB), 200 KiB takes a stream: both above the runtime's 1000.
    for n in [4 << 10, 200 << 10] {
        to_large.send(payload(n)).await.unwrap();
        assert_eq!(large.recv().await.unwrap().body, payload(n));
    }
}
on_every_transport!(
    a_pullers_max_collected_body_is_its_own,
    collected_per_puller
);

/// A requester's bound applies to the replies it collects, a replier's to the requests it
/// collects; each leaves the runtime's elsewhere.
async fn collected_per_exchange_side(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let strict = listener
        .replier_with("/strict", &EndpointOptions::new().max_collected_body(10))
        .unwrap();
    let echo = listener.replier("/echo").unwrap();
    let small = client
        .requester_with(&EndpointOptions::new().max_collected_body(10))
        .unwrap();
    let plain = client.requester();
    small.connect(&echo.address().to_string()).await.unwrap();
    plain.connect(&echo.address().to_string()).await.unwrap();
    let echoing = async {
        for _ in 0..2 {
            let mut ex = echo.accept().await.unwrap();
            let body = ex.take_body().await.unwrap();
            let _ = ex.reply(body).await;
        }
    };
    let asking = async {
        let e = small.request(payload(11)).await.unwrap_err();
        assert!(is_collected_limit(&e), "{e:?}");
        let m = plain.request(payload(11)).await.unwrap();
        assert_eq!(m.len(), 11);
    };
    tokio::join!(echoing, asking);

    plain.disconnect(&echo.address().to_string()).unwrap();
    plain.connect(&strict.address().to_string()).await.unwrap();
    let taking = async {
        let mut ex = strict.accept().await.unwrap();
        let e = ex.take_body().await.unwrap_err();
        assert!(is_collected_limit(&e), "{e:?}");
    };
    // The replier dropped the exchange it could not collect: the requester learns it failed.
    let (r, ()) = tokio::join!(plain.request(payload(11)), taking);
    assert!(r.unwrap_err().is_definite_failure());
}
on_every_transport!(
    a_requesters_and_a_repliers_max_collected_body_are_their_own,
    collected_per_exchange_side
);

/// A pusher's `send_timeout` bounds its wait for a stream slot though the runtime's is
/// unbounded.
async fn send_timeout_per_pusher(t: Transport) {
    let limits = Limits {
        max_concurrent_uni_streams: 1,
        max_local_streams: 1,
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let puller = listener.puller("/jobs").unwrap();
    let holder = client.pusher();
    holder.connect(&puller.address().to_string()).await.unwrap();
    // Holds the one stream the listener allows, unfinished.
    let _held = holder.open(Metadata::new()).await.unwrap();
    let bounded = client
        .pusher_with(&EndpointOptions::new().send_timeout(Some(Duration::from_millis(200))))
        .unwrap();
    bounded
        .connect(&puller.address().to_string())
        .await
        .unwrap();
    let e = bounded.open(Metadata::new()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Timeout, "{e:?}");
}
on_every_transport!(a_pushers_send_timeout_is_its_own, send_timeout_per_pusher);

/// A publisher's `endpoint_queue` bounds the copies it queues for each subscriber: at 1, a
/// burst of publishes drops at the queue, where a neighbour at the runtime's 256 drops none.
async fn queue_per_publisher(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let tight = listener
        .publisher_with("/tight", &EndpointOptions::new().endpoint_queue(1))
        .unwrap();
    let roomy = listener.publisher("/roomy").unwrap();
    for p in [&tight, &roomy] {
        let sub = client.subscriber();
        sub.connect(&p.address().to_string()).await.unwrap();
        sub.subscribe("t").await.unwrap();
        // Kept subscribed for the test's length.
        std::mem::forget(sub);
    }
    for _ in 0..64 {
        tight.publish("t", &b"x"[..]).unwrap();
        roomy.publish("t", &b"x"[..]).unwrap();
    }
    assert!(tight.dropped().queue_full > 0, "{:?}", tight.dropped());
    assert_eq!(roomy.dropped().queue_full, 0, "{:?}", roomy.dropped());
}
on_every_transport!(a_publishers_endpoint_queue_is_its_own, queue_per_publisher);

/// An option out of range is refused when the endpoint is made, as the runtime's is.
#[tokio::test]
async fn an_endpoint_queue_of_zero_is_invalid_config() {
    let (_s, listener, client) = pair(Transport::Inproc).await;
    let zero = EndpointOptions::new().endpoint_queue(0);
    let e = listener.puller_with("/jobs", &zero).err().unwrap();
    assert_eq!(e.code(), ErrorCode::InvalidConfig, "{e:?}");
    assert!(e.to_string().contains("endpoint_queue"), "{e}");
    let e = client.subscriber_with(&zero).err().unwrap();
    assert_eq!(e.code(), ErrorCode::InvalidConfig, "{e:?}");
    // The path was not taken by the refused endpoint.
    listener.puller("/jobs").unwrap();
}
