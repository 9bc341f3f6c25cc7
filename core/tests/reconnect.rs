//! A dialled address outlives its connection: a dialling endpoint redials an address whose
//! peer restarted, with no second `connect`, and says what happened as `PeerEvent`s; `open`
//! waits for the redial; `ReconnectPolicy::never()` is the behaviour before redial; a peer
//! that comes back with another key is not reconnected to.

mod common;

use std::time::Duration;

use common::{bind_address, socket_addr, Relay, Transport};
use weida::{
    EndpointOptions, Error, ErrorCode, Identity, Limits, Listener, LossCause, Metadata, PeerEvent,
    PeerEvents, ReconnectPolicy, Runtime, RuntimeConfig,
};

/// Redial fast and without jitter, so the tests' outages are short; a QUIC dial to the relay
/// whose server is gone gives up at 300 ms instead of the default 5 s.
fn redialling() -> RuntimeConfig {
    RuntimeConfig {
        limits: Limits {
            connect_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        lane_max_message: common::lane_max(),
        reconnect: ReconnectPolicy {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(100),
            jitter: false,
            ..ReconnectPolicy::default()
        },
        ..RuntimeConfig::default()
    }
}

/// A server that keeps `identity`, so one bound again keeps the address's pin.
fn server(identity: &Identity) -> Runtime {
    Runtime::new(RuntimeConfig {
        identity: identity.clone(),
        ..common::config(Limits::default())
    })
    .unwrap()
}

/// A server at an address the client can keep dialling across a restart: over QUIC a relay
/// (a UDP port is not free again the moment its runtime closes), elsewhere the same socket
/// path or in-process name.
struct Restartable {
    t: Transport,
    pub relay: Option<Relay>,
    bind: String,
}

impl Restartable {
    async fn start(t: Transport, identity: &Identity) -> (Self, Runtime, Listener) {
        let rt = server(identity);
        let bind = bind_address(t);
        let listener = rt.bind(&bind).await.unwrap();
        let relay = match t {
            Transport::Quic => Some(Relay::start(socket_addr(&listener)).await),
            _ => None,
        };
        (Self { t, relay, bind }, rt, listener)
    }

    /// The address a client dials for `path` of `listener`.
    fn address(&self, listener: &Listener, path: &str) -> String {
        let a = listener.address().with_path(path).unwrap();
        match &self.relay {
            Some(r) => r.address_for(&a),
            None => a.to_string(),
        }
    }

    /// A new server with `identity` at the same address.
    async fn restart(&self, identity: &Identity) -> (Runtime, Listener) {
        let rt = server(identity);
        let bind = match self.t {
            Transport::Quic => "weida://127.0.0.1:0".to_string(),
            _ => self.bind.clone(),
        };
        let listener = rt.bind(&bind).await.unwrap();
        if let Some(r) = &self.relay {
            r.retarget(socket_addr(&listener));
        }
        (rt, listener)
    }
}

async fn next(events: &mut PeerEvents) -> PeerEvent {
    tokio::time::timeout(Duration::from_secs(30), events.next())
        .await
        .expect("an event within 30 s")
        .expect("the endpoint is alive")
        .expect("no event missed")
}

/// Reads events up to and including the first of `name`; every one before it must be one of
/// `between`.
async fn until(events: &mut PeerEvents, name: &str, between: &[&str]) -> PeerEvent {
    loop {
        let e = next(events).await;
        if e.name() == name {
            return e;
        }
        assert!(
            between.contains(&e.name()),
            "unexpected {e:?} before {name}"
        );
    }
}

async fn restarts(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let puller = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    assert!(matches!(
        next(&mut events).await,
        PeerEvent::Connected { .. }
    ));
    pusher.send("one").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"one");

    first.close().await;
    drop((puller, listener, first));
    match next(&mut events).await {
        PeerEvent::Lost { url, .. } => assert_eq!(url, addr),
        e => panic!("{e:?}"),
    }
    match next(&mut events).await {
        PeerEvent::Retrying { attempt, delay, .. } => {
            assert_eq!(attempt, 1);
            // In process the redial waits for the name, not for a timer.
            let expected = match t {
                Transport::Inproc => Duration::ZERO,
                _ => Duration::from_millis(20),
            };
            assert_eq!(delay, expected);
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(pusher.peer_count(), 0);
    let (_second, listener) = place.restart(&identity).await;
    let puller = listener.puller("/jobs").unwrap();
    match until(&mut events, "connected", &["retrying"]).await {
        PeerEvent::Connected { url, fingerprint } => {
            assert_eq!(url, addr);
            if t == Transport::Quic {
                assert_eq!(fingerprint, Some(identity.fingerprint()));
            }
        }
        e => panic!("{e:?}"),
    }
    assert_eq!(pusher.peer_count(), 1);
    pusher.send("two").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"two");
}
on_every_transport!(
    a_pusher_whose_server_restarts_delivers_again_with_no_second_connect,
    restarts
);

async fn never(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let puller = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client
        .pusher_with(&EndpointOptions::new().reconnect(ReconnectPolicy::never()))
        .unwrap();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    pusher.send("one").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"one");
    first.close().await;
    assert!(matches!(
        until(&mut events, "lost", &["connected"]).await,
        PeerEvent::Lost { .. }
    ));
    let gave_up = next(&mut events).await;
    assert!(matches!(gave_up, PeerEvent::GaveUp { .. }), "{gave_up:?}");
    // Nothing redials: the next operation reports the loss, as before redial existed.
    let e = pusher.open(Metadata::new()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConnectionLost, "{e:?}");
    let (_second, _listener) = place.restart(&identity).await;
    let e = pusher.open(Metadata::new()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConnectionLost, "{e:?}");
    assert_eq!(pusher.peer_count(), 0);
}
on_every_transport!(never_reports_connection_lost_as_before, never);

