//! Push/Pull the other way round (PATTERNS §3.1): a pusher that binds, pullers that dial it.
//! Workers that connect before and after the first send each get their share; one that leaves
//! loses only what was written to it. Over every transport.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use common::{config, pair};
use weida::{EndpointOptions, ErrorCode, Limits, Runtime};

fn body(i: usize) -> Bytes {
    Bytes::from(format!("job {i}"))
}

on_every_transport!(
    workers_that_connect_before_and_after_the_first_send_each_get_their_share,
    |t| async move {
        let (_server, listener, a_rt) = pair(t).await;
        let jobs = listener.pusher("/jobs").unwrap();
        let address = jobs.address().to_string();
        let a = a_rt.puller();
        a.connect(&address).await.unwrap();
        assert_eq!(jobs.peer_count(), 1);
        for i in 0..4 {
            jobs.send(body(i)).await.unwrap();
        }
        for i in 0..4 {
            assert_eq!(a.recv().await.unwrap().body, body(i));
        }
        // A worker that joins later gets its share from then on: round-robin per message.
        let b_rt = Runtime::new(config(Limits::default())).unwrap();
        let b = b_rt.puller();
        b.connect(&address).await.unwrap();
        assert_eq!(jobs.peer_count(), 2);
        for i in 4..14 {
            jobs.send(body(i)).await.unwrap();
        }
        let (mut at_a, mut at_b) = (BTreeSet::new(), BTreeSet::new());
        for _ in 0..5 {
            at_a.insert(a.recv().await.unwrap().body);
            at_b.insert(b.recv().await.unwrap().body);
        }
        let all: BTreeSet<_> = at_a.union(&at_b).cloned().collect();
        assert_eq!(all, (4..14).map(body).collect());
        assert!(a.try_recv().is_none() && b.try_recv().is_none());
    }
);

on_every_transport!(
    a_worker_that_leaves_loses_only_what_was_written_to_it,
    |t| async move {
        let (_server, listener, a_rt) = pair(t).await;
        let mut events = listener.events();
        let jobs = listener.pusher("/jobs").unwrap();
        let address = jobs.address().to_string();
        let a = a_rt.puller();
        a.connect(&address).await.unwrap();
        let b_rt = Runtime::new(config(Limits::default())).unwrap();
        let b = b_rt.puller();
        b.connect(&address).await.unwrap();
        jobs.send(body(0)).await.unwrap();
        jobs.send(body(1)).await.unwrap();
        let first = [a.recv().await.unwrap().body, b.recv().await.unwrap().body];
        assert_eq!(
            first.iter().cloned().collect::<BTreeSet<_>>(),
            [body(0), body(1)].into()
        );
        // b goes; sends after its claim is released all reach a, none is lost.
        b_rt.close().await;
        drop(b);
        let mut lost = 0;
        while lost < 1 {
            if let Ok(weida::PeerEvent::Lost { .. }) = events.next().await.unwrap() {
                lost += 1;
            }
        }
        assert_eq!(jobs.peer_count(), 1);
        for i in 2..12 {
            jobs.send(body(i)).await.unwrap();
        }
        for i in 2..12 {
            assert_eq!(a.recv().await.unwrap().body, body(i));
        }
    }
);

on_every_transport!(
    a_bound_pushers_send_waits_for_a_puller_bounded_by_send_timeout,
    |t| async move {
        let (_server, listener, client) = pair(t).await;
        let opts = EndpointOptions::new().send_timeout(Some(Duration::from_millis(50)));
        let lonely = listener.pusher_with("/alone", &opts).unwrap();
        let e = lonely.send("nobody").await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Timeout, "{e}");
        let jobs = listener.pusher("/jobs").unwrap();
        let worker = client.puller();
        let address = jobs.address().to_string();
        let (sent, connected) = tokio::join!(jobs.send("first"), worker.connect(&address));
        sent.unwrap();
        connected.unwrap();
        assert_eq!(worker.recv().await.unwrap().body, Bytes::from("first"));
        jobs.close();
        assert_eq!(
            jobs.send("after").await.unwrap_err().code(),
            ErrorCode::Closed
        );
    }
);

on_every_transport!(
    a_dialling_puller_pulls_from_every_pusher_it_connected,
    |t| async move {
        let (_server, listener, client) = pair(t).await;
        let one = listener.pusher("/one").unwrap();
        let two = listener.pusher("/two").unwrap();
        let worker = client.puller();
        worker.connect(&one.address().to_string()).await.unwrap();
        worker.connect(&two.address().to_string()).await.unwrap();
        assert_eq!(worker.peer_count(), 2);
        one.send("from one").await.unwrap();
        two.send("from two").await.unwrap();
        let got: BTreeSet<_> = [worker.recv().await.unwrap(), worker.recv().await.unwrap()]
            .into_iter()
            .map(|m| (m.meta.path.to_string(), m.body))
            .collect();
        assert_eq!(
            got,
            [
                ("/one".to_string(), Bytes::from("from one")),
                ("/two".to_string(), Bytes::from("from two"))
            ]
            .into()
        );
    }
);

on_every_transport!(what_is_not_a_bound_pusher_takes_no_puller, |t| async move {
    let (_server, listener, client) = pair(t).await;
    let puller = listener.puller("/pull").unwrap();
    let jobs = listener.pusher("/jobs").unwrap();
    let worker = client.puller();
    let e = worker
        .connect(&puller.address().to_string())
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
    // A dialling pusher cannot push into a bound pusher, which takes no stream.
    let e = client
        .pusher()
        .connect(&jobs.address().to_string())
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
    let none = listener.address().with_path("/none").unwrap().to_string();
    let e = worker.connect(&none).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownEndpoint, "{e}");
});
