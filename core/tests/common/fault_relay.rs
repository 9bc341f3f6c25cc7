//! A UDP relay that injects network faults between a QUIC client and server: this machine's
//! kernel has no netem qdisc and no iptables or nft, so the tests own the network instead.
//! Per direction: loss, a fixed delay plus jitter (datagrams wait in a timer queue, so jitter
//! also reorders), explicit reordering, duplication, and a size cap that emulates a path MTU
//! drop; both ways, a partition. Every setting may change while the connection is up.
//!
//! The decisions come from one seeded generator, printed at start; `WEIDA_FAULT_SEED=<n>`
//! replays the same sequence of decisions (the timing of the datagrams themselves is the
//! scheduler's, so a replay is close, not exact).

use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::UdpSocket;
use tokio::time::Instant;

/// The faults of one direction.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Probability that a datagram is dropped.
    pub loss: f64,
    /// Every datagram waits this long…
    pub delay: Duration,
    /// …plus a uniform extra of up to this (which reorders datagrams closer than it).
    pub jitter: Duration,
    /// Probability that a datagram is held back by `reorder_by`, so later ones overtake it.
    pub reorder: f64,
    pub reorder_by: Duration,
    /// Probability that a datagram is sent twice.
    pub duplicate: f64,
    /// Datagrams above this many bytes are dropped: a path MTU drop.
    pub max_size: Option<usize>,
}

/// What one direction did, counted.
#[derive(Debug, Default)]
pub struct Counts {
    pub forwarded: AtomicU64,
    pub dropped: AtomicU64,
    pub duplicated: AtomicU64,
    pub reordered: AtomicU64,
    pub too_large: AtomicU64,
    /// The largest datagram dropped, in bytes.
    pub largest_dropped: AtomicU64,
    /// Told of every datagram dropped.
    dropping: tokio::sync::Notify,
}

impl Counts {
    fn dropped_one(&self, len: usize) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        self.largest_dropped
            .fetch_max(len as u64, Ordering::Relaxed);
        self.dropping.notify_waiters();
    }

    /// Resolves once this direction has dropped a datagram of `len` bytes or more: a test's
    /// evidence that what a peer sent during a partition (something that large, not an
    /// acknowledgement) was lost.
    pub async fn dropped_one_of(&self, len: usize) {
        loop {
            let dropping = self.dropping.notified();
            tokio::pin!(dropping);
            dropping.as_mut().enable();
            if self.largest_dropped.load(Ordering::Relaxed) >= len as u64 {
                return;
            }
            dropping.await;
        }
    }

    pub fn get(&self) -> (u64, u64, u64, u64, u64) {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (
            l(&self.forwarded),
            l(&self.dropped),
            l(&self.duplicated),
            l(&self.reordered),
            l(&self.too_large),
        )
    }
}

struct Control {
    to_server: Faults,
    to_client: Faults,
    partitioned: bool,
    rng: u64,
}

/// splitmix64: small, seeded, reproducible; no crate needed.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn unit(state: &mut u64) -> f64 {
    (next(state) >> 11) as f64 / (1u64 << 53) as f64
}

/// The seed of a relay: `WEIDA_FAULT_SEED`, or one from the clock, printed either way.
pub fn seed() -> u64 {
    let seed = std::env::var("WEIDA_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("fault relay seed {seed} (WEIDA_FAULT_SEED={seed} replays it)");
    seed
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    ToServer,
    ToClient,
}

struct Held {
    at: Instant,
    order: u64,
    dir: Dir,
    data: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.order) == (o.at, o.order)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    // The earliest first out of a max-heap.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.order).cmp(&(self.at, self.order))
    }
}

pub struct FaultRelay {
    pub addr: SocketAddr,
    pub seed: u64,
    control: Arc<Mutex<Control>>,
    pub to_server: Arc<Counts>,
    pub to_client: Arc<Counts>,
    /// The relay's sockets, shared with its task so `heal` can discard what a partition
    /// left unread in them.
    sockets: [Arc<UdpSocket>; 2],
    task: tokio::task::JoinHandle<()>,
}

impl FaultRelay {
    /// A relay in front of `server` with no fault yet.
    pub async fn start(server: SocketAddr) -> Self {
        let seed = seed();
        let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let back = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let addr = front.local_addr().unwrap();
        let control = Arc::new(Mutex::new(Control {
            to_server: Faults::default(),
            to_client: Faults::default(),
            partitioned: false,
            rng: seed,
        }));
        let (to_server, to_client) = (Arc::new(Counts::default()), Arc::new(Counts::default()));
        let task = tokio::spawn(run(
            front.clone(),
            back.clone(),
            server,
            control.clone(),
            to_server.clone(),
            to_client.clone(),
        ));
        Self {
            addr,
            seed,
            control,
            to_server,
            to_client,
            sockets: [front, back],
            task,
        }
    }