/// A drain ends this side's connections: its GOAWAY makes the listener close each one once
/// what it sent was taken, which the dialler sees as the peer's close. That loss is the
/// drain's doing, so nothing redials it: the slot gives up (LocallyClosed) with no Retrying
/// (found by bench/soak/twoproc.py, whose pusher redialled the puller it had just drained from).
async fn drained_no_redial(t: Transport) {
    let (_server, listener, _) = common::pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&puller.address().to_string()).await.unwrap();
    pusher.send("one").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"one");
    client.drain(Duration::from_secs(5)).await;
    match until(&mut events, "gave_up", &["connected", "lost"]).await {
        PeerEvent::GaveUp { cause, .. } => assert_eq!(cause, LossCause::LocallyClosed),
        e => panic!("{e:?}"),
    }
    assert_eq!(pusher.peer_count(), 0);
}
on_every_transport!(a_drained_runtime_does_not_redial, drained_no_redial);

async fn opened_during_outage(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    // Bound at connect: `connect` checks the path (PROTOCOL §3.1.5).
    let _bound = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((listener, first));
    until(&mut events, "retrying", &["connected", "lost"]).await;
    // Every slot is down: `open` waits for the redial instead of failing.
    let opening = tokio::spawn(async move {
        let mut t = pusher.open(Metadata::new()).await?;
        t.write(&b"during"[..]).await?;
        t.finish().await.map(drop)?;
        Ok::<_, Error>(pusher)
    });
    let (_second, listener) = place.restart(&identity).await;
    let puller = listener.puller("/jobs").unwrap();
    let m = puller.recv().await.unwrap();
    assert_eq!(&m.body[..], b"during");
    opening.await.unwrap().unwrap();
}
on_every_transport!(
    a_transfer_opened_during_the_outage_completes_on_the_redialled_connection,
    opened_during_outage
);

async fn bounded_wait(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    // Bound at connect: `connect` checks the path (PROTOCOL §3.1.5).
    let _bound = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let options = EndpointOptions::new().send_timeout(Some(Duration::from_millis(200)));
    let pusher = client.pusher_with(&options).unwrap();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    until(&mut events, "lost", &["connected"]).await;
    let e = pusher.open(Metadata::new()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Timeout, "{e:?}");
    // The timeout says what it waited for: the last loss of the endpoint's connections.
    match &e {
        Error::Timeout { last_loss } => assert!(last_loss.is_some(), "{e:?}"),
        _ => unreachable!(),
    }
    assert!(e.to_string().contains("waiting for a redial"), "{e}");
    // An endpoint that never connected is told so, at once.
    let e = client.pusher().open(Metadata::new()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotConnected, "{e:?}");
}
on_every_transport!(open_waits_for_a_redial_at_most_send_timeout, bounded_wait);

/// A redial checks the path as `connect` does (PROTOCOL §3.1.5): a server that comes back
/// without the path bound (a restart that binds its listener a moment before its paths) is
/// answered UNKNOWN_ENDPOINT, which is a failed attempt, retried with the policy's backoff: the
/// slot does not go live on the unbound path. Once the path is bound, the next attempt goes
/// live and delivers.
async fn redial_waits_for_the_path(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let _puller = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((_puller, listener, first));
    until(&mut events, "lost", &["connected"]).await;
    let (second, listener) = place.restart(&identity).await;
    // Attempts run one at a time: once the restarted server has accepted a redial's connection,
    // the next `retrying` is announced after that attempt failed on the unbound path.
    loop {
        until(&mut events, "retrying", &[]).await;
        if second.counters().connections_accepted > 0 {
            break;
        }
    }
    until(&mut events, "retrying", &[]).await;
    assert_eq!(pusher.peer_count(), 0, "live on a path nothing is bound at");
    let puller = listener.puller("/jobs").unwrap();
    until(&mut events, "connected", &["retrying"]).await;
    pusher.send("bound").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"bound");
}
on_every_transport!(
    a_redial_that_finds_the_path_unbound_retries_until_it_is_bound,
    redial_waits_for_the_path
);

