//! Cancel (PATTERNS §1.5): the reader never observes a cancelled transfer as complete, and a
//! writer whose reader walked away reads Canceled, on every transport.

mod common;

use bytes::Bytes;
use common::{pair, payload, Transport};
use weida::{Error, ErrorCode, Metadata};

async fn push_cancel(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let mut tr = pusher.open(Metadata::new()).await.unwrap();
    tr.write(Bytes::from(payload(100_000))).await.unwrap();
    let mut incoming = puller.accept().await.unwrap();
    // The reader has the first bytes before the cancel; they stay read.
    let first = incoming.read_chunk().await.unwrap().unwrap();
    assert!(!first.is_empty());
    tr.cancel();
    let outcome = loop {
        match incoming.read_chunk().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a cancelled transfer read as complete"),
            Err(e) => break Err::<(), _>(e),
        }
    };
    assert!(matches!(outcome, Err(Error::Canceled)), "{outcome:?}");
    // The puller goes on.
    pusher.send("next").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"next");
}
on_every_transport!(
    push_cancel_mid_transfer_is_canceled_at_the_reader,
    push_cancel
);

async fn dropped(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let mut tr = pusher.open(Metadata::new()).await.unwrap();
    tr.write(&b"half a frame"[..]).await.unwrap();
    // Once the transfer is dispatched, the puller holds it; then the writer drops it.
    let mut incoming = puller.accept().await.unwrap();
    drop(tr);
    let e = incoming.collect(1 << 20).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
}
on_every_transport!(
    a_dropped_transfer_is_a_cancellation_not_a_short_payload,
    dropped
);

async fn dropped_early(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let mut tr = pusher.open(Metadata::new()).await.unwrap();
    tr.write(&b"half a frame"[..]).await.unwrap();
    drop(tr);
    pusher.send("next").await.unwrap();
    // The cancelled transfer is either never dispatched (its reset overtook its header) or
    // reported as Canceled; it is never a message.
    let mut canceled = 0;
    let body = loop {
        match puller.recv().await {
            Ok(m) => break m.body,
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
                canceled += 1;
            }
        }
    };
    assert_eq!(&body[..], b"next");
    assert!(canceled <= 1);
}
on_every_transport!(
    a_transfer_dropped_before_dispatch_is_never_a_message,
    dropped_early
);

async fn request_cancel(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let replier = listener.replier("/rpc").unwrap();
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    let (mut body, _reply) = req.open(Metadata::new()).await.unwrap();
    body.write(&b"partial request"[..]).await.unwrap();
    let mut ex = replier.accept().await.unwrap();
    body.cancel();
    let e = ex.take_body().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
}
on_every_transport!(
    a_cancelled_request_is_canceled_at_the_replier,
    request_cancel
);

async fn unanswered(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let replier = listener.replier("/rpc").unwrap();
    tokio::spawn(async move {
        let mut ex = replier.accept().await.unwrap();
        ex.take_body().await.unwrap();
        drop(ex); // walks away without answering
    });
    let req = client.requester();
    req.connect(&listener.address().with_path("/rpc").unwrap().to_string())
        .await
        .unwrap();
    let e = req.request("q").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
}
on_every_transport!(
    an_exchange_dropped_without_an_answer_is_canceled_for_the_requester,
    unanswered
);

async fn cancelled_write(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let mut tr = pusher.open(Metadata::new()).await.unwrap();
    let incoming;
    {
        // A write far beyond every window blocks; once the reader has its first bytes, the
        // write's future is dropped mid-payload (a binding's cancelled await does this).
        let piece = Bytes::from(payload(256 << 10));
        let write = async {
            for _ in 0..64 {
                tr.write(piece.clone()).await.unwrap();
            }
        };
        tokio::select! {
            _ = write => panic!("16 MiB cannot fit in the windows"),
            first = async {
                let mut t = puller.accept().await.unwrap();
                let c = t.read_chunk().await.unwrap();
                (t, c)
            } => {
                assert!(first.1.is_some());
                incoming = Some(first.0);
            }
        }
    }
    tr.cancel();
    let mut incoming: weida::IncomingTransfer = incoming.unwrap();
    let e = loop {
        match incoming.read_chunk().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a cancelled transfer read as complete"),
            Err(e) => break e,
        }
    };
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
}
on_every_transport!(
    a_write_dropped_mid_payload_then_cancelled_is_canceled_at_the_reader,
    cancelled_write
);

