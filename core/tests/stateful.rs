//! A stateful fuzz of a real listener (issue 16 part 6): a raw QUIC peer dials it again and
//! again and, on each connection, does a random sequence of what a peer can do: valid and
//! mutated HELLOs, control frames, transfers, requests, lanes and streams of random bytes,
//! finished, reset, stalled or abandoned, and a close. Whatever it sends, no task of the
//! listener's process panics, a well-behaved requester and pusher on the same listener are
//! served after every connection, and nothing the listener holds for the hostile peer outlives
//! the deadlines.
//!
//! Seeded: the seed is printed, and `WEIDA_FUZZ_SEED` replays one; `WEIDA_FUZZ_ROUNDS` (default
//! 30 connections) lengthens the run. The long run is a documented command in
//! docs/RELIABILITY.md. This file is its own test binary, so the panic hook below sees only
//! this test's threads.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use weida::wire::Header;
use weida::{Limits, Runtime};

/// The HELLO a v0 dialler sends with the default header bound and no features.
const HELLO: &[u8] = &[0x01, 0x07, 0x00, 0x01, 0x04, 0x80, 0x00, 0x40, 0x00];

/// What one step of the hostile peer may be bounded by: the listener answers, stops or
/// closes long before.
const STEP: Duration = Duration::from_millis(400);

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// `valid` with a few bytes changed, cut or appended at random (or left whole).
fn mutated(rng: &mut StdRng, valid: &[u8]) -> Vec<u8> {
    let mut v = valid.to_vec();
    match rng.gen_range(0..5) {
        0 => {}
        1 if !v.is_empty() => {
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..v.len());
                v[i] = rng.gen();
            }
        }
        2 if !v.is_empty() => v.truncate(rng.gen_range(0..v.len())),
        3 => v.extend((0..rng.gen_range(1..64)).map(|_| rng.gen::<u8>())),
        _ => {
            v = (0..rng.gen_range(0..200))
                .map(|_| rng.gen::<u8>())
                .collect()
        }
    }
    v
}

/// A stream's opening as a v0 dialler writes it: its type byte and a DATA header for `path`.
fn opening(ty: u8, path: &str) -> Vec<u8> {
    let mut v = vec![ty];
    Header::for_path(path).encode(&mut v);
    v
}

/// A control frame a dialler could send, valid or not: SUBSCRIBE, UNSUBSCRIBE, CHECK, GOAWAY,
/// CLOSE, a second HELLO, or an unknown type.
fn control_frame(rng: &mut StdRng) -> Vec<u8> {
    let path = ["/rpc", "/jobs", "/nowhere", ""][rng.gen_range(0..4)];
    let mut payload = vec![rng.gen_range(0..4u8)];
    payload.push(path.len() as u8);
    payload.extend_from_slice(path.as_bytes());
    payload.extend_from_slice(b"a.#");
    let ty = [0x01u8, 0x02, 0x03, 0x04, 0x05, 0x07, 0x3f][rng.gen_range(0..7)];
    let mut frame = vec![ty, payload.len() as u8];
    frame.extend_from_slice(&payload);
    mutated(rng, &frame)
}