    /// The same faults both ways.
    pub fn set(&self, f: Faults) {
        let mut c = self.control.lock().unwrap();
        c.to_server = f;
        c.to_client = f;
    }

    pub fn set_each(&self, to_server: Faults, to_client: Faults) {
        let mut c = self.control.lock().unwrap();
        c.to_server = to_server;
        c.to_client = to_client;
    }

    /// Drops everything both ways (what is held in the timer queue too) until `heal`.
    pub fn partition(&self) {
        self.control.lock().unwrap().partitioned = true;
    }

    /// Ends a partition. A datagram sent during it that the relay's task has not read yet
    /// (a starved task on a loaded machine reads late) would otherwise be forwarded now, as
    /// if the partition had queued it; it is discarded here, so exactly what was sent before
    /// this call is lost.
    pub fn heal(&self) {
        let mut c = self.control.lock().unwrap();
        let mut buf = vec![0u8; 65536];
        for (socket, counts) in self.sockets.iter().zip([&self.to_server, &self.to_client]) {
            while let Ok((n, _)) = socket.try_recv_from(&mut buf) {
                counts.dropped_one(n);
            }
        }
        c.partitioned = false;
    }

    /// `address` (a QUIC listener's, with pin and path) pointed at this relay instead.
    pub fn address_for(&self, address: &weida::Address) -> String {
        let s = address.to_string();
        let at = s.find('@').unwrap();
        let slash = s[at..].find('/').map(|i| at + i).unwrap_or(s.len());
        format!("{}@{}{}", &s[..at], self.addr, &s[slash..])
    }
}

impl Drop for FaultRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(
    front: Arc<UdpSocket>,
    back: Arc<UdpSocket>,
    server: SocketAddr,
    control: Arc<Mutex<Control>>,
    to_server: Arc<Counts>,
    to_client: Arc<Counts>,
) {
    let mut client: Option<SocketAddr> = None;
    let mut heap: BinaryHeap<Held> = BinaryHeap::new();
    let mut order = 0u64;
    let mut a = vec![0u8; 65536];
    let mut b = vec![0u8; 65536];
    loop {
        let due = heap.peek().map(|h| h.at);
        let received = tokio::select! {
            r = front.recv_from(&mut a) => {
                let Ok((n, from)) = r else { break };
                client = Some(from);
                Some((Dir::ToServer, a[..n].to_vec()))
            }
            r = back.recv_from(&mut b) => {
                let Ok((n, from)) = r else { break };
                (from == server).then(|| (Dir::ToClient, b[..n].to_vec()))
            }
            _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => None,
        };
        let now = Instant::now();
        if let Some((dir, data)) = received {
            let mut c = control.lock().unwrap();
            let (f, counts) = match dir {
                Dir::ToServer => (c.to_server, &to_server),
                Dir::ToClient => (c.to_client, &to_client),
            };
            if c.partitioned || unit(&mut c.rng) < f.loss {
                counts.dropped_one(data.len());
                continue;
            }
            if f.max_size.is_some_and(|m| data.len() > m) {
                counts.too_large.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let copies = if unit(&mut c.rng) < f.duplicate {
                counts.duplicated.fetch_add(1, Ordering::Relaxed);
                2
            } else {
                1
            };
            for _ in 0..copies {
                let mut wait = f.delay;
                if !f.jitter.is_zero() {
                    wait += f.jitter.mul_f64(unit(&mut c.rng));
                }
                if unit(&mut c.rng) < f.reorder {
                    counts.reordered.fetch_add(1, Ordering::Relaxed);
                    wait += f.reorder_by;
                }
                order += 1;
                heap.push(Held {
                    at: now + wait,
                    order,
                    dir,
                    data: data.clone(),
                });
            }
        }
        // Everything due, in order of its deadline.
        while heap.peek().is_some_and(|h| h.at <= Instant::now()) {
            let h = heap.pop().unwrap();
            let partitioned = control.lock().unwrap().partitioned;
            let counts = match h.dir {
                Dir::ToServer => &to_server,
                Dir::ToClient => &to_client,
            };
            if partitioned {
                counts.dropped_one(h.data.len());
                continue;
            }
            counts.forwarded.fetch_add(1, Ordering::Relaxed);
            let _ = match (h.dir, client) {
                (Dir::ToServer, _) => back.send_to(&h.data, server).await,
                (Dir::ToClient, Some(c)) => front.send_to(&h.data, c).await,
                (Dir::ToClient, None) => continue,
            };
        }
    }
}