/// A redial to a listener that no longer serves the path gives up, when the policy gives up,
/// with `LossCause::UnknownEndpoint` naming the path: what the last attempts were told.
async fn gives_up_unknown(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let _puller = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let policy = ReconnectPolicy {
        give_up: weida::GiveUp::After(Duration::from_secs(1)),
        ..redialling().reconnect
    };
    let pusher = client
        .pusher_with(&EndpointOptions::new().reconnect(policy))
        .unwrap();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((_puller, listener, first));
    until(&mut events, "lost", &["connected"]).await;
    // Back at the address, serving another path only.
    let (_second, listener) = place.restart(&identity).await;
    let _other = listener.puller("/other").unwrap();
    match until(&mut events, "gave_up", &["retrying"]).await {
        PeerEvent::GaveUp { url, cause } => {
            assert_eq!(url, addr);
            assert_eq!(cause, LossCause::UnknownEndpoint("/jobs".into()));
            assert_eq!(cause.name(), "unknown_endpoint");
        }
        e => panic!("{e:?}"),
    }
    let e = pusher.send("gone").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConnectionLost, "{e:?}");
}
on_every_transport!(
    a_redial_to_a_listener_that_no_longer_serves_the_path_gives_up_with_unknown_endpoint,
    gives_up_unknown
);

/// Under `StopOn::refused` a redial told UNKNOWN_ENDPOINT gives up at once, as one told that
/// nothing listens does. In process only: there the redial waits for the name with no timer,
/// so its first attempt reaches the restarted listener (elsewhere the first attempts meet a
/// closed port, which the same rule stops first).
#[tokio::test]
async fn a_redial_told_unknown_endpoint_stops_at_once_under_stop_refused() {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(Transport::Inproc, &identity).await;
    let _puller = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let policy = ReconnectPolicy {
        stop: weida::StopOn {
            refused: true,
            ..weida::StopOn::default()
        },
        ..redialling().reconnect
    };
    let pusher = client
        .pusher_with(&EndpointOptions::new().reconnect(policy))
        .unwrap();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((_puller, listener, first));
    until(&mut events, "lost", &["connected"]).await;
    let (_second, _listener) = place.restart(&identity).await;
    match until(&mut events, "gave_up", &["retrying"]).await {
        PeerEvent::GaveUp { cause, .. } => {
            assert_eq!(cause, LossCause::UnknownEndpoint("/jobs".into()));
        }
        e => panic!("{e:?}"),
    }
}

/// A redial answered UNSUPPORTED (the path is bound to another pattern now) gives the address
/// up at once: it no longer names what was connected, as another key does not.
async fn gives_up_unsupported(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let _puller = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((_puller, listener, first));
    until(&mut events, "lost", &["connected"]).await;
    let (_second, listener) = place.restart(&identity).await;
    let _replier = listener.replier("/jobs").unwrap();
    match until(&mut events, "gave_up", &["retrying"]).await {
        PeerEvent::GaveUp { cause, .. } => {
            assert_eq!(cause.name(), "dial_failed", "{cause:?}");
            assert!(cause.to_string().contains("replier"), "{cause}");
        }
        e => panic!("{e:?}"),
    }
}
on_every_transport!(
    a_redial_to_a_path_of_another_pattern_gives_up_at_once,
    gives_up_unsupported
);

/// A QUIC server that comes back with another key is not the same peer: the redial is refused
/// in the handshake, never goes live, and the address is given up with `PeerChanged`.
#[tokio::test]
async fn a_server_back_with_a_new_key_gives_up_with_peer_changed() {
    let t = Transport::Quic;
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    // Bound at connect: `connect` checks the path (PROTOCOL §3.1.5).
    let _bound = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((listener, first));
    until(&mut events, "retrying", &["connected", "lost"]).await;
    let stranger = Identity::ephemeral();
    let (_second, listener) = place.restart(&stranger).await;
    let _puller = listener.puller("/jobs").unwrap();
    match until(&mut events, "gave_up", &["retrying"]).await {
        PeerEvent::GaveUp { cause, .. } => assert_eq!(cause, LossCause::PeerChanged),
        e => panic!("{e:?}"),
    }
    assert_eq!(pusher.peer_count(), 0);
    let e = pusher.open(Metadata::new()).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConnectionLost, "{e:?}");
}

