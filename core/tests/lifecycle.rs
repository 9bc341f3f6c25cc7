//! Lifecycle and backpressure (PATTERNS §1.1, §1.4, §1.8, GUARANTEES §5): finished transfers
//! need no handle, drain counts, the stream budget is a wait, loss keeps its cause, and a reply
//! lost after the request's FIN is Indeterminate; and what `bind` and `connect` refuse
//! (FAILURE_MODEL §3.1, §3.2).

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{pair, pair_with, Relay, Transport};
use weida::{Error, ErrorCode, Limits, LossCause, Metadata, Runtime, RuntimeConfig};

async fn no_handle(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    {
        let pusher = client.pusher();
        pusher.connect(&puller.address().to_string()).await.unwrap();
        for i in 0..20u8 {
            pusher.send(vec![i; 4096]).await.unwrap();
        }
        // The pusher, its transfers and their deliveries all go out of scope here.
    }
    let mut got: Vec<u8> = Vec::new();
    for _ in 0..20 {
        got.push(puller.recv().await.unwrap().body[0]);
    }
    got.sort();
    assert_eq!(got, (0..20).collect::<Vec<_>>());
}
on_every_transport!(
    a_finished_transfer_needs_no_local_handle_to_arrive,
    no_handle
);

async fn drain_counts(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    for _ in 0..50 {
        pusher.send(Bytes::from(vec![7u8; 1024])).await.unwrap();
    }
    let reader = tokio::spawn(async move {
        let mut n = 0;
        while n < 50 {
            assert_eq!(puller.recv().await.unwrap().body.len(), 1024);
            n += 1;
        }
        n
    });
    let deadline = Duration::from_secs(30);
    let started = std::time::Instant::now();
    let drained = client.drain(deadline).await;
    assert_eq!(drained.outstanding, 0);
    assert_eq!(drained.delivered, 50);
    // Everything the drain let finish arrived; the drain ended when the peer had taken it all
    // (GOAWAY), not at its deadline.
    assert_eq!(reader.await.unwrap(), 50);
    assert!(started.elapsed() < deadline);
    let e = pusher.send("late").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Closed);
}
on_every_transport!(
    a_finished_transfer_that_shutdown_cuts_short_arrives_under_drain,
    drain_counts
);

#[tokio::test]
async fn an_expired_drain_reports_what_is_outstanding() {
    common::bounded(async {
        let server = Runtime::new(RuntimeConfig::default()).unwrap();
        let listener = server.bind("weida://127.0.0.1:0").await.unwrap();
        let puller = listener.puller("/jobs").unwrap();
        let relay = Relay::start(common::socket_addr(&listener)).await;
        let client = Runtime::new(RuntimeConfig::default()).unwrap();
        let pusher = client.pusher();
        pusher
            .connect(&relay.address_for(puller.address()))
            .await
            .unwrap();
        let t = pusher.open(Metadata::new()).await.unwrap();
        t.finish().await.unwrap().delivered().await.unwrap();
        relay.freeze();
        for _ in 0..5 {
            pusher.send("into the void").await.unwrap();
        }
        let drained = client.drain(Duration::from_millis(300)).await;
        assert_eq!(drained.outstanding, 5);
        assert_eq!(drained.delivered, 0, "{drained:?}");
        drop(puller);
    })
    .await
}

