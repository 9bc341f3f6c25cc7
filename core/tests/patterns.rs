//! One body per pattern over every transport (PATTERNS §2, §3, §5), the round-robin over two
//! peers, and the mixed pairs of a raw endpoint and a pattern.

mod common;

use bytes::Bytes;
use common::{pair, payload, Transport};
use weida::{Incoming, Metadata};

async fn req_rep_echo_body(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let replier = listener.replier("/echo").unwrap();
    tokio::spawn(async move {
        while let Ok(mut ex) = replier.accept().await {
            let body = ex.take_body().await.unwrap();
            let tag = ex.meta().metadata.get("tag").cloned().unwrap_or_default();
            ex.reply_with(Metadata::new().with("tag", tag), body)
                .await
                .unwrap();
        }
    });
    let addr = listener.address().with_path("/echo").unwrap().to_string();
    let req = client.requester();
    req.connect(&addr).await.unwrap();
    assert_eq!(&req.request("ping").await.unwrap()[..], b"ping");
    let m = req
        .request_with(
            Metadata::new().with("tag", "t1"),
            Bytes::from(payload(3 << 20)),
        )
        .await
        .unwrap();
    assert_eq!(m.body.len(), 3 << 20);
    assert_eq!(&m.body[..], &payload(3 << 20)[..]);
    assert_eq!(m.meta.metadata.get("tag").unwrap().as_ref(), b"t1");
}
on_every_transport!(
    req_rep_echoes_small_and_large_bodies_with_metadata,
    req_rep_echo_body
);

async fn push_pull_body(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    for i in 0..100u32 {
        pusher.send(i.to_be_bytes().to_vec()).await.unwrap();
    }
    let mut seen = Vec::new();
    for _ in 0..100 {
        let m = puller.recv().await.unwrap();
        assert_eq!(&*m.meta.path, "/jobs");
        seen.push(u32::from_be_bytes(m.body[..].try_into().unwrap()));
    }
    seen.sort();
    assert_eq!(seen, (0..100).collect::<Vec<_>>());
    // A streamed message with a receipt.
    let mut tr = pusher.open(Metadata::new().with("k", "v")).await.unwrap();
    tr.write(&b"part1-"[..]).await.unwrap();
    tr.write(&b"part2"[..]).await.unwrap();
    let delivery = tr.finish().await.unwrap();
    delivery.delivered().await.unwrap();
    let m = puller.recv().await.unwrap();
    assert_eq!(&m.body[..], b"part1-part2");
    assert_eq!(m.meta.metadata.get("k").unwrap().as_ref(), b"v");
}
on_every_transport!(
    push_pull_delivers_every_message_and_a_streamed_one_with_its_receipt,
    push_pull_body
);

async fn raw_body(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let acceptor = listener.acceptor("/raw").unwrap();
    let peer = client.peer();
    peer.connect(&acceptor.address().to_string()).await.unwrap();
    let mut one_way = peer.open(Metadata::new()).await.unwrap();
    one_way.write(&b"one-way"[..]).await.unwrap();
    one_way.finish().await.unwrap();
    let (mut req, reply) = peer.exchange(Metadata::new()).await.unwrap();
    req.write(&b"question"[..]).await.unwrap();
    req.finish().await.unwrap();
    let mut kinds = Vec::new();
    for _ in 0..2 {
        match acceptor.accept().await.unwrap() {
            Incoming::Stream(mut s) => {
                assert_eq!(&s.collect(1 << 20).await.unwrap()[..], b"one-way");
                kinds.push("stream");
            }
            Incoming::Exchange(mut x) => {
                assert_eq!(&x.take_body().await.unwrap()[..], b"question");
                x.reply("answer").await.unwrap();
                kinds.push("exchange");
            }
        }
    }
    kinds.sort();
    assert_eq!(kinds, ["exchange", "stream"]);
    assert_eq!(&reply.body().await.unwrap().body[..], b"answer");
}
on_every_transport!(acceptor_receives_both_stream_kinds, raw_body);

/// A requester connected to a replier at /upper that streams its answer (the request upper
/// cased) while it reads the request; the runtimes kept with it.
async fn upper_casing(
    t: Transport,
) -> (
    (weida::Runtime, weida::Listener, weida::Runtime),
    weida::Requester,
) {
    let (s, listener, client) = pair(t).await;
    let replier = listener.replier("/upper").unwrap();
    tokio::spawn(async move {
        let mut ex = replier.accept().await.unwrap();
        // The reply streams while the request is still being read.
        let mut out = ex.open_reply(Metadata::new()).await.unwrap();
        while let Some(chunk) = ex.read_chunk().await.unwrap() {
            out.write(Bytes::from(chunk.to_ascii_uppercase()))
                .await
                .unwrap();
        }
        out.finish().await.unwrap();
    });
    let req = client.requester();
    req.connect(&listener.address().with_path("/upper").unwrap().to_string())
        .await
        .unwrap();
    ((s, listener, client), req)
}

