//! PAIR (PATTERNS §6.1): one bound pair, one dialling pair, each sending to the other on one
//! connection; a second peer is refused and the first keeps working; a peer that goes away
//! leaves the bound pair claimable. The names are seed 001 §6.1's. Over every transport.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use common::{bind_address, config, pair, payload};
use weida::{EndpointOptions, ErrorCode, Limits, PeerEvent, Runtime};

on_every_transport!(
    both_directions_carry_transfers_concurrently,
    |t| async move {
        let (_server, listener, client) = pair(t).await;
        let bound = listener.pair("/chat").unwrap();
        let dialling = client.pair();
        let address = bound.address().unwrap().to_string();
        dialling.connect(&address).await.unwrap();
        assert_eq!(dialling.peer_count(), 1);
        // Small and large bodies both ways at once (a large one is a stream of its own).
        let bodies: Vec<Vec<u8>> = (0..20)
            .map(|i| {
                if i % 5 == 4 {
                    payload(300_000 + i)
                } else {
                    payload(10 + i)
                }
            })
            .collect();
        let (to_bound, to_dialling) = tokio::join!(
            async {
                for b in &bodies {
                    dialling.send(b.clone()).await.unwrap();
                }
            },
            async {
                for b in &bodies {
                    bound.send(b.clone()).await.unwrap();
                }
            },
        );
        let _ = (to_bound, to_dialling);
        let want: BTreeSet<Vec<u8>> = bodies.iter().cloned().collect();
        let (mut at_bound, mut at_dialling) = (BTreeSet::new(), BTreeSet::new());
        for _ in 0..bodies.len() {
            let m = bound.recv().await.unwrap();
            assert_eq!(&*m.meta.path, "/chat");
            at_bound.insert(m.body.to_vec());
            let m = dialling.recv().await.unwrap();
            assert_eq!(&*m.meta.path, "/chat");
            at_dialling.insert(m.body.to_vec());
        }
        assert_eq!(at_bound, want);
        assert_eq!(at_dialling, want);
        assert_eq!(bound.peer_count(), 1);
    }
);

on_every_transport!(
    a_second_connection_is_refused_and_the_first_keeps_working,
    |t| async move {
        let (_server, listener, first_rt) = pair(t).await;
        let bound = listener.pair("/chat").unwrap();
        let address = bound.address().unwrap().to_string();
        let first = first_rt.pair();
        first.connect(&address).await.unwrap();
        let second_rt = Runtime::new(config(Limits::default())).unwrap();
        let second = second_rt.pair();
        let e = second.connect(&address).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e}");
        assert_eq!(second.peer_count(), 0);
        // A pusher is no pair: it cannot reach the pair's path either.
        let pusher = second_rt.pusher();
        let e = pusher.connect(&address).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
        first.send("still here").await.unwrap();
        assert_eq!(bound.recv().await.unwrap().body, Bytes::from("still here"));
        bound.send("and you").await.unwrap();
        assert_eq!(first.recv().await.unwrap().body, Bytes::from("and you"));
    }
);

on_every_transport!(
    a_peer_that_goes_away_leaves_the_endpoint_claimable,
    |t| async move {
        let (_server, listener, first_rt) = pair(t).await;
        let mut events = listener.events();
        let bound = listener.pair("/chat").unwrap();
        let address = bound.address().unwrap().to_string();
        let first = first_rt.pair();
        first.connect(&address).await.unwrap();
        first.send("one").await.unwrap();
        assert_eq!(bound.recv().await.unwrap().body, Bytes::from("one"));
        // The first peer's runtime goes: its connection ends, and its claim with it, before
        // the listener tells of the loss.
        first_rt.close().await;
        drop(first);
        loop {
            match events.next().await.expect("the listener is held") {
                Ok(PeerEvent::Lost { .. }) => break,
                Ok(_) => continue,
                Err(missed) => panic!("{missed:?}"),
            }
        }
        assert_eq!(bound.peer_count(), 0);
        let next_rt = Runtime::new(config(Limits::default())).unwrap();
        let next = next_rt.pair();
        next.connect(&address).await.unwrap();
        next.send("two").await.unwrap();
        assert_eq!(bound.recv().await.unwrap().body, Bytes::from("two"));
        bound.send("to the next").await.unwrap();
        assert_eq!(next.recv().await.unwrap().body, Bytes::from("to the next"));
    }
);

