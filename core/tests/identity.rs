//! Identity and trust (PATTERNS §1.9): who is on the other side comes from the transport.

mod common;

use common::{bind_address, config, Transport};
use weida::{
    Error, ErrorCode, Identity, Incoming, Limits, PeerIdentity, Runtime, RuntimeConfig, ServerTls,
    Trust,
};

async fn echo_once(acceptor: weida::Acceptor) -> Option<PeerIdentity> {
    match acceptor.accept().await.unwrap() {
        Incoming::Stream(s) => s.meta().peer.clone(),
        Incoming::Exchange(x) => x.meta().peer.clone(),
    }
}

#[tokio::test]
async fn a_pinned_address_connects_and_each_side_sees_the_others_key() {
    let server = Runtime::new(RuntimeConfig::default()).unwrap();
    let listener = server.bind("weida://127.0.0.1:0").await.unwrap();
    let acceptor = listener.acceptor("/a").unwrap();
    assert_eq!(acceptor.address().pin(), Some(&server.fingerprint()));
    let client = Runtime::new(RuntimeConfig::default()).unwrap();
    let peer = client.peer();
    peer.connect(&acceptor.address().to_string()).await.unwrap();
    let t = peer.open(Default::default()).await.unwrap();
    t.finish().await.unwrap();
    assert_eq!(
        echo_once(acceptor).await,
        Some(PeerIdentity::Key(client.fingerprint()))
    );
}

#[tokio::test]
async fn a_wrong_pin_is_untrusted_and_names_what_answered() {
    let server = Runtime::new(RuntimeConfig::default()).unwrap();
    let listener = server.bind("weida://127.0.0.1:0").await.unwrap();
    let _acceptor = listener.acceptor("/a").unwrap();
    let other = Identity::ephemeral().fingerprint();
    let addr = listener
        .address()
        .with_pin(other)
        .unwrap()
        .with_path("/a")
        .unwrap();
    let client = Runtime::new(RuntimeConfig::default()).unwrap();
    let e = client.peer().connect(&addr.to_string()).await.unwrap_err();
    match e {
        Error::Untrusted {
            fingerprint,
            expected,
        } => {
            assert_eq!(fingerprint, server.fingerprint());
            assert_eq!(expected, Some(other));
        }
        other => panic!("expected Untrusted, got {other:?}"),
    }
}

#[tokio::test]
async fn an_address_without_a_pin_is_untrusted_by_default_and_pinned_trust_accepts_it() {
    let server = Runtime::new(RuntimeConfig::default()).unwrap();
    let listener = server.bind("weida://127.0.0.1:0").await.unwrap();
    let _acceptor = listener.acceptor("/a").unwrap();
    let port = common::socket_addr(&listener).port();
    let bare = format!("weida://127.0.0.1:{port}/a");
    let client = Runtime::new(RuntimeConfig::default()).unwrap();
    let e = client.peer().connect(&bare).await.unwrap_err();
    assert!(
        matches!(e, Error::Untrusted { expected: None, .. }),
        "{e:?}"
    );
    assert!(
        e.to_string().contains(&server.fingerprint().to_string()),
        "{e}"
    );

    let pinned = Runtime::new(RuntimeConfig {
        trust: Trust::pinned([server.fingerprint()]),
        ..RuntimeConfig::default()
    })
    .unwrap();
    pinned.peer().connect(&bare).await.unwrap();
    let unverified = Runtime::new(RuntimeConfig {
        trust: Trust::unverified(),
        ..RuntimeConfig::default()
    })
    .unwrap();
    unverified.peer().connect(&bare).await.unwrap();
}