async fn budget(t: Transport) {
    let limits = Limits {
        max_concurrent_uni_streams: 2,
        max_local_streams: 2,
        ..Limits::default()
    };
    let server = Runtime::new(common::config(limits.clone())).unwrap();
    let listener = server.bind(&common::bind_address(t)).await.unwrap();
    let puller = listener.puller("/jobs").unwrap();
    // A stream per message here: with lanes, small sends share one stream and their
    // backpressure is the lane's queue and window (lanes.rs).
    let client = Runtime::new(RuntimeConfig {
        limits,
        // It also bounds d's wait below for the slot the read frees (the peer's stream credit
        // must come back): long enough for a loaded machine.
        send_timeout: Some(Duration::from_millis(1000)),
        lane_max_message: 0,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    // Two transfers hold the two slots while nobody reads them.
    pusher.send("a").await.unwrap();
    pusher.send("b").await.unwrap();
    // The third waits in open — it does not fail — until send_timeout bounds the wait.
    let e = pusher.send("c").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Timeout, "{e:?}");
    // Reading one frees one slot, and the next send goes through.
    let first = puller.recv().await.unwrap();
    // The slot comes back when the peer's stream credit does; a send that times out first
    // sent nothing, and is tried again.
    loop {
        match pusher.send("d").await {
            Err(e) if e.code() == ErrorCode::Timeout => continue,
            r => break r.unwrap(),
        }
    }
    let mut rest = vec![
        first.body,
        puller.recv().await.unwrap().body,
        puller.recv().await.unwrap().body,
    ];
    rest.sort();
    assert_eq!(
        rest,
        vec![Bytes::from("a"), Bytes::from("b"), Bytes::from("d")]
    );
}
on_every_transport!(the_stream_budget_is_backpressure_not_an_error, budget);

async fn control_slot(t: Transport) {
    let limits = Limits {
        max_concurrent_bidi_streams: 1,
        max_local_streams: 1,
        ..Limits::default()
    };
    let server = Runtime::new(common::config(limits.clone())).unwrap();
    let listener = server.bind(&common::bind_address(t)).await.unwrap();
    let replier = listener.replier("/rpc").unwrap();
    let client = Runtime::new(RuntimeConfig {
        // Bounds the wait of the open that finds no slot; an open that has one does not wait.
        send_timeout: Some(Duration::from_secs(3)),
        ..common::config(limits)
    })
    .unwrap();
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    // The control stream is open and holds no exchange slot: the one exchange opens.
    let (mut held, _reply) = req.open(Metadata::new()).await.unwrap();
    held.write("held").await.unwrap();
    // And there is exactly one.
    let e = req.open(Metadata::new()).await.map(drop).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Timeout, "{e:?}");
}
on_every_transport!(the_control_stream_holds_no_exchange_slot, control_slot);

async fn indeterminate(t: Transport) {
    let (server, listener, client) = pair(t).await;
    let replier = listener.replier("/charge").unwrap();
    let (got, seen) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut ex = replier.accept().await.unwrap();
        let body = ex.take_body().await.unwrap();
        let _ = got.send(body);
        // Hold the exchange: the replier acted and never answers.
        std::future::pending::<()>().await;
        drop(ex);
    });
    let req = client.requester();
    req.connect(&listener.address().with_path("/charge").unwrap().to_string())
        .await
        .unwrap();
    let pending = tokio::spawn(async move { req.request("card 42").await });
    assert_eq!(&seen.await.unwrap()[..], b"card 42");
    server.shutdown();
    let e = pending.await.unwrap().unwrap_err();
    assert!(matches!(e, Error::Indeterminate(_)), "{e:?}");
    assert!(!e.is_definite_failure());
}
on_every_transport!(
    a_reply_lost_after_the_request_fin_is_indeterminate,
    indeterminate
);

async fn lost_before_fin(t: Transport) {
    let (server, listener, client) = pair(t).await;
    let replier = listener.replier("/upload").unwrap();
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    let (mut body, reply) = req.open(Metadata::new()).await.unwrap();
    body.write(&b"first part"[..]).await.unwrap();
    let _ex = replier.accept().await.unwrap();
    server.shutdown();
    let e = reply.body().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConnectionLost, "{e:?}");
    assert!(e.is_definite_failure());
}
on_every_transport!(
    a_loss_before_the_request_fin_is_connection_lost,
    lost_before_fin
);

