//! Refusals (PATTERNS §1.6), with 2 MiB payloads: beyond the stream window, so the refusal
//! cannot lose the race to the transport receipt.

mod common;

use bytes::Bytes;
use common::{pair, pair_with, payload, Transport};
use weida::{Error, ErrorCode, Limits, Metadata};

const BIG: usize = 2 << 20;

/// `address` of `listener` at `path`.
fn at(listener: &weida::Listener, path: &str) -> String {
    listener.address().with_path(path).unwrap().to_string()
}

/// `connect` asks the listener whether the path is bound, and to an endpoint that takes what
/// the dialling endpoint opens (PROTOCOL §3.1.5): a mistyped path, or a path of another
/// pattern, fails at connect and leaves no slot, so no message is sent into it and lost (the
/// refusal race of PATTERNS §1.6 is left only to a path unbound after the check). Compatible
/// pairs still connect (PATTERNS §5: a `Peer` to a replier or a puller, a pusher or a
/// requester to an acceptor).
async fn connect_checks(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let _puller = listener.puller("/jobs").unwrap();
    let _replier = listener.replier("/rpc").unwrap();
    let _acceptor = listener.acceptor("/raw").unwrap();
    let _publisher = listener.publisher("/prices").unwrap();
    let unknown = |e: Error| {
        assert!(
            matches!(e, Error::UnknownEndpoint { ref path } if path == "/nowhere"),
            "{e:?}"
        )
    };
    let unsupported = |e: Error| assert_eq!(e.code(), ErrorCode::Unsupported, "{e:?}");
    let pusher = client.pusher();
    unknown(
        pusher
            .connect(&at(&listener, "/nowhere"))
            .await
            .unwrap_err(),
    );
    unsupported(pusher.connect(&at(&listener, "/rpc")).await.unwrap_err());
    unsupported(pusher.connect(&at(&listener, "/prices")).await.unwrap_err());
    let requester = client.requester();
    unknown(
        requester
            .connect(&at(&listener, "/nowhere"))
            .await
            .unwrap_err(),
    );
    unsupported(
        requester
            .connect(&at(&listener, "/jobs"))
            .await
            .unwrap_err(),
    );
    let peer = client.peer();
    unknown(peer.connect(&at(&listener, "/nowhere")).await.unwrap_err());
    unsupported(peer.connect(&at(&listener, "/prices")).await.unwrap_err());
    // No slot was made: nothing is sent anywhere, and the endpoints say they are not
    // connected rather than waiting for a redial.
    assert_eq!(pusher.peer_count(), 0);
    let e = pusher.send("lost?").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotConnected, "{e:?}");
    assert_eq!(
        requester.request("x").await.unwrap_err().code(),
        ErrorCode::NotConnected
    );
    assert_eq!(client.counters().streams_opened, 0);
    // The compatible pairs connect.
    pusher.connect(&at(&listener, "/jobs")).await.unwrap();
    pusher.connect(&at(&listener, "/raw")).await.unwrap();
    requester.connect(&at(&listener, "/rpc")).await.unwrap();
    requester.connect(&at(&listener, "/raw")).await.unwrap();
    for path in ["/jobs", "/rpc", "/raw"] {
        peer.connect(&at(&listener, path)).await.unwrap();
    }
    assert_eq!(
        (
            pusher.peer_count(),
            requester.peer_count(),
            peer.peer_count()
        ),
        (2, 2, 3)
    );
}
on_every_transport!(
    connect_to_an_unbound_path_or_a_path_of_another_pattern_fails_at_connect,
    connect_checks
);

// The refusals below reach a path that passed the check at connect and was unbound (or bound
// to another pattern) after it: the refusal race of PATTERNS §1.6, which the check leaves to
// exactly this case.

async fn push_unknown(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let _puller = listener.puller("/jobs").unwrap();
    let gone = listener.puller("/nowhere").unwrap();
    let pusher = client.pusher();
    pusher.connect(&at(&listener, "/nowhere")).await.unwrap();
    gone.close();
    let e = pusher.send(Bytes::from(payload(BIG))).await.unwrap_err();
    assert!(
        matches!(e, Error::UnknownEndpoint { ref path } if path == "/nowhere"),
        "{e:?}"
    );
}
on_every_transport!(push_to_an_unknown_path_is_reported, push_unknown);

async fn push_to_rep(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let before = listener.puller("/rpc").unwrap();
    let pusher = client.pusher();
    pusher.connect(&at(&listener, "/rpc")).await.unwrap();
    before.close();
    drop(before);
    let _replier = listener.replier("/rpc").unwrap();
    let e = pusher.send(Bytes::from(payload(BIG))).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e:?}");
}
on_every_transport!(push_to_rep_path_is_unsupported, push_to_rep);

async fn request_unknown(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let gone = listener.replier("/nowhere").unwrap();
    let req = client.requester();
    req.connect(&at(&listener, "/nowhere")).await.unwrap();
    gone.close();
    let e = req.request(Bytes::from(payload(BIG))).await.unwrap_err();
    assert!(
        matches!(e, Error::UnknownEndpoint { ref path } if path == "/nowhere"),
        "{e:?}"
    );
    // Small requests are refused the same way: an exchange's ERROR needs no race.
    let e = req.request("x").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::UnknownEndpoint);
}
on_every_transport!(unknown_endpoint_is_reported, request_unknown);