async fn streaming_overlap_body(t: Transport) {
    let (_rts, req) = upper_casing(t).await;
    let (mut body, reply) = req.open(Metadata::new()).await.unwrap();
    let reading = tokio::spawn(async move { reply.body().await });
    for part in ["abc", "def", "ghi"] {
        body.write(part.as_bytes().to_vec()).await.unwrap();
    }
    body.finish().await.unwrap();
    assert_eq!(&reading.await.unwrap().unwrap().body[..], b"ABCDEFGHI");
}
on_every_transport!(
    streaming_overlap_a_reply_streams_while_the_request_is_read,
    streaming_overlap_body
);

/// `request` reads the reply while it writes a large request (PATTERNS §2): against a replier
/// that streams its answer as it reads, a request and a reply both far above their windows
/// would wait on each other if the whole request were written first.
async fn request_overlap_body(t: Transport) {
    let (_rts, req) = upper_casing(t).await;
    // 8 MiB each way: eight stream windows, and the whole of a QUIC connection's window.
    let body: Vec<u8> = (0..8usize << 20).map(|i| b'a' + (i % 26) as u8).collect();
    // A deadlock is a hang: fail it instead.
    let reply = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        req.request(body.clone()),
    )
    .await
    .expect("the request and its reply waited on each other")
    .unwrap();
    assert_eq!(reply.len(), body.len());
    assert!(reply
        .iter()
        .zip(&body)
        .all(|(r, b)| *r == b.to_ascii_uppercase()));
}
on_every_transport!(
    request_reads_the_reply_while_it_writes_a_large_request,
    request_overlap_body
);

async fn batches_body(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    // The iterator may use the pusher: it runs outside the pusher's locks.
    let (sent, r) = pusher
        .send_many((0..200u32).map(|i| {
            assert_eq!(pusher.peer_count(), 1);
            i.to_be_bytes().to_vec()
        }))
        .await;
    r.unwrap();
    assert_eq!(sent, 200);
    let mut seen = Vec::new();
    while seen.len() < 200 {
        let batch = puller.recv_many(64).await.unwrap();
        assert!(!batch.is_empty() && batch.len() <= 64);
        seen.extend(
            batch
                .iter()
                .map(|m| u32::from_be_bytes(m.body[..].try_into().unwrap())),
        );
    }
    seen.sort();
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
}
on_every_transport!(
    send_many_and_recv_many_move_every_message_in_batches,
    batches_body
);

async fn batch_error_body(t: Transport) {
    let limits = weida::Limits {
        max_collected_body: 1000,
        ..weida::Limits::default()
    };
    let (_s, listener, client) = common::pair_with(t, limits).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let (sent, r) = pusher
        .send_many([payload(10), payload(1001), payload(20), payload(30)])
        .await;
    r.unwrap();
    assert_eq!(sent, 4);
    // Whatever the batches, every message and the one refusal come out exactly once.
    let (mut bodies, mut errors) = (Vec::new(), Vec::new());
    while bodies.len() + errors.len() < 4 {
        match puller.recv_many(10).await {
            Ok(batch) => bodies.extend(batch.into_iter().map(|m| m.body.len())),
            Err(e) => errors.push(e.code()),
        }
    }
    bodies.sort();
    assert_eq!(bodies, vec![10, 20, 30]);
    assert_eq!(errors, vec![weida::ErrorCode::LimitExceeded]);
}
on_every_transport!(
    an_error_inside_a_batch_is_returned_by_the_next_receive,
    batch_error_body
);

/// Whether `answers` alternate between two values, each taken equally.
fn alternate(answers: &[Bytes]) -> bool {
    answers.windows(2).all(|w| w[0] != w[1]) && answers.iter().any(|a| a != &answers[0])
}