/// A trust that lists both keys decides at every redial: a server rotated from one to the
/// other on the same unpinned address is the same peer (docs/DEPLOYING.md, way b).
#[tokio::test]
async fn a_redial_under_a_trust_of_pins_accepts_any_key_the_trust_does() {
    let (old, new) = (Identity::ephemeral(), Identity::ephemeral());
    let (place, first, listener) = Restartable::start(Transport::Quic, &old).await;
    let _bound = listener.puller("/jobs").unwrap();
    let relay = place.relay.as_ref().unwrap();
    let addr = format!("weida://{}/jobs", relay.addr);
    let mut config = redialling();
    config.trust = weida::Trust::pinned([old.fingerprint(), new.fingerprint()]);
    let client = Runtime::new(config).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((listener, first));
    until(&mut events, "retrying", &["connected", "lost"]).await;
    let (_second, listener) = place.restart(&new).await;
    let puller = listener.puller("/jobs").unwrap();
    match until(&mut events, "connected", &["retrying"]).await {
        PeerEvent::Connected { fingerprint, .. } => {
            assert_eq!(fingerprint, Some(new.fingerprint()))
        }
        e => panic!("{e:?}"),
    }
    pusher.send("after").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"after");
}

/// Under `Trust::unverified` an address with no pin is trusted on first use: the key the first
/// connection proved is pinned for every redial, and a server back with another key is given
/// up (`PeerChanged`).
#[tokio::test]
async fn under_unverified_trust_the_first_key_is_pinned_for_redials() {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(Transport::Quic, &identity).await;
    let _bound = listener.puller("/jobs").unwrap();
    let relay = place.relay.as_ref().unwrap();
    let addr = format!("weida://{}/jobs", relay.addr);
    let mut config = redialling();
    config.trust = weida::Trust::unverified();
    let client = Runtime::new(config).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((listener, first));
    until(&mut events, "retrying", &["connected", "lost"]).await;
    let (_second, listener) = place.restart(&Identity::ephemeral()).await;
    let _puller = listener.puller("/jobs").unwrap();
    match until(&mut events, "gave_up", &["retrying"]).await {
        PeerEvent::GaveUp { cause, .. } => assert_eq!(cause, LossCause::PeerChanged),
        e => panic!("{e:?}"),
    }
}

/// A reader that falls more than the event stream's bound behind is told how many it missed,
/// and reads on from there; an endpoint nobody reads the events of is not held back.
#[tokio::test]
async fn a_lagging_event_reader_is_told_how_many_it_missed() {
    let t = Transport::Unix;
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    // Bound at connect: `connect` checks the path (PROTOCOL §3.1.5).
    let _bound = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let mut config = redialling();
    config.reconnect.initial = Duration::from_millis(1);
    config.reconnect.max = Duration::from_millis(1);
    let client = Runtime::new(config).unwrap();
    let pusher = client.pusher();
    let mut keeping_up = pusher.events();
    let mut lagging = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((listener, first));
    // A missing socket is refused at once: the redial retries every millisecond.
    for _ in 0..100 {
        until(&mut keeping_up, "retrying", &["connected", "lost"]).await;
    }
    let missed = lagging.next().await.unwrap().unwrap_err();
    assert!(missed.0 >= 100 - 64, "{missed:?}");
    assert!(lagging.next().await.unwrap().is_ok());
}

async fn resubscribes(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let publisher = listener.publisher("/feed").unwrap();
    let addr = place.address(&listener, "/feed");
    let client = Runtime::new(redialling()).unwrap();
    let sub = client.subscriber();
    let mut events = sub.events();
    sub.connect(&addr).await.unwrap();
    sub.subscribe("a.#").await.unwrap();
    assert_eq!(publisher.publish("a.1", &b"1"[..]).unwrap(), 1);
    assert_eq!(sub.recv().await.unwrap().meta.topic.as_deref(), Some("a.1"));

    first.close().await;
    drop((publisher, listener, first));
    until(&mut events, "retrying", &["connected", "lost"]).await;
    // During the outage: held here, installed at the publisher when the redial is up.
    sub.subscribe("b.#").await.unwrap();
    assert_eq!(sub.peer_count(), 0);
    let (_second, listener) = place.restart(&identity).await;
    let publisher = listener.publisher("/feed").unwrap();
    until(&mut events, "connected", &["retrying"]).await;
    // The redial re-sent every filter before it went live: both select.
    assert_eq!(publisher.publish("b.2", &b"2"[..]).unwrap(), 1);
    assert_eq!(publisher.publish("a.3", &b"3"[..]).unwrap(), 1);
    assert_eq!(publisher.publish("c.4", &b"4"[..]).unwrap(), 0);
    assert_eq!(sub.recv().await.unwrap().meta.topic.as_deref(), Some("b.2"));
    assert_eq!(sub.recv().await.unwrap().meta.topic.as_deref(), Some("a.3"));
}
on_every_transport!(
    a_subscriber_hears_the_next_publish_after_its_publisher_restarts_with_every_filter,
    resubscribes
);

