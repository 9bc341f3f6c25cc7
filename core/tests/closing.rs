//! Closing (FAILURE_MODEL §2, §3.6, §3.9; PATTERNS §2, §3): what the endpoints of a listener
//! or runtime that closes hand out, and what each side of its connections reads afterwards.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{pair, Transport};
use weida::{Error, ErrorCode, Incoming, LossCause, Metadata, Runtime};

/// Waits until the runtime's counters say `ready` (a hang is caught by `bounded`).
async fn until(rt: &Runtime, ready: impl Fn(&weida::Counters) -> bool) {
    while !ready(&rt.counters()) {
        tokio::task::yield_now().await;
    }
}

/// Two finished streams queued at an acceptor and two messages queued at a puller, none
/// taken yet.
async fn queue_two_each(
    server: &Runtime,
    client: &Runtime,
    acceptor: &weida::Acceptor,
    puller: &weida::Puller,
) {
    let peer = client.peer();
    peer.connect(&acceptor.address().to_string()).await.unwrap();
    for body in ["one", "two"] {
        let mut t = peer.open(Metadata::new()).await.unwrap();
        t.write(body).await.unwrap();
        t.finish().await.unwrap().delivered().await.unwrap();
    }
    until(server, |c| c.streams_accepted >= 2).await;
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    pusher.send("p1").await.unwrap();
    pusher.send("p2").await.unwrap();
    if common::lanes_on() {
        until(server, |c| c.lane_messages_received >= 2).await;
    } else {
        until(server, |c| c.streams_accepted >= 4).await;
    }
}

/// What was queued comes out whole and in full, then `Closed`, and again `Closed`.
async fn hands_out_then_closed(acceptor: &weida::Acceptor, puller: &weida::Puller) {
    let mut streams = Vec::new();
    for _ in 0..2 {
        match acceptor.accept().await.unwrap() {
            Incoming::Stream(mut s) => streams.push(s.collect(1 << 20).await.unwrap()),
            Incoming::Exchange(_) => panic!("no exchange was sent"),
        }
    }
    streams.sort();
    assert_eq!(streams, [Bytes::from("one"), Bytes::from("two")]);
    let mut messages = vec![
        puller.recv().await.unwrap().body,
        puller.recv().await.unwrap().body,
    ];
    messages.sort();
    assert_eq!(messages, [Bytes::from("p1"), Bytes::from("p2")]);
    for _ in 0..2 {
        let e = acceptor.accept().await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Closed, "{e:?}");
        let e = puller.recv().await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::Closed, "{e:?}");
    }
}

/// How a runtime ends on its own.
#[derive(Debug, Clone, Copy)]
enum RuntimeEnding {
    Drain,
    Shutdown,
}

impl RuntimeEnding {
    /// Ends `rt`; a drain waits at most `deadline`.
    async fn end(self, rt: &Runtime, deadline: Duration) {
        match self {
            Self::Drain => {
                rt.drain(deadline).await;
            }
            Self::Shutdown => rt.shutdown(),
        }
    }
}

/// How the endpoints' side ends: its listener closes, or its runtime ends.
#[derive(Debug, Clone, Copy)]
enum Ending {
    ListenerClose,
    Runtime(RuntimeEnding),
}

/// Streams and messages queued, a receiver waiting on an empty queue, then `ending`: the
/// waiting receiver ends `Closed`, and what was queued comes out before `Closed`.
async fn ends(t: Transport, ending: Ending) {
    let (server, listener, client) = pair(t).await;
    let acceptor = listener.acceptor("/raw").unwrap();
    let puller = listener.puller("/jobs").unwrap();
    let replier = std::sync::Arc::new(listener.replier("/rpc").unwrap());
    queue_two_each(&server, &client, &acceptor, &puller).await;
    let waiting = tokio::spawn({
        let replier = replier.clone();
        async move { replier.accept().await.map(drop) }
    });
    match ending {
        Ending::ListenerClose => listener.close(),
        // The server dialled nothing: its drain has nothing to wait for.
        Ending::Runtime(r) => r.end(&server, Duration::from_secs(30)).await,
    }
    let e = waiting.await.unwrap().unwrap_err();
    assert_eq!(e.code(), ErrorCode::Closed, "{ending:?}: {e:?}");
    hands_out_then_closed(&acceptor, &puller).await;
}

async fn listener_close(t: Transport) {
    ends(t, Ending::ListenerClose).await;
}
on_every_transport!(
    a_closed_listener_hands_out_what_is_queued_then_closed,
    listener_close
);

async fn runtime_closes(t: Transport) {
    ends(t, Ending::Runtime(RuntimeEnding::Drain)).await;
    ends(t, Ending::Runtime(RuntimeEnding::Shutdown)).await;
}
on_every_transport!(
    a_drained_or_shut_down_runtime_hands_out_what_is_queued_then_closed,
    runtime_closes
);