async fn round_robin_body(t: Transport) {
    let (_s1, one, client) = pair(t).await;
    let (_s2, two, _) = pair(t).await;
    let req = client.requester();
    let pusher = client.pusher();
    let mut pullers = Vec::new();
    for (name, l) in [("one", &one), ("two", &two)] {
        let replier = l.replier("/rpc").unwrap();
        req.connect(&replier.address().to_string()).await.unwrap();
        tokio::spawn(async move {
            while let Ok(mut ex) = replier.accept().await {
                ex.take_body().await.unwrap();
                ex.reply(name).await.unwrap();
            }
        });
        let puller = l.puller("/jobs").unwrap();
        pusher.connect(&puller.address().to_string()).await.unwrap();
        pullers.push(puller);
    }
    assert_eq!((req.peer_count(), pusher.peer_count()), (2, 2));
    // One request each in turn.
    let mut answers = Vec::new();
    for _ in 0..6 {
        answers.push(req.request("who").await.unwrap());
    }
    assert!(alternate(&answers), "{answers:?}");
    // One message each in turn: three to each puller.
    for i in 0..6u8 {
        pusher.send(vec![i]).await.unwrap();
    }
    assert_eq!(three_each(&pullers).await, [[0, 2, 4], [1, 3, 5]]);
    // A batch too: each of its messages to the next peer in turn (one pass over the peers for
    // the run of them that goes at once).
    let (sent, r) = pusher.send_many((6..12u8).map(|i| vec![i])).await;
    r.unwrap();
    assert_eq!(sent, 6);
    assert_eq!(three_each(&pullers).await, [[6, 8, 10], [7, 9, 11]]);
}

/// Three one-byte messages from each puller, each puller's sorted, the pullers' in order.
async fn three_each(pullers: &[weida::Puller]) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    for p in pullers {
        let mut mine = Vec::new();
        for _ in 0..3 {
            mine.push(p.recv().await.unwrap().body[0]);
        }
        mine.sort();
        got.push(mine);
    }
    got.sort();
    got
}
on_every_transport!(
    requests_and_messages_go_round_robin_over_two_peers,
    round_robin_body
);

async fn mixed_pairs_body(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let replier = listener.replier("/rpc").unwrap();
    let puller = listener.puller("/jobs").unwrap();
    let acceptor = listener.acceptor("/raw").unwrap();
    // Peer to Replier: an exchange.
    let peer = client.peer();
    peer.connect(&replier.address().to_string()).await.unwrap();
    let (mut question, reply) = peer.exchange(Metadata::new()).await.unwrap();
    question.write(&b"question"[..]).await.unwrap();
    question.finish().await.unwrap();
    let mut ex = replier.accept().await.unwrap();
    assert_eq!(&ex.take_body().await.unwrap()[..], b"question");
    ex.reply("answer").await.unwrap();
    assert_eq!(&reply.body().await.unwrap().body[..], b"answer");
    // Peer to Puller: a one-way stream.
    let peer = client.peer();
    peer.connect(&puller.address().to_string()).await.unwrap();
    let mut one_way = peer.open(Metadata::new()).await.unwrap();
    one_way.write(&b"one-way"[..]).await.unwrap();
    one_way.finish().await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"one-way");
    // Requester to Acceptor: an exchange.
    let req = client.requester();
    req.connect(&acceptor.address().to_string()).await.unwrap();
    let answer = async {
        let Incoming::Exchange(mut x) = acceptor.accept().await.unwrap() else {
            panic!("a request arrives as an exchange");
        };
        assert_eq!(&x.take_body().await.unwrap()[..], b"ping");
        x.reply("pong").await.unwrap();
    };
    let (pong, ()) = tokio::join!(req.request("ping"), answer);
    assert_eq!(&pong.unwrap()[..], b"pong");
    // Pusher to Acceptor: one-way streams, a small message (on a lane when lanes are on) and
    // one beyond any lane.
    let pusher = client.pusher();
    pusher
        .connect(&acceptor.address().to_string())
        .await
        .unwrap();
    pusher.send("small").await.unwrap();
    pusher.send(Bytes::from(payload(100_000))).await.unwrap();
    let mut sizes = Vec::new();
    for _ in 0..2 {
        let Incoming::Stream(mut s) = acceptor.accept().await.unwrap() else {
            panic!("a pushed message arrives as a stream");
        };
        let body = s.collect(1 << 20).await.unwrap();
        assert!(
            body == "small" || body == payload(100_000),
            "{}",
            body.len()
        );
        sizes.push(body.len());
    }
    sizes.sort();
    assert_eq!(sizes, [5, 100_000]);
}
on_every_transport!(
    peers_and_acceptors_talk_to_the_patterns_of_their_kind,
    mixed_pairs_body
);