/// The replier's answer beyond the stream window, once its requester stopped reading: the
/// requester's stop decides it.
async fn answer_unread(replier: &weida::Replier, requester_gone: impl std::future::Future) {
    let mut ex = replier.accept().await.unwrap();
    ex.take_body().await.unwrap();
    requester_gone.await;
    let e = ex.reply(Bytes::from(payload(2 << 20))).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
}

async fn reply_unread(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let replier = listener.replier("/rpc").unwrap();
    let req = std::sync::Arc::new(client.requester());
    req.connect(&replier.address().to_string()).await.unwrap();
    // The requester drops its PendingReply.
    let (request, reply) = req.open(Metadata::new()).await.unwrap();
    request.finish().await.unwrap();
    drop(reply);
    answer_unread(&replier, async {}).await;
    // The requester drops the future of `request`.
    let pending = tokio::spawn({
        let req = req.clone();
        async move { req.request("q").await }
    });
    answer_unread(&replier, async {
        pending.abort();
        assert!(pending.await.unwrap_err().is_cancelled());
    })
    .await;
}
on_every_transport!(
    a_reply_the_requester_stopped_reading_is_canceled_at_the_replier,
    reply_unread
);

async fn dropped_unread(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let mut tr = pusher.open(Metadata::new()).await.unwrap();
    // Beyond the stream window: the write is still pending when the puller walks away, or,
    // where a transport took it whole, `stopped` is.
    let write = async {
        match tr.write(Bytes::from(payload(2 << 20))).await {
            Err(e) => e,
            Ok(()) => tr.stopped().await,
        }
    };
    let drop_unread = async {
        drop(puller.accept().await.unwrap());
    };
    let (e, ()) = tokio::join!(write, drop_unread);
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
    // The puller goes on.
    pusher.send("next").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"next");
}
on_every_transport!(
    a_transfer_the_puller_drops_unread_is_canceled_at_the_pusher,
    dropped_unread
);

/// Drives `write` (of a body far beyond every window) until `reading` has the stream's first
/// chunk, then drops it mid-write; the stream being read, to read on.
async fn drop_write_once_read(
    write: impl std::future::Future,
    reading: impl std::future::Future<Output = weida::IncomingTransfer>,
) -> weida::IncomingTransfer {
    tokio::select! {
        _ = write => panic!("16 MiB cannot fit in the windows"),
        incoming = async {
            let mut t = reading.await;
            assert!(t.read_chunk().await.unwrap().is_some());
            t
        } => incoming,
    }
}

/// Reads `incoming` to its end: the error it ends with (a complete read fails the test).
async fn read_to_error(mut incoming: weida::IncomingTransfer, what: &str) -> Error {
    loop {
        match incoming.read_chunk().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("{what} read as complete"),
            Err(e) => break e,
        }
    }
}

/// `Pusher::send` of a body far beyond every window, its future dropped once the puller has
/// the first bytes: the puller reads `Canceled`, never a short complete message. Over QUIC and
/// AF_UNIX only: in process a send's one write is queued whole, so it is never dropped
/// mid-write.
async fn dropped_send(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let body = Bytes::from(payload(16 << 20));
    let reading = async { puller.accept().await.unwrap() };
    let incoming = drop_write_once_read(pusher.send(body), reading).await;
    let e = read_to_error(incoming, "a dropped send").await;
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
    // The puller goes on.
    pusher.send("next").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"next");
}

#[tokio::test]
async fn a_send_dropped_mid_write_is_canceled_at_the_reader_quic() {
    dropped_send(Transport::Quic).await;
}

#[tokio::test]
async fn a_send_dropped_mid_write_is_canceled_at_the_reader_unix() {
    dropped_send(Transport::Unix).await;
}