#[tokio::test]
async fn idle_timeout_reports_loss_with_its_cause() {
    common::bounded(async {
        // Keep-alives hold the connections up however slowly the setup below runs on a loaded
        // machine; once the relay freezes they are dropped too, and the idle timeout fires.
        let limits = Limits {
            idle_timeout: Duration::from_millis(3000),
            keep_alive: Some(Duration::from_millis(300)),
            ..Limits::default()
        };
        let (_server, listener, client) = pair_with(Transport::Quic, limits).await;
        let replier = listener.replier("/slow").unwrap();
        let puller = listener.puller("/jobs").unwrap();
        let relay = Relay::start(common::socket_addr(&listener)).await;
        let req = client.requester();
        req.connect(&relay.address_for(replier.address()))
            .await
            .unwrap();
        let pusher = client.pusher();
        pusher
            .connect(&relay.address_for(puller.address()))
            .await
            .unwrap();
        let mut unfinished = pusher.open(Metadata::new()).await.unwrap();
        unfinished.write(&b"never finished"[..]).await.unwrap();
        let pending = tokio::spawn(async move { req.request("hold on").await });
        let ex = replier.accept().await.unwrap();
        // The network goes silent: no close, no reset, just nothing.
        relay.freeze();
        let e = pending.await.unwrap().unwrap_err();
        assert!(
            matches!(e, Error::Indeterminate(LossCause::IdleTimeout)),
            "{e:?}"
        );
        let e = unfinished.stopped().await;
        assert!(
            matches!(e, Error::ConnectionLost(LossCause::IdleTimeout)),
            "{e:?}"
        );
        drop(ex);
    })
    .await
}

async fn local_peer_gone(t: Transport) {
    let (server, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    pusher.send("one").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"one");
    server.shutdown();
    drop(puller);
    drop(listener);
    // The loss is learned (at once in process, at the next open over a socket) and named.
    let e = loop {
        match pusher.send("two").await {
            Ok(()) => tokio::task::yield_now().await,
            Err(e) => break e,
        }
    };
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::PeerClosed)),
        "{e:?}"
    );
    assert_eq!(pusher.peer_count(), 0);
}
on_every_transport!(
    a_peer_that_goes_away_is_reported_as_connection_loss,
    local_peer_gone
);

#[tokio::test]
async fn an_endpoint_never_connected_is_not_connected() {
    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    assert_eq!(
        rt.pusher().send("x").await.unwrap_err().code(),
        ErrorCode::NotConnected
    );
    assert_eq!(
        rt.requester().request("x").await.unwrap_err().code(),
        ErrorCode::NotConnected
    );
}

#[tokio::test]
async fn configurations_that_cannot_be_honoured_are_refused() {
    for limits in [
        Limits {
            endpoint_queue: 0,
            ..Limits::default()
        },
        // Below QUIC's 1200-byte minimum datagram.
        Limits {
            max_udp_payload: 1199,
            ..Limits::default()
        },
        // A peer with no share, and deadlines that expire at once.
        Limits {
            peer_share: 0,
            ..Limits::default()
        },
        Limits {
            header_timeout: Duration::ZERO,
            ..Limits::default()
        },
        Limits {
            body_idle_timeout: Duration::ZERO,
            ..Limits::default()
        },
    ] {
        let bad = RuntimeConfig {
            limits,
            ..RuntimeConfig::default()
        };
        assert_eq!(
            Runtime::new(bad).unwrap_err().code(),
            ErrorCode::InvalidConfig
        );
    }
    // PerProducer ordering is implemented; a non-core level of another dimension is not.
    let ordered = RuntimeConfig {
        guarantees: weida::GuaranteeSet {
            ordering: weida::Ordering::Detect,
            ..Default::default()
        },
        ..RuntimeConfig::default()
    };
    assert!(Runtime::new(ordered).is_ok());
    let deduplicated = RuntimeConfig {
        guarantees: weida::GuaranteeSet {
            other: vec![(weida::wire::control::dimension::DEDUPLICATION, 1)],
            ..Default::default()
        },
        ..RuntimeConfig::default()
    };
    assert_eq!(
        Runtime::new(deduplicated).unwrap_err().code(),
        ErrorCode::InvalidConfig
    );
    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    let e = rt.bind("weida+pipe://name").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported);
    let e = rt
        .requester()
        .connect("weida+pipe://name/rpc")
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported);
    let e = rt.bind("weida://127.0.0.1:0/path").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidAddress);
}