/// Under `never()` a subscriber whose only publisher is gone is told so, as before.
#[tokio::test]
async fn a_subscriber_that_never_redials_reports_the_loss() {
    let (_s, listener, _c) = common::pair(Transport::Inproc).await;
    let publisher = listener.publisher("/feed").unwrap();
    let client = Runtime::new(redialling()).unwrap();
    let sub = client
        .subscriber_with(&EndpointOptions::new().reconnect(ReconnectPolicy::never()))
        .unwrap();
    sub.connect(&publisher.address().to_string()).await.unwrap();
    listener.close();
    let e = sub.recv().await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::ConnectionLost, "{e:?}");
}

/// A QUIC server that dies without a word (its packets stop: the path goes silent) is learned
/// at the idle timeout, then redialled: the next request is answered by its successor.
#[tokio::test]
async fn a_quic_peer_that_dies_silently_is_redialled_after_the_idle_timeout() {
    let identity = Identity::ephemeral();
    let (place, _first, _client, req, mut events) =
        answered_once(&identity, Duration::from_millis(1000)).await;
    // Silence: nothing tells the client, which learns at its idle timeout.
    let relay = place.relay.as_ref().unwrap();
    relay.freeze();
    match until(&mut events, "lost", &["connected"]).await {
        PeerEvent::Lost { cause, .. } => assert_eq!(cause, LossCause::IdleTimeout),
        e => panic!("{e:?}"),
    }
    let (_second, listener) = place.restart(&identity).await;
    tokio::spawn(echo(listener.replier("/echo").unwrap()));
    relay.thaw();
    until(&mut events, "connected", &["retrying"]).await;
    assert_eq!(&req.request("two").await.unwrap()[..], b"two");
}

/// Answers every request with its body.
async fn echo(r: weida::Replier) {
    while let Ok(mut ex) = r.accept().await {
        let body = ex.take_body().await.unwrap();
        let _ = ex.reply(body).await;
    }
}

/// A QUIC echo server with `identity` behind a relay, and a redialling requester (keep-alive
/// 200 ms, idle timeout `idle`) whose first request it answered; the requester's events are
/// read from before its connect.
async fn answered_once(
    identity: &Identity,
    idle: Duration,
) -> (Restartable, Runtime, Runtime, weida::Requester, PeerEvents) {
    let (place, first, listener) = Restartable::start(Transport::Quic, identity).await;
    let replier = listener.replier("/echo").unwrap();
    let addr = place.address(&listener, "/echo");
    let mut config = redialling();
    config.limits.idle_timeout = idle;
    config.limits.keep_alive = Some(Duration::from_millis(200));
    let client = Runtime::new(config).unwrap();
    let req = client.requester();
    let events = req.events();
    req.connect(&addr).await.unwrap();
    tokio::spawn(echo(replier));
    assert_eq!(&req.request("one").await.unwrap()[..], b"one");
    (place, first, client, req, events)
}

/// A QUIC server restarted with its key resets what its previous process held at the peer's
/// next packet (a stateless reset, from the key both processes derive from the identity): the
/// peer learns at once, not at its idle timeout, and redials. The old process is still up but
/// cut off, as a killed one would be.
#[tokio::test]
async fn a_quic_server_restarted_with_its_key_is_learned_at_the_next_packet() {
    let identity = Identity::ephemeral();
    let (place, _first, _client, req, mut events) =
        answered_once(&identity, Duration::from_secs(30)).await;
    let (_second, listener) = place.restart(&identity).await;
    tokio::spawn(echo(listener.replier("/echo").unwrap()));
    let restarted = tokio::time::Instant::now();
    match until(&mut events, "lost", &["connected"]).await {
        PeerEvent::Lost { cause, .. } => assert_eq!(cause, LossCause::Reset),
        e => panic!("{e:?}"),
    }
    // At the next keep-alive, not at the 30 s idle timeout.
    assert!(
        restarted.elapsed() < Duration::from_secs(10),
        "{:?}",
        restarted.elapsed()
    );
    until(&mut events, "connected", &["retrying"]).await;
    assert_eq!(&req.request("two").await.unwrap()[..], b"two");
}