#[tokio::test]
async fn require_client_admits_a_pinned_client_and_refuses_others() {
    let server = Runtime::new(RuntimeConfig::default()).unwrap();
    let good = Runtime::new(RuntimeConfig::default()).unwrap();
    let stranger = Runtime::new(RuntimeConfig::default()).unwrap();
    let anonymous = Runtime::new(RuntimeConfig {
        present_identity: false,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let tls =
        ServerTls::new(Identity::ephemeral()).require_client(Trust::pinned([good.fingerprint()]));
    let listener = server.bind_with("weida://127.0.0.1:0", tls).await.unwrap();
    let acceptor = listener.acceptor("/a").unwrap();
    let addr = acceptor.address().to_string();

    let p = good.peer();
    p.connect(&addr).await.unwrap();
    p.open(Default::default())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(
        echo_once(acceptor).await,
        Some(PeerIdentity::Key(good.fingerprint()))
    );

    for refused in [&stranger, &anonymous] {
        let p = refused.peer();
        let outcome = async {
            p.connect(&addr).await?;
            // The server may refuse after the client's side of the handshake completed: the
            // first exchange then fails instead.
            let (t, reply) = p.exchange(Default::default()).await?;
            t.finish().await?;
            reply.body().await
        }
        .await;
        let e = outcome.unwrap_err();
        assert!(
            matches!(e.code(), ErrorCode::ConnectionLost | ErrorCode::Untrusted),
            "{e:?}"
        );
    }
}

#[tokio::test]
async fn an_anonymous_client_has_no_peer_identity() {
    let server = Runtime::new(RuntimeConfig::default()).unwrap();
    let listener = server.bind("weida://127.0.0.1:0").await.unwrap();
    let acceptor = listener.acceptor("/a").unwrap();
    let client = Runtime::new(RuntimeConfig {
        present_identity: false,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let p = client.peer();
    p.connect(&acceptor.address().to_string()).await.unwrap();
    p.open(Default::default())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(echo_once(acceptor).await, None);
}

#[tokio::test]
async fn a_unix_peer_presents_the_principal_the_kernel_proved() {
    let server = Runtime::new(config(Limits::default())).unwrap();
    let listener = server.bind(&bind_address(Transport::Unix)).await.unwrap();
    let acceptor = listener.acceptor("/a").unwrap();
    let client = Runtime::new(config(Limits::default())).unwrap();
    let p = client.peer();
    p.connect(&acceptor.address().to_string()).await.unwrap();
    p.open(Default::default())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    let who = echo_once(acceptor).await;
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    assert_eq!(
        who,
        Some(PeerIdentity::Local {
            uid,
            gid,
            pid: std::process::id() as i32
        })
    );
}

#[tokio::test]
async fn in_process_peers_have_no_identity() {
    let server = Runtime::new(config(Limits::default())).unwrap();
    let listener = server.bind(&bind_address(Transport::Inproc)).await.unwrap();
    let acceptor = listener.acceptor("/a").unwrap();
    let client = Runtime::new(config(Limits::default())).unwrap();
    let p = client.peer();
    p.connect(&acceptor.address().to_string()).await.unwrap();
    p.open(Default::default())
        .await
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(echo_once(acceptor).await, None);
}

#[tokio::test]
async fn a_saved_identity_keeps_its_fingerprint_so_a_pin_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("id");
    let first = Identity::load_or_create(&keys).unwrap();
    let fp = first.fingerprint();
    let pinned_address;
    {
        let server = Runtime::new(RuntimeConfig {
            identity: first,
            ..RuntimeConfig::default()
        })
        .unwrap();
        let listener = server.bind("weida://127.0.0.1:0").await.unwrap();
        pinned_address = listener.address().clone();
        server.shutdown();
    }
    let again = Identity::load_or_create(&keys).unwrap();
    assert_eq!(again.fingerprint(), fp);
    let server = Runtime::new(RuntimeConfig {
        identity: again,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let listener = server.bind("weida://127.0.0.1:0").await.unwrap();
    let _a = listener.acceptor("/a").unwrap();
    assert_eq!(listener.address().pin(), pinned_address.pin());
    let client = Runtime::new(RuntimeConfig::default()).unwrap();
    client
        .peer()
        .connect(&listener.address().with_path("/a").unwrap().to_string())
        .await
        .unwrap();
}