async fn counters(t: Transport) {
    let (server, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    for _ in 0..3 {
        pusher.send(vec![1u8; 100]).await.unwrap();
    }
    for _ in 0..3 {
        puller.recv().await.unwrap();
    }
    // A path unbound after the check at connect: the refusal is the listener's.
    let gone = listener.puller("/nowhere").unwrap();
    let refused = client.pusher();
    refused.connect(&gone.address().to_string()).await.unwrap();
    gone.close();
    assert!(refused.send(Bytes::from(vec![0u8; 2 << 20])).await.is_err());
    let c = client.counters();
    let s = server.counters();
    if common::lanes_on() {
        // One lane carried the three small messages; the 2 MiB one had its own stream.
        assert_eq!(c.streams_opened, 2, "{c:?}");
        assert_eq!(c.lane_messages_sent, 3, "{c:?}");
        assert_eq!(s.lane_messages_received, 3, "{s:?}");
        assert_eq!(s.streams_accepted, 1);
    } else {
        assert_eq!(c.streams_opened, 4);
        assert_eq!(c.lane_messages_sent, 0);
        assert_eq!(s.streams_accepted, 3);
    }
    assert!(c.bytes_sent >= 300, "{c:?}");
    assert_eq!(c.connections_dialled, 2);
    assert_eq!(s.streams_refused, 1);
    assert_eq!(s.bytes_received, 300);
}
on_every_transport!(counters_count_streams_bytes_and_refusals, counters);

async fn recv_cancel_safe(t: Transport) {
    let (server, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    // A receive waiting for nothing, dropped.
    {
        let waiting = puller.recv();
        tokio::pin!(waiting);
        assert!(futures_poll_once(waiting.as_mut()).await.is_none());
    }
    // A receive dropped while it collects half a message: the next one resumes it.
    let mut t1 = pusher.open(Metadata::new()).await.unwrap();
    t1.write(&b"first half, "[..]).await.unwrap();
    {
        let half = puller.recv();
        tokio::pin!(half);
        // Poll until the transfer has been taken and is being collected (it cannot finish).
        for _ in 0..1000 {
            assert!(futures_poll_once(half.as_mut()).await.is_none());
            tokio::task::yield_now().await;
        }
    }
    // A whole message sent after it is not held back by it: messages are delivered as they
    // complete (PATTERNS §1.12). On a lane it is ready at once, without the receive lock.
    pusher.send(&b"small"[..]).await.unwrap();
    if common::lanes_on() {
        tokio::time::timeout(Duration::from_secs(10), async {
            while server.counters().lane_messages_received == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the small message reaches the puller's queue");
        let ready = puller
            .try_recv()
            .expect("a whole message is ready")
            .unwrap();
        assert_eq!(&ready.body[..], b"small");
    } else {
        assert_eq!(&puller.recv().await.unwrap().body[..], b"small");
    }
    // The half message was kept: the next receive resumes it.
    t1.write(&b"second half"[..]).await.unwrap();
    t1.finish().await.unwrap();
    assert_eq!(
        &puller.recv().await.unwrap().body[..],
        b"first half, second half"
    );
}
on_every_transport!(
    a_dropped_recv_loses_nothing_and_the_next_resumes_it,
    recv_cancel_safe
);

async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
    let mut f = f;
    std::future::poll_fn(|cx| match std::pin::Pin::new(&mut f).poll(cx) {
        std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

async fn endpoint_close(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = std::sync::Arc::new(listener.puller("/jobs").unwrap());
    // Connected while the path is bound: a connect after the close would be refused at once
    // by the path check (PROTOCOL §3.1.5); what is sent later meets the unbound path.
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let waiting = tokio::spawn({
        let puller = puller.clone();
        async move { puller.recv().await }
    });
    puller.close();
    // A receiver waiting on the empty queue ends, and so does every later one.
    let e = waiting.await.unwrap().unwrap_err();
    assert_eq!(e.code(), ErrorCode::Closed, "{e:?}");
    assert_eq!(puller.recv().await.unwrap_err().code(), ErrorCode::Closed);
    // The path is unbound: a message sent there is refused.
    let e = pusher
        .send(Bytes::from(common::payload(2 << 20)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownEndpoint, "{e:?}");
    // ... and may be bound again.
    let again = listener.puller("/jobs").unwrap();
    pusher.send("again").await.unwrap();
    assert_eq!(&again.recv().await.unwrap().body[..], b"again");
    // Repliers and acceptors close the same way.
    let replier = listener.replier("/rpc").unwrap();
    replier.close();
    assert_eq!(
        replier.accept().await.unwrap_err().code(),
        ErrorCode::Closed
    );
    let acceptor = listener.acceptor("/raw").unwrap();
    acceptor.close();
    assert_eq!(
        acceptor.accept().await.unwrap_err().code(),
        ErrorCode::Closed
    );
}
on_every_transport!(
    closing_an_endpoint_unbinds_its_path_and_ends_its_receivers,
    endpoint_close
);

async fn give_back_wakes(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    pusher.send("kept").await.unwrap();
    let m = puller.recv().await.unwrap();
    // A receive already waiting gets a message handed back, not only the next receive.
    let (got, ()) = tokio::join!(puller.recv(), async {
        tokio::task::yield_now().await;
        puller.give_back(m);
    });
    assert_eq!(&got.unwrap().body[..], b"kept");
}
on_every_transport!(
    a_message_handed_back_wakes_a_waiting_receive,
    give_back_wakes
);

async fn bound_twice(t: Transport) {
    let (server, listener, client) = pair(t).await;
    let _puller = listener.puller("/jobs").unwrap();
    // A path bound twice on one listener, by any pattern.
    let codes = [
        listener.puller("/jobs").err().map(|e| e.code()),
        listener.replier("/jobs").err().map(|e| e.code()),
        listener.acceptor("/jobs").err().map(|e| e.code()),
        listener.publisher("/jobs").err().map(|e| e.code()),
    ];
    assert_eq!(codes, [Some(ErrorCode::InvalidConfig); 4]);
    // The address in use, by this runtime or another: a live socket, a bound name, a UDP port.
    let again = match t {
        Transport::Quic => format!("weida://{}", common::socket_addr(&listener)),
        Transport::Inproc | Transport::Unix => listener.address().to_string(),
    };
    for rt in [&server, &client] {
        match rt.bind(&again).await.unwrap_err() {
            Error::Io(e) => assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}"),
            e => panic!("{e:?}"),
        }
    }
}
on_every_transport!(
    an_address_in_use_or_a_path_bound_twice_is_refused,
    bound_twice
);

#[derive(Debug, Clone, Copy)]
enum Ending {
    Drain,
    Shutdown,
}

async fn nothing_there_or_closed(t: Transport) {
    // Nothing listens at the socket, nothing is bound at the name: refused at once. Over QUIC
    // nothing can refuse (UDP): a port whose socket never answers is reported at
    // `connect_timeout`, naming the address and the option.
    let limits = Limits {
        connect_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let rt = Runtime::new(common::config(limits)).unwrap();
    let black_hole = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let nowhere = match t {
        Transport::Quic => format!("weida://{}/jobs", black_hole.local_addr().unwrap()),
        _ => weida::Address::parse(&common::bind_address(t))
            .unwrap()
            .with_path("/jobs")
            .unwrap()
            .to_string(),
    };
    let e = rt.pusher().connect(&nowhere).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unreachable, "{e:?}");
    let (address, cause) = match &e {
        Error::Unreachable { address, why } => (address.clone(), why.name()),
        _ => unreachable!(),
    };
    let message = e.to_string();
    if t == Transport::Quic {
        assert_eq!(cause, "no_answer");
        let port = black_hole.local_addr().unwrap().to_string();
        assert_eq!(address, port);
        assert!(
            message.contains(&format!("at {port} within 300 ms (connect_timeout)")),
            "{message}"
        );
    } else {
        assert_eq!(cause, "refused");
        assert!(
            message.starts_with("unreachable: nothing listens at "),
            "{message}"
        );
    }
    // A closed listener of a live runtime (over QUIC its socket still open) refuses at once.
    let (_s, listener, _c) = pair(t).await;
    let gone = listener.puller("/jobs").unwrap().address().to_string();
    listener.close();
    match rt.pusher().connect(&gone).await.unwrap_err() {
        Error::Unreachable { why, .. } => assert_eq!(why.name(), "refused"),
        e => panic!("{e:?}"),
    }
    for ending in [Ending::Drain, Ending::Shutdown] {
        let (_s, listener, client) = pair(t).await;
        let puller = listener.puller("/jobs").unwrap();
        let address = puller.address().to_string();
        match ending {
            Ending::Drain => {
                client.drain(Duration::from_secs(30)).await;
            }
            Ending::Shutdown => client.shutdown(),
        }
        let e = client.bind(&common::bind_address(t)).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Closed, "{ending:?}: {e:?}");
        for e in [
            client.pusher().connect(&address).await.unwrap_err(),
            client.requester().connect(&address).await.unwrap_err(),
            client.peer().connect(&address).await.unwrap_err(),
        ] {
            assert_eq!(e.code(), ErrorCode::Closed, "{ending:?}: {e:?}");
        }
    }
}
on_every_transport!(
    nothing_listening_is_unreachable_and_a_closed_runtime_is_closed_at_bind_and_connect,
    nothing_there_or_closed
);

/// A local listener's `close` (and its runtime's shutdown) refuses a dial from the moment it
/// returns, before any task of the listener's runs again: the dial here is made from another
/// thread while this one, which runs the listener's accept task, waits for it. An AF_UNIX
/// socket still listening then would let the kernel accept the dial, and the dialler would wait
/// for a HELLO until `connect_timeout` (seen as a lost connection in the conformance matrix).
/// Over QUIC what refuses is the endpoint's own task, so only the local transports are asked.
#[tokio::test]
async fn a_closed_local_listener_refuses_a_dial_before_its_tasks_run_again() {
    let limits = Limits {
        connect_timeout: Duration::from_secs(3),
        ..Limits::default()
    };
    let addresses = || {
        [
            common::bind_address(Transport::Unix),
            format!("weida+unix://@weida-test-{}", common::unique()),
            common::bind_address(Transport::Inproc),
        ]
    };
    for (shutdown, bind) in [false, true]
        .into_iter()
        .flat_map(|s| addresses().into_iter().map(move |a| (s, a)))
    {
        let server = Runtime::new(common::config(limits.clone())).unwrap();
        let listener = server.bind(&bind).await.unwrap();
        let gone = listener.puller("/jobs").unwrap().address().to_string();
        if shutdown {
            server.shutdown();
        } else {
            listener.close();
        }
        let dial = {
            let (gone, limits) = (gone.clone(), limits.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let client = Runtime::new(common::config(limits)).unwrap();
                    client.pusher().connect(&gone).await.map(drop)
                })
            })
        };
        // Blocks this thread, and with it the listener's tasks, until the dial has an answer.
        let answer = dial.join().unwrap();
        match answer {
            Err(Error::Unreachable { why, .. }) => {
                assert_eq!(why.name(), "refused", "{bind} (shutdown {shutdown})")
            }
            other => panic!("{bind} (shutdown {shutdown}): {other:?}"),
        }
        if let Some(file) = bind
            .strip_prefix("weida+unix://")
            .filter(|p| p.starts_with('/'))
        {
            let file = std::path::Path::new(file);
            assert!(!file.exists(), "{} is left", file.display());
        }
    }
}

async fn requester_gone(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let replier = listener.replier("/rpc").unwrap();
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    let (mut request, _reply) = req.open(Metadata::new()).await.unwrap();
    request.write(&b"part"[..]).await.unwrap();
    let mut ex = replier.accept().await.unwrap();
    client.shutdown();
    let e = ex.take_body().await.unwrap_err();
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::PeerClosed)),
        "{e:?}"
    );
    let e = ex.reply("too late").await.unwrap_err();
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::PeerClosed)),
        "{e:?}"
    );
}
on_every_transport!(
    a_requester_that_goes_away_is_connection_lost_at_the_replier,
    requester_gone
);

