//! The pool of dialled connections (ARCHITECTURE §4): one connection per dialled address,
//! shared by the endpoints that hold it, gone gracefully with the last of them, and replaced at
//! the next `connect` once found dead.

mod common;

use common::{bind_address, config, pair, socket_addr, Relay, Transport};
use weida::{Identity, Limits, Runtime, RuntimeConfig};

async fn shared_then_released(t: Transport) {
    let (_s, listener, client) = pair(t).await;
    let puller = listener.puller("/jobs").unwrap();
    let addr = puller.address().to_string();
    let a = client.pusher();
    let b = client.pusher();
    a.connect(&addr).await.unwrap();
    b.connect(&addr).await.unwrap();
    a.send("a").await.unwrap();
    // One endpoint lets go; the other still holds the connection, and it stays.
    assert!(a.disconnect(&addr).unwrap());
    b.send("b").await.unwrap();
    assert_eq!(
        client.counters().connections_dialled,
        1,
        "one shared connection"
    );
    // The last one lets go: the connection goes away gracefully, and what was sent on it
    // still arrives.
    b.send("b2").await.unwrap();
    drop(b);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(puller.recv().await.unwrap().body);
    }
    got.sort();
    assert_eq!(got, ["a", "b", "b2"]);
    // The next endpoint to dial the address gets a connection of its own.
    let c = client.pusher();
    c.connect(&addr).await.unwrap();
    c.send("c").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"c");
    assert_eq!(client.counters().connections_dialled, 2);
}
on_every_transport!(
    a_connection_is_shared_while_endpoints_hold_it_and_goes_away_with_the_last,
    shared_then_released
);

/// A server runtime with `identity`, so that one bound again at the same address keeps its pin.
fn server(identity: &Identity) -> Runtime {
    Runtime::new(RuntimeConfig {
        identity: identity.clone(),
        ..config(Limits::default())
    })
    .unwrap()
}

async fn replaced(t: Transport) {
    let identity = Identity::ephemeral();
    let first = server(&identity);
    let listener = first.bind(&bind_address(t)).await.unwrap();
    let puller = listener.puller("/jobs").unwrap();
    // Over QUIC the client dials a relay, which later forwards to the second server: the
    // same address (a UDP port is not free again the moment its runtime shuts down).
    let relay = match t {
        Transport::Quic => Some(Relay::start(socket_addr(&listener)).await),
        _ => None,
    };
    let addr = match &relay {
        Some(r) => r.address_for(puller.address()),
        None => puller.address().to_string(),
    };
    let client = Runtime::new(config(Limits::default())).unwrap();
    let pusher = client.pusher();
    pusher.connect(&addr).await.unwrap();
    pusher.send("one").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"one");

    first.shutdown();
    // The client learns the loss (a send fails once it has); nothing to wait on but that.
    while pusher.send("lost").await.is_ok() {
        tokio::task::yield_now().await;
    }
    drop((puller, listener, first));
    let second = server(&identity);
    let listener = match &relay {
        Some(r) => {
            let l = second.bind(&bind_address(t)).await.unwrap();
            r.retarget(socket_addr(&l));
            l
        }
        // The same AF_UNIX path or in-process name, free again.
        None => second.bind(&bind_address_of(&addr)).await.unwrap(),
    };
    let puller = listener.puller("/jobs").unwrap();
    let pusher = client.pusher();
    pusher.connect(&addr).await.unwrap();
    pusher.send("two").await.unwrap();
    assert_eq!(&puller.recv().await.unwrap().body[..], b"two");
    assert_eq!(client.counters().connections_dialled, 2, "a new connection");
}

/// The bind address of a dialled AF_UNIX or in-process address: without its path.
fn bind_address_of(addr: &str) -> String {
    let a: weida::Address = addr.parse().unwrap();
    a.without_path().to_string()
}
on_every_transport!(
    a_connection_found_dead_is_replaced_at_the_next_connect,
    replaced
);