on_every_transport!(
    a_bound_pairs_send_waits_for_a_peer_bounded_by_send_timeout,
    |t| async move {
        let (_server, listener, client) = pair(t).await;
        let opts = EndpointOptions::new().send_timeout(Some(Duration::from_millis(50)));
        let lonely = listener.pair_with("/alone", &opts).unwrap();
        let e = lonely.send("nobody").await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Timeout, "{e}");
        // A send that waits is sent once a peer claims the pair.
        let bound = listener.pair("/chat").unwrap();
        let address = bound.address().unwrap().to_string();
        let dialling = client.pair();
        let (sent, connected) = tokio::join!(bound.send("first"), dialling.connect(&address));
        sent.unwrap();
        connected.unwrap();
        assert_eq!(dialling.recv().await.unwrap().body, Bytes::from("first"));
    }
);

on_every_transport!(what_is_not_a_pair_takes_no_claim, |t| async move {
    let (_server, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let dialling = client.pair();
    let e = dialling
        .connect(&puller.address().to_string())
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
    let none = listener.address().with_path("/none").unwrap().to_string();
    let e = dialling.connect(&none).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownEndpoint, "{e}");
    // A bound pair does not dial, and a dialling pair connects one address.
    let bound = listener.pair("/chat").unwrap();
    let e = bound.connect(&none).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidConfig, "{e}");
    dialling
        .connect(&bound.address().unwrap().to_string())
        .await
        .unwrap();
    let e = dialling
        .connect(&puller.address().to_string())
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidConfig, "{e}");
    let _ = bind_address(t);
});

on_every_transport!(
    a_dialling_pairs_receive_ends_when_its_runtime_shuts_down,
    |t| async move {
        let (_server, listener, client) = pair(t).await;
        let bound = listener.pair("/chat").unwrap();
        let dialling = client.pair();
        dialling
            .connect(&bound.address().unwrap().to_string())
            .await
            .unwrap();
        bound.send("before").await.unwrap();
        assert_eq!(dialling.recv().await.unwrap().body, Bytes::from("before"));
        client.shutdown();
        let e = dialling.recv().await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Closed, "{e}");
    }
);

on_every_transport!(
    a_closed_bound_pair_refuses_its_peer_and_sends_nothing,
    |t| async move {
        let (_server, listener, client) = pair(t).await;
        let bound = listener.pair("/chat").unwrap();
        let address = bound.address().unwrap().to_string();
        let dialling = client.pair();
        dialling.connect(&address).await.unwrap();
        let waiting = listener
            .pair_with(
                "/later",
                &EndpointOptions::new().send_timeout(Some(Duration::from_secs(30))),
            )
            .unwrap();
        let (sent, ()) = tokio::join!(waiting.send("never"), async { waiting.close() });
        assert_eq!(sent.unwrap_err().code(), ErrorCode::Closed);
        bound.close();
        assert_eq!(
            bound.send("after").await.unwrap_err().code(),
            ErrorCode::Closed
        );
        // What the dialler sends now is refused at the unbound path: it does not arrive.
        let mut open = dialling.open(Default::default()).await.unwrap();
        open.write(Bytes::from(payload(4_000_000))).await.ok();
        let e = bound.recv().await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Closed, "{e}");
    }
);

on_every_transport!(
    what_a_dialling_pair_sent_before_its_drain_arrives_after_it_left,
    |t| async move {
        let (_server, listener, client) = pair(t).await;
        let bound = listener.pair("/chat").unwrap();
        let dialling = client.pair();
        dialling
            .connect(&bound.address().unwrap().to_string())
            .await
            .unwrap();
        for i in 0..3 {
            dialling.send(format!("m{i}")).await.unwrap();
        }
        // Over AF_UNIX each message is a connection the kernel holds, which may reach the
        // listener after the session that claimed the pair is gone: it is still taken.
        client.drain(Duration::from_secs(5)).await;
        let mut got = BTreeSet::new();
        for _ in 0..3 {
            got.insert(bound.recv().await.unwrap().body);
        }
        assert_eq!(got, (0..3).map(|i| Bytes::from(format!("m{i}"))).collect());
    }
);