async fn transfer_lost(t: Transport) {
    let (server, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let mut streamed = pusher.open(Metadata::new()).await.unwrap();
    streamed
        .write(Bytes::from(common::payload(100_000)))
        .await
        .unwrap();
    let mut incoming = puller.accept().await.unwrap();
    assert!(!incoming.read_chunk().await.unwrap().unwrap().is_empty());
    let mut collected = pusher.open(Metadata::new()).await.unwrap();
    collected.write(&b"half a message"[..]).await.unwrap();
    // Both are dispatched before the loss; neither is finished.
    while server.counters().streams_accepted < 2 {
        tokio::task::yield_now().await;
    }
    client.shutdown();
    let e = loop {
        match incoming.read_chunk().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a transfer lost before its FIN read as complete"),
            Err(e) => break e,
        }
    };
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::PeerClosed)),
        "{e:?}"
    );
    let e = puller.recv().await.unwrap_err();
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::PeerClosed)),
        "{e:?}"
    );
}
on_every_transport!(
    a_transfer_lost_before_its_fin_is_connection_lost_never_a_short_body,
    transfer_lost
);

/// `Runtime::close` returns once its closes have been sent (PROTOCOL §3.4): a dialler whose
/// tokio runtime ends as soon as `close` returns, as a process that exits does, has told its
/// peer, which learns the loss at once (the peer closed), not at its idle timeout (30 s). The
/// dialler runs on a thread of its own; the peer waits on the loss, bounded far below the idle
/// timeout. QUIC: the local transports end with their process's sockets or pipes.
#[tokio::test]
async fn a_runtime_closed_before_its_process_exits_tells_its_peer_at_once() {
    let (_server, listener, _) = pair(Transport::Quic).await;
    let replier = listener.replier("/rpc").unwrap();
    let address = replier.address().to_string();
    let (opened, accepted) = (
        tokio::sync::oneshot::channel::<()>(),
        tokio::sync::oneshot::channel::<()>(),
    );
    let ((opened_tx, opened_rx), (accepted_tx, accepted_rx)) = (opened, accepted);
    let dialler = std::thread::spawn(move || {
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio.block_on(async {
            let client = Runtime::new(common::config(Limits::default())).unwrap();
            let requester = client.requester();
            requester.connect(&address).await.unwrap();
            let (mut request, _reply) = requester.open(Metadata::new()).await.unwrap();
            request.write("question").await.unwrap();
            opened_tx.send(()).unwrap();
            // The replier holds the exchange: now the process ends.
            accepted_rx.await.unwrap();
            client.close().await;
        });
        // Here the tokio runtime, and every task the weida runtime had on it, is gone.
    });
    opened_rx.await.unwrap();
    let mut exchange = replier.accept().await.unwrap();
    let mut reply = exchange.open_reply(Metadata::new()).await.unwrap();
    accepted_tx.send(()).unwrap();
    let lost = tokio::time::timeout(Duration::from_secs(5), reply.stopped())
        .await
        .expect("the peer learned nothing before its idle timeout");
    assert!(
        matches!(lost, Error::ConnectionLost(LossCause::PeerClosed)),
        "{lost:?}"
    );
    dialler.join().unwrap();
}