/// A pusher whose only server is down, by `Restartable` and `events` (the outage has begun:
/// its redial is retrying), with `options`.
async fn in_outage(
    t: Transport,
    options: EndpointOptions,
) -> (
    Restartable,
    Identity,
    Runtime,
    weida::Pusher,
    String,
    PeerEvents,
) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let puller = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher_with(&options).unwrap();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    first.close().await;
    drop((puller, listener, first));
    until(&mut events, "retrying", &["connected", "lost"]).await;
    (place, identity, client, pusher, addr, events)
}

/// The bodies `puller` receives next, `n` of them.
async fn bodies(puller: &weida::Puller, n: usize) -> Vec<String> {
    let mut got = Vec::with_capacity(n);
    for _ in 0..n {
        let m = puller.recv().await.unwrap();
        got.push(String::from_utf8(m.body.to_vec()).unwrap());
    }
    got
}

/// In order on a lane; over streams of their own (lanes off) a puller delivers whole messages
/// as they complete, with no order across them (PATTERNS §1.7), so only the set is asserted.
fn assert_sent(mut got: Vec<String>, sent: &[String]) {
    if !common::lanes_on() {
        got.sort();
        let mut sent = sent.to_vec();
        sent.sort();
        assert_eq!(got, sent);
        return;
    }
    assert_eq!(got, sent);
}

async fn outbox_in_order(t: Transport) {
    let (place, identity, client, pusher, _addr, mut events) =
        in_outage(t, EndpointOptions::new()).await;
    // Each send returns at once: the body is the outbox's.
    let sent: Vec<String> = (0..100).map(|i| format!("m{i:03}")).collect();
    for m in &sent {
        pusher.send(m.clone()).await.unwrap();
    }
    assert_eq!(client.counters().outbox_queued, 100);
    assert_eq!(client.counters().outbox_written, 0);
    let (_second, listener) = place.restart(&identity).await;
    let puller = listener.puller("/jobs").unwrap();
    until(&mut events, "connected", &["retrying"]).await;
    assert_sent(bodies(&puller, 100).await, &sent);
    // A send after the outage queues behind the rest or goes straight out: never first.
    pusher.send("after").await.unwrap();
    assert_eq!(bodies(&puller, 1).await, ["after"]);
    let c = client.counters();
    assert_eq!((c.outbox_written, c.outbox_abandoned), (100, 0));
}
on_every_transport!(
    a_hundred_sends_during_an_outage_arrive_in_order_after_it,
    outbox_in_order
);

async fn outbox_blocks(t: Transport) {
    let options = EndpointOptions::new().outbox_messages(3);
    let (place, identity, _client, pusher, _addr, _events) = in_outage(t, options).await;
    for i in 0..3 {
        pusher.send(format!("m{i}")).await.unwrap();
    }
    let pusher = std::sync::Arc::new(pusher);
    let p = pusher.clone();
    let mut fourth = Box::pin(async move { p.send("m3").await });
    // The outbox is full and no peer is live: the fourth send waits (one poll registers it).
    assert!(futures_util::FutureExt::now_or_never(&mut fourth).is_none());
    let (_second, listener) = place.restart(&identity).await;
    let puller = listener.puller("/jobs").unwrap();
    // The drain starts and makes room: the fourth send returns, and goes out behind the rest.
    fourth.await.unwrap();
    let sent: Vec<String> = (0..4).map(|i| format!("m{i}")).collect();
    assert_sent(bodies(&puller, 4).await, &sent);
}
on_every_transport!(
    the_fourth_send_at_a_bound_of_three_blocks_until_the_drain_starts,
    outbox_blocks
);

async fn outbox_drops(t: Transport) {
    let options = EndpointOptions::new()
        .outbox_messages(3)
        .outbox_full(weida::OutboxFull::Drop);
    let (place, identity, client, pusher, _addr, mut events) = in_outage(t, options).await;
    for i in 0..5 {
        pusher.send(format!("m{i}")).await.unwrap();
    }
    assert_eq!(client.counters().outbox_dropped, 2);
    assert_eq!(client.counters().outbox_queued, 3);
    let (_second, listener) = place.restart(&identity).await;
    let puller = listener.puller("/jobs").unwrap();
    until(&mut events, "connected", &["retrying"]).await;
    let sent: Vec<String> = (0..3).map(|i| format!("m{i}")).collect();
    assert_sent(bodies(&puller, 3).await, &sent);
    pusher.send("m5").await.unwrap();
    assert_eq!(bodies(&puller, 1).await, ["m5"]);
}
on_every_transport!(a_drop_outbox_counts_what_it_discarded, outbox_drops);