/// An exchange whose request is whole, one whose request is not, and an unfinished one-way
/// transfer, each taken by its endpoint and held there.
struct Open {
    whole_reply: weida::PendingReply,
    part_request: weida::OutgoingTransfer,
    part_reply: weida::PendingReply,
    transfer: weida::OutgoingTransfer,
    exchanges: [weida::Exchange; 2],
    incoming: weida::IncomingTransfer,
}

async fn open_and_hold(listener: &weida::Listener, client: &Runtime) -> Open {
    let replier = listener.replier("/rpc").unwrap();
    let puller = listener.puller("/jobs").unwrap();
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    let (mut whole, whole_reply) = req.open(Metadata::new()).await.unwrap();
    whole.write("whole").await.unwrap();
    whole.finish().await.unwrap();
    let (mut part_request, part_reply) = req.open(Metadata::new()).await.unwrap();
    part_request.write("part").await.unwrap();
    let exchanges = [
        replier.accept().await.unwrap(),
        replier.accept().await.unwrap(),
    ];
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let mut transfer = pusher.open(Metadata::new()).await.unwrap();
    transfer.write("part").await.unwrap();
    let incoming = puller.accept().await.unwrap();
    Open {
        whole_reply,
        part_request,
        part_reply,
        transfer,
        exchanges,
        incoming,
    }
}

/// The requests the replier holds: the whole one reads whole, the other reads `lost`.
async fn requests_read(exchanges: &mut [weida::Exchange; 2], lost: LossCause) {
    let mut outcomes = Vec::new();
    for ex in exchanges.iter_mut() {
        outcomes.push(format!("{:?}", ex.take_body().await));
    }
    outcomes.sort();
    assert_eq!(
        outcomes,
        [
            format!("{:?}", Err::<Bytes, _>(Error::ConnectionLost(lost))),
            format!("{:?}", Ok::<_, Error>(Bytes::from("whole"))),
        ]
    );
}

async fn listener_close_seen_by_both_sides(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let mut open = open_and_hold(&listener, &client).await;
    listener.close();
    // The diallers: the listener closed their connections (GOING_AWAY).
    let e = open.whole_reply.body().await.unwrap_err();
    assert!(
        matches!(e, Error::Indeterminate(LossCause::PeerClosed)),
        "{e:?}"
    );
    let e = open.part_reply.body().await.unwrap_err();
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::PeerClosed)),
        "{e:?}"
    );
    let e = open.transfer.stopped().await;
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::PeerClosed)),
        "{e:?}"
    );
    // The listener's side: what it had taken rode connections it closed itself.
    let e = open.incoming.collect(1 << 20).await.unwrap_err();
    assert!(
        matches!(e, Error::ConnectionLost(LossCause::LocallyClosed)),
        "{e:?}"
    );
    requests_read(&mut open.exchanges, LossCause::LocallyClosed).await;
    // ... and so does a reply to either: the connection is gone, whatever the requester did
    // with its half as it went.
    for ex in open.exchanges {
        let e = ex.reply("late").await.unwrap_err();
        assert!(
            matches!(e, Error::ConnectionLost(LossCause::LocallyClosed)),
            "{e:?}"
        );
    }
    drop(open.part_request);
}
on_every_transport!(
    a_closed_listener_is_peer_closed_to_its_diallers_and_locally_closed_to_itself,
    listener_close_seen_by_both_sides
);

async fn own_ending(t: Transport) {
    for ending in [RuntimeEnding::Drain, RuntimeEnding::Shutdown] {
        let (_s, listener, client) = pair(t).await;
        let mut open = open_and_hold(&listener, &client).await;
        ending.end(&client, Duration::ZERO).await;
        // This side closed its connections: what it still has open reads LocallyClosed.
        let local = |e: &Error| matches!(e, Error::ConnectionLost(LossCause::LocallyClosed));
        let e = open.whole_reply.body().await.unwrap_err();
        assert!(
            matches!(e, Error::Indeterminate(LossCause::LocallyClosed)),
            "{ending:?}: {e:?}"
        );
        let e = open.part_reply.body().await.unwrap_err();
        assert!(local(&e), "{ending:?}: {e:?}");
        let e = open.part_request.write("more").await.unwrap_err();
        assert!(local(&e), "{ending:?}: {e:?}");
        let e = open.transfer.stopped().await;
        assert!(local(&e), "{ending:?}: {e:?}");
        let e = open.transfer.write("more").await.unwrap_err();
        assert!(local(&e), "{ending:?}: {e:?}");
        // The listener's side reads the loss as its peer's.
        let e = open.incoming.collect(1 << 20).await.unwrap_err();
        assert!(
            matches!(e, Error::ConnectionLost(LossCause::PeerClosed)),
            "{ending:?}: {e:?}"
        );
        requests_read(&mut open.exchanges, LossCause::PeerClosed).await;
    }
}
on_every_transport!(
    a_runtime_that_drains_or_shuts_down_reads_its_open_streams_as_locally_closed,
    own_ending
);