/// `Exchange::reply` of a body far beyond every window, its future dropped once the requester
/// has the reply's first bytes: the requester reads `Canceled`, never a short complete reply.
/// Over QUIC and AF_UNIX only, as above.
async fn dropped_reply(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let replier = listener.replier("/rpc").unwrap();
    let req = client.requester();
    req.connect(&replier.address().to_string()).await.unwrap();
    let (mut request, pending) = req.open(Metadata::new()).await.unwrap();
    request.write(Bytes::from_static(b"q")).await.unwrap();
    drop(request.finish().await.unwrap());
    let mut ex = replier.accept().await.unwrap();
    ex.take_body().await.unwrap();
    let body = Bytes::from(payload(16 << 20));
    let reading = async { pending.reply().await.unwrap() };
    let reply = drop_write_once_read(ex.reply(body), reading).await;
    let e = read_to_error(reply, "a dropped reply").await;
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
}

#[tokio::test]
async fn a_reply_dropped_mid_write_is_canceled_at_the_requester_quic() {
    dropped_reply(Transport::Quic).await;
}

#[tokio::test]
async fn a_reply_dropped_mid_write_is_canceled_at_the_requester_unix() {
    dropped_reply(Transport::Unix).await;
}

/// A transfer opened to a puller, and its canceler (the runtimes and the pusher kept alive
/// with them).
async fn opened_with_canceler(
    t: Transport,
) -> (
    (weida::Runtime, weida::Runtime, weida::Pusher),
    weida::Puller,
    weida::OutgoingTransfer,
    weida::Canceler,
) {
    let (s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    let mut tr = pusher.open(Metadata::new()).await.unwrap();
    let canceler = tr.canceler();
    ((s, client, pusher), puller, tr, canceler)
}

/// A [`weida::Canceler`] taken before a write that waits on a full window cancels it from
/// another task: the write fails `Canceled`, so does every later call on the transfer, and the
/// reader reads `Canceled`, never a complete payload (PATTERNS §1.5).
async fn canceler_interrupts_a_write(t: Transport) {
    let (_rts, puller, mut tr, canceler) = opened_with_canceler(t).await;
    let piece = Bytes::from(payload(256 << 10));
    let writing = tokio::spawn(async move {
        for _ in 0..64 {
            if let Err(e) = tr.write(piece.clone()).await {
                return (tr, e);
            }
        }
        panic!("16 MiB cannot fit in the windows");
    });
    // Once the reader has the first bytes, the writer is waiting on a window (or about to).
    let mut incoming = puller.accept().await.unwrap();
    assert!(incoming.read_chunk().await.unwrap().is_some());
    assert!(canceler.cancel(), "the first cancel cancels");
    assert!(!canceler.clone().cancel(), "a second does nothing");
    let (mut tr, e) = writing.await.unwrap();
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
    assert_eq!(
        tr.write("late").await.unwrap_err().code(),
        ErrorCode::Canceled
    );
    assert_eq!(
        tr.finish().await.err().map(|e| e.code()),
        Some(ErrorCode::Canceled)
    );
    let e = read_to_error(incoming, "a cancelled transfer").await;
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
    assert!(canceler.is_canceled());
}
on_every_transport!(
    a_canceler_interrupts_a_pending_write_and_the_reader_reads_canceled,
    canceler_interrupts_a_write
);

/// Cancelling an idle transfer through its canceler resets it at once: the reader reads
/// `Canceled` while the writer still holds the transfer and calls nothing.
async fn canceler_idle(t: Transport) {
    let (_rts, puller, mut tr, canceler) = opened_with_canceler(t).await;
    tr.write(&b"half a frame"[..]).await.unwrap();
    let incoming = puller.accept().await.unwrap();
    assert!(canceler.cancel());
    let e = read_to_error(incoming, "a cancelled transfer").await;
    assert_eq!(e.code(), ErrorCode::Canceled, "{e:?}");
    assert_eq!(tr.stopped().await.code(), ErrorCode::Canceled);
    drop(tr);
}
on_every_transport!(a_canceler_resets_an_idle_transfer_at_once, canceler_idle);

/// After `finish` a canceler does nothing: the message arrives whole.
async fn canceler_after_finish(t: Transport) {
    let (_rts, puller, mut tr, canceler) = opened_with_canceler(t).await;
    tr.write(&b"whole"[..]).await.unwrap();
    let delivery = tr.finish().await.unwrap();
    assert!(!canceler.cancel(), "finished: nothing to cancel");
    assert!(!canceler.is_canceled());
    assert_eq!(&puller.recv().await.unwrap().body[..], b"whole");
    delivery.delivered().await.unwrap();
}
on_every_transport!(a_canceler_after_finish_does_nothing, canceler_after_finish);