async fn request_to_pull(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let before = listener.replier("/jobs").unwrap();
    let req = client.requester();
    req.connect(&at(&listener, "/jobs")).await.unwrap();
    before.close();
    drop(before);
    let _puller = listener.puller("/jobs").unwrap();
    let e = req.request(Bytes::from(payload(BIG))).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e:?}");
    assert!(e.is_definite_failure());
}
on_every_transport!(request_to_pull_path_is_unsupported, request_to_pull);

async fn rejected(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let replier = listener.replier("/guarded").unwrap();
    tokio::spawn(async move {
        let ex = replier.accept().await.unwrap();
        ex.reject("not on a weekend").await.unwrap();
    });
    let req = client.requester();
    req.connect(
        &listener
            .address()
            .with_path("/guarded")
            .unwrap()
            .to_string(),
    )
    .await
    .unwrap();
    let e = req.request("x").await.unwrap_err();
    assert!(
        matches!(e, Error::Rejected(ref r) if r == "not on a weekend"),
        "{e:?}"
    );
}
on_every_transport!(
    a_replier_rejection_reaches_the_requester_with_its_reason,
    rejected
);

/// A request small enough to go with its header in one write (under 64 KiB) but larger than
/// the replier's stream window: the replier refuses on seeing the header, before the rest
/// arrives, and stops the request while it is being written (the refusal race, PATTERNS §1.6;
/// over AF_UNIX on a kept socket only if it lets go of the request before the refusal's FIN,
/// else it reads the rest and discards it: PROTOCOL.md §8.7). The requester gets the refusal,
/// not the stop.
async fn refused_while_written(t: Transport) {
    let limits = Limits {
        stream_receive_window: 16 * 1024,
        ..Limits::default()
    };
    let (_s, listener, client) = pair_with(t, limits).await;
    let replier = listener.replier("/guarded").unwrap();
    let address = replier.address().to_string();
    tokio::spawn(async move {
        while let Ok(ex) = replier.accept().await {
            ex.reject("not now").await.unwrap();
        }
    });
    let req = client.requester();
    req.connect(&address).await.unwrap();
    for _ in 0..3 {
        let e = req.request(payload(60 * 1024)).await.unwrap_err();
        assert!(
            matches!(e, Error::Rejected(ref r) if r == "not now"),
            "{e:?}"
        );
    }
}
on_every_transport!(
    a_small_request_refused_while_it_is_written_is_its_refusal,
    refused_while_written
);

async fn header_too_large(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let big = Metadata::new().with(
        "blob",
        vec![b'x'; Limits::default().max_header_size as usize],
    );
    let e = pusher.send_with(big, "body").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e:?}");
    // Nothing was sent, and the pusher still works.
    pusher.send("after").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"after");
}
on_every_transport!(
    a_header_above_the_peers_limit_is_refused_before_sending,
    header_too_large
);

/// A pair whose runtimes collect bodies of at most 1000 bytes.
async fn collecting_1000(t: Transport) -> (weida::Runtime, weida::Listener, weida::Runtime) {
    let limits = Limits {
        max_collected_body: 1000,
        ..Limits::default()
    };
    pair_with(t, limits).await
}

async fn collected_limit(t: Transport) {
    let (_s, listener, client) = collecting_1000(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    pusher.send(Bytes::from(payload(1001))).await.unwrap();
    pusher.send(Bytes::from(payload(1000))).await.unwrap();
    let mut outcomes = vec![];
    for _ in 0..2 {
        outcomes.push(match puller.recv().await {
            Ok(m) => Ok(m.body.len()),
            Err(e) => Err(e.code()),
        });
    }
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(outcomes, vec![Err(ErrorCode::LimitExceeded), Ok(1000)]);
}
on_every_transport!(
    a_body_above_max_collected_body_is_limit_exceeded_and_the_puller_goes_on,
    collected_limit
);

/// A path so long that a lane's head (PATH alone) is above the listener's MAX_HEADER_SIZE: a
/// small message, which would ride a lane, is refused at the pusher as a transfer's header is
/// (PROTOCOL.md §4.1), and the listener refuses nothing, since nothing reaches it.
async fn lane_head_too_large(t: Transport) {
    let small = Limits {
        max_header_size: 64,
        ..Limits::default()
    };
    let server = weida::Runtime::new(common::config(small)).unwrap();
    let listener = server.bind(&common::bind_address(t)).await.unwrap();
    let puller = listener.puller(&format!("/{}", "p".repeat(70))).unwrap();
    let client = weida::Runtime::new(common::config(Limits::default())).unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    for _ in 0..3 {
        let e = pusher.send("small").await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e:?}");
    }
    assert_eq!(server.counters().streams_refused, 0);
}
on_every_transport!(
    a_path_whose_header_is_above_the_listeners_bound_is_refused_at_the_pusher,
    lane_head_too_large
);

