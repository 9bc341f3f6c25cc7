//! BUS (PATTERNS §6.3): every member's message reaches every other member, never itself, with
//! no relay; a slow member costs only its own copies. Over every transport; the names are seed
//! 001 §6.3's.

mod common;

use std::collections::BTreeSet;

use bytes::Bytes;
use common::{bind_address, config, payload, Transport};
use weida::{Bus, EndpointOptions, ErrorCode, Limit, Limits, Listener, Runtime};

/// A member in a runtime of its own, with `limits`, bound at `/bus`.
async fn member(t: Transport, limits: Limits) -> (Runtime, Listener, Bus) {
    let rt = Runtime::new(config(limits)).unwrap();
    let l = rt.bind(&bind_address(t)).await.unwrap();
    let bus = rt.bus(&l, "/bus").unwrap();
    (rt, l, bus)
}

/// Connects every member to every other: the mesh.
async fn mesh(members: &[&Bus]) {
    for a in members {
        for b in members {
            if !std::ptr::eq(*a, *b) {
                a.connect(&b.address().to_string()).await.unwrap();
            }
        }
    }
}

on_every_transport!(
    every_member_sees_every_other_members_message,
    |t| async move {
        let (_ra, _la, a) = member(t, Limits::default()).await;
        let (_rb, _lb, b) = member(t, Limits::default()).await;
        let (_rc, _lc, c) = member(t, Limits::default()).await;
        mesh(&[&a, &b, &c]).await;
        for (name, m) in [("a", &a), ("b", &b), ("c", &c)] {
            assert_eq!(
                m.send(name).await.unwrap(),
                2,
                "{name} reaches the two others"
            );
        }
        for (name, m) in [("a", &a), ("b", &b), ("c", &c)] {
            let got: BTreeSet<_> = [m.recv().await.unwrap(), m.recv().await.unwrap()]
                .into_iter()
                .map(|x| String::from_utf8(x.body.to_vec()).unwrap())
                .collect();
            let others: BTreeSet<_> = ["a", "b", "c"]
                .into_iter()
                .filter(|o| *o != name)
                .map(String::from)
                .collect();
            assert_eq!(got, others, "{name}");
        }
    }
);

on_every_transport!(a_sender_never_receives_its_own_message, |t| async move {
    let (_ra, _la, a) = member(t, Limits::default()).await;
    let (_rb, _lb, b) = member(t, Limits::default()).await;
    mesh(&[&a, &b]).await;
    for i in 0..10 {
        a.send(format!("a{i}")).await.unwrap();
    }
    // b's marker reaches a after none of a's own: a receives b's message and nothing else.
    b.send("from b").await.unwrap();
    assert_eq!(a.recv().await.unwrap().body, Bytes::from("from b"));
    assert!(a.try_recv().is_none());
    for i in 0..10 {
        assert_eq!(b.recv().await.unwrap().body, Bytes::from(format!("a{i}")));
    }
});

on_every_transport!(
    a_slow_member_is_dropped_and_counted_rather_than_blocking,
    |t| async move {
        let (ra, la, _) = member(t, Limits::default()).await;
        // The sender keeps at most 4 copies per member.
        let a = ra
            .bus_with(&la, "/fast", &EndpointOptions::new().endpoint_queue(4))
            .unwrap();
        // The stalled member's own buffers are small, so its writer stalls soon.
        let small = Limits {
            endpoint_queue: 2,
            stream_receive_window: 64 * 1024,
            connection_receive_window: 128 * 1024,
            ..Limits::default()
        };
        let (_rs, _ls, stalled) = member(t, small).await;
        let (_rr, _lr, reader) = member(t, Limits::default()).await;
        a.connect(&stalled.address().to_string()).await.unwrap();
        a.connect(&reader.address().to_string()).await.unwrap();
        let body = payload(8 * 1024);
        // Each send follows the reader's receipt of the one before: a member that keeps pace
        // gets every copy, whatever the stalled one does. 400 is more than the stalled
        // member's path holds: its lane's queue (32 of these bodies, 256 KiB), its windows and its
        // writer's 4.
        for i in 0..400 {
            a.send(body.clone()).await.unwrap();
            let m = reader.recv().await.unwrap();
            assert_eq!(m.body.len(), body.len(), "{i}");
        }
        let d = a.dropped();
        assert!(d.queue_full > 0, "{d:?}");
        assert_eq!(d.total(), d.queue_full, "{d:?}");
        // The stalled member got its first copies, whole.
        assert_eq!(stalled.recv().await.unwrap().body.len(), body.len());
    }
);

on_every_transport!(
    a_body_above_the_fan_out_budget_is_refused_rather_than_dropped_for_everyone,
    |t| async move {
        let limits = Limits {
            subscriber_buffer_bytes: 1000,
            ..Limits::default()
        };
        let (_ra, _la, a) = member(t, limits).await;
        let (_rb, _lb, b) = member(t, Limits::default()).await;
        mesh(&[&a, &b]).await;
        let e = a.send(payload(2000)).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::LimitExceeded);
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
        assert_eq!(a.dropped().total(), 0);
        assert_eq!(a.send(payload(500)).await.unwrap(), 1);
        assert_eq!(b.recv().await.unwrap().body.len(), 500);
    }
);

on_every_transport!(a_member_with_no_peer_sends_to_nobody, |t| async move {
    let (_ra, _la, a) = member(t, Limits::default()).await;
    assert_eq!(a.send("alone").await.unwrap(), 0);
    assert_eq!(a.dropped().total(), 0);
});