async fn dropped_handle(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let replier = listener.replier("/rpc").unwrap();
    // The handle goes; the endpoints keep the listener bound, and nothing ends.
    drop(listener);
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    pusher.send("still here").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"still here");
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    let answer = async {
        let mut ex = replier.accept().await.unwrap();
        let body = ex.take_body().await.unwrap();
        ex.reply(body).await.unwrap();
    };
    let (reply, ()) = tokio::join!(req.request("ping"), answer);
    assert_eq!(&reply.unwrap()[..], b"ping");
}
on_every_transport!(
    a_dropped_listener_handle_keeps_its_endpoints_bound,
    dropped_handle
);

/// A closed listener's in-process name or AF_UNIX path is free at once, as is every address
/// of a runtime that shut down: binding it again right away works, and a stale binding's
/// socket file is not removed from under the new one. (Over QUIC the UDP port is released with
/// the endpoint, once its connections have closed: not at once.)
#[tokio::test]
async fn a_closed_listeners_local_address_is_free_at_once() {
    for t in [Transport::Inproc, Transport::Unix] {
        for close_listener in [true, false] {
            let address = common::bind_address(t);
            let first = Runtime::new(common::config(weida::Limits::default())).unwrap();
            let listener = first.bind(&address).await.unwrap();
            let _puller = listener.puller("/jobs").unwrap();
            if close_listener {
                listener.close();
            } else {
                first.shutdown();
            }
            // No await in between: the accept task has not run since.
            let second = Runtime::new(common::config(weida::Limits::default())).unwrap();
            let again = second.bind(&address).await.unwrap();
            let puller = again.puller("/jobs").unwrap();
            // The first binding's end (its task, then its handles) leaves the second alone.
            drop((listener, first));
            tokio::task::yield_now().await;
            let client = Runtime::new(common::config(weida::Limits::default())).unwrap();
            let pusher = client.pusher();
            pusher.connect(&puller.address().to_string()).await.unwrap();
            pusher.send("here").await.unwrap();
            assert_eq!(&puller.recv().await.unwrap().body[..], b"here", "{t:?}");
        }
    }
}

/// The same race with threads: the first binding's end (its accept task closing the socket,
/// then its handles removing the file) runs on another worker thread while the second bind of
/// the path is under way. The file a second bind made was removed from under it when the first
/// binding's end ran between the second's bind and its record of the path (the second listener
/// then waited on a socket nobody could reach, and its diallers redialled for ever), and a
/// second bind failed with ENOENT when the first's end removed the stale file it was removing.
/// Found by the Swift binding's redial test, whose tasks run on a pool of threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_path_bound_again_as_its_last_binding_ends_on_another_thread_is_the_new_ones() {
    for round in 0..1500 {
        let address = common::bind_address(Transport::Unix);
        let first = Runtime::new(common::config(weida::Limits::default())).unwrap();
        let listener = first.bind(&address).await.unwrap();
        first.shutdown();
        let ending = std::thread::spawn(move || drop((listener, first)));
        let second = Runtime::new(common::config(weida::Limits::default())).unwrap();
        let again = second
            .bind(&address)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let puller = again.puller("/jobs").unwrap();
        ending.join().unwrap();
        let client = Runtime::new(common::config(weida::Limits::default())).unwrap();
        let pusher = client.pusher();
        pusher
            .connect(&puller.address().to_string())
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        pusher.send("here").await.unwrap();
        let m = tokio::time::timeout(Duration::from_secs(10), puller.recv())
            .await
            .unwrap_or_else(|_| panic!("round {round}: nothing received"));
        assert_eq!(&m.unwrap().body[..], b"here");
    }
}

/// The peer's close, seen first, is what this side keeps reading after it closes too.
async fn first_cause_kept(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let mut open = open_and_hold(&listener, &client).await;
    listener.close();
    let peer = |e: &Error| matches!(e, Error::ConnectionLost(LossCause::PeerClosed));
    let e = open.transfer.stopped().await;
    assert!(peer(&e), "before: {e:?}");
    // A write too, on every transport (over AF_UNIX the socket closed without a STOP).
    let e = open.transfer.write("more").await.unwrap_err();
    assert!(peer(&e), "write: {e:?}");
    client.shutdown();
    let e = open.transfer.stopped().await;
    assert!(peer(&e), "after: {e:?}");
    let e = open.part_reply.body().await.unwrap_err();
    assert!(peer(&e), "after: {e:?}");
    let e = open.whole_reply.body().await.unwrap_err();
    assert!(
        matches!(e, Error::Indeterminate(LossCause::PeerClosed)),
        "after: {e:?}"
    );
    drop(open.part_request);
}
on_every_transport!(
    a_loss_keeps_the_first_cause_when_this_side_closes_afterwards,
    first_cause_kept
);