/// Under `Reject` a full outbox fails the send by name; a body larger than the whole outbox
/// is refused at the call under any policy.
#[tokio::test]
async fn a_reject_outbox_and_a_body_larger_than_the_outbox_fail_by_name() {
    let options = EndpointOptions::new()
        .outbox_messages(2)
        .outbox_bytes(1024)
        .outbox_full(weida::OutboxFull::Reject);
    let (_place, _identity, _client, pusher, _addr, _events) =
        in_outage(Transport::Unix, options).await;
    pusher.send("m0").await.unwrap();
    pusher.send("m1").await.unwrap();
    match pusher.send("m2").await.unwrap_err() {
        Error::LimitExceeded { limit, .. } => assert_eq!(limit, weida::Limit::OutboxMessages),
        e => panic!("{e:?}"),
    }
    let e = pusher.send(vec![0u8; 2048]).await.unwrap_err();
    match &e {
        Error::LimitExceeded { limit, .. } => assert_eq!(*limit, weida::Limit::OutboxBytes),
        e => panic!("{e:?}"),
    }
    assert!(e.to_string().contains("outbox_bytes"), "{e}");
    let blocking = Runtime::new(redialling()).unwrap();
    let p = blocking
        .pusher_with(&EndpointOptions::new().outbox_bytes(1024))
        .unwrap();
    p.connect_later("weida+inproc://nobody-binds-this/jobs")
        .await
        .unwrap();
    let e = p.send(vec![0u8; 2048]).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::LimitExceeded, "{e:?}");
}

async fn written_once(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let puller = listener.puller("/jobs").unwrap();
    let addr = place.address(&listener, "/jobs");
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    pusher.connect(&addr).await.unwrap();
    let before: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    for m in &before {
        pusher.send(m.clone()).await.unwrap();
    }
    assert_sent(bodies(&puller, 10).await, &before);
    first.close().await;
    drop((puller, listener, first));
    until(&mut events, "retrying", &["connected", "lost"]).await;
    let (_second, listener) = place.restart(&identity).await;
    let puller = listener.puller("/jobs").unwrap();
    until(&mut events, "connected", &["retrying"]).await;
    let after: Vec<String> = (10..20).map(|i| format!("m{i}")).collect();
    for m in &after {
        pusher.send(m.clone()).await.unwrap();
    }
    // The new server hears the sends after the restart and nothing before it: no replay.
    assert_sent(bodies(&puller, 10).await, &after);
    assert_eq!(client.counters().outbox_queued, 0);
}
on_every_transport!(a_body_written_before_the_restart_arrives_once, written_once);

/// `bind` (a listener's address) with an endpoint's `path`.
fn with_path(bind: &str, path: &str) -> String {
    let a: weida::Address = bind.parse().unwrap();
    a.with_path(path).unwrap().to_string()
}

/// A listener's address known before it is bound: the same socket path or in-process name,
/// or over QUIC a relay (toward a port nobody answers yet) with the server's key pinned.
async fn before_bind(t: Transport, identity: &Identity) -> (Option<Relay>, String, String) {
    match t {
        Transport::Quic => {
            let nobody = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let relay = Relay::start(nobody.local_addr().unwrap()).await;
            drop(nobody);
            let addr = format!("weida://{}@{}/jobs", identity.fingerprint(), relay.addr);
            (Some(relay), "weida://127.0.0.1:0".into(), addr)
        }
        _ => {
            let bind = bind_address(t);
            let addr = with_path(&bind, "/jobs");
            (None, bind, addr)
        }
    }
}

async fn connects_later(t: Transport) {
    let identity = Identity::ephemeral();
    let (relay, bind, addr) = before_bind(t, &identity).await;
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    let mut events = pusher.events();
    // Nothing is bound: `connect` would fail; `connect_later` records the slot and returns.
    pusher.connect_later(&addr).await.unwrap();
    assert_eq!(pusher.peer_count(), 0);
    pusher.send("early").await.unwrap();
    let req = client.requester();
    let echo = match &relay {
        Some(_) => addr.replace("/jobs", "/echo"),
        None => with_path(&bind, "/echo"),
    };
    req.connect_later(&echo).await.unwrap();
    let asking = tokio::spawn(async move { req.request("hi").await });
    let server = server(&identity);
    let listener = server.bind(&bind).await.unwrap();
    if let Some(r) = &relay {
        r.retarget(socket_addr(&listener));
    }
    let puller = listener.puller("/jobs").unwrap();
    let replier = listener.replier("/echo").unwrap();
    tokio::spawn(async move {
        while let Ok(mut ex) = replier.accept().await {
            let body = ex.take_body().await.unwrap();
            let _ = ex.reply(body).await;
        }
    });
    match until(&mut events, "connected", &["retrying"]).await {
        PeerEvent::Connected { url, .. } => assert_eq!(url, addr),
        e => panic!("{e:?}"),
    }
    assert_eq!(bodies(&puller, 1).await, ["early"]);
    assert_eq!(&asking.await.unwrap().unwrap()[..], b"hi");
    assert_eq!(pusher.peer_count(), 1);
}
on_every_transport!(
    connect_before_bind_delivers_once_the_listener_appears,
    connects_later
);