/// A reply header above the requester's MAX_HEADER_SIZE is refused at the replier, before
/// anything is written, and the exchange can still be answered.
async fn reply_header_bound(t: Transport) {
    let server = weida::Runtime::new(common::config(Limits::default())).unwrap();
    let listener = server.bind(&common::bind_address(t)).await.unwrap();
    let replier = listener.replier("/rpc").unwrap();
    let client = weida::Runtime::new(common::config(Limits {
        max_header_size: 64,
        ..Limits::default()
    }))
    .unwrap();
    let requester = client.requester();
    requester
        .connect(&replier.address().to_string())
        .await
        .unwrap();
    let serve = async {
        let mut ex = replier.accept().await.unwrap();
        ex.take_body().await.unwrap();
        let big = Metadata::new().with("k", vec![b'v'; 200]);
        let e = ex.open_reply(big).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e}");
        ex.reply_with(Metadata::new().with("k", "v"), "ok")
            .await
            .unwrap();
    };
    let (reply, ()) = tokio::join!(requester.request("hi"), serve);
    assert_eq!(&reply.unwrap()[..], b"ok");
}

#[tokio::test]
async fn a_reply_header_above_the_requesters_bound_is_refused_at_the_replier_quic() {
    common::bounded(reply_header_bound(Transport::Quic)).await
}

#[tokio::test]
async fn a_reply_header_above_the_requesters_bound_is_refused_at_the_replier_inproc() {
    common::bounded(reply_header_bound(Transport::Inproc)).await
}

/// What a reader's stop tells the writer of `body`: the error of the write, or, when the write
/// was taken whole before the stop, of `stopped` (FAILURE_MODEL §4 rule 5).
async fn stop_seen(t: &mut weida::OutgoingTransfer, body: Vec<u8>) -> Error {
    match t.write(body).await {
        Err(e) => e,
        Ok(()) => t.stopped().await,
    }
}

fn is_limit(e: &Error, limit: weida::Limit) -> bool {
    matches!(e, Error::LimitExceeded { limit: l, .. } if *l == limit)
}

async fn reply_above_collected(t: Transport) {
    let (_s, listener, client) = collecting_1000(t).await;
    let replier = listener.replier("/rpc").unwrap();
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    let answer = async {
        let mut ex = replier.accept().await.unwrap();
        ex.take_body().await.unwrap();
        let mut reply = ex.open_reply(Metadata::new()).await.unwrap();
        stop_seen(&mut reply, payload(BIG)).await
    };
    let (got, stopped) = tokio::join!(req.request("x"), answer);
    let e = got.unwrap_err();
    assert!(is_limit(&e, weida::Limit::CollectedBody), "{e:?}");
    assert!(
        is_limit(&stopped, weida::Limit::Remote),
        "the reply half is stopped with LIMIT_EXCEEDED: {stopped:?}"
    );
    // Each side's message says which bound and its value, where it is set, and the way
    // around it.
    let said = e.to_string();
    for part in [
        "a body above max_collected_body 1000 (1000 B)",
        "options",
        "accept()",
    ] {
        assert!(said.contains(part), "{part:?} not in {said:?}");
    }
    let said = stopped.to_string();
    for part in ["the peer refused", "max_collected_body", "open()"] {
        assert!(said.contains(part), "{part:?} not in {said:?}");
    }
    // `PendingReply::body` is bounded the same way; a reply at the bound arrives.
    for (n, whole) in [(1001, false), (1000, true)] {
        let (request, reply) = req.open(Metadata::new()).await.unwrap();
        request.finish().await.unwrap();
        let answer = async {
            let ex = replier.accept().await.unwrap();
            let _ = ex.reply(payload(n)).await;
        };
        let (got, ()) = tokio::join!(reply.body(), answer);
        match got {
            Ok(m) => assert!(whole && m.body.len() == n),
            Err(e) => assert!(!whole && is_limit(&e, weida::Limit::CollectedBody), "{e:?}"),
        }
    }
}
on_every_transport!(
    a_reply_above_max_collected_body_is_limit_exceeded_and_the_reply_is_stopped,
    reply_above_collected
);

async fn request_above_collected(t: Transport) {
    let (_s, listener, client) = collecting_1000(t).await;
    let replier = listener.replier("/rpc").unwrap();
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    let (mut request, _reply) = req.open(Metadata::new()).await.unwrap();
    let take = async {
        let mut ex = replier.accept().await.unwrap();
        let r = ex.take_body().await;
        (ex, r)
    };
    let (stopped, (ex, taken)) = tokio::join!(stop_seen(&mut request, payload(BIG)), take);
    let e = taken.unwrap_err();
    assert!(is_limit(&e, weida::Limit::CollectedBody), "{e:?}");
    assert!(
        is_limit(&stopped, weida::Limit::Remote),
        "the request half is stopped with LIMIT_EXCEEDED: {stopped:?}"
    );
    drop(ex);
}
on_every_transport!(
    a_request_above_max_collected_body_is_limit_exceeded_at_the_replier_and_the_request_is_stopped,
    request_above_collected
);