/// One connection of the hostile peer: a handshake (perhaps broken), then up to a dozen
/// random actions, then a close or an abandonment. Every error is expected: the listener may
/// stop a stream or close the connection at any point.
async fn hostile_connection(rng: &mut StdRng, listener: &weida::Listener) {
    let Ok(conn) =
        common::raw::dial_with(listener, b"weida/0", quinn::TransportConfig::default()).await
    else {
        return;
    };
    let Ok((mut control, _control_in)) = conn.open_bi().await else {
        return;
    };
    let hello = match rng.gen_range(0..4) {
        0 => mutated(rng, HELLO),
        _ => HELLO.to_vec(),
    };
    let _ = control.write_all(&[&[0x00][..], &hello].concat()).await;
    let mut held = Vec::new();
    for _ in 0..rng.gen_range(1..12) {
        let action = rng.gen_range(0..8);
        let step = async {
            match action {
                // A transfer to the puller, perhaps mutated, finished, reset or left open.
                0 | 1 => {
                    let mut bytes = opening(0x01, "/jobs");
                    bytes.extend((0..rng.gen_range(0..2048)).map(|_| rng.gen::<u8>()));
                    let bytes = if action == 1 {
                        mutated(rng, &bytes)
                    } else {
                        bytes
                    };
                    let mut s = conn.open_uni().await.ok()?;
                    s.write_all(&bytes).await.ok()?;
                    match rng.gen_range(0..3) {
                        0 => drop(s.finish()),
                        1 => drop(s.reset(quinn::VarInt::from_u32(rng.gen_range(0..16)))),
                        _ => held.push(s),
                    }
                }
                // A request, perhaps mutated, its reply read or not.
                2 | 3 => {
                    let mut bytes = opening(0x02, "/rpc");
                    bytes.extend_from_slice(b"hostile");
                    let bytes = if action == 3 {
                        mutated(rng, &bytes)
                    } else {
                        bytes
                    };
                    let (mut s, mut r) = conn.open_bi().await.ok()?;
                    s.write_all(&bytes).await.ok()?;
                    if rng.gen() {
                        s.finish().ok()?;
                        let _ = r.read_to_end(1 << 16).await;
                    } else {
                        held.push(s);
                    }
                }
                // A control frame on the control stream.
                4 => {
                    let f = control_frame(rng);
                    control.write_all(&f).await.ok()?;
                }
                // A lane (negotiated or not) with random frames after its opening.
                5 => {
                    let mut bytes = opening(0x03, "/jobs");
                    bytes.extend((0..rng.gen_range(0..256)).map(|_| rng.gen::<u8>()));
                    let mut s = conn.open_uni().await.ok()?;
                    s.write_all(&bytes).await.ok()?;
                    held.push(s);
                }
                // Random bytes on a stream of either direction.
                6 => {
                    let bytes: Vec<u8> = (0..rng.gen_range(0..512)).map(|_| rng.gen()).collect();
                    if rng.gen() {
                        let mut s = conn.open_uni().await.ok()?;
                        s.write_all(&bytes).await.ok()?;
                        if rng.gen() {
                            let _ = s.finish();
                        }
                    } else {
                        let (mut s, mut r) = conn.open_bi().await.ok()?;
                        s.write_all(&bytes).await.ok()?;
                        let _ = s.finish();
                        let _ = r.read_to_end(1 << 16).await;
                    }
                }
                // The connection closed with any code.
                _ => conn.close(quinn::VarInt::from_u32(rng.gen_range(0..16)), b"fuzz"),
            }
            Some(())
        };
        let _ = tokio::time::timeout(STEP, step).await;
    }
    if rng.gen() {
        conn.close(quinn::VarInt::from_u32(0), b"done");
    }
    // Otherwise abandoned with its streams held: the endpoint's drop closes it, as a process
    // that dies would, and the listener's deadlines and idle timeout clear the rest.
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_from_a_raw_peer_never_break_the_listener_or_its_other_peers() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let seed = env_u64("WEIDA_FUZZ_SEED").unwrap_or_else(rand::random);
    let rounds = env_u64("WEIDA_FUZZ_ROUNDS").unwrap_or(30);
    eprintln!("stateful fuzz: seed {seed} ({rounds} connections; WEIDA_FUZZ_SEED={seed} replays)");
    let mut rng = StdRng::seed_from_u64(seed);

    let limits = Limits {
        header_timeout: Duration::from_millis(300),
        body_idle_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let server = Runtime::new(common::config(limits)).unwrap();
    let listener = server.bind("weida://127.0.0.1:0").await.unwrap();
    let replier = listener.replier("/rpc").unwrap();
    let puller = Arc::new(listener.puller("/jobs").unwrap());
    let _publisher = listener.publisher("/feed").unwrap();
    tokio::spawn(async move {
        while let Ok(mut ex) = replier.accept().await {
            tokio::spawn(async move {
                if let Ok(body) = ex.take_body().await {
                    let _ = ex.reply(body).await;
                }
            });
        }
    });

    let good = Runtime::new(common::config(Limits::default())).unwrap();
    let requester = good.requester();
    requester
        .connect(&listener.address().with_path("/rpc").unwrap().to_string())
        .await
        .unwrap();
    let pusher = good.pusher();
    pusher.connect(&puller.address().to_string()).await.unwrap();

    for round in 0..rounds {
        hostile_connection(&mut rng, &listener).await;
        // The well-behaved peers are served after every hostile connection, at once.
        let body = format!("good {round}");
        let reply = tokio::time::timeout(Duration::from_secs(5), requester.request(body.clone()))
            .await
            .unwrap_or_else(|_| panic!("round {round} (seed {seed}): the request waited"))
            .unwrap_or_else(|e| panic!("round {round} (seed {seed}): {e}"));
        assert_eq!(reply, Bytes::from(body));
        let mut t = pusher.open(weida::Metadata::new()).await.unwrap();
        t.write(&b"good"[..]).await.unwrap();
        t.finish().await.unwrap();
        // The puller also takes what the hostile peer finished: the good message is among them.
        let got = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match puller.recv().await {
                    Ok(m) if m.meta.peer == pusher_peer(&good) && &m.body[..] == b"good" => break,
                    _ => continue,
                }
            }
        })
        .await;
        assert!(got.is_ok(), "round {round} (seed {seed}): the push waited");
    }
    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a task panicked (seed {seed})"
    );
    eprintln!(
        "stateful fuzz: the listener counted {:?}",
        server.counters()
    );
}

/// What the puller sees as the good runtime's identity.
fn pusher_peer(good: &Runtime) -> Option<weida::PeerIdentity> {
    Some(weida::PeerIdentity::Key(good.fingerprint()))
}