/// A drain writes out what the outboxes hold while connections come up, and counts what it
/// could not write.
#[tokio::test]
async fn a_drain_writes_out_the_outbox_first() {
    let (_s, listener, _c) = common::pair(Transport::Unix).await;
    let puller = listener.puller("/jobs").unwrap();
    let client = Runtime::new(redialling()).unwrap();
    let pusher = client.pusher();
    // Recorded, not yet dialled: the send is the outbox's.
    pusher
        .connect_later(&puller.address().to_string())
        .await
        .unwrap();
    pusher.send("early").await.unwrap();
    let nowhere = client.pusher();
    let missing = with_path(&bind_address(Transport::Unix), "/jobs");
    nowhere.connect_later(&missing).await.unwrap();
    nowhere.send("never").await.unwrap();
    let drained = client.drain(Duration::from_millis(1500)).await;
    assert_eq!(drained.unsent, 1);
    let c = client.counters();
    assert_eq!((c.outbox_written, c.outbox_abandoned), (1, 1));
    assert_eq!(bodies(&puller, 1).await, ["early"]);
    // After the drain nothing is admitted.
    let e = pusher.send("late").await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Closed, "{e:?}");
}

async fn subscribes_later(t: Transport) {
    let identity = Identity::ephemeral();
    let (relay, bind, addr) = before_bind(t, &identity).await;
    let addr = addr.replace("/jobs", "/feed");
    let client = Runtime::new(redialling()).unwrap();
    let sub = client.subscriber();
    let mut events = sub.events();
    sub.connect_later(&addr).await.unwrap();
    // Held, and installed by the first connection before it counts as live.
    sub.subscribe("a.#").await.unwrap();
    assert_eq!(sub.peer_count(), 0);
    let receiving = tokio::spawn(async move {
        let m = sub.recv().await;
        (sub, m)
    });
    let server = server(&identity);
    let listener = server.bind(&bind).await.unwrap();
    if let Some(r) = &relay {
        r.retarget(socket_addr(&listener));
    }
    let publisher = listener.publisher("/feed").unwrap();
    until(&mut events, "connected", &["retrying"]).await;
    assert_eq!(publisher.publish("b.0", &b"0"[..]).unwrap(), 0);
    assert_eq!(publisher.publish("a.1", &b"1"[..]).unwrap(), 1);
    let (sub, m) = receiving.await.unwrap();
    assert_eq!(m.unwrap().meta.topic.as_deref(), Some("a.1"));
    assert_eq!(sub.peer_count(), 1);
}
on_every_transport!(
    a_subscriber_connected_before_its_publisher_binds_hears_it_with_its_filters,
    subscribes_later
);

/// A dialling pair is a pusher toward its bound pair: it redials a pair whose server restarted,
/// claims it again, and delivers what it sent during the outage from its outbox; what the new
/// bound pair sends reaches it on the new connection.
async fn pair_restarts(t: Transport) {
    let identity = Identity::ephemeral();
    let (place, first, listener) = Restartable::start(t, &identity).await;
    let bound = listener.pair("/chat").unwrap();
    let addr = place.address(&listener, "/chat");
    let client = Runtime::new(redialling()).unwrap();
    let dialling = client.pair();
    let mut events = dialling.events().unwrap();
    dialling.connect(&addr).await.unwrap();
    assert!(matches!(
        next(&mut events).await,
        PeerEvent::Connected { .. }
    ));
    dialling.send("one").await.unwrap();
    assert_eq!(&bound.recv().await.unwrap().body[..], b"one");

    first.close().await;
    drop((bound, listener, first));
    until(&mut events, "retrying", &["lost"]).await;
    // Kept in the outbox while the pair is away.
    dialling.send("during the outage").await.unwrap();
    let (_second, listener) = place.restart(&identity).await;
    let bound = listener.pair("/chat").unwrap();
    until(&mut events, "connected", &["retrying"]).await;
    assert_eq!(&bound.recv().await.unwrap().body[..], b"during the outage");
    bound.send("welcome back").await.unwrap();
    assert_eq!(&dialling.recv().await.unwrap().body[..], b"welcome back");
}
on_every_transport!(
    a_dialling_pair_redials_and_claims_again_with_its_outbox,
    pair_restarts
);
